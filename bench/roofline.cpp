// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "roofline.h"

#include <cpuid.h>
#include <immintrin.h>

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
    for (size_t r = 0; r < repeats; r++) {
        size_t passes = 0;
        const double t0 = cpu_seconds();
        double t = 0.0;
        do {
            sink = sink ^ read_pass(buf.get(), bytes);
            passes++;
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
    r.l2 = read_bandwidth(r.l2_bytes, repeats, min_seconds);
    r.l3 = read_bandwidth(r.l3_bytes, repeats, min_seconds);
    r.dram = read_bandwidth(r.dram_bytes, repeats, min_seconds);
    return r;
}

}  // namespace vrex::bench
