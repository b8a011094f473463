// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "roofline.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>

namespace vrex::bench {
namespace {

size_t parse_size(const std::string& s)  // "1024K", "32768K", "1M"
{
    char* end = nullptr;
    unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (end && (*end == 'K' || *end == 'k'))
        v <<= 10;
    else if (end && (*end == 'M' || *end == 'm'))
        v <<= 20;
    return static_cast<size_t>(v);
}

bool from_sysfs(CacheSizes& c) {
    for (int i = 0; i < 8; i++) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
        std::ifstream level(dir + "level"), type(dir + "type"), size(dir + "size");
        int l = 0;
        std::string t, s;
        if (!(level >> l) || !(type >> t) || !(size >> s)) continue;
        if (t == "Instruction") continue;
        if (l == 2) c.l2 = parse_size(s);
        if (l == 3) c.l3 = parse_size(s);
    }
    c.source = "sysfs";
    return c.l2 && c.l3;
}

bool from_cpuid(CacheSizes& c) {
    unsigned a, b, cx, d;
    if (!__get_cpuid(0, &a, &b, &cx, &d)) return false;
    const bool amd = b == 0x68747541;  // "Auth"enticAMD
    // AMD cache topology leaf: the L3 of one core complex (leaf 0x80000006 reports the package's, which a
    // core cannot use alone; a VM may even report the host's).
    if (amd && __get_cpuid(0x80000000, &a, &b, &cx, &d) && a >= 0x8000001d) {
        for (unsigned i = 0; i < 8; i++) {
            __cpuid_count(0x8000001d, i, a, b, cx, d);
            const unsigned type = a & 0x1f, level = (a >> 5) & 7;
            if (type == 0) break;
            if (type == 2) continue;
            const size_t bytes =
                size_t{((b >> 22) & 0x3ff) + 1} * (((b >> 12) & 0x3ff) + 1) * ((b & 0xfff) + 1) * (cx + 1);
            if (level == 2) c.l2 = bytes;
            if (level == 3) c.l3 = bytes;
        }
        c.source = "cpuid 0x8000001d";
        if (c.l2 && c.l3) return true;
    }
    if (amd && __get_cpuid(0x80000006, &a, &b, &cx, &d)) {
        c.l2 = size_t{cx >> 16} << 10;          // ECX[31:16] KiB
        c.l3 = size_t{d >> 18} * (512u << 10);  // EDX[31:18] x 512 KiB
        c.source = "cpuid 0x80000006";
        return c.l2 && c.l3;
    }
    for (unsigned i = 0; i < 8; i++) {  // Intel deterministic cache parameters
        __cpuid_count(4, i, a, b, cx, d);
        const unsigned type = a & 0x1f, level = (a >> 5) & 7;
        if (type == 0) break;
        if (type == 2) continue;  // instruction cache
        const size_t bytes =
            size_t{((b >> 22) & 0x3ff) + 1} * (((b >> 12) & 0x3ff) + 1) * ((b & 0xfff) + 1) * (cx + 1);
        if (level == 2) c.l2 = bytes;
        if (level == 3) c.l3 = bytes;
    }
    c.source = "cpuid 4";
    return c.l2 && c.l3;
}

// One pass over the buffer: 256-bit loads (AVX2 is the widest every x86-64 bench host here has; four
// independent accumulators keep several loads in flight), XOR-folded so the loads cannot be dropped.
__attribute__((target("avx2"))) uint64_t read_pass(const uint8_t* p, size_t bytes) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 128 <= bytes; i += 128) {
        a0 = _mm256_xor_si256(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
        a1 = _mm256_xor_si256(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
        a2 = _mm256_xor_si256(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
        a3 = _mm256_xor_si256(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
    }
    const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
    return static_cast<uint64_t>(_mm256_extract_epi64(x, 0) ^ _mm256_extract_epi64(x, 3));
}

struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
};

}  // namespace

CacheSizes cache_sizes() {
    CacheSizes c;
    if (from_sysfs(c)) return c;
    c = {};
    if (from_cpuid(c)) return c;
    return {size_t{1} << 20, size_t{32} << 20, "fallback guess (no sysfs, no cpuid cache leaf)"};
}

Stats read_bandwidth(size_t bytes, size_t repeats, double min_seconds) {
    bytes = (bytes + 127) & ~size_t{127};
    std::unique_ptr<uint8_t, FreeDeleter> buf(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)));
    for (size_t i = 0; i < bytes; i++)
        buf.get()[i] = static_cast<uint8_t>(i * 131);      // touched: no faults timed
    volatile uint64_t sink = read_pass(buf.get(), bytes);  // warm-up
    std::vector<double> rates;
    // The clock is read once per >= 1 MiB read: a CPU-time clock_gettime is a system call in a VM, which
    // per pass over an L1-sized buffer cost more than the pass itself.
    const size_t inner = std::max<size_t>(1, (size_t{1} << 20) / bytes);
    for (size_t r = 0; r < repeats; r++) {
        size_t passes = 0;
        const double t0 = cpu_seconds();
        double t = 0.0;
        do {
            for (size_t k = 0; k < inner; k++) sink = sink ^ read_pass(buf.get(), bytes);
            passes += inner;
            t = cpu_seconds() - t0;
        } while (t < min_seconds);
        rates.push_back(static_cast<double>(passes * bytes) / t);
    }
    return stats_of(rates);
}

