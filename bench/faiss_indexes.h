// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// The FAISS binary indexes we compare against, behind one small interface: build from 128-bit codes,
// answer a batch of Hamming range queries (one thread; the caller pins OpenMP).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vrex_model_cxx.h"

namespace faiss {
struct IndexBinary;
}

namespace vrex::bench {

enum class FaissKind { flat, hash, multihash };

struct FaissConfig {
    FaissKind kind;
    int b = 0;       // hash: bits hashed; multihash: bits per table
    int nhash = 0;   // multihash: number of tables
    int nflip = 0;   // hash / multihash: bit flips probed per table
    bool exact = true;  // whether this configuration is exact at the benchmark radius

    std::string describe() const;
};

class FaissIndex {
public:
    FaissIndex(const FaissConfig& cfg, std::span<const vrex_fp> codes);
    ~FaissIndex();
    FaissIndex(const FaissIndex&) = delete;
    FaissIndex& operator=(const FaissIndex&) = delete;

    // Ids within Hamming distance <= @radius of each query. With @out == nullptr only the total number
    // of results is returned (timed passes); otherwise out[i] holds query i's ids, sorted.
    size_t range(std::span<const vrex_fp> queries, uint32_t radius, std::vector<std::vector<uint32_t>>* out) const;

    const FaissConfig& config() const { return cfg_; }

private:
    FaissConfig cfg_;
    std::unique_ptr<faiss::IndexBinary> index_;
};

// FAISS's binary range_search keeps distances strictly below its radius argument (probed once at start
// up on a tiny index rather than assumed), so an inclusive radius r is passed as r + offset.
int faiss_radius_offset();

}  // namespace vrex::bench
