// SHIE table unit tests: arena and init errors, insert/remove error paths (and that a failed call
// changes nothing), temporal lookups, similarity ordering and filters, range results, id reuse,
// and bucket-chunk overflow at every chunk geometry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "test_shie_fixture.h"

using namespace vrex_test;

namespace {

constexpr vrex_fp kZero{{0, 0}};

std::vector<uint32_t> range_ids(const vrex_shie_table* t, const vrex_shie_query& q, bool brute)
{
    std::vector<uint32_t> out(t->capacity);
    uint32_t n = brute ? vrex_shie_find_range_bruteforce(t, &q, out.data(), t->capacity)
                       : vrex_shie_find_range(t, &q, out.data(), t->capacity);
    out.resize(std::min(n, t->capacity));
    std::sort(out.begin(), out.end());
    return out;
}

TEST(ShieArena, ZeroAndOversizedCapacityAreRejected)
{
    EXPECT_EQ(vrex_shie_arena_size(0), 0u);
    EXPECT_EQ(vrex_shie_arena_size(VREX_SHIE_MAX_CAPACITY + 1), 0u);
    EXPECT_GT(vrex_shie_arena_size(1), 0u);
    vrex_shie_table t{};
    std::vector<std::byte> arena(vrex_shie_arena_size(1));
    EXPECT_EQ(vrex_shie_init(&t, 0, arena.data(), arena.size()), VREX_EINVAL);
    EXPECT_EQ(vrex_shie_init(&t, VREX_SHIE_MAX_CAPACITY + 1, arena.data(), arena.size()), VREX_EINVAL);
}

TEST(ShieArena, ShortOrMissingArenaIsEnomem)
{
    vrex_shie_table t{};
    std::size_t need = vrex_shie_arena_size(100);
    std::vector<std::byte> arena(need);
    EXPECT_EQ(vrex_shie_init(&t, 100, arena.data(), need - 1), VREX_ENOMEM);
    EXPECT_EQ(vrex_shie_init(&t, 100, nullptr, need), VREX_ENOMEM);
    EXPECT_EQ(vrex_shie_init(&t, 100, arena.data(), need), VREX_OK);
}

TEST(ShieArena, UnalignedArenaWorksAndStaysInside)
{
    OwnedShie t(50, 3);
    ASSERT_EQ(t.init(), VREX_OK);
    for (uint32_t i = 0; i < 50; i++)
        ASSERT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 0, 0, i, i, nullptr), VREX_OK);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t->e) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t->mih) % 64, 0u);
}

TEST(ShieInsert, IdsAreAscendingAndTemporalLookupFindsThem)
{
    OwnedShie t(16);
    ASSERT_EQ(t.init(), VREX_OK);
    std::mt19937_64 rng(1);
    for (uint32_t i = 0; i < 16; i++) {
        vrex_fp fp = random_fp(rng);
        uint32_t id = VREX_NIL;
        ASSERT_EQ(vrex_shie_insert(t.get(), &fp, 7, 3, static_cast<uint8_t>(i % 16), 100 + i, 900 + i, &id),
                  VREX_OK);
        EXPECT_EQ(id, i);
        EXPECT_EQ(t->e[id].block, 900 + i);
        EXPECT_EQ(t->e[id].pool, 7u);
        EXPECT_TRUE(vrex_fp_equal(&t->e[id].fp, &fp));
    }
    EXPECT_EQ(t->live, 16u);
    for (uint32_t i = 0; i < 16; i++)
        EXPECT_EQ(vrex_shie_find_temporal(t.get(), 3, static_cast<uint8_t>(i % 16), 100 + i), i);
    EXPECT_EQ(vrex_shie_find_temporal(t.get(), 4, 0, 100), VREX_NIL);
    EXPECT_EQ(vrex_shie_find_temporal(t.get(), 3, 1, 100), VREX_NIL);
    EXPECT_EQ(vrex_shie_find_temporal(t.get(), 3, 0, 99), VREX_NIL);
    EXPECT_EQ(vrex_shie_find_temporal(t.get(), 3, 16, 100), VREX_NIL);
}

