// SHIE property tests: random insert/remove sequences over many seeds, uniform and clustered
// codes. After every batch of operations, MIH lookups (nearest and range) must equal the brute
// force exactly, the brute force must equal an independent C++ oracle over a mirror of the live
// entries, and temporal lookups must agree with a std::map.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "test_shie_fixture.h"

using namespace vrex_test;

namespace {

struct Mirror {
    vrex_fp fp;
    uint32_t pool;
    uint16_t stream;
    uint8_t region;
    uint32_t frame;
};

using Key = std::tuple<uint16_t, uint8_t, uint32_t>;  // stream, region, frame

constexpr uint32_t kStreams = 6;
constexpr uint32_t kRegions = 3;  // few regions so that filters still leave matches
constexpr uint32_t kFrames = 64;

uint32_t pool_of(uint32_t stream) { return stream / 2; }

struct Workload {
    bool clustered;
    uint32_t capacity;
    std::vector<vrex_fp> centres;
};

class ShieProperty : public ::testing::TestWithParam<uint32_t> {
protected:
    void SetUp() override
    {
        uint32_t seed = GetParam();
        rng_.seed(seed * 7919u + 1);
        w_.clustered = seed % 2 == 1;
        w_.capacity = 32 + static_cast<uint32_t>(rng_() % 700);
        for (uint32_t i = 0; i < 1 + seed % 6; i++)
            w_.centres.push_back(random_fp(rng_));
        table_ = std::make_unique<OwnedShie>(w_.capacity);
        ASSERT_EQ(table_->init(), VREX_OK);
    }

    vrex_fp code()
    {
        if (!w_.clustered)
            return random_fp(rng_);
        const vrex_fp& c = w_.centres[rng_() % w_.centres.size()];
        return flip_bits(c, static_cast<uint32_t>(rng_() % 26), rng_);
    }

    // A query near live entries most of the time, so that radii 0..31 find something.
    vrex_fp query_code()
    {
        if (!live_.empty() && rng_() % 2) {
            auto it = live_.begin();
            std::advance(it, static_cast<long>(rng_() % live_.size()));
            return flip_bits(it->second.fp, static_cast<uint32_t>(rng_() % 24), rng_);
        }
        return code();
    }

    void step_insert()
    {
        Mirror m{code(), 0, static_cast<uint16_t>(rng_() % kStreams),
                 static_cast<uint8_t>(rng_() % kRegions), static_cast<uint32_t>(rng_() % kFrames)};
        m.pool = pool_of(m.stream);
        if (rng_() % 64 == 0)
            m.region = static_cast<uint8_t>(VREX_SHIE_REGIONS + rng_() % 8);
        uint32_t id = VREX_NIL;
        int ret = vrex_shie_insert(table_->get(), &m.fp, m.pool, m.stream, m.region, m.frame, 0, &id);
        Key key{m.stream, m.region, m.frame};
        if (m.region >= VREX_SHIE_REGIONS) {
            ASSERT_EQ(ret, VREX_EINVAL);
        } else if (keys_.count(key)) {
            ASSERT_EQ(ret, VREX_EEXIST);
        } else if (live_.size() == w_.capacity) {
            ASSERT_EQ(ret, VREX_ENOSPC);
        } else {
            ASSERT_EQ(ret, VREX_OK);
            ASSERT_LT(id, w_.capacity);
            ASSERT_EQ(live_.count(id), 0u);
            live_[id] = m;
            keys_[key] = id;
        }
        ASSERT_EQ(table_->get()->live, live_.size());
    }

    void step_remove()
    {
        if (live_.empty() || rng_() % 8 == 0) {
            uint32_t id = static_cast<uint32_t>(rng_() % (w_.capacity + 2));
            if (!live_.count(id)) {
                ASSERT_EQ(vrex_shie_remove(table_->get(), id), VREX_ENOENT);
            }
            return;
        }
        auto it = live_.begin();
        std::advance(it, static_cast<long>(rng_() % live_.size()));
        ASSERT_EQ(vrex_shie_remove(table_->get(), it->first), VREX_OK);
        keys_.erase(Key{it->second.stream, it->second.region, it->second.frame});
        live_.erase(it);
    }

