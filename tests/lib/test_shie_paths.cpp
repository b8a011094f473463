// The path counters (vrex_shie_table.paths) the benchmarks print next to each SHIE figure: every lookup
// is counted once, on the path that answered it. Each case forces one path with the table's tunings:
// probes alone (no fallback), a budget fallback, a crowded stage 0, a batch's shared group scan, and the
// brute-force reference; without a counter block nothing is counted and lookups still work.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "test_shie_fixture.h"

using namespace vrex_test;

namespace {

class ShiePaths : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(table_.init(), VREX_OK);
        for (uint32_t i = 0; i < kLive; i++) {
            codes_.push_back(random_fp(rng_));
            ASSERT_EQ(vrex_shie_insert(table_.get(), &codes_.back(), 0, 0, 0, i, i, nullptr), VREX_OK);
        }
        table_.get()->paths = &paths_;
    }

    // Queries near stored codes: each one has a hit within the default radius.
    std::vector<vrex_shie_query> near_queries(uint32_t n) {
        std::vector<vrex_shie_query> q;
        for (uint32_t i = 0; i < n; i++)
            q.push_back(make_query(flip_bits(codes_[rng_() % kLive], 4, rng_), 0, 0, 0,
                                   VREX_SHIE_DEFAULT_RADIUS));
        return q;
    }

    static constexpr uint32_t kCapacity = 4096;
    static constexpr uint32_t kLive = 2000;
    OwnedShie table_{kCapacity};
    std::mt19937_64 rng_{26};
    std::vector<vrex_fp> codes_;
    vrex_shie_paths paths_{};
};

TEST_F(ShiePaths, ProbesAloneWhenTheFallbackIsOff) {
    table_.get()->fallback_pct = 0;
    for (const auto& q : near_queries(10)) {
        uint32_t d = 0;
        EXPECT_NE(vrex_shie_find_similar(table_.get(), &q, &d), VREX_NIL);
    }
    EXPECT_EQ(paths_.probes, 10u);
    EXPECT_EQ(paths_.crowd_scan + paths_.budget_scan + paths_.group_scan + paths_.bruteforce, 0u);
}

TEST_F(ShiePaths, BudgetFallbackCounted) {
    // A probe costs more than the whole budget: the first planned bucket beyond stage 0 ends the probes.
    table_.get()->fallback_pct = 1;
    table_.get()->probe_cost = kCapacity;
    for (const auto& q : near_queries(10)) {
        uint32_t d = 0;
        EXPECT_NE(vrex_shie_find_similar(table_.get(), &q, &d), VREX_NIL);
    }
    EXPECT_EQ(paths_.probes + paths_.crowd_scan, 0u);
    EXPECT_EQ(paths_.budget_scan, 10u);
    EXPECT_EQ(paths_.group_scan, 0u);  // one query per call: nothing to share
}

TEST_F(ShiePaths, CrowdedStageZeroFallsBackBeforeProbing) {
    // 200 entries of two codes: the query's stage-0 buckets hold 100 records each, about 1.4k records
    // with the probe costs, above budget / SHIE_CROWD_DIV (512) but within the budget (the 4096 entries
    // the scan reads at 100 %, the scalar scan's so that the CPU's vector unit does not change it; the
    // other 3896 entries are uniform codes, in the crowded buckets all but never).
    OwnedShie crowded(kCapacity);
    ASSERT_EQ(crowded.init(), VREX_OK);
    const vrex_fp a = random_fp(rng_), b = random_fp(rng_);
    for (uint32_t i = 0; i < 200; i++)
        ASSERT_EQ(vrex_shie_insert(crowded.get(), i % 2 ? &a : &b, 0, 0, 0, i, i, nullptr), VREX_OK);
    for (uint32_t i = 200; i < kCapacity; i++) {
        const vrex_fp u = random_fp(rng_);
        ASSERT_EQ(vrex_shie_insert(crowded.get(), &u, 0, 0, 1, i, i, nullptr), VREX_OK);
    }
    ASSERT_EQ(crowded->top, kCapacity) << "the budget is the scan of every entry below the mark";
    vrex_shie_paths p{};
    crowded.get()->paths = &p;
    crowded.get()->fallback_pct = 100;
    crowded.get()->vector_scan = 0;
    const vrex_shie_query q = make_query(flip_bits(a, 3, rng_), 0, 0, 0, VREX_SHIE_DEFAULT_RADIUS);
    uint32_t d = 0;
    EXPECT_NE(vrex_shie_find_similar(crowded.get(), &q, &d), VREX_NIL);
    EXPECT_EQ(p.crowd_scan, 1u);
    EXPECT_EQ(p.probes + p.budget_scan, 0u);
}

TEST_F(ShiePaths, BatchFallbacksShareTheGroupScan) {
    table_.get()->fallback_pct = 1;
    table_.get()->probe_cost = kCapacity;
    const auto q = near_queries(VREX_SHIE_SCAN_GROUP);
    std::vector<uint32_t> e(q.size()), d(q.size());
    EXPECT_EQ(vrex_shie_find_similar_batch(table_.get(), q.data(), static_cast<uint32_t>(q.size()), e.data(),
                                           d.data()),
              q.size());
    EXPECT_EQ(paths_.crowd_scan + paths_.budget_scan, q.size());
    EXPECT_EQ(paths_.group_scan, q.size());
}

TEST_F(ShiePaths, BruteForceCountedApart) {
    const auto q = near_queries(3);
    for (const auto& x : q) {
        uint32_t d = 0;
        EXPECT_NE(vrex_shie_find_similar_bruteforce(table_.get(), &x, &d), VREX_NIL);
    }
    EXPECT_EQ(paths_.bruteforce, 3u);
    EXPECT_EQ(paths_.probes + paths_.crowd_scan + paths_.budget_scan, 0u);
}

TEST_F(ShiePaths, NothingCountedWithoutACounterBlock) {
    table_.get()->paths = nullptr;
    const auto q = near_queries(4);
    uint32_t d = 0;
    EXPECT_NE(vrex_shie_find_similar(table_.get(), &q[0], &d), VREX_NIL);
    EXPECT_EQ(paths_.probes + paths_.crowd_scan + paths_.budget_scan + paths_.bruteforce, 0u);
}

}  // namespace