TEST(ShieInsert, RegionOutOfRangeIsEinvalAndChangesNothing)
{
    OwnedShie t(4);
    ASSERT_EQ(t.init(), VREX_OK);
    uint32_t id = 1234;
    EXPECT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 0, 16, 0, 0, &id), VREX_EINVAL);
    EXPECT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 0, 255, 0, 0, &id), VREX_EINVAL);
    EXPECT_EQ(id, 1234u);
    EXPECT_EQ(t->live, 0u);
    EXPECT_EQ(t->free_head, 0u);
}

TEST(ShieInsert, DuplicateKeyIsEexistButOtherKeysAreFine)
{
    OwnedShie t(8);
    ASSERT_EQ(t.init(), VREX_OK);
    ASSERT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 1, 2, 3, 10, nullptr), VREX_OK);
    vrex_fp other{{5, 6}};
    EXPECT_EQ(vrex_shie_insert(t.get(), &other, 9, 1, 2, 3, 11, nullptr), VREX_EEXIST);
    EXPECT_EQ(t->live, 1u);
    EXPECT_EQ(t->e[0].block, 10u);
    EXPECT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 1, 3, 3, 12, nullptr), VREX_OK);  // region
    EXPECT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 2, 2, 3, 13, nullptr), VREX_OK);  // stream
    EXPECT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 1, 2, 4, 14, nullptr), VREX_OK);  // frame
    EXPECT_EQ(t->live, 4u);
}

TEST(ShieInsert, FullTableIsEnospcAndKeepsContentsIntact)
{
    constexpr uint32_t kCap = 8;
    OwnedShie t(kCap);
    ASSERT_EQ(t.init(), VREX_OK);
    std::mt19937_64 rng(2);
    std::vector<vrex_fp> fps;
    for (uint32_t i = 0; i < kCap; i++) {
        fps.push_back(random_fp(rng));
        ASSERT_EQ(vrex_shie_insert(t.get(), &fps[i], 0, 0, 1, i, i, nullptr), VREX_OK);
    }
    vrex_fp extra = random_fp(rng);
    uint32_t id = 77;
    EXPECT_EQ(vrex_shie_insert(t.get(), &extra, 0, 0, 1, 100, 100, &id), VREX_ENOSPC);
    EXPECT_EQ(id, 77u);
    EXPECT_EQ(t->live, kCap);
    EXPECT_EQ(vrex_shie_find_temporal(t.get(), 0, 1, 100), VREX_NIL);
    for (uint32_t i = 0; i < kCap; i++) {
        EXPECT_EQ(vrex_shie_find_temporal(t.get(), 0, 1, i), i);
        vrex_shie_query q = make_query(fps[i], 0, 0, 1, 0);
        uint32_t d = 99;
        EXPECT_EQ(vrex_shie_find_similar(t.get(), &q, &d), i);
        EXPECT_EQ(d, 0u);
    }
    vrex_shie_query q = make_query(extra, 0, 0, 1, 0);
    EXPECT_EQ(vrex_shie_find_similar(t.get(), &q, nullptr), VREX_NIL);
    // A duplicate on a full table reports the duplicate, not the lack of space.
    EXPECT_EQ(vrex_shie_insert(t.get(), &extra, 0, 0, 1, 3, 100, nullptr), VREX_EEXIST);
}

TEST(ShieRemove, TwiceOrOutOfRangeIsEnoent)
{
    OwnedShie t(4);
    ASSERT_EQ(t.init(), VREX_OK);
    uint32_t id;
    ASSERT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 0, 0, 0, 0, &id), VREX_OK);
    EXPECT_EQ(vrex_shie_remove(t.get(), id), VREX_OK);
    EXPECT_EQ(vrex_shie_remove(t.get(), id), VREX_ENOENT);
    EXPECT_EQ(vrex_shie_remove(t.get(), 1), VREX_ENOENT);  // never used
    EXPECT_EQ(vrex_shie_remove(t.get(), 4), VREX_ENOENT);
    EXPECT_EQ(vrex_shie_remove(t.get(), VREX_NIL), VREX_ENOENT);
    EXPECT_EQ(t->live, 0u);
}

