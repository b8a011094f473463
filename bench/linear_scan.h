// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// The plain baseline: one pass over a dense array of 128-bit codes, two popcounts per entry. Built with
// -O3 -march=native (see CMakeLists.txt) so the compiler may vectorise it: the strongest "plain" scan.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vrex_model_cxx.h"

namespace vrex::bench {

// Appends to @out the indices of every code within Hamming distance @radius of @q, in index order.
void linear_scan(std::span<const vrex_fp> codes, const vrex_fp& q, uint32_t radius, std::vector<uint32_t>& out);

// Copy bandwidth in bytes/s (bytes copied per second, best of several passes) for a @bytes buffer.
double copy_bandwidth(size_t bytes, double min_seconds);

}  // namespace vrex::bench
