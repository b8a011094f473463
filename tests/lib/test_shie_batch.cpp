// vrex_shie_find_similar_batch against the one-at-a-time lookup (vrex_shie_find_similar) and the brute
// force, on uniform and clustered tables: every query of a batch must get the same entry and distance as
// it gets alone, a miss must leave its distance untouched, and the result must not depend on the
// queries' neighbours in the batch (radius, scope, region, frame limit and invalid queries mixed).
// Tunings force each path: MIH alone, a fallback at the first probe (every query of the batch then shares
// the group scan), the default budget, the scalar scan, and batching switched off.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_shie_fixture.h"

using namespace vrex_test;

namespace {

constexpr uint32_t kSentinel = 0xdeadbeefu;

struct Tuning {
    uint32_t pct, probe_cost, vector_scan, batch_scan;
};

class ShieBatch : public ::testing::TestWithParam<uint32_t> {
  protected:
    void fill(uint32_t capacity, bool clustered, uint32_t live) {
        table_ = std::make_unique<OwnedShie>(capacity);
        ASSERT_EQ(table_->init(), VREX_OK);
        for (uint32_t c = 0; c < 1 + GetParam() % 5; c++) centres_.push_back(random_fp(rng_));
        clustered_ = clustered;
        for (uint32_t i = 0; i < live; i++) {
            const uint16_t stream = static_cast<uint16_t>(rng_() % 4);
            uint32_t id = 0;
            int ret =
                vrex_shie_insert(table_->get(), &(codes_.emplace_back(code())), stream / 2u, stream,
                                 static_cast<uint8_t>(rng_() % 3), static_cast<uint32_t>(i / 12), 0, &id);
            // Frames repeat across streams and regions (ties broken by frame, then id); a taken key is
            // skipped.
            ASSERT_TRUE(ret == VREX_OK || ret == VREX_EEXIST) << ret;
        }
        // Holes: removed entries are zero codes in the dense array and must never be returned.
        for (uint32_t i = 0; i < live / 8; i++)
            vrex_shie_remove(table_->get(), static_cast<uint32_t>(rng_() % live));
    }

    vrex_fp code() {
        if (!clustered_) return random_fp(rng_);
        return flip_bits(centres_[rng_() % centres_.size()], static_cast<uint32_t>(rng_() % 12), rng_);
    }

    vrex_shie_query query() {
        const uint16_t stream = static_cast<uint16_t>(rng_() % 4);
        vrex_fp fp = rng_() % 3
                         ? flip_bits(codes_[rng_() % codes_.size()], static_cast<uint32_t>(rng_() % 26), rng_)
                         : code();
        uint32_t radius = rng_() % 4 ? VREX_SHIE_DEFAULT_RADIUS : static_cast<uint32_t>(rng_() % 32);
        if (rng_() % 40 == 0) radius = VREX_SHIE_MAX_RADIUS + 1;  // invalid: matches nothing
        uint8_t region = static_cast<uint8_t>(rng_() % 3);
        if (rng_() % 50 == 0) region = VREX_SHIE_REGIONS;  // invalid
        const uint32_t limit = rng_() % 3 ? VREX_NIL : static_cast<uint32_t>(rng_() % 40);
        return make_query(fp, stream, stream / 2u, region, radius, static_cast<uint8_t>(rng_() % 2), limit);
    }