TEST(ShieRemove, RemovedEntryIsNeverReturned)
{
    OwnedShie t(8);
    ASSERT_EQ(t.init(), VREX_OK);
    vrex_fp fp{{0x1234, 0x5678}};
    uint32_t a, b;
    ASSERT_EQ(vrex_shie_insert(t.get(), &fp, 0, 0, 5, 1, 0, &a), VREX_OK);
    ASSERT_EQ(vrex_shie_insert(t.get(), &fp, 0, 0, 5, 2, 0, &b), VREX_OK);
    ASSERT_EQ(vrex_shie_remove(t.get(), b), VREX_OK);
    vrex_shie_query q = make_query(fp, 0, 0, 5, 31);
    EXPECT_EQ(vrex_shie_find_similar(t.get(), &q, nullptr), a);
    EXPECT_EQ(range_ids(t.get(), q, false), std::vector<uint32_t>{a});
    EXPECT_EQ(vrex_shie_find_temporal(t.get(), 0, 5, 2), VREX_NIL);
    ASSERT_EQ(vrex_shie_remove(t.get(), a), VREX_OK);
    EXPECT_EQ(vrex_shie_find_similar(t.get(), &q, nullptr), VREX_NIL);
    EXPECT_EQ(vrex_shie_find_range(t.get(), &q, nullptr, 0), 0u);
    // The key is free again.
    EXPECT_EQ(vrex_shie_insert(t.get(), &fp, 0, 0, 5, 2, 0, nullptr), VREX_OK);
}

TEST(ShieRemove, FreedIdsAreReusedLastFreedFirstInBothInstances)
{
    OwnedShie t1(6), t2(6);
    ASSERT_EQ(t1.init(), VREX_OK);
    ASSERT_EQ(t2.init(), VREX_OK);
    for (OwnedShie* t : {&t1, &t2}) {
        for (uint32_t i = 0; i < 6; i++)
            ASSERT_EQ(vrex_shie_insert(t->get(), &kZero, 0, 0, 0, i, i, nullptr), VREX_OK);
        ASSERT_EQ(vrex_shie_remove(t->get(), 2), VREX_OK);
        ASSERT_EQ(vrex_shie_remove(t->get(), 4), VREX_OK);
    }
    for (uint32_t expect : {4u, 2u}) {
        uint32_t id1, id2;
        ASSERT_EQ(vrex_shie_insert(t1.get(), &kZero, 0, 0, 0, 10 + expect, 0, &id1), VREX_OK);
        ASSERT_EQ(vrex_shie_insert(t2.get(), &kZero, 0, 0, 0, 10 + expect, 0, &id2), VREX_OK);
        EXPECT_EQ(id1, expect);
        EXPECT_EQ(id2, expect);
    }
}

TEST(ShieClear, EmptiesTableAndRestartsIds)
{
    OwnedShie t(4);
    ASSERT_EQ(t.init(), VREX_OK);
    for (uint32_t i = 0; i < 4; i++)
        ASSERT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 0, 0, i, i, nullptr), VREX_OK);
    vrex_shie_clear(t.get());
    EXPECT_EQ(t->live, 0u);
    EXPECT_EQ(vrex_shie_find_temporal(t.get(), 0, 0, 1), VREX_NIL);
    vrex_shie_query q = make_query(kZero, 0, 0, 0, 31);
    EXPECT_EQ(vrex_shie_find_similar(t.get(), &q, nullptr), VREX_NIL);
    EXPECT_EQ(vrex_shie_find_range(t.get(), &q, nullptr, 0), 0u);
    uint32_t id;
    ASSERT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 0, 0, 1, 0, &id), VREX_OK);
    EXPECT_EQ(id, 0u);
}