    bool oracle_matches(const Mirror& m, const vrex_shie_query& q) const
    {
        if (m.region != q.region || vrex_fp_distance(&m.fp, &q.fp) > q.radius)
            return false;
        if (q.scope == VREX_SCOPE_STREAM ? m.stream != q.stream : m.pool != q.pool)
            return false;
        return q.frame_limit == VREX_NIL || m.frame < q.frame_limit;
    }

    // Nearest by (distance asc, frame desc, id asc), written without the library's code.
    std::pair<uint32_t, uint32_t> oracle_nearest(const vrex_shie_query& q) const
    {
        std::tuple<uint32_t, int64_t, uint32_t> best{UINT32_MAX, 0, VREX_NIL};
        for (const auto& [id, m] : live_)
            if (oracle_matches(m, q))
                best = std::min(best, std::tuple<uint32_t, int64_t, uint32_t>{
                                          vrex_fp_distance(&m.fp, &q.fp), -int64_t{m.frame}, id});
        return {std::get<2>(best), std::get<0>(best)};
    }

    std::vector<uint32_t> oracle_range(const vrex_shie_query& q) const
    {
        std::vector<uint32_t> ids;
        for (const auto& [id, m] : live_)
            if (oracle_matches(m, q))
                ids.push_back(id);
        return ids;
    }

    void check_queries(uint32_t n)
    {
        const vrex_shie_table* t = table_->get();
        std::vector<uint32_t> out(w_.capacity), out_brute(w_.capacity);
        for (uint32_t i = 0; i < n; i++) {
            uint16_t stream = static_cast<uint16_t>(rng_() % kStreams);
            uint32_t frame_limit = rng_() % 2 ? VREX_NIL : static_cast<uint32_t>(rng_() % (kFrames + 1));
            vrex_shie_query q = make_query(query_code(), stream, pool_of(stream),
                                           static_cast<uint8_t>(rng_() % kRegions),
                                           static_cast<uint32_t>(rng_() % (VREX_SHIE_MAX_RADIUS + 1)),
                                           static_cast<uint8_t>(rng_() % 2), frame_limit);
            SCOPED_TRACE("radius " + std::to_string(q.radius) + " scope " + std::to_string(q.scope));

            uint32_t d_brute = VREX_NIL;
            uint32_t brute = vrex_shie_find_similar_bruteforce(t, &q, &d_brute);
            auto [want, want_d] = oracle_nearest(q);
            ASSERT_EQ(brute, want);
            if (want != VREX_NIL) {
                ASSERT_EQ(d_brute, want_d);
            }
            uint32_t count_brute = vrex_shie_find_range_bruteforce(t, &q, out_brute.data(), w_.capacity);
            std::vector<uint32_t> got_brute(out_brute.begin(), out_brute.begin() + count_brute);
            std::vector<uint32_t> want_range = oracle_range(q);
            ASSERT_EQ(got_brute, want_range);  // the brute force reports in index order

            // MIH alone (fallback_pct 0), a fallback to the linear scan at the first bucket (1), the
            // default; probes free (probe_cost 0, the pre-change budget) or so dear that the scan takes
            // over after a few dozen probes, with a nearest match possibly found already; the scalar and
            // (where the CPU has it) the vector scan.
            struct Tuning {
                uint32_t pct, probe_cost, vector_scan;
            };
            const uint32_t cap = w_.capacity;
            const uint32_t dflt = VREX_SHIE_FALLBACK_PCT;
            const Tuning tunings[] = {
                {0, VREX_SHIE_PROBE_COST, 1}, {1, VREX_SHIE_PROBE_COST, 1}, {dflt, VREX_SHIE_PROBE_COST, 1},
                {dflt, 0, 0},                 {dflt, VREX_SHIE_PROBE_COST, 0}, {1, VREX_SHIE_PROBE_COST, 0},
                {dflt, cap / 400 + 1, 1},     {dflt, cap / 100 + 1, 0},
            };
            uint32_t count = 0;
            for (const Tuning& tu : tunings) {
                SCOPED_TRACE("fallback_pct " + std::to_string(tu.pct) + " probe_cost " +
                             std::to_string(tu.probe_cost) + " vector_scan " + std::to_string(tu.vector_scan));
                table_->get()->fallback_pct = tu.pct;
                table_->get()->probe_cost = tu.probe_cost;
                table_->get()->vector_scan = tu.vector_scan;
                uint32_t d_mih = VREX_NIL;
                ASSERT_EQ(vrex_shie_find_similar(t, &q, &d_mih), want);
                if (want != VREX_NIL) {
                    ASSERT_EQ(d_mih, want_d);
                }
                count = vrex_shie_find_range(t, &q, out.data(), w_.capacity);
                std::vector<uint32_t> got(out.begin(), out.begin() + count);
                std::sort(got.begin(), got.end());
                ASSERT_EQ(got, want_range);  // sorted, so a duplicate would show up here
            }

            // A short output buffer still counts every match and writes only real matches.
            uint32_t max = count / 2;
            std::fill(out.begin(), out.end(), VREX_NIL);
            ASSERT_EQ(vrex_shie_find_range(t, &q, out.data(), max), count);
            for (uint32_t k = 0; k < max; k++)
                ASSERT_TRUE(std::binary_search(want_range.begin(), want_range.end(), out[k]));
            if (max < w_.capacity) {
                ASSERT_EQ(out[max], VREX_NIL);
            }
        }
    }

