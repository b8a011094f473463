// The SHIE's nearest-first query (vrex_shie_find_nearest) and its tier filter (vrex_shie_query.tiers):
// up to N entries within the radius in the order of lib/shie_table.h (distance, then the most recent
// frame, then the lowest index), equal to an exhaustive oracle on random clustered tables through
// both the MIH probes and the dense fallback; the first answer is vrex_shie_find_similar's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "test_shie_fixture.h"

using namespace vrex_test;

namespace {

struct Mirror {
    uint32_t id;
    vrex_fp fp;
    uint32_t frame;
    uint16_t stream;
    uint32_t pool;
    uint8_t region;
    uint32_t tier;
};

uint32_t dist(const vrex_fp& a, const vrex_fp& b) {
    return static_cast<uint32_t>(__builtin_popcountll(a.w[0] ^ b.w[0]) +
                                 __builtin_popcountll(a.w[1] ^ b.w[1]));
}

// Every entry the query accepts, sorted in the nearest order, cut at @max.
std::vector<std::pair<uint32_t, uint32_t>> oracle(const std::vector<Mirror>& es, const vrex_shie_query& q,
                                                  uint32_t max) {
    std::vector<std::tuple<uint32_t, int64_t, uint32_t>> all;  // distance, -frame, id
    for (const Mirror& e : es) {
        const uint32_t d = dist(e.fp, q.fp);
        if (d > q.radius || e.region != q.region) continue;
        if (q.scope == VREX_SCOPE_STREAM ? e.stream != q.stream : e.pool != q.pool) continue;
        if (q.frame_limit != VREX_NIL && e.frame >= q.frame_limit) continue;
        if (q.tiers && !(q.tiers & e.tier)) continue;
        all.emplace_back(d, -int64_t{e.frame}, e.id);
    }
    std::sort(all.begin(), all.end());
    std::vector<std::pair<uint32_t, uint32_t>> out;
    for (std::size_t i = 0; i < all.size() && i < max; i++)
        out.emplace_back(std::get<2>(all[i]), std::get<0>(all[i]));
    return out;
}

std::vector<std::pair<uint32_t, uint32_t>> nearest(const vrex_shie_table* t, const vrex_shie_query& q,
                                                   uint32_t max, bool brute) {
    uint32_t entry[VREX_SHIE_MAX_NEAREST + 1], d[VREX_SHIE_MAX_NEAREST + 1];
    const uint32_t n = brute ? vrex_shie_find_nearest_bruteforce(t, &q, max, entry, d)
                             : vrex_shie_find_nearest(t, &q, max, entry, d);
    std::vector<std::pair<uint32_t, uint32_t>> out;
    for (uint32_t i = 0; i < n; i++) out.emplace_back(entry[i], d[i]);
    return out;
}

// Clustered codes (a few bases plus flips): many entries share a neighbourhood, as frames of one
// shot do, so queries have many candidates within the radius and ties in distance.
class Clustered {
  public:
    Clustered(uint32_t capacity, uint32_t seed) : t_(capacity), rng_(seed) {
        for (int i = 0; i < 5; i++) bases_.push_back(random_fp(rng_));
    }
    vrex_fp near(uint32_t max_flips) {
        return flip_bits(bases_[rng_() % bases_.size()], static_cast<uint32_t>(rng_() % (max_flips + 1)),
                         rng_);
    }
    void fill(uint32_t n) {
        ASSERT_EQ(t_.init(), 0);
        for (uint32_t i = 0; i < n; i++) {
            Mirror e{};
            e.fp = near(14);
            e.frame = static_cast<uint32_t>(rng_() % 64);
            e.stream = static_cast<uint16_t>(rng_() % 3);
            e.pool = e.stream % 2;
            e.region = static_cast<uint8_t>(rng_() % 4);
            e.tier = rng_() % 3 ? VREX_SHIE_TIER_DEVICE : VREX_SHIE_TIER_HOST;
            const int rc =
                e.tier == VREX_SHIE_TIER_HOST
                    ? vrex_shie_insert_host(t_.get(), &e.fp, e.pool, e.stream, e.region, e.frame, i, &e.id)
                    : vrex_shie_insert(t_.get(), &e.fp, e.pool, e.stream, e.region, e.frame, i, &e.id);
            if (rc == VREX_EEXIST) continue;  // (stream, frame, region) taken: no second device entry
            ASSERT_EQ(rc, 0);
            es_.push_back(e);
        }
    }
    vrex_shie_query query() {
        vrex_shie_query q = make_query(
            rng_() % 6 ? near(20) : random_fp(rng_), static_cast<uint16_t>(rng_() % 3),
            static_cast<uint32_t>(rng_() % 2), static_cast<uint8_t>(rng_() % 4),
            static_cast<uint32_t>(rng_() % (VREX_SHIE_MAX_RADIUS + 1)), static_cast<uint8_t>(rng_() % 2),
            rng_() % 2 ? VREX_NIL : static_cast<uint32_t>(rng_() % 64));
        q.tiers = static_cast<uint32_t>(rng_() % 4);
        return q;
    }
    // Random queries: nearest, its brute-force twin and the oracle agree; the first answer is the
    // single nearest lookup's.
    void check(uint32_t queries) {
        for (uint32_t i = 0; i < queries; i++) {
            const vrex_shie_query q = query();
            const uint32_t max = 1 + static_cast<uint32_t>(rng_() % VREX_SHIE_MAX_NEAREST);
            const auto want = oracle(es_, q, max);
            ASSERT_EQ(nearest(t_.get(), q, max, false), want) << "query " << i << " max " << max;
            ASSERT_EQ(nearest(t_.get(), q, max, true), want) << "query " << i << " (brute force)";
            uint32_t d = 0;
            const uint32_t first = vrex_shie_find_similar(t_.get(), &q, &d);
            ASSERT_EQ(first, want.empty() ? VREX_NIL : want[0].first) << "query " << i;
            many_ += want.size() > 1;
        }
        EXPECT_GT(many_, queries / 6) << "the tables must give queries several candidates";
    }
    vrex_shie_table* t() { return t_.get(); }

