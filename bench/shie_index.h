// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// Our side of the similarity benchmark: a SHIE table (lib/shie_table.h) holding one entry per code, all
// in one stream and region with distinct frames, so a range lookup covers exactly the set FAISS searches.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vrex_model_cxx.h"

namespace vrex::bench {

class ShieIndex {
  public:
    explicit ShieIndex(std::span<const vrex_fp> codes);  // throws std::runtime_error on a model error

    // Multi-index-hashing lookup (what the hardware does), the same lookup as it was before the probe-cost
    // budget and the vector fallback scan (probe_cost = 0, vector_scan = 0: the control for that change), or
    // the brute-force reference.
    // mih_batch: vrex_shie_find_similar_batch over groups of kBatch queries (nearest only; range runs one
    // query per call), the queries whose search falls back sharing one pass over the codes.
    enum class Path { mih, mih_batch, mih_prechange, bruteforce };
    static constexpr size_t kBatch = 8;  // the SIMD scan's queries per pass: both sides get the same batch

    // Same contract as FaissIndex::range: with @out, sorted code indices per query.
    size_t range(Path path, std::span<const vrex_fp> queries, uint32_t radius,
                 std::vector<std::vector<uint32_t>>* out) const;

    // k = 1 nearest within @radius (vrex_shie_find_similar, the product's lookup, or its brute-force
    // reference): ids[i] = code index or UINT32_MAX, dists[i] = its distance. Returns the number of hits.
    size_t nearest(Path path, std::span<const vrex_fp> queries, uint32_t radius, std::span<uint32_t> ids,
                   std::span<uint32_t> dists) const;

    size_t arena_bytes() const { return arena_.size(); }

  private:
    std::vector<unsigned char> arena_;  // the model's arena needs no particular alignment
    vrex_shie_table table_{};
    vrex_shie_table prechange_{};  // a shallow copy of table_ (same arena) with the change switched off
    const vrex_shie_table* table_for(Path path) const {
        return path == Path::mih_prechange ? &prechange_ : &table_;
    }
    std::vector<uint32_t> entry_to_code_;
    mutable std::vector<uint32_t> scratch_;
};

}  // namespace vrex::bench