    void check(uint32_t batches) {
        const uint32_t cap = table_->get()->capacity;
        const Tuning tunings[] = {
            {VREX_SHIE_FALLBACK_PCT, VREX_SHIE_PROBE_COST, 1, 1},  // defaults
            {0, VREX_SHIE_PROBE_COST, 1, 1},                       // MIH only, never a scan
            {VREX_SHIE_FALLBACK_PCT, cap, 1, 1},                   // every query defers to the group scan
            {VREX_SHIE_FALLBACK_PCT, cap, 0, 1},                   // the same with the scalar scan
            {VREX_SHIE_FALLBACK_PCT, cap / 64 + 1, 1, 1},          // defers after a few probes, with a best
            {VREX_SHIE_FALLBACK_PCT, VREX_SHIE_PROBE_COST, 1, 0},  // batching off
        };
        for (uint32_t b = 0; b < batches; b++) {
            const uint32_t n = 1 + static_cast<uint32_t>(rng_() % 37);
            std::vector<vrex_shie_query> qs;
            for (uint32_t i = 0; i < n; i++) qs.push_back(query());
            for (const Tuning& tu : tunings) {
                SCOPED_TRACE("batch " + std::to_string(b) + " of " + std::to_string(n) + ", fallback_pct " +
                             std::to_string(tu.pct) + " probe_cost " + std::to_string(tu.probe_cost) +
                             " vector_scan " + std::to_string(tu.vector_scan) + " batch_scan " +
                             std::to_string(tu.batch_scan));
                vrex_shie_table* t = table_->get();
                t->fallback_pct = tu.pct;
                t->probe_cost = tu.probe_cost;
                t->vector_scan = tu.vector_scan;
                t->batch_scan = tu.batch_scan;
                std::vector<uint32_t> ids(n, kSentinel), dist(n, kSentinel);
                uint32_t want_hits = 0;
                const uint32_t hits = vrex_shie_find_similar_batch(t, qs.data(), n, ids.data(), dist.data());
                for (uint32_t i = 0; i < n; i++) {
                    SCOPED_TRACE("query " + std::to_string(i) + " radius " + std::to_string(qs[i].radius));
                    uint32_t d1 = kSentinel, d2 = kSentinel;
                    const uint32_t one = vrex_shie_find_similar(t, &qs[i], &d1);
                    ASSERT_EQ(vrex_shie_find_similar_bruteforce(t, &qs[i], &d2), one);
                    ASSERT_EQ(ids[i], one);
                    ASSERT_EQ(dist[i], d1);  // the sentinel on a miss: written on a hit only
                    want_hits += one != VREX_NIL;
                }
                ASSERT_EQ(hits, want_hits);
                // Without a distance array.
                std::vector<uint32_t> ids2(n, kSentinel);
                ASSERT_EQ(vrex_shie_find_similar_batch(t, qs.data(), n, ids2.data(), nullptr), hits);
                ASSERT_EQ(ids2, ids);
            }
        }
    }

    std::mt19937_64 rng_{GetParam() * 104729ull + 7};
    std::unique_ptr<OwnedShie> table_;
    std::vector<vrex_fp> centres_, codes_;
    bool clustered_ = false;
};

TEST_P(ShieBatch, SmallTablesEqualOneAtATime) {
    const uint32_t cap = 40 + static_cast<uint32_t>(rng_() % 600);
    ASSERT_NO_FATAL_FAILURE(fill(cap, GetParam() % 2 == 1, cap - static_cast<uint32_t>(rng_() % 20)));
    ASSERT_NO_FATAL_FAILURE(check(30));
}

// Large enough that the default budget defers most uniform lookups and the scan runs over many blocks.
class ShieBatchLarge : public ShieBatch {};

TEST_P(ShieBatchLarge, DeviceSizedTablesEqualOneAtATime) {
    ASSERT_NO_FATAL_FAILURE(fill(8192, GetParam() % 2 == 1, 8000));
    ASSERT_NO_FATAL_FAILURE(check(4));
}

TEST(ShieBatchApi, EmptyBatchAndDefaults) {
    OwnedShie t(64);
    ASSERT_EQ(t.init(), VREX_OK);
    EXPECT_EQ(t->batch_scan, 1u);
    EXPECT_EQ(t->vector_l2, uint32_t{VREX_SHIE_VECTOR_L2});
    EXPECT_EQ(vrex_shie_find_similar_batch(t.get(), nullptr, 0, nullptr, nullptr), 0u);
}

std::string seed_name(const ::testing::TestParamInfo<uint32_t>& i) {
    return (i.param % 2 ? "clustered_" : "uniform_") + std::to_string(i.param);
}

INSTANTIATE_TEST_SUITE_P(Seeds, ShieBatch, ::testing::Range(0u, 16u), seed_name);
INSTANTIATE_TEST_SUITE_P(Seeds, ShieBatchLarge, ::testing::Range(0u, 6u), seed_name);

}  // namespace
