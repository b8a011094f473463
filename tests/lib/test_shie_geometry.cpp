// SHIE's multi-index-hashing geometry, sized to the capacity at init (vrex_shie_mih_tables) or forced
// (vrex_shie_init_geometry): the rule, argument checks, the substring layout (every bit of the
// fingerprint in exactly one substring, each inside one 64-bit word), and exactness at capacities that
// select different geometries and under every forced geometry: MIH (nearest, batch, range) against the
// brute force for radius 0..31, scopes, regions and frame limits, plus adversarial "tight" codes that are
// first reachable at the very last stage their distance allows (a stage bound off by one misses them).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test_shie_fixture.h"

using namespace vrex_test;

namespace {

// The layout the header documents, computed here independently of the library: ceil(m / 2) substrings
// in word 0, floor(m / 2) in word 1, a word of p substrings gives the first 64 % p one extra bit.
struct Sub {
    uint32_t word, shift, bits;
};

std::vector<Sub> expected_layout(uint32_t m) {
    std::vector<Sub> subs;
    for (uint32_t w = 0; w < 2; w++) {
        const uint32_t p = w ? m / 2 : (m + 1) / 2;
        uint32_t shift = 0;
        for (uint32_t i = 0; i < p; i++) {
            const uint32_t bits = 64 / p + (i < 64 % p ? 1 : 0);
            subs.push_back({w, shift, bits});
            shift += bits;
        }
    }
    return subs;
}

TEST(ShieGeometry, RuleSizesTheSubstringsToTheCapacity) {
    // b = clamp(ceil(log2 N) - 2, 10, 16), m = 2 * ceil(64 / b).
    EXPECT_EQ(vrex_shie_mih_tables(1), 14u);
    EXPECT_EQ(vrex_shie_mih_tables(1024), 14u);
    EXPECT_EQ(vrex_shie_mih_tables(4096), 14u);
    EXPECT_EQ(vrex_shie_mih_tables(4097), 12u);
    EXPECT_EQ(vrex_shie_mih_tables(16384), 12u);
    EXPECT_EQ(vrex_shie_mih_tables(16385), 10u);
    EXPECT_EQ(vrex_shie_mih_tables(100000), 10u);
    EXPECT_EQ(vrex_shie_mih_tables(131072), 10u);
    EXPECT_EQ(vrex_shie_mih_tables(131073), 8u);
    EXPECT_EQ(vrex_shie_mih_tables(1000000), 8u);
    EXPECT_EQ(vrex_shie_mih_tables(VREX_SHIE_MAX_CAPACITY), 8u);
    for (uint32_t cap : {1u, 100u, 4096u, 16384u, 65536u, 1000000u}) {
        EXPECT_GE(vrex_shie_mih_tables(cap), static_cast<uint32_t>(VREX_MIH_MIN_TABLES));
        EXPECT_LE(vrex_shie_mih_tables(cap), static_cast<uint32_t>(VREX_MIH_MAX_TABLES));
        EXPECT_EQ(vrex_shie_arena_size(cap), vrex_shie_arena_size_geometry(cap, vrex_shie_mih_tables(cap)));
    }
}

TEST(ShieGeometry, ForcedGeometryArgumentsAreChecked) {
    for (uint32_t bad : {0u, 1u, 7u, 17u, 64u, 0xffffffffu}) {
        SCOPED_TRACE("tables " + std::to_string(bad));
        EXPECT_EQ(vrex_shie_arena_size_geometry(1000, bad), 0u);
        std::vector<std::byte> arena(vrex_shie_arena_size_geometry(1000, VREX_MIH_MAX_TABLES) + 64);
        vrex_shie_table t{};
        EXPECT_EQ(vrex_shie_init_geometry(&t, 1000, bad, arena.data(), arena.size()), VREX_EINVAL);
    }
    std::vector<std::byte> arena(vrex_shie_arena_size_geometry(1000, 12));
    vrex_shie_table t{};
    EXPECT_EQ(vrex_shie_init_geometry(&t, 0, 12, arena.data(), arena.size()), VREX_EINVAL);
    EXPECT_EQ(vrex_shie_init_geometry(&t, VREX_SHIE_MAX_CAPACITY + 1, 12, arena.data(), arena.size()),
              VREX_EINVAL);
    EXPECT_EQ(vrex_shie_init_geometry(&t, 1000, 12, arena.data(), arena.size() - 1), VREX_ENOMEM);
    EXPECT_EQ(vrex_shie_init_geometry(&t, 1000, 12, nullptr, arena.size()), VREX_ENOMEM);
    EXPECT_EQ(vrex_shie_init_geometry(&t, 1000, 12, arena.data(), arena.size()), VREX_OK);
    EXPECT_EQ(t.mih_tables, 12u);
}

TEST(ShieGeometry, SubstringsTileTheFingerprint) {
    for (uint32_t m = VREX_MIH_MIN_TABLES; m <= VREX_MIH_MAX_TABLES; m++) {
        SCOPED_TRACE("tables " + std::to_string(m));
        OwnedShie t(3000, 0, m);
        ASSERT_EQ(t.init(), VREX_OK);
        ASSERT_EQ(t->mih_tables, m);
        const auto want = expected_layout(m);
        uint64_t covered[2] = {0, 0};
        uint32_t base = 0;
        for (uint32_t j = 0; j < m; j++) {
            EXPECT_EQ(t->mih_word[j], want[j].word);
            EXPECT_EQ(t->mih_shift[j], want[j].shift);
            EXPECT_EQ(t->mih_bits[j], want[j].bits);
            EXPECT_LE(t->mih_bits[j], static_cast<uint32_t>(VREX_MIH_MAX_BITS));
            EXPECT_GE(t->mih_bits[j], 8u);
            EXPECT_LE(t->mih_shift[j] + t->mih_bits[j], 64u);  // inside one word
            EXPECT_EQ(t->mih_base[j], base);
            base += 1u << t->mih_bits[j];
            const uint64_t mask = (t->mih_bits[j] == 64 ? ~0ull : ((1ull << t->mih_bits[j]) - 1))
                                  << t->mih_shift[j];
            EXPECT_EQ(covered[t->mih_word[j]] & mask, 0u) << "substrings overlap";
            covered[t->mih_word[j]] |= mask;
        }
        EXPECT_EQ(covered[0], ~0ull);
        EXPECT_EQ(covered[1], ~0ull);
        EXPECT_EQ(t->mih_heads, base);
    }
}

// A table filled with a mix of uniform and clustered codes over several streams, pools, regions and
// frames, then queried through every MIH path and compared with the brute force.
struct Case {
    uint32_t capacity;
    uint32_t tables;  // 0: the capacity's own geometry
    uint32_t seed;
};

std::string case_name(const Case& c) {
    return "cap" + std::to_string(c.capacity) + "_m" + (c.tables ? std::to_string(c.tables) : "auto") + "_s" +
           std::to_string(c.seed);
}

class ShieGeometryExact : public ::testing::TestWithParam<Case> {
  protected:
    void SetUp() override {
        const Case& c = GetParam();
        rng_.seed(c.seed * 104729u + c.capacity);
        table_ = std::make_unique<OwnedShie>(c.capacity, 0, c.tables);
        ASSERT_EQ(table_->init(), VREX_OK);
        if (c.tables) {
            ASSERT_EQ(table_->get()->mih_tables, c.tables);
        } else {
            ASSERT_EQ(table_->get()->mih_tables, vrex_shie_mih_tables(c.capacity));
        }
        for (uint32_t i = 0; i < 4; i++) centres_.push_back(random_fp(rng_));
        const uint32_t live = c.capacity - c.capacity / 16;
        for (uint32_t i = 0; i < live; i++) {
            const uint16_t stream = static_cast<uint16_t>(rng_() % 4);
            const vrex_fp fp = rng_() % 4 ? random_fp(rng_)
                                          : flip_bits(centres_[rng_() % centres_.size()],
                                                      static_cast<uint32_t>(rng_() % 16), rng_);
            uint32_t id = 0;
            const int ret = vrex_shie_insert(table_->get(), &fp, stream / 2u, stream,
                                             static_cast<uint8_t>(rng_() % 3), i, 0, &id);
            ASSERT_EQ(ret, VREX_OK);
            codes_.push_back(fp);
        }
        for (uint32_t i = 0; i < live / 10; i++)
            vrex_shie_remove(table_->get(), static_cast<uint32_t>(rng_() % live));
    }

