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
    // mih_fixed / mih_batch_fixed: the same lookups on a second table holding the same entries with the fixed
    // 8 x 16-bit MIH geometry used for every capacity before the geometry was sized to the table (the control
    // for that change; at capacities whose own geometry is 8 x 16 it is the same table).
    enum class Path { mih, mih_batch, mih_prechange, bruteforce, mih_fixed, mih_batch_fixed };
    static constexpr size_t kBatch = 8;  // the SIMD scan's queries per pass: both sides get the same batch

    // Same contract as FaissIndex::range: with @out, sorted code indices per query.
    size_t range(Path path, std::span<const vrex_fp> queries, uint32_t radius,
                 std::vector<std::vector<uint32_t>>* out) const;

    // k = 1 nearest within @radius (vrex_shie_find_similar, the product's lookup, or its brute-force
    // reference): ids[i] = code index or UINT32_MAX, dists[i] = its distance. Returns the number of hits.
    size_t nearest(Path path, std::span<const vrex_fp> queries, uint32_t radius, std::span<uint32_t> ids,
                   std::span<uint32_t> dists) const;

    // Which code path answered each query of one untimed pass of @path (lib's vrex_shie_paths counters,
    // switched on for this pass only): probes, crowd or budget fallback to the scan, shared group scan.
    vrex_shie_paths paths(Path path, std::span<const vrex_fp> queries, uint32_t radius, bool range);

    size_t arena_bytes() const { return arena_.size(); }
    uint32_t mih_tables() const { return table_.mih_tables; }

  private:
    std::vector<unsigned char> arena_;  // the model's arena needs no particular alignment
    vrex_shie_table table_{};
    vrex_shie_table prechange_{};  // a shallow copy of table_ (same arena) with the change switched off
    std::vector<unsigned char> fixed_arena_;  // empty when table_ already has the fixed geometry
    vrex_shie_table fixed_{};
    const vrex_shie_table* table_for(Path path) const {
        if (path == Path::mih_prechange) return &prechange_;
        if (path == Path::mih_fixed || path == Path::mih_batch_fixed) return &fixed_;
        return &table_;
    }
    std::vector<uint32_t> entry_to_code_;
    mutable std::vector<uint32_t> scratch_;
};

}  // namespace vrex::bench
