// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "shie_index.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace vrex::bench {

ShieIndex::ShieIndex(std::span<const vrex_fp> codes)
    : arena_(vrex_shie_arena_size(static_cast<u32>(codes.size()))), scratch_(codes.size()) {
    if (arena_.empty()) throw std::runtime_error("no SHIE arena size for this capacity");
    int rc = vrex_shie_init(&table_, static_cast<u32>(codes.size()), arena_.data(), arena_.size());
    if (rc) throw std::runtime_error("vrex_shie_init failed: " + std::to_string(rc));
    for (size_t i = 0; i < codes.size(); i++) {
        u32 entry;
        rc = vrex_shie_insert(&table_, &codes[i], 0, 0, 0, static_cast<u32>(i), static_cast<u32>(i), &entry);
        if (rc) throw std::runtime_error("vrex_shie_insert failed: " + std::to_string(rc));
        if (entry >= entry_to_code_.size()) entry_to_code_.resize(entry + 1, VREX_NIL);
        entry_to_code_[entry] = static_cast<uint32_t>(i);
    }
    // Lookups only read the table, so a copy of the header sharing the arena is a second, differently
    // tuned view of the same entries.
    prechange_ = table_;
    prechange_.probe_cost = 0;
    prechange_.vector_scan = 0;
    // The fixed-geometry control: the same entries inserted in the same order, so the same ids.
    if (table_.mih_tables == VREX_MIH_FIXED_TABLES) {
        fixed_ = table_;
        return;
    }
    const u32 cap = static_cast<u32>(codes.size());
    fixed_arena_.resize(vrex_shie_arena_size_geometry(cap, VREX_MIH_FIXED_TABLES));
    rc = vrex_shie_init_geometry(&fixed_, cap, VREX_MIH_FIXED_TABLES, fixed_arena_.data(),
                                 fixed_arena_.size());
    if (rc) throw std::runtime_error("vrex_shie_init_geometry failed: " + std::to_string(rc));
    for (size_t i = 0; i < codes.size(); i++) {
        u32 entry;
        rc = vrex_shie_insert(&fixed_, &codes[i], 0, 0, 0, static_cast<u32>(i), static_cast<u32>(i), &entry);
        if (rc || entry >= entry_to_code_.size() || entry_to_code_[entry] != i)
            throw std::runtime_error("fixed-geometry table: insert " + std::to_string(i) + " diverged");
    }
}

size_t ShieIndex::range(Path path, std::span<const vrex_fp> queries, uint32_t radius,
                        std::vector<std::vector<uint32_t>>* out) const {
    auto lookup = path == Path::bruteforce ? vrex_shie_find_range_bruteforce : vrex_shie_find_range;
    vrex_shie_query q{};
    q.pool = 0;
    q.stream = 0;
    q.region = 0;
    q.scope = VREX_SCOPE_STREAM;
    q.radius = radius;
    q.frame_limit = VREX_NIL;
    size_t total = 0;
    if (out) out->assign(queries.size(), {});
    for (size_t i = 0; i < queries.size(); i++) {
        q.fp = queries[i];
        u32 n = lookup(table_for(path), &q, scratch_.data(), static_cast<u32>(scratch_.size()));
        total += n;
        if (!out) continue;
        auto& v = (*out)[i];
        v.reserve(n);
        for (u32 j = 0; j < std::min<u32>(n, static_cast<u32>(scratch_.size())); j++)
            v.push_back(scratch_[j] < entry_to_code_.size() ? entry_to_code_[scratch_[j]] : VREX_NIL);
        std::sort(v.begin(), v.end());
    }
    return total;
}

size_t ShieIndex::nearest(Path path, std::span<const vrex_fp> queries, uint32_t radius,
                          std::span<uint32_t> ids, std::span<uint32_t> dists) const {
    auto lookup = path == Path::bruteforce ? vrex_shie_find_similar_bruteforce : vrex_shie_find_similar;
    vrex_shie_query q{};
    q.scope = VREX_SCOPE_STREAM;
    q.radius = radius;
    q.frame_limit = VREX_NIL;
    size_t hits = 0;
    if (path == Path::mih_batch || path == Path::mih_batch_fixed) {
        vrex_shie_query qs[kBatch];
        u32 e[kBatch], d[kBatch];
        for (size_t i = 0; i < queries.size(); i += kBatch) {
            const size_t n = std::min(kBatch, queries.size() - i);
            for (size_t j = 0; j < n; j++) {
                qs[j] = q;
                qs[j].fp = queries[i + j];
            }
            vrex_shie_find_similar_batch(table_for(path), qs, static_cast<u32>(n), e, d);
            for (size_t j = 0; j < n; j++) {
                const bool hit = e[j] != VREX_NIL && e[j] < entry_to_code_.size();
                ids[i + j] = hit ? entry_to_code_[e[j]] : UINT32_MAX;
                dists[i + j] = hit ? d[j] : 0;
                hits += hit;
            }
        }
        return hits;
    }
    for (size_t i = 0; i < queries.size(); i++) {
        q.fp = queries[i];
        u32 d = 0;
        const u32 e = lookup(table_for(path), &q, &d);
        const bool hit = e != VREX_NIL && e < entry_to_code_.size();
        ids[i] = hit ? entry_to_code_[e] : UINT32_MAX;
        dists[i] = hit ? d : 0;
        hits += hit;
    }
    return hits;
}

vrex_shie_paths ShieIndex::paths(Path path, std::span<const vrex_fp> queries, uint32_t radius, bool range) {
    vrex_shie_paths p{};
    vrex_shie_table* t = path == Path::mih_prechange                                  ? &prechange_
                         : (path == Path::mih_fixed || path == Path::mih_batch_fixed) ? &fixed_
                                                                                      : &table_;
    t->paths = &p;
    if (range) {
        this->range(path, queries, radius, nullptr);
    } else {
        std::vector<uint32_t> ids(queries.size()), d(queries.size());
        nearest(path, queries, radius, ids, d);
    }
    t->paths = nullptr;
    return p;
}

}  // namespace vrex::bench