const char* Roofline::level(size_t bytes) const {
    if (bytes <= caches.l2) return "L2";
    if (bytes <= caches.l3) return "L3";
    return "DRAM";
}

double Roofline::bandwidth(size_t bytes) const {
    if (bytes <= caches.l2) return l2.median;
    if (bytes <= caches.l3) return l3.median;
    return dram.median;
}

namespace {

// 4 independent groups of 8 codes held in registers against a query that changes every iteration (so
// nothing is hoisted): per pair two XORs, two popcounts, an add and a compare against the limit, the
// matches counted. 32 pairs per iteration.
__attribute__((target("avx512f,avx512vpopcntdq"))) uint64_t pairs_avx512(size_t iters) {
    __m512i c0[4], c1[4];
    for (int g = 0; g < 4; g++) {
        c0[g] = _mm512_set_epi64(g * 8 + 1, g * 8 + 2, g * 8 + 3, g * 8 + 4, g * 8 + 5, g * 8 + 6, g * 8 + 7,
                                 g * 8 + 8);
        c1[g] = _mm512_set1_epi64(0x0123456789abcdefll * (g + 1));
    }
    __m512i q0 = _mm512_set1_epi64(0x5555aaaa5555aaaall), q1 = _mm512_set1_epi64(0x3333cccc3333ccccll);
    const __m512i one = _mm512_set1_epi64(1), limit = _mm512_set1_epi64(64);
    __m512i cnt[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                      _mm512_setzero_si512()};
    for (size_t i = 0; i < iters; i++) {
        for (int g = 0; g < 4; g++) {
            const __m512i d = _mm512_add_epi64(_mm512_popcnt_epi64(_mm512_xor_si512(c0[g], q0)),
                                               _mm512_popcnt_epi64(_mm512_xor_si512(c1[g], q1)));
            cnt[g] = _mm512_mask_add_epi64(cnt[g], _mm512_cmple_epu64_mask(d, limit), cnt[g], one);
        }
        q0 = _mm512_add_epi64(q0, one);
        q1 = _mm512_xor_si512(q1, q0);
        asm volatile("" : "+v"(q0), "+v"(q1));  // opaque to the optimiser: nothing is folded or hoisted
    }
    return static_cast<uint64_t>(_mm512_reduce_add_epi64(
        _mm512_add_epi64(_mm512_add_epi64(cnt[0], cnt[1]), _mm512_add_epi64(cnt[2], cnt[3]))));
}

// AVX2 has no vector popcount: the nibble-table count (2 vpshufb, vpsadbw) on 4 groups of 4 codes, 16
// pairs per iteration, the same XOR / add / compare / count per pair.
__attribute__((target("avx2"))) inline __m256i popcount_avx2(__m256i v, __m256i lut, __m256i low) {
    const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, low));
    const __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), low));
    return _mm256_sad_epu8(_mm256_add_epi8(lo, hi), _mm256_setzero_si256());
}

__attribute__((target("avx2"))) uint64_t pairs_avx2(size_t iters) {
    const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2,
                                         3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i low = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi64x(1), bound = _mm256_set1_epi64x(65);
    __m256i c0[4], c1[4], cnt[4];
    for (int g = 0; g < 4; g++) {
        c0[g] = _mm256_set_epi64x(g * 4 + 1, g * 4 + 2, g * 4 + 3, g * 4 + 4);
        c1[g] = _mm256_set1_epi64x(0x0123456789abcdefll * (g + 1));
        cnt[g] = _mm256_setzero_si256();
    }
    __m256i q0 = _mm256_set1_epi64x(0x5555aaaa5555aaaall), q1 = _mm256_set1_epi64x(0x3333cccc3333ccccll);
    for (size_t i = 0; i < iters; i++) {
        for (int g = 0; g < 4; g++) {
            const __m256i d = _mm256_add_epi64(popcount_avx2(_mm256_xor_si256(c0[g], q0), lut, low),
                                               popcount_avx2(_mm256_xor_si256(c1[g], q1), lut, low));
            cnt[g] = _mm256_sub_epi64(cnt[g], _mm256_cmpgt_epi64(bound, d));  // d <= 64: count it
        }
        q0 = _mm256_add_epi64(q0, one);
        q1 = _mm256_xor_si256(q1, q0);
        asm volatile("" : "+x"(q0), "+x"(q1));  // opaque to the optimiser: nothing is folded or hoisted
    }
    const __m256i s = _mm256_add_epi64(_mm256_add_epi64(cnt[0], cnt[1]), _mm256_add_epi64(cnt[2], cnt[3]));
    return static_cast<uint64_t>(_mm256_extract_epi64(s, 0) + _mm256_extract_epi64(s, 1) +
                                 _mm256_extract_epi64(s, 2) + _mm256_extract_epi64(s, 3));
}

