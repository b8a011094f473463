// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// Blocked SIMD popcount scans over a dense array of 128-bit codes: the strongest plain baseline. A block
// of codes small enough to stay in L1 is loaded once per group of queries (up to kScanGroup per pass),
// so at table sizes beyond the caches the memory traffic per query drops by the group size.
//   avx2:     XOR + nibble-table popcount (vpshufb) + vpsadbw, 2 codes per 256-bit register
//   avx512:   XOR + vpopcntq (AVX-512 VPOPCNTDQ), 8 codes per two 512-bit registers
//   scalar:   popcnt per 64-bit word (the control: no vector popcount)
// Every kernel is exact; the benchmark checks each against the reference result sets.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vrex_model_cxx.h"

namespace vrex::bench {

enum class ScanIsa { scalar, avx2, avx512 };

constexpr size_t kScanGroup = 8;     // queries per pass over a block
constexpr size_t kScanBlock = 1024;  // codes per block (16 KiB, L1-resident)

bool scan_isa_supported(ScanIsa isa);
std::string scan_isa_name(ScanIsa isa);

// Range: out[i] (cleared first) gets the indices of every code within @radius of queries[i], ascending.
// Returns the total number of results.
size_t scan_range(ScanIsa isa, std::span<const vrex_fp> codes, std::span<const vrex_fp> queries,
                  uint32_t radius, std::vector<std::vector<uint32_t>>& out);

// Nearest within radius: ids[i] = lowest index among the codes at the minimum distance from queries[i]
// if that distance is <= @radius, else UINT32_MAX; dists[i] = that distance (undefined on a miss).
void scan_nearest(ScanIsa isa, std::span<const vrex_fp> codes, std::span<const vrex_fp> queries,
                  uint32_t radius, std::span<uint32_t> ids, std::span<uint32_t> dists);

}  // namespace vrex::bench
