// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "group_scan.h"

#include <algorithm>

extern "C" {
#include "shie_group_scan.h"
}

namespace vrex::bench {
namespace {

const vrex_shie_group_kernel* kernel() {
    return vrex_shie_group_best(1);
}

uint32_t dist(const vrex_fp& a, const vrex_fp& b) {
    return static_cast<uint32_t>(__builtin_popcountll(a.w[0] ^ b.w[0]) +
                                 __builtin_popcountll(a.w[1] ^ b.w[1]));
}

// Runs the kernel over every block for the queries [q0, q0 + nq); @hit(k, id) gets each listed code and
// returns the query's new limit.
template <typename Hit>
void scan_group(std::span<const vrex_fp> codes, std::span<const vrex_fp> queries, size_t q0, uint32_t nq,
                uint32_t radius, Hit hit) {
    const vrex_shie_group_kernel* kern = kernel();
    vrex_shie_group g{};
    vrex_shie_group_hits hits;
    for (uint32_t k = 0; k < nq; k++) {
        g.q0[k] = queries[q0 + k].w[0];
        g.q1[k] = queries[q0 + k].w[1];
        g.limit[k] = radius;
    }
    g.nq = nq;
    vrex_shie_group_pad(&g);
    const size_t n = codes.size();
    for (size_t i = 0; i < n; i += VREX_SHIE_GROUP_BLOCK) {
        const u32 m = static_cast<u32>(std::min<size_t>(VREX_SHIE_GROUP_BLOCK, n - i));
        u32 mask = kern->block(codes.data() + i, m, &g, &hits);
        for (uint32_t k = 0; mask; k++, mask >>= 1) {
            if (!(mask & 1)) continue;
            for (u32 j = 0; j < hits.count[k]; j++)
                g.limit[k] = hit(k, static_cast<uint32_t>(i + hits.idx[k][j]), g.limit[k]);
        }
    }
}

}  // namespace

std::string group_scan_kernel() {
    const vrex_shie_group_kernel* k = kernel();
    return k ? k->name : "";
}

size_t group_scan_range(std::span<const vrex_fp> codes, std::span<const vrex_fp> queries, uint32_t radius,
                        std::vector<std::vector<uint32_t>>& out) {
    out.assign(queries.size(), {});
    size_t total = 0;
    for (size_t q0 = 0; q0 < queries.size(); q0 += VREX_SHIE_GROUP_QUERIES) {
        const auto nq = static_cast<uint32_t>(std::min<size_t>(VREX_SHIE_GROUP_QUERIES, queries.size() - q0));
        scan_group(codes, queries, q0, nq, radius, [&](uint32_t k, uint32_t id, uint32_t limit) {
            out[q0 + k].push_back(id);  // blocks in order, indices ascending within a block
            total++;
            return limit;
        });
    }
    return total;
}

void group_scan_nearest(std::span<const vrex_fp> codes, std::span<const vrex_fp> queries, uint32_t radius,
                        std::span<uint32_t> ids, std::span<uint32_t> dists) {
    for (size_t q0 = 0; q0 < queries.size(); q0 += VREX_SHIE_GROUP_QUERIES) {
        const auto nq = static_cast<uint32_t>(std::min<size_t>(VREX_SHIE_GROUP_QUERIES, queries.size() - q0));
        for (uint32_t k = 0; k < nq; k++) {
            ids[q0 + k] = UINT32_MAX;
            dists[q0 + k] = UINT32_MAX;
        }
        // A listed code is within the query's limit; the first at a distance keeps it (lowest index), and
        // the limit shrinks to the best distance so only ties or better are listed from then on.
        scan_group(codes, queries, q0, nq, radius, [&](uint32_t k, uint32_t id, uint32_t limit) {
            const uint32_t d = dist(codes[id], queries[q0 + k]);
            if (d < dists[q0 + k]) {
                dists[q0 + k] = d;
                ids[q0 + k] = id;
            }
            return std::min(limit, d);
        });
    }
}

}  // namespace vrex::bench