// The high-water mark (vrex_shie_table.top): ids come from a LIFO free list seeded in order, so the
// ids in use stay packed below the highest id ever used, and the dense scans read no further.
TEST(ShieTop, TracksTheHighestIdUsedSinceTheLastClear) {
    OwnedShie t(64);
    ASSERT_EQ(t.init(), VREX_OK);
    EXPECT_EQ(t->top, 0u);
    for (uint32_t i = 0; i < 10; i++)
        ASSERT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 0, 0, i, i, nullptr), VREX_OK);
    EXPECT_EQ(t->top, 10u);
    ASSERT_EQ(vrex_shie_remove(t.get(), 9), VREX_OK);
    ASSERT_EQ(vrex_shie_remove(t.get(), 3), VREX_OK);
    EXPECT_EQ(t->top, 10u) << "a removal leaves the mark: the scan still covers the ids below it";
    uint32_t id = 0;
    ASSERT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 0, 0, 20, 0, &id), VREX_OK);
    EXPECT_EQ(id, 3u) << "the last freed id first";
    ASSERT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 0, 0, 21, 0, &id), VREX_OK);
    EXPECT_EQ(id, 9u);
    EXPECT_EQ(t->top, 10u);
    ASSERT_EQ(vrex_shie_insert(t.get(), &kZero, 0, 0, 0, 22, 0, &id), VREX_OK);
    EXPECT_EQ(t->top, 11u);
    vrex_shie_clear(t.get());
    EXPECT_EQ(t->top, 0u);
}

// Entries at or above the mark are never read by the probes' fallback scan, the batch's group scan
// or the range scan; the brute-force reference still reads the whole capacity. Shown with an entry
// planted above the mark by hand (a state the table never reaches itself): only the reference sees it.
TEST(ShieTop, FallbackAndGroupScansStopAtTheMark) {
    constexpr uint32_t kCap = 1024;
    OwnedShie t(kCap);
    ASSERT_EQ(t.init(), VREX_OK);
    std::mt19937_64 rng(8);
    for (uint32_t i = 0; i < 20; i++) {
        const vrex_fp fp = random_fp(rng);
        ASSERT_EQ(vrex_shie_insert(t.get(), &fp, 0, 0, 0, i, i, nullptr), VREX_OK);
    }
    ASSERT_EQ(t->top, 20u);
    const vrex_fp planted_fp = random_fp(rng);
    const uint32_t planted = 700;
    vrex_shie_entry& e = t->e[planted];
    e.fp = planted_fp;
    e.frame = 99;
    e.valid = 1;
    // The dense copy the scans stream (shie_internal.h: right after the entry array, aligned).
    const std::size_t entries = (std::size_t{kCap} * sizeof(vrex_shie_entry) + 63) / 64 * 64;
    auto* fps = reinterpret_cast<vrex_fp*>(reinterpret_cast<std::byte*>(t->e) + entries);
    fps[planted] = planted_fp;
    // Every lookup falls back to the scan at once (a probe costs more than the whole budget).
    t->fallback_pct = 1;
    t->probe_cost = kCap;
    vrex_shie_paths paths{};
    t->paths = &paths;
    const vrex_shie_query q = make_query(planted_fp, 0, 0, 0, 8);
    uint32_t d = 0;
    EXPECT_EQ(vrex_shie_find_similar_bruteforce(t.get(), &q, &d), planted)
        << "the reference reads everything";
    EXPECT_EQ(vrex_shie_find_similar(t.get(), &q, &d), VREX_NIL);
    EXPECT_EQ(paths.budget_scan + paths.crowd_scan, 1u) << "answered by the fallback scan";
    vrex_shie_query batch[4] = {q, q, q, q};
    uint32_t ids[4];
    EXPECT_EQ(vrex_shie_find_similar_batch(t.get(), batch, 4, ids, nullptr), 0u);
    EXPECT_EQ(paths.group_scan, 4u) << "answered by the shared group scan";
    uint32_t out[4];
    EXPECT_EQ(vrex_shie_find_range_bruteforce(t.get(), &q, out, 4), 1u);
    EXPECT_EQ(vrex_shie_find_range(t.get(), &q, out, 4), 0u);
}