// The same with the scalar popcnt instruction: 4 independent pairs per iteration.
__attribute__((target("popcnt"))) uint64_t pairs_scalar(size_t iters) {
    uint64_t c0[4] = {1, 2, 3, 4}, c1[4] = {5, 6, 7, 8}, cnt[4] = {0, 0, 0, 0};
    uint64_t q0 = 0x5555aaaa5555aaaaull, q1 = 0x3333cccc3333ccccull;
    for (size_t i = 0; i < iters; i++) {
        for (int g = 0; g < 4; g++) {
            const auto d =
                static_cast<uint64_t>(__builtin_popcountll(c0[g] ^ q0) + __builtin_popcountll(c1[g] ^ q1));
            cnt[g] += d <= 64;
        }
        q0 += 1;
        q1 ^= q0;
        asm volatile("" : "+r"(q0), "+r"(q1));  // keeps the loop from being vectorised or folded
    }
    return cnt[0] + cnt[1] + cnt[2] + cnt[3];
}

}  // namespace

Stats core_pair_rate(CoreIsa isa, size_t repeats, double min_seconds) {
    if (isa == CoreIsa::avx512 &&
        !(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq")))
        return {};
    if (isa == CoreIsa::avx2 && !__builtin_cpu_supports("avx2")) return {};
    const size_t iters = 1 << 16, pairs = isa == CoreIsa::avx512 ? 32 : isa == CoreIsa::avx2 ? 16 : 4;
    volatile uint64_t sink = 0;
    std::vector<double> rates;
    for (size_t r = 0; r < repeats; r++) {
        size_t calls = 0;
        const double t0 = cpu_seconds();
        double t = 0.0;
        do {
            sink = sink + (isa == CoreIsa::avx512 ? pairs_avx512(iters)
                           : isa == CoreIsa::avx2 ? pairs_avx2(iters)
                                                  : pairs_scalar(iters));
            calls++;
            t = cpu_seconds() - t0;
        } while (t < min_seconds);
        rates.push_back(static_cast<double>(calls * iters * pairs) / t);
    }
    return stats_of(rates);
}

Roofline measure_roofline(size_t dram_bytes, size_t repeats, double min_seconds, bool beyond_l3) {
    Roofline r;
    r.caches = cache_sizes();
    r.l2_bytes = r.caches.l2 / 2;
    r.l3_bytes = r.caches.l3 / 2;
    // At least 4 x L3, at most 512 MiB (a VM may report an implausible L3).
    r.dram_bytes =
        beyond_l3 ? std::min(std::max(dram_bytes, r.caches.l3 * 4), size_t{512} << 20) : dram_bytes;
    // The L3 a core can use, where CPUID is implausible (a VM reporting the host's package L3 beyond
    // 256 MiB): the largest buffer, doubling from 2 x L2, still read >= 25 % faster than a 512 MiB one.
    if (beyond_l3 && r.caches.l3 > (size_t{256} << 20)) {
        const double far = read_bandwidth(size_t{512} << 20, 3, min_seconds).median;
        size_t knee = 0;
        for (size_t b = 2 * r.caches.l2; b <= (size_t{128} << 20); b *= 2)
            if (read_bandwidth(b, 3, min_seconds).median >= 1.25 * far) knee = b;
        if (knee) {
            r.caches.source += " reported " + std::to_string(r.caches.l3 >> 20) +
                               " MiB (implausible per core); L3 taken from the measured bandwidth knee";
            r.caches.l3 = knee;
            r.l3_bytes = knee / 2;
        }
    }
    r.l1_bytes = 16 << 10;  // half of the smallest L1d of any x86-64 core in use
    r.l1 = read_bandwidth(r.l1_bytes, repeats, min_seconds);
    r.l2 = read_bandwidth(r.l2_bytes, repeats, min_seconds);
    r.l3 = read_bandwidth(r.l3_bytes, repeats, min_seconds);
    r.dram = read_bandwidth(r.dram_bytes, repeats, min_seconds);
    return r;
}

}  // namespace vrex::bench