  private:
    OwnedShie t_;
    std::mt19937_64 rng_;
    std::vector<vrex_fp> bases_;
    std::vector<Mirror> es_;
    uint32_t many_ = 0;
};

TEST(ShieNearest, EqualsTheOracleThroughTheProbes) {
    Clustered c(512, 11);
    c.fill(300);
    c.check(600);
}

TEST(ShieNearest, EqualsTheOracleThroughTheDenseFallback) {
    // Thousands of near-duplicate codes crowd the buckets: the searches finish as the dense scan.
    Clustered c(8192, 12);
    c.fill(6000);
    vrex_shie_paths paths{};
    c.t()->paths = &paths;
    c.check(300);
    EXPECT_GT(paths.crowd_scan + paths.budget_scan, 0u);
}

// The case of issue 22 item 1: the nearest entry is not the one the caller wants (its guard refuses
// it); the farther ones come after it, nearest first, and only the tiers asked for.
TEST(ShieNearest, ReturnsFartherEntriesAfterTheNearestAndOnlyTheTiersAskedFor) {
    OwnedShie t(64);
    ASSERT_EQ(t.init(), 0);
    const vrex_fp base{{0x0123'4567'89ab'cdefull, 0xfedc'ba98'7654'3210ull}};
    uint32_t dev_near, host_mid, dev_far, host_far;
    ASSERT_EQ(vrex_shie_insert(t.get(), &base, 0, 0, 2, 10, 100, &dev_near), 0);
    const vrex_fp mid = with_bits(base, {1, 70});
    ASSERT_EQ(vrex_shie_insert_host(t.get(), &mid, 0, 0, 2, 3, 101, &host_mid), 0);
    const vrex_fp far = with_bits(base, {1, 2, 3, 90});
    ASSERT_EQ(vrex_shie_insert(t.get(), &far, 0, 0, 2, 11, 102, &dev_far), 0);
    ASSERT_EQ(vrex_shie_insert_host(t.get(), &far, 0, 0, 2, 4, 103, &host_far), 0);

    vrex_shie_query q = make_query(base, 0, 0, 2, 8);
    using V = std::vector<std::pair<uint32_t, uint32_t>>;
    // Equal distance: the more recent frame first (the device entry of frame 11).
    EXPECT_EQ(nearest(t.get(), q, 8, false), (V{{dev_near, 0}, {host_mid, 2}, {dev_far, 4}, {host_far, 4}}));
    EXPECT_EQ(nearest(t.get(), q, 2, false), (V{{dev_near, 0}, {host_mid, 2}}));
    q.tiers = VREX_SHIE_TIER_HOST;
    EXPECT_EQ(nearest(t.get(), q, 8, false), (V{{host_mid, 2}, {host_far, 4}}));
    uint32_t d = 0;
    EXPECT_EQ(vrex_shie_find_similar(t.get(), &q, &d), host_mid) << "the single lookup filters too";
    q.tiers = VREX_SHIE_TIER_DEVICE;
    EXPECT_EQ(nearest(t.get(), q, 8, false), (V{{dev_near, 0}, {dev_far, 4}}));
    q.tiers = VREX_SHIE_TIERS;
    EXPECT_EQ(nearest(t.get(), q, 3, false).size(), 3u);
    q.radius = 3;
    EXPECT_EQ(nearest(t.get(), q, 8, false), (V{{dev_near, 0}, {host_mid, 2}})) << "the radius bounds them";
    // Batched single lookups filter by tier as well.
    q.radius = 8;
    vrex_shie_query qs[2] = {q, q};
    qs[0].tiers = VREX_SHIE_TIER_HOST;
    qs[1].tiers = VREX_SHIE_TIER_DEVICE;
    uint32_t entry[2], dd[2];
    EXPECT_EQ(vrex_shie_find_similar_batch(t.get(), qs, 2, entry, dd), 2u);
    EXPECT_EQ(entry[0], host_mid);
    EXPECT_EQ(entry[1], dev_near);
}

TEST(ShieNearest, RefusesCountsOutsideTheCapAndUnknownTiers) {
    OwnedShie t(64);
    ASSERT_EQ(t.init(), 0);
    const vrex_fp fp{{1, 2}};
    ASSERT_EQ(vrex_shie_insert(t.get(), &fp, 0, 0, 0, 0, 1, nullptr), 0);
    vrex_shie_query q = make_query(fp, 0, 0, 0, 4);
    uint32_t entry[VREX_SHIE_MAX_NEAREST + 1];
    EXPECT_EQ(vrex_shie_find_nearest(t.get(), &q, 0, entry, nullptr), 0u);
    EXPECT_EQ(vrex_shie_find_nearest(t.get(), &q, VREX_SHIE_MAX_NEAREST + 1, entry, nullptr), 0u);
    EXPECT_EQ(vrex_shie_find_nearest(t.get(), &q, 1, entry, nullptr), 1u);
    q.tiers = 4;
    EXPECT_EQ(vrex_shie_find_nearest(t.get(), &q, 1, entry, nullptr), 0u);
    EXPECT_EQ(vrex_shie_find_similar(t.get(), &q, nullptr), VREX_NIL);
}

}  // namespace
