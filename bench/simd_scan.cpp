// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "simd_scan.h"

#include <immintrin.h>

#include <algorithm>
#include <stdexcept>

namespace vrex::bench {
namespace {

// Nearest search state of one query: (distance << 32 | index), so min() keeps the smallest distance and,
// among equals, the lowest index.
constexpr uint64_t kNoKey = ~uint64_t{0};

inline uint32_t dist_scalar(const vrex_fp& a, const vrex_fp& b) {
    return static_cast<uint32_t>(__builtin_popcountll(a.w[0] ^ b.w[0]) +
                                 __builtin_popcountll(a.w[1] ^ b.w[1]));
}

// ---- scalar (popcnt) -------------------------------------------------------------------------------
__attribute__((target("popcnt"))) void range_block_scalar(const vrex_fp* c, size_t len, uint32_t base,
                                                          const vrex_fp& q, uint32_t r,
                                                          std::vector<uint32_t>& out) {
    for (size_t i = 0; i < len; i++)
        if (dist_scalar(c[i], q) <= r) out.push_back(base + static_cast<uint32_t>(i));
}

__attribute__((target("popcnt"))) uint64_t nearest_block_scalar(const vrex_fp* c, size_t len, uint32_t base,
                                                                const vrex_fp& q) {
    uint64_t best = kNoKey;
    for (size_t i = 0; i < len; i++) best = std::min(best, uint64_t{dist_scalar(c[i], q)} << 32 | (base + i));
    return best;
}

// ---- AVX2: nibble-table popcount --------------------------------------------------------------------
#define VREX_AVX2 __attribute__((target("avx2,popcnt")))

// Bit counts of the four 64-bit words of @v.
VREX_AVX2 inline __m256i popcount4_avx2(__m256i v, __m256i lut, __m256i low) {
    const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, low));
    const __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), low));
    return _mm256_sad_epu8(_mm256_add_epi8(lo, hi), _mm256_setzero_si256());
}

// Distances of codes c[0..3] to q, in lane order {0, 2, 1, 3}.
VREX_AVX2 inline __m256i dist4_avx2(const vrex_fp* c, __m256i q2, __m256i lut, __m256i low) {
    const __m256i a = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(c)), q2);
    const __m256i b = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 2)), q2);
    const __m256i sa = popcount4_avx2(a, lut, low), sb = popcount4_avx2(b, lut, low);
    return _mm256_add_epi64(_mm256_unpacklo_epi64(sa, sb), _mm256_unpackhi_epi64(sa, sb));
}

VREX_AVX2 inline __m256i lut_avx2() {
    return _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2,
                            3, 2, 3, 3, 4);
}

VREX_AVX2 inline __m256i bcast_avx2(const vrex_fp& q) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&q)));
}

VREX_AVX2 void range_block_avx2(const vrex_fp* c, size_t len, uint32_t base, const vrex_fp& q, uint32_t r,
                                std::vector<uint32_t>& out) {
    const __m256i q2 = bcast_avx2(q), lut = lut_avx2(), low = _mm256_set1_epi8(0x0f);
    const __m256i rv = _mm256_set1_epi64x(r);
    size_t i = 0;
    for (; i + 4 <= len; i += 4) {
        const __m256i d = dist4_avx2(c + i, q2, lut, low);
        // Lanes above the radius; a hit is a clear bit. Lane k holds code {0, 2, 1, 3}[k].
        const unsigned over =
            static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(d, rv))));
        if (over == 0xf) continue;
        static constexpr unsigned kLane[4] = {0, 2, 1, 3};
        for (unsigned j = 0; j < 4; j++)
            if (!(over >> kLane[j] & 1)) out.push_back(base + static_cast<uint32_t>(i + j));
    }
    range_block_scalar(c + i, len - i, base + static_cast<uint32_t>(i), q, r, out);
}

VREX_AVX2 uint64_t nearest_block_avx2(const vrex_fp* c, size_t len, uint32_t base, const vrex_fp& q) {
    const __m256i q2 = bcast_avx2(q), lut = lut_avx2(), low = _mm256_set1_epi8(0x0f);
    __m256i best = _mm256_set1_epi64x(INT64_MAX);
    __m256i idx = _mm256_setr_epi64x(base + 0, base + 2, base + 1, base + 3);
    const __m256i four = _mm256_set1_epi64x(4);
    size_t i = 0;
    for (; i + 4 <= len; i += 4) {
        const __m256i key = _mm256_or_si256(_mm256_slli_epi64(dist4_avx2(c + i, q2, lut, low), 32), idx);
        best = _mm256_blendv_epi8(best, key, _mm256_cmpgt_epi64(best, key));  // keys < 2^63: signed is fine
        idx = _mm256_add_epi64(idx, four);
    }
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), best);
    uint64_t m = std::min(nearest_block_scalar(c + i, len - i, base + static_cast<uint32_t>(i), q),
                          std::min(std::min(lanes[0], lanes[1]), std::min(lanes[2], lanes[3])));
    return m == static_cast<uint64_t>(INT64_MAX) ? kNoKey : m;
}

// ---- AVX-512 VPOPCNTDQ -----------------------------------------------------------------------------
#define VREX_AVX512 __attribute__((target("avx512f,avx512vpopcntdq,popcnt")))

// Distances of codes c[0..7] to q, in order.
VREX_AVX512 inline __m512i dist8_avx512(const vrex_fp* c, __m512i q4, __m512i even, __m512i odd) {
    const __m512i a = _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512(c), q4));
    const __m512i b = _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512(c + 4), q4));
    return _mm512_add_epi64(_mm512_permutex2var_epi64(a, even, b), _mm512_permutex2var_epi64(a, odd, b));
}