class ShieSimilar : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(t_.init(), VREX_OK); }
    uint32_t insert(const vrex_fp& fp, uint32_t pool, uint16_t stream, uint8_t region, uint32_t frame)
    {
        uint32_t id = VREX_NIL;
        EXPECT_EQ(vrex_shie_insert(t_.get(), &fp, pool, stream, region, frame, 0, &id), VREX_OK);
        return id;
    }
    // Both implementations must agree; returns the id and sets *d.
    uint32_t similar(const vrex_shie_query& q, uint32_t* d)
    {
        uint32_t d_brute = 555, d_mih = 666;
        uint32_t brute = vrex_shie_find_similar_bruteforce(t_.get(), &q, &d_brute);
        uint32_t mih = vrex_shie_find_similar(t_.get(), &q, &d_mih);
        EXPECT_EQ(mih, brute);
        if (brute != VREX_NIL) {
            EXPECT_EQ(d_mih, d_brute);
        }
        *d = d_mih;
        return mih;
    }
    OwnedShie t_{64};
    vrex_fp base_{{0x0123456789abcdefull, 0xfedcba9876543210ull}};
};

TEST_F(ShieSimilar, NearestDistanceWinsThenRecentFrameThenLowIndex)
{
    uint32_t far = insert(with_bits(base_, {1, 2, 3}), 0, 0, 0, 50);
    uint32_t d;
    vrex_shie_query q = make_query(base_, 0, 0, 0, 20);
    EXPECT_EQ(similar(q, &d), far);
    EXPECT_EQ(d, 3u);
    uint32_t near_old = insert(with_bits(base_, {70, 100}), 0, 0, 0, 10);
    uint32_t near_new = insert(with_bits(base_, {5, 127}), 0, 0, 0, 11);
    EXPECT_EQ(similar(q, &d), near_new);
    EXPECT_EQ(d, 2u);
    EXPECT_NE(near_old, near_new);
    // Same distance and frame in two streams of one pool: the lower index wins.
    uint32_t tie_a = insert(with_bits(base_, {9}), 4, 1, 0, 20);
    uint32_t tie_b = insert(with_bits(base_, {64}), 4, 2, 0, 20);
    ASSERT_LT(tie_a, tie_b);
    vrex_shie_query pool_q = make_query(base_, 1, 4, 0, 20, VREX_SCOPE_POOL);
    EXPECT_EQ(similar(pool_q, &d), tie_a);
    EXPECT_EQ(d, 1u);
    ASSERT_EQ(vrex_shie_remove(t_.get(), tie_a), VREX_OK);
    EXPECT_EQ(similar(pool_q, &d), tie_b);
}

TEST_F(ShieSimilar, RadiusIsInclusiveAndExact)
{
    vrex_fp at20 = base_;
    for (uint32_t b = 0; b < 20; b++)
        at20 = with_bits(at20, {b * 6 + 1});
    uint32_t id = insert(at20, 0, 0, 3, 1);
    uint32_t d;
    EXPECT_EQ(similar(make_query(base_, 0, 0, 3, 20), &d), id);
    EXPECT_EQ(d, 20u);
    EXPECT_EQ(similar(make_query(base_, 0, 0, 3, 19), &d), VREX_NIL);
}

