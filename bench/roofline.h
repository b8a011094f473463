// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// The roofline of a Hamming scan on this machine, measured in the same run as the scans:
//  - cache sizes (sysfs, else CPUID: AMD leaf 0x80000006, Intel leaf 4),
//  - read-only streaming bandwidth (vector loads folded into an XOR, nothing written; not memcpy) for a
//    buffer that fits L2, one that fits L3 and one far larger than L3,
//  - the core's compute roof: code-query pairs per second that the core evaluates (XOR, popcount, add,
//    compare against a limit) on register-resident codes, with AVX-512 VPOPCNTDQ, AVX2 and the scalar
//    popcnt instruction (whichever the CPU has); no load, no kernel under test involved.
// A scan's bound at table size N: min(bandwidth(level holding N*16 B) * group / (N*16 B), pairs/s / N)
// queries per second, where group is the number of queries sharing one pass over the table.
#pragma once

#include <cstddef>
#include <string>

#include "stats.h"

namespace vrex::bench {

struct CacheSizes {
    size_t l2 = 0;       // bytes per core
    size_t l3 = 0;       // bytes (shared)
    std::string source;  // "sysfs" or "cpuid ..."
};

CacheSizes cache_sizes();

// Read bandwidth in bytes/s over a @bytes buffer: @repeats timed passes (each long enough to be timed)
// after a warm-up pass.
Stats read_bandwidth(size_t bytes, size_t repeats, double min_seconds);

struct Roofline {
    CacheSizes caches;
    size_t l1_bytes = 0, l2_bytes = 0, l3_bytes = 0, dram_bytes = 0;  // buffer sizes measured
    Stats l1, l2, l3, dram;                                           // bytes/s

    // The level a table of @bytes streams from, and that level's median bandwidth.
    const char* level(size_t bytes) const;
    double bandwidth(size_t bytes) const;
};

// @beyond_l3: the DRAM buffer is at least 4 x L3 (false only for smoke runs, which check the code path).
Roofline measure_roofline(size_t dram_bytes, size_t repeats, double min_seconds, bool beyond_l3);

// The core's pair rate (code-query pairs/s) with AVX-512 VPOPCNTDQ, AVX2 (nibble-table popcount) or the
// scalar popcnt instruction; an empty Stats (n = 0) when the CPU lacks the instructions.
enum class CoreIsa { avx512, avx2, scalar };
Stats core_pair_rate(CoreIsa isa, size_t repeats, double min_seconds);

}  // namespace vrex::bench
