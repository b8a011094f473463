// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// The strongest plain scan: SHIE's own register-blocked group kernel (lib/shie_group_scan.h, the kernel
// find_similar_batch's fallback runs) driven over the bare code array, with no hash tables, no entry
// filters and no probe budget. Each block of VREX_SHIE_GROUP_BLOCK codes is loaded once for
// VREX_SHIE_GROUP_QUERIES queries held in registers, each query with its own shrinking limit. SHIE at a
// size where its batches fall back to the scan runs this same kernel plus the filters; so a ratio near 1
// against it says "SHIE is a scan there", and above 1 that the probes beat the best scan.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vrex_model_cxx.h"

namespace vrex::bench {

// The kernel's name ("vpopcntdq", "popcnt", "portable"), or "" when none runs here.
std::string group_scan_kernel();

// Same contracts as scan_range / scan_nearest (simd_scan.h): sorted ids per query; nearest = the lowest
// index at the minimum distance within @radius, UINT32_MAX on a miss.
size_t group_scan_range(std::span<const vrex_fp> codes, std::span<const vrex_fp> queries, uint32_t radius,
                        std::vector<std::vector<uint32_t>>& out);
void group_scan_nearest(std::span<const vrex_fp> codes, std::span<const vrex_fp> queries, uint32_t radius,
                        std::span<uint32_t> ids, std::span<uint32_t> dists);

}  // namespace vrex::bench