    vrex_shie_query query(uint32_t radius) {
        const uint16_t stream = static_cast<uint16_t>(rng_() % 4);
        const vrex_fp fp =
            rng_() % 4 ? flip_bits(codes_[rng_() % codes_.size()], static_cast<uint32_t>(rng_() % 34), rng_)
                       : random_fp(rng_);
        const uint32_t limit = rng_() % 3 ? VREX_NIL : static_cast<uint32_t>(rng_() % (codes_.size() + 2));
        return make_query(fp, stream, stream / 2u, static_cast<uint8_t>(rng_() % 3), radius,
                          static_cast<uint8_t>(rng_() % 2), limit);
    }

    // Every path against the brute force: MIH alone (fallback 0), the default budget, probes free.
    void check(const vrex_shie_query& q) {
        vrex_shie_table* t = table_->get();
        const uint32_t cap = t->capacity;
        std::vector<uint32_t> out(cap), want_out(cap);
        uint32_t want_d = VREX_NIL;
        const uint32_t want = vrex_shie_find_similar_bruteforce(t, &q, &want_d);
        const uint32_t want_n = vrex_shie_find_range_bruteforce(t, &q, want_out.data(), cap);
        std::vector<uint32_t> want_set(want_out.begin(), want_out.begin() + want_n);
        std::sort(want_set.begin(), want_set.end());
        const uint32_t tunings[][2] = {{0, VREX_SHIE_PROBE_COST},
                                       {VREX_SHIE_FALLBACK_PCT, VREX_SHIE_PROBE_COST},
                                       {VREX_SHIE_FALLBACK_PCT, 0}};
        for (const auto& tu : tunings) {
            SCOPED_TRACE("fallback_pct " + std::to_string(tu[0]) + " probe_cost " + std::to_string(tu[1]));
            t->fallback_pct = tu[0];
            t->probe_cost = tu[1];
            uint32_t d = VREX_NIL;
            ASSERT_EQ(vrex_shie_find_similar(t, &q, &d), want);
            if (want != VREX_NIL) {
                ASSERT_EQ(d, want_d);
            }
            const uint32_t n = vrex_shie_find_range(t, &q, out.data(), cap);
            std::vector<uint32_t> got(out.begin(), out.begin() + n);
            std::sort(got.begin(), got.end());
            ASSERT_EQ(got, want_set);
        }
        t->fallback_pct = VREX_SHIE_FALLBACK_PCT;
        t->probe_cost = VREX_SHIE_PROBE_COST;
    }