VREX_AVX512 inline __m512i bcast_avx512(const vrex_fp& q) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&q)));
}

VREX_AVX512 void range_block_avx512(const vrex_fp* c, size_t len, uint32_t base, const vrex_fp& q, uint32_t r,
                                    std::vector<uint32_t>& out) {
    const __m512i q4 = bcast_avx512(q), rv = _mm512_set1_epi64(r);
    const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14),
                  odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        unsigned hit = _mm512_cmple_epu64_mask(dist8_avx512(c + i, q4, even, odd), rv);
        while (hit) {
            out.push_back(base + static_cast<uint32_t>(i) + static_cast<uint32_t>(__builtin_ctz(hit)));
            hit &= hit - 1;
        }
    }
    range_block_scalar(c + i, len - i, base + static_cast<uint32_t>(i), q, r, out);
}

VREX_AVX512 uint64_t nearest_block_avx512(const vrex_fp* c, size_t len, uint32_t base, const vrex_fp& q) {
    const __m512i q4 = bcast_avx512(q);
    const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14),
                  odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    __m512i best = _mm512_set1_epi64(static_cast<long long>(kNoKey));
    __m512i idx = _mm512_add_epi64(_mm512_set1_epi64(base), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
    const __m512i eight = _mm512_set1_epi64(8);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        best = _mm512_min_epu64(
            best, _mm512_or_si512(_mm512_slli_epi64(dist8_avx512(c + i, q4, even, odd), 32), idx));
        idx = _mm512_add_epi64(idx, eight);
    }
    return std::min<uint64_t>(_mm512_reduce_min_epu64(best),
                              nearest_block_scalar(c + i, len - i, base + static_cast<uint32_t>(i), q));
}

// ---- blocking over queries --------------------------------------------------------------------------
using RangeBlock = void (*)(const vrex_fp*, size_t, uint32_t, const vrex_fp&, uint32_t,
                            std::vector<uint32_t>&);
using NearestBlock = uint64_t (*)(const vrex_fp*, size_t, uint32_t, const vrex_fp&);

void check(ScanIsa isa) {
    if (!scan_isa_supported(isa))
        throw std::runtime_error("scan: " + scan_isa_name(isa) + " not supported here");
}

}  // namespace

bool scan_isa_supported(ScanIsa isa) {
    switch (isa) {
        case ScanIsa::scalar:
            return __builtin_cpu_supports("popcnt");
        case ScanIsa::avx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
        case ScanIsa::avx512:
            return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq");
    }
    return false;
}

std::string scan_isa_name(ScanIsa isa) {
    switch (isa) {
        case ScanIsa::scalar:
            return "scalar popcnt";
        case ScanIsa::avx2:
            return "AVX2 vpshufb";
        case ScanIsa::avx512:
            return "AVX-512 VPOPCNTDQ";
    }
    return "?";
}

size_t scan_range(ScanIsa isa, std::span<const vrex_fp> codes, std::span<const vrex_fp> queries,
                  uint32_t radius, std::vector<std::vector<uint32_t>>& out) {
    check(isa);
    const RangeBlock fn = isa == ScanIsa::avx512 ? range_block_avx512
                          : isa == ScanIsa::avx2 ? range_block_avx2
                                                 : range_block_scalar;
    out.resize(queries.size());
    for (auto& v : out) v.clear();
    for (size_t g = 0; g < queries.size(); g += kScanGroup) {
        const size_t ng = std::min(kScanGroup, queries.size() - g);
        for (size_t base = 0; base < codes.size(); base += kScanBlock) {
            const size_t len = std::min(kScanBlock, codes.size() - base);
            for (size_t k = 0; k < ng; k++)
                fn(codes.data() + base, len, static_cast<uint32_t>(base), queries[g + k], radius, out[g + k]);
        }
    }
    size_t total = 0;
    for (const auto& v : out) total += v.size();
    return total;
}

void scan_nearest(ScanIsa isa, std::span<const vrex_fp> codes, std::span<const vrex_fp> queries,
                  uint32_t radius, std::span<uint32_t> ids, std::span<uint32_t> dists) {
    check(isa);
    if (ids.size() < queries.size() || dists.size() < queries.size())
        throw std::invalid_argument("scan_nearest: output spans shorter than the queries");
    const NearestBlock fn = isa == ScanIsa::avx512 ? nearest_block_avx512
                            : isa == ScanIsa::avx2 ? nearest_block_avx2
                                                   : nearest_block_scalar;
    uint64_t best[kScanGroup];
    for (size_t g = 0; g < queries.size(); g += kScanGroup) {
        const size_t ng = std::min(kScanGroup, queries.size() - g);
        std::fill(best, best + ng, kNoKey);
        for (size_t base = 0; base < codes.size(); base += kScanBlock) {
            const size_t len = std::min(kScanBlock, codes.size() - base);
            for (size_t k = 0; k < ng; k++)
                best[k] = std::min(best[k],
                                   fn(codes.data() + base, len, static_cast<uint32_t>(base), queries[g + k]));
        }
        for (size_t k = 0; k < ng; k++) {
            const auto d = static_cast<uint32_t>(best[k] >> 32);
            const bool hit = best[k] != kNoKey && d <= radius;
            ids[g + k] = hit ? static_cast<uint32_t>(best[k]) : UINT32_MAX;
            dists[g + k] = hit ? d : 0;
        }
    }
}

}  // namespace vrex::bench