TEST_F(ShieSimilar, ScopeRegionAndFrameLimitFilter)
{
    uint32_t s0 = insert(with_bits(base_, {3}), 1, 0, 2, 5);
    uint32_t s1 = insert(base_, 1, 1, 2, 6);       // same pool, other stream, exact
    uint32_t other_pool = insert(base_, 2, 2, 2, 7);
    insert(base_, 1, 0, 3, 8);                      // other region
    uint32_t d;
    EXPECT_EQ(similar(make_query(base_, 0, 1, 2, 10, VREX_SCOPE_STREAM), &d), s0);
    EXPECT_EQ(d, 1u);
    EXPECT_EQ(similar(make_query(base_, 0, 1, 2, 10, VREX_SCOPE_POOL), &d), s1);
    EXPECT_EQ(d, 0u);
    EXPECT_EQ(similar(make_query(base_, 2, 2, 2, 10, VREX_SCOPE_POOL), &d), other_pool);
    EXPECT_EQ(similar(make_query(base_, 0, 1, 2, 10, VREX_SCOPE_POOL, 6), &d), s0);  // frame < 6
    EXPECT_EQ(similar(make_query(base_, 0, 1, 2, 10, VREX_SCOPE_POOL, 5), &d), VREX_NIL);
    EXPECT_EQ(similar(make_query(base_, 0, 1, 4, 10, VREX_SCOPE_POOL), &d), VREX_NIL);
    // Frame VREX_NIL - 1 is below any limit except an explicit one.
    uint32_t late = insert(base_, 9, 9, 9, VREX_NIL - 1);
    EXPECT_EQ(similar(make_query(base_, 9, 9, 9, 0), &d), late);
    EXPECT_EQ(similar(make_query(base_, 9, 9, 9, 0, VREX_SCOPE_STREAM, VREX_NIL - 1), &d), VREX_NIL);
}

TEST_F(ShieSimilar, InvalidQueriesMatchNothing)
{
    insert(base_, 0, 0, 0, 0);
    uint32_t d = 42;
    vrex_shie_query q = make_query(base_, 0, 0, 0, VREX_SHIE_MAX_RADIUS);
    EXPECT_EQ(similar(q, &d), 0u);
    q.radius = VREX_SHIE_MAX_RADIUS + 1;
    d = 42;
    EXPECT_EQ(vrex_shie_find_similar(t_.get(), &q, &d), VREX_NIL);
    EXPECT_EQ(vrex_shie_find_similar_bruteforce(t_.get(), &q, &d), VREX_NIL);
    EXPECT_EQ(d, 42u);
    uint32_t out[4];
    EXPECT_EQ(vrex_shie_find_range(t_.get(), &q, out, 4), 0u);
    EXPECT_EQ(vrex_shie_find_range_bruteforce(t_.get(), &q, out, 4), 0u);
    q = make_query(base_, 0, 0, 0, 5, 2);  // unknown scope
    EXPECT_EQ(vrex_shie_find_similar(t_.get(), &q, &d), VREX_NIL);
    EXPECT_EQ(vrex_shie_find_range(t_.get(), &q, out, 4), 0u);
    q = make_query(base_, 0, 0, 16, 5);  // region out of range
    EXPECT_EQ(vrex_shie_find_similar(t_.get(), &q, &d), VREX_NIL);
}

TEST_F(ShieSimilar, RangeReportsEveryMatchOnceAndCountsBeyondMax)
{
    std::vector<uint32_t> want;
    // Codes that sit in the probed buckets of several tables at once (distance 0..3 spread).
    want.push_back(insert(base_, 0, 0, 1, 1));
    want.push_back(insert(with_bits(base_, {0}), 0, 0, 1, 2));
    want.push_back(insert(with_bits(base_, {0, 16, 32, 48, 64, 80, 96, 112}), 0, 0, 1, 3));
    want.push_back(insert(with_bits(base_, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}), 0, 0, 1, 4));
    insert(with_bits(base_, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), 0, 0, 1, 5);  // d 13
    vrex_shie_query q = make_query(base_, 0, 0, 1, 12);
    EXPECT_EQ(range_ids(t_.get(), q, false), want);
    EXPECT_EQ(range_ids(t_.get(), q, true), want);
    uint32_t out[2] = {VREX_NIL, VREX_NIL};
    EXPECT_EQ(vrex_shie_find_range(t_.get(), &q, out, 1), 4u);
    EXPECT_NE(std::find(want.begin(), want.end(), out[0]), want.end());
    EXPECT_EQ(out[1], VREX_NIL);
    EXPECT_EQ(vrex_shie_find_range(t_.get(), &q, nullptr, 0), 4u);
}

