// The group scan kernel (lib/shie_group_scan.h) against a scalar reference, for every kernel this build
// and this CPU have (portable C; on x86-64 user space the popcnt and AVX-512 VPOPCNTDQ clones): random
// and adversarial codes (all equal, distances exactly at and one past the limit, complements at distance
// 128), limits 0, 31 and 128, partial blocks, 1..8 queries, padding slots that must not be reported, and
// whole scans over tables that are not a multiple of the block with limits shrinking as in the batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include "shie_group_scan.h"
}

namespace {

constexpr uint32_t kQ = VREX_SHIE_GROUP_QUERIES;
constexpr uint32_t kBlock = VREX_SHIE_GROUP_BLOCK;

uint32_t distance(const vrex_fp& a, uint64_t q0, uint64_t q1) {
    return static_cast<uint32_t>(__builtin_popcountll(a.w[0] ^ q0) + __builtin_popcountll(a.w[1] ^ q1));
}

// The kernels to check: all this build and CPU run. The portable one always exists.
std::vector<const vrex_shie_group_kernel*> kernels() {
    std::vector<const vrex_shie_group_kernel*> out;
    for (uint32_t w = 0; w < VREX_SHIE_GROUP_KERNELS; w++)
        if (const vrex_shie_group_kernel* k = vrex_shie_group_find(w)) out.push_back(k);
    return out;
}

// Flips @n distinct bits of @fp, chosen at random.
vrex_fp flip(vrex_fp fp, uint32_t n, std::mt19937_64& rng) {
    std::vector<uint32_t> bits(128);
    for (uint32_t i = 0; i < 128; i++) bits[i] = i;
    std::shuffle(bits.begin(), bits.end(), rng);
    for (uint32_t i = 0; i < n; i++) fp.w[bits[i] / 64] ^= uint64_t{1} << (bits[i] % 64);
    return fp;
}

// Runs every kernel on one block and compares mask, counts and lists with the reference.
void check_block(const std::vector<vrex_fp>& codes, const vrex_shie_group& g, const std::string& what) {
    const uint32_t m = static_cast<uint32_t>(codes.size());
    ASSERT_LE(m, kBlock);
    uint32_t want_mask = 0;
    std::vector<std::vector<uint8_t>> want(g.nq);
    for (uint32_t k = 0; k < g.nq; k++) {
        for (uint32_t j = 0; j < m; j++)
            if (distance(codes[j], g.q0[k], g.q1[k]) <= g.limit[k])
                want[k].push_back(static_cast<uint8_t>(j));
        if (!want[k].empty()) want_mask |= 1u << k;
    }
    for (const vrex_shie_group_kernel* kern : kernels()) {
        SCOPED_TRACE(what + ", kernel " + kern->name + ", m " + std::to_string(m) + ", nq " +
                     std::to_string(g.nq));
        vrex_shie_group_hits hits;
        std::memset(&hits, 0xa5, sizeof(hits));
        const uint32_t mask = kern->block(codes.data(), m, &g, &hits);
        ASSERT_EQ(mask, want_mask);
        for (uint32_t k = 0; k < g.nq; k++) {
            ASSERT_EQ(hits.count[k], want[k].size()) << "query " << k;
            if (!(mask >> k & 1)) continue;
            for (uint32_t j = 0; j < hits.count[k]; j++)
                ASSERT_EQ(hits.idx[k][j], want[k][j]) << "query " << k << ", listed code " << j;
        }
    }
}

vrex_shie_group make_group(const std::vector<vrex_fp>& queries, const std::vector<uint32_t>& limits) {
    vrex_shie_group g{};
    g.nq = static_cast<uint32_t>(queries.size());
    for (uint32_t k = 0; k < g.nq; k++) {
        g.q0[k] = queries[k].w[0];
        g.q1[k] = queries[k].w[1];
        g.limit[k] = limits[k];
    }
    vrex_shie_group_pad(&g);
    return g;
}

TEST(ShieGroupScan, KernelsMatchTheCpu) {
    ASSERT_NE(vrex_shie_group_find(VREX_SHIE_GROUP_PORTABLE), nullptr);
    EXPECT_EQ(vrex_shie_group_find(VREX_SHIE_GROUP_KERNELS), nullptr);
#if defined(__x86_64__) && !defined(__POPCNT__)
    // The clones exist in x86-64 user space; each is offered exactly when the CPU runs it.
    __builtin_cpu_init();
    const bool popcnt = __builtin_cpu_supports("popcnt");
    const bool vec = popcnt && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                     __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vpopcntdq");
    EXPECT_EQ(vrex_shie_group_find(VREX_SHIE_GROUP_POPCNT) != nullptr, popcnt);
    EXPECT_EQ(vrex_shie_group_find(VREX_SHIE_GROUP_VPOPCNTDQ) != nullptr, vec);
    EXPECT_EQ(vrex_shie_group_best(1), vrex_shie_group_find(vec      ? VREX_SHIE_GROUP_VPOPCNTDQ
                                                            : popcnt ? VREX_SHIE_GROUP_POPCNT
                                                                     : VREX_SHIE_GROUP_PORTABLE));
    if (popcnt) {
        EXPECT_EQ(vrex_shie_group_best(0), vrex_shie_group_find(VREX_SHIE_GROUP_POPCNT));
    }
#endif
    std::printf("group scan kernels checked on this CPU:");
    for (const vrex_shie_group_kernel* k : kernels()) std::printf(" %s", k->name);
    std::printf("\n");
}

// Random codes, near copies of the queries among them, every block length and group size.
TEST(ShieGroupScan, RandomBlocks) {
    std::mt19937_64 rng(14);
    for (uint32_t m = 1; m <= kBlock; m++) {
        for (uint32_t nq = 1; nq <= kQ; nq++) {
            std::vector<vrex_fp> queries, codes;
            std::vector<uint32_t> limits;
            for (uint32_t k = 0; k < nq; k++) {
                queries.push_back(vrex_fp{{rng(), rng()}});
                const uint32_t pick = static_cast<uint32_t>(rng() % 6);
                limits.push_back(pick == 0   ? 0
                                 : pick == 1 ? 31
                                 : pick == 2 ? 128
                                             : static_cast<uint32_t>(rng() % 40));
            }
            for (uint32_t j = 0; j < m; j++) {
                if (rng() % 3 == 0)
                    codes.push_back(flip(queries[rng() % nq], static_cast<uint32_t>(rng() % 36), rng));
                else
                    codes.push_back(vrex_fp{{rng(), rng()}});
            }
            check_block(codes, make_group(queries, limits), "random");
        }
    }
}

// Every code equal: all of them tie, each query lists all or none.
TEST(ShieGroupScan, AllCodesEqual) {
    std::mt19937_64 rng(15);
    const vrex_fp c{{rng(), rng()}};
    for (uint32_t m : {1u, 7u, 8u, 9u, 63u, 64u}) {
        std::vector<vrex_fp> codes(m, c);
        for (uint32_t nq = 1; nq <= kQ; nq++) {
            std::vector<vrex_fp> queries;
            std::vector<uint32_t> limits;
            for (uint32_t k = 0; k < nq; k++) {
                const uint32_t d = (k * 5) % 33;  // 0, 5, ..., 30, 2: at, below and above the limits
                queries.push_back(flip(c, d, rng));
                limits.push_back(k % 3 == 0 ? d : k % 3 == 1 ? d - (d > 0) : 31);
            }
            check_block(codes, make_group(queries, limits), "all equal");
        }
    }
}

// Codes at exactly the limit and one past it, in every lane position; limits 0, 31 and 128; the
// complement of a query (distance 128) and the query itself.
TEST(ShieGroupScan, LimitEdges) {
    std::mt19937_64 rng(16);
    for (uint32_t limit : {0u, 1u, 20u, 31u, 127u, 128u}) {
        for (uint32_t nq = 1; nq <= kQ; nq++) {
            std::vector<vrex_fp> queries;
            std::vector<uint32_t> limits(nq, limit);
            for (uint32_t k = 0; k < nq; k++) queries.push_back(vrex_fp{{rng(), rng()}});
            std::vector<vrex_fp> codes;
            for (uint32_t j = 0; j < kBlock - nq % 3; j++) {
                const vrex_fp& q = queries[j % nq];
                switch (j % 4) {
                    case 0:
                        codes.push_back(flip(q, std::min(limit, 128u), rng));
                        break;
                    case 1:
                        codes.push_back(flip(q, std::min(limit + 1, 128u), rng));
                        break;
                    case 2:
                        codes.push_back(vrex_fp{{~q.w[0], ~q.w[1]}});
                        break;
                    default:
                        codes.push_back(q);
                        break;
                }
            }
            check_block(codes, make_group(queries, limits), "limit " + std::to_string(limit));
        }
    }
}

// Slots past nq are scanned but never reported, even when they would list every code.
TEST(ShieGroupScan, PaddingIsNotReported) {
    std::mt19937_64 rng(17);
    std::vector<vrex_fp> codes;
    for (uint32_t j = 0; j < kBlock; j++) codes.push_back(vrex_fp{{rng(), rng()}});
    for (uint32_t nq = 1; nq < kQ; nq++) {
        vrex_shie_group g{};
        g.nq = nq;
        for (uint32_t k = 0; k < kQ; k++) {
            const vrex_fp q = k < nq ? vrex_fp{{rng(), rng()}} : codes[k];
            g.q0[k] = q.w[0];
            g.q1[k] = q.w[1];
            g.limit[k] = k < nq ? 0 : 128;
        }
        for (const vrex_shie_group_kernel* kern : kernels()) {
            vrex_shie_group_hits hits;
            EXPECT_EQ(kern->block(codes.data(), kBlock, &g, &hits), 0u) << kern->name << ", nq " << nq;
        }
        check_block(codes, g, "padding");
    }
}

// Whole scans, as shie_scan_group runs them: blocks of a table whose size is not a multiple of the
// block, each query's limit shrinking to its best distance; the nearest (smallest distance, then lowest
// index) must equal the brute force's.
TEST(ShieGroupScan, WholeScanFindsTheNearest) {
    std::mt19937_64 rng(18);
    for (uint32_t n : {1u, 63u, 65u, 1000u, 4097u}) {
        std::vector<vrex_fp> codes;
        for (uint32_t j = 0; j < n; j++) codes.push_back(vrex_fp{{rng(), rng()}});
        for (uint32_t nq = 1; nq <= kQ; nq++) {
            std::vector<vrex_fp> queries;
            std::vector<uint32_t> radius;
            for (uint32_t k = 0; k < nq; k++) {
                queries.push_back(flip(codes[rng() % n], static_cast<uint32_t>(rng() % 24), rng));
                radius.push_back(k == 0 ? 0 : k == 1 ? 31 : k == 2 ? 128 : static_cast<uint32_t>(rng() % 32));
            }
            for (const vrex_shie_group_kernel* kern : kernels()) {
                vrex_shie_group g = make_group(queries, radius);
                std::vector<uint32_t> best(nq, UINT32_MAX), best_d(nq, UINT32_MAX);
                vrex_shie_group_hits hits;
                for (uint32_t i = 0; i < n; i += kBlock) {
                    const uint32_t m = std::min(kBlock, n - i);
                    const uint32_t mask = kern->block(codes.data() + i, m, &g, &hits);
                    for (uint32_t k = 0; k < nq; k++) {
                        if (!(mask >> k & 1)) continue;
                        for (uint32_t j = 0; j < hits.count[k]; j++) {
                            const uint32_t id = i + hits.idx[k][j];
                            const uint32_t d = distance(codes[id], g.q0[k], g.q1[k]);
                            ASSERT_LE(d, g.limit[k]);
                            if (d < best_d[k]) best_d[k] = d, best[k] = id;
                        }
                        g.limit[k] = best_d[k];
                    }
                }
                for (uint32_t k = 0; k < nq; k++) {
                    uint32_t want = UINT32_MAX, want_d = UINT32_MAX;
                    for (uint32_t j = 0; j < n; j++) {
                        const uint32_t d = distance(codes[j], queries[k].w[0], queries[k].w[1]);
                        if (d <= radius[k] && d < want_d) want_d = d, want = j;
                    }
                    EXPECT_EQ(best[k], want) << kern->name << ", n " << n << ", query " << k << " of " << nq;
                    EXPECT_EQ(best_d[k], want_d) << kern->name << ", n " << n << ", query " << k;
                }
            }
        }
    }
}

}  // namespace