    void check_temporal(uint32_t n)
    {
        for (uint32_t i = 0; i < n; i++) {
            Key key{static_cast<uint16_t>(rng_() % kStreams), static_cast<uint8_t>(rng_() % kRegions),
                    static_cast<uint32_t>(rng_() % kFrames)};
            auto it = keys_.find(key);
            uint32_t want = it == keys_.end() ? VREX_NIL : it->second;
            ASSERT_EQ(vrex_shie_find_temporal(table_->get(), std::get<0>(key), std::get<1>(key),
                                              std::get<2>(key)),
                      want);
        }
        for (const auto& [key, id] : keys_)
            ASSERT_EQ(vrex_shie_find_temporal(table_->get(), std::get<0>(key), std::get<1>(key),
                                              std::get<2>(key)),
                      id);
    }

    std::mt19937_64 rng_;
    Workload w_;
    std::unique_ptr<OwnedShie> table_;
    std::map<uint32_t, Mirror> live_;
    std::map<Key, uint32_t> keys_;
};

TEST_P(ShieProperty, MihEqualsBruteForceAndOraclesThroughInsertRemoveChurn)
{
    // Phases: fill past capacity (ENOSPC), churn with removals dominating, refill.
    const uint32_t insert_pct[] = {90, 35, 80};
    for (uint32_t pct : insert_pct) {
        for (uint32_t round = 0; round < 6; round++) {
            uint32_t ops = w_.capacity / 3 + 4;
            for (uint32_t k = 0; k < ops; k++) {
                if (rng_() % 100 < pct)
                    ASSERT_NO_FATAL_FAILURE(step_insert());
                else
                    ASSERT_NO_FATAL_FAILURE(step_remove());
            }
            ASSERT_NO_FATAL_FAILURE(check_queries(12));
            ASSERT_NO_FATAL_FAILURE(check_temporal(20));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Seeds, ShieProperty, ::testing::Range(0u, 60u),
                         [](const auto& info) {
                             return std::string(info.param % 2 ? "clustered" : "uniform") + "_seed" +
                                    std::to_string(info.param);
                         });

}  // namespace