// One bucket far beyond a chunk, at every chunk geometry (capacity picks 1, 2, 4, 10 or 20 records
// per chunk): identical substrings, removal in random order, results checked after every step.
class ShieChunkGeometry : public ::testing::TestWithParam<uint32_t> {};

TEST_P(ShieChunkGeometry, CrowdedBucketSurvivesRandomRemoval)
{
    OwnedShie t(GetParam());
    ASSERT_EQ(t.init(), VREX_OK);
    EXPECT_EQ(t->fallback_pct, uint32_t{VREX_SHIE_FALLBACK_PCT});
    EXPECT_EQ(t->probe_cost, uint32_t{VREX_SHIE_PROBE_COST});
    EXPECT_EQ(t->vector_scan, uint32_t{1});
    t->fallback_pct = 0;  // the crowded bucket must be walked, not replaced by a linear scan
    std::mt19937_64 rng(GetParam());
    vrex_fp centre = random_fp(rng);
    constexpr uint32_t kN = 90;
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < kN; i++) {
        // Flip only bits of word 1 beyond substring 4, so tables 0..4 keep one crowded bucket.
        vrex_fp fp = centre;
        fp.w[1] ^= (rng() & 0xffffffffffff0000ull) & ((1ull << (i % 40 + 16)) | (1ull << 50));
        uint32_t id;
        ASSERT_EQ(vrex_shie_insert(t.get(), &fp, 0, 0, 0, i, i, &id), VREX_OK);
        ids.push_back(id);
    }
    std::shuffle(ids.begin(), ids.end(), rng);
    for (uint32_t step = 0; step <= kN; step++) {
        for (uint32_t radius : {0u, 2u, 9u, 31u}) {
            vrex_shie_query q = make_query(centre, 0, 0, 0, radius);
            ASSERT_EQ(range_ids(t.get(), q, false), range_ids(t.get(), q, true))
                << "step " << step << " radius " << radius;
            uint32_t d1 = 0, d2 = 0;
            ASSERT_EQ(vrex_shie_find_similar(t.get(), &q, &d1),
                      vrex_shie_find_similar_bruteforce(t.get(), &q, &d2));
            ASSERT_EQ(d1, d2);
        }
        if (step < kN) {
            ASSERT_EQ(vrex_shie_remove(t.get(), ids[step]), VREX_OK);
        }
    }
    EXPECT_EQ(t->live, 0u);
    // Every overflow chunk handed out is back on the free chain (nothing leaked).
    const uint32_t kHeads = t->mih_heads;
    uint32_t free_chunks = 0;
    for (uint32_t c = t->chunk_free; c != 0; free_chunks++) {
        const uint8_t* chunk = t->mih + static_cast<std::size_t>(c) * t->chunk_size;
        // Chunk layout: u64 word[K], u32 id[K], u32 next.
        std::memcpy(&c, chunk + t->chunk_slots * (sizeof(uint64_t) + sizeof(uint32_t)), sizeof(c));
    }
    EXPECT_EQ(free_chunks, t->chunk_top - kHeads);
    EXPECT_GT(t->chunk_top, kHeads);
}

INSTANTIATE_TEST_SUITE_P(Capacities, ShieChunkGeometry, ::testing::Values(100u, 100000u, 200000u, 400000u, 700000u),
                         [](const auto& info) { return "cap" + std::to_string(info.param); });

}  // namespace