    std::mt19937_64 rng_;
    std::unique_ptr<OwnedShie> table_;
    std::vector<vrex_fp> centres_;
    std::vector<vrex_fp> codes_;
};

TEST_P(ShieGeometryExact, MihEqualsBruteForceAtEveryRadius) {
    const uint32_t per_radius = GetParam().capacity > 50000 ? 2 : 4;
    for (uint32_t radius = 0; radius <= VREX_SHIE_MAX_RADIUS; radius++) {
        SCOPED_TRACE("radius " + std::to_string(radius));
        for (uint32_t i = 0; i < per_radius; i++) {
            const vrex_shie_query q = query(radius);
            ASSERT_NO_FATAL_FAILURE(check(q));
        }
    }
}

TEST_P(ShieGeometryExact, BatchEqualsOneByOne) {
    vrex_shie_table* t = table_->get();
    for (uint32_t pct : {0u, static_cast<uint32_t>(VREX_SHIE_FALLBACK_PCT)}) {
        t->fallback_pct = pct;
        std::vector<vrex_shie_query> qs;
        for (uint32_t i = 0; i < 40; i++)
            qs.push_back(query(rng_() % 2 ? VREX_SHIE_DEFAULT_RADIUS : static_cast<uint32_t>(rng_() % 32)));
        std::vector<uint32_t> e(qs.size()), d(qs.size(), 0xdeadbeefu);
        vrex_shie_find_similar_batch(t, qs.data(), static_cast<uint32_t>(qs.size()), e.data(), d.data());
        for (size_t i = 0; i < qs.size(); i++) {
            uint32_t want_d = 0xdeadbeefu;
            ASSERT_EQ(e[i], vrex_shie_find_similar_bruteforce(t, &qs[i], &want_d)) << "query " << i;
            ASSERT_EQ(d[i], want_d) << "query " << i;
        }
    }
    t->fallback_pct = VREX_SHIE_FALLBACK_PCT;
}

// A code first reachable at stage (s, j) with distance exactly m * s + j: substring distances s + 1 on
// tables 0..j-1, s on table j and on every later one. A query of radius m * s + j must find it (MIH
// alone: fallback_pct 0), and it is the only entry near the query, so a search that stops one stage
// early (a stage bound off by one) returns nothing.
TEST_P(ShieGeometryExact, TightCodesAtTheLastStageAreFound) {
    vrex_shie_table* t = table_->get();
    const uint32_t m = t->mih_tables;
    t->fallback_pct = 0;
    uint32_t frame = 1u << 20;  // keys no fill entry uses
    for (uint32_t s = 0; s * m <= VREX_SHIE_MAX_RADIUS; s++) {
        for (uint32_t j = 0; j < m && s * m + j <= VREX_SHIE_MAX_RADIUS; j++) {
            SCOPED_TRACE("stage (" + std::to_string(s) + ", " + std::to_string(j) + ")");
            const vrex_fp q = random_fp(rng_);
            vrex_fp c = q;
            for (uint32_t i = 0; i < m; i++) {
                const uint32_t flips = i < j ? s + 1 : s;
                std::vector<uint32_t> bits(t->mih_bits[i]);
                for (uint32_t b = 0; b < bits.size(); b++) bits[b] = b;
                std::shuffle(bits.begin(), bits.end(), rng_);
                for (uint32_t f = 0; f < flips; f++)
                    c.w[t->mih_word[i]] ^= 1ull << (t->mih_shift[i] + bits[f]);
            }
            const uint32_t dist = s * m + j;
            ASSERT_EQ(vrex_fp_distance(&c, &q), dist);
            // Its own region (7) and stream (9): no fill entry passes the filters.
            uint32_t id = VREX_NIL;
            ASSERT_EQ(vrex_shie_insert(t, &c, 5, 9, 7, frame++, 0, &id), VREX_OK);
            for (uint32_t radius : {dist, dist + 1, dist ? dist - 1 : 0u}) {
                if (radius > VREX_SHIE_MAX_RADIUS) continue;
                SCOPED_TRACE("radius " + std::to_string(radius));
                const vrex_shie_query qq = make_query(q, 9, 5, 7, radius);
                const bool in = radius >= dist;
                uint32_t d = VREX_NIL;
                ASSERT_EQ(vrex_shie_find_similar(t, &qq, &d), in ? id : VREX_NIL);
                if (in) {
                    ASSERT_EQ(d, dist);
                }
                uint32_t e = VREX_NIL;
                vrex_shie_find_similar_batch(t, &qq, 1, &e, nullptr);
                ASSERT_EQ(e, in ? id : VREX_NIL);
                uint32_t out = VREX_NIL;
                ASSERT_EQ(vrex_shie_find_range(t, &qq, &out, 1), in ? 1u : 0u);
                if (in) {
                    ASSERT_EQ(out, id);
                }
            }
            ASSERT_EQ(vrex_shie_remove(t, id), VREX_OK);
        }
    }
    t->fallback_pct = VREX_SHIE_FALLBACK_PCT;
}

std::vector<Case> cases() {
    std::vector<Case> v;
    // Capacities whose own geometry differs: 1k and 4k (m = 14), 8k and 16k (12), 100k (10), 128k + 1 (8).
    for (uint32_t cap : {1000u, 4096u, 8192u, 16384u, 100000u, 131073u}) v.push_back({cap, 0, 1});
    v.push_back({1000, 0, 2});
    v.push_back({16384, 0, 2});
    // Every forced geometry on a small table (odd m splits the words unevenly).
    for (uint32_t m = VREX_MIH_MIN_TABLES; m <= VREX_MIH_MAX_TABLES; m++) v.push_back({3000, m, 3});
    v.push_back({16384, 8, 4});  // the fixed 8 x 16 geometry at the device's capacity
    return v;
}

INSTANTIATE_TEST_SUITE_P(Geometries, ShieGeometryExact, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return case_name(info.param); });

}  // namespace
