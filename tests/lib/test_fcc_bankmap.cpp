// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// FCC bank-group mapping: grouping by Hamming radius, group opening, fallbacks, pools.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>

extern "C" {
#include "fcc_bankmap.h"
}

namespace {

vrex_fp random_fp(uint32_t seed) {
    std::mt19937_64 rng(seed);
    vrex_fp fp{};
    fp.w[0] = rng();
    fp.w[1] = rng();
    return fp;
}

// @fp with its lowest @n bits (across both words) flipped: exactly @n bits away.
vrex_fp flip(vrex_fp fp, u32 n) {
    for (u32 i = 0; i < n; i++) fp.w[i / 64] ^= 1ull << (i % 64);
    return fp;
}

struct Fixture : ::testing::Test {
    vrex_bankmap bm{};

    void SetUp() override { ASSERT_EQ(vrex_bankmap_init(&bm, 16, 4), VREX_OK); }

    vrex_bank_assign assign(const vrex_fp& fp, u32 pool) {
        vrex_bank_assign a{};
        vrex_bankmap_assign(&bm, &fp, pool, &a);
        return a;
    }

    void set_group_bytes(u32 group, u64 bytes) {
        for (u32 b = 0; b < bm.group_banks; b++)
            bm.bank_bytes[group * bm.group_banks + b] = b == 0 ? bytes : 0;
    }
};

using BankmapTest = Fixture;

}  // namespace

TEST(BankmapInit, RejectsBadGeometry) {
    vrex_bankmap bm{};
    EXPECT_EQ(vrex_bankmap_init(nullptr, 16, 4), VREX_EINVAL);
    EXPECT_EQ(vrex_bankmap_init(&bm, 0, 1), VREX_EINVAL);
    EXPECT_EQ(vrex_bankmap_init(&bm, 16, 0), VREX_EINVAL);
    EXPECT_EQ(vrex_bankmap_init(&bm, 16, 3), VREX_EINVAL);
    EXPECT_EQ(vrex_bankmap_init(&bm, 8, 16), VREX_EINVAL);
    EXPECT_EQ(vrex_bankmap_init(&bm, VREX_MAX_BANKS + 1, 1), VREX_EINVAL);
    EXPECT_EQ(vrex_bankmap_init(&bm, VREX_MAX_BANKS, 1), VREX_OK);
    EXPECT_EQ(bm.ngroups, u32{VREX_MAX_GROUPS});
}

TEST(BankmapInit, SplitsBanksIntoContiguousFreeGroups) {
    vrex_bankmap bm;
    std::memset(&bm, 0xff, sizeof(bm));
    ASSERT_EQ(vrex_bankmap_init(&bm, 12, 3), VREX_OK);
    EXPECT_EQ(bm.ngroups, 4u);
    for (u32 g = 0; g < bm.ngroups; g++) {
        EXPECT_EQ(bm.group[g].in_use, 0u);
        EXPECT_EQ(vrex_bankmap_group_bytes(&bm, g), 0u);
    }
    vrex_bank_assign a{};
    const vrex_fp fp = random_fp(1);
    vrex_bankmap_assign(&bm, &fp, 0, &a);
    EXPECT_EQ(a.group, 0u);
    EXPECT_EQ(a.bank_first, 0u);
    EXPECT_EQ(a.bank_count, 3u);
}

TEST_F(BankmapTest, SimilarFramesShareAGroup) {
    const vrex_fp scene = random_fp(10);
    const vrex_bank_assign first = assign(scene, 1);
    EXPECT_EQ(first.group, 0u);
    EXPECT_EQ(first.opened, 1u);
    EXPECT_EQ(first.distance, 0u);

    const vrex_bank_assign near = assign(flip(scene, 5), 1);
    EXPECT_EQ(near.group, 0u);
    EXPECT_EQ(near.opened, 0u);
    EXPECT_EQ(near.conflict, 0u);
    EXPECT_EQ(near.distance, 5u);
    EXPECT_EQ(near.bank_first, 0u);
    EXPECT_EQ(near.bank_count, 4u);
    EXPECT_EQ(bm.group[0].frames, 2u);
}

TEST_F(BankmapTest, RadiusIsExclusive) {
    const vrex_fp scene = random_fp(11);
    assign(scene, 1);
    EXPECT_EQ(assign(flip(scene, VREX_GROUP_RADIUS - 1), 1).group, 0u);
    const vrex_bank_assign cut = assign(flip(scene, VREX_GROUP_RADIUS), 1);
    EXPECT_EQ(cut.group, 1u);
    EXPECT_EQ(cut.opened, 1u);
    EXPECT_EQ(cut.bank_first, 4u);
}

TEST_F(BankmapTest, NewSceneOpensLowestFreeGroupAndNearestGroupWins) {
    const vrex_fp a = random_fp(20), b = random_fp(21), c = random_fp(22);
    EXPECT_EQ(assign(a, 1).group, 0u);
    EXPECT_EQ(assign(b, 1).group, 1u);
    EXPECT_EQ(assign(c, 1).group, 2u);
    // Representatives stay those of the opening frames: drifting frames still go to the nearest.
    EXPECT_EQ(assign(flip(b, 3), 1).group, 1u);
    EXPECT_EQ(assign(flip(a, 9), 1).group, 0u);
    vrex_fp key_a;
    vrex_pool_key(&a, 1, &key_a);
    EXPECT_TRUE(vrex_fp_equal(&bm.group[0].rep, &key_a));
}

TEST_F(BankmapTest, NearestOfTwoCloseGroupsTieGoesToLowestIndex) {
    // Two representatives 16 bits apart; a frame 8 bits from each is a tie.
    const vrex_fp a = random_fp(30);
    vrex_fp b = a;
    b.w[1] ^= 0xffff;
    EXPECT_EQ(assign(a, 1).group, 0u);
    EXPECT_EQ(assign(b, 1).group, 1u);
    vrex_fp mid = a;
    mid.w[1] ^= 0xff;
    const vrex_bank_assign t = assign(mid, 1);
    EXPECT_EQ(t.group, 0u);
    EXPECT_EQ(t.distance, 8u);
    vrex_fp nearer_b = a;
    nearer_b.w[1] ^= 0xfff;
    EXPECT_EQ(assign(nearer_b, 1).group, 1u);
}

TEST_F(BankmapTest, FullDeviceReopensLeastLoadedGroupOfThePool) {
    for (u32 i = 0; i < 4; i++) ASSERT_EQ(assign(random_fp(40 + i), 1).group, i);
    set_group_bytes(0, 4096);
    set_group_bytes(1, 8192);
    set_group_bytes(2, 1024);
    set_group_bytes(3, 2048);
    EXPECT_EQ(vrex_bankmap_group_bytes(&bm, 2), 1024u);

    const vrex_fp cut = random_fp(50);
    const vrex_bank_assign a = assign(cut, 1);
    EXPECT_EQ(a.group, 2u);
    EXPECT_EQ(a.opened, 1u);
    EXPECT_EQ(a.conflict, 0u);
    EXPECT_EQ(a.distance, 0u);
    EXPECT_EQ(bm.group[2].frames, 1u);
    // The group now represents the new scene.
    EXPECT_EQ(assign(flip(cut, 2), 1).group, 2u);
    EXPECT_EQ(bm.group[2].frames, 2u);
    // Equal loads: the lowest index wins.
    set_group_bytes(0, 1024);
    EXPECT_EQ(assign(random_fp(51), 1).group, 0u);
}

TEST_F(BankmapTest, PoolWithoutGroupsTakesLeastLoadedOverallAsConflict) {
    for (u32 i = 0; i < 4; i++) assign(random_fp(60 + i), 1);
    set_group_bytes(0, 300);
    set_group_bytes(1, 200);
    set_group_bytes(2, 100);
    set_group_bytes(3, 400);
    const vrex_bank_assign a = assign(random_fp(70), 2);
    EXPECT_EQ(a.group, 2u);
    EXPECT_EQ(a.conflict, 1u);
    EXPECT_EQ(a.opened, 1u);
    EXPECT_EQ(bm.group[2].pool, 2u);
    // Pool 2 now owns a group: its next new scene re-opens that one, without a conflict.
    const vrex_bank_assign b = assign(random_fp(71), 2);
    EXPECT_EQ(b.group, 2u);
    EXPECT_EQ(b.conflict, 0u);
}

TEST_F(BankmapTest, PrivatePoolsAreIsolated) {
    const vrex_fp scene = random_fp(80);
    const vrex_bank_assign s1 = assign(scene, 1);
    // The very same picture in another private pool does not join pool 1's group.
    const vrex_bank_assign s2 = assign(scene, 2);
    EXPECT_NE(s1.group, s2.group);
    EXPECT_EQ(s2.opened, 1u);
    EXPECT_EQ(s2.conflict, 0u);
    // Even a frame whose pool-2 key collides with pool 1's representative stays in its own pool.
    vrex_fp key1, colliding;
    vrex_pool_key(&scene, 1, &key1);
    vrex_pool_key(&key1, 2, &colliding);
    const vrex_bank_assign s3 = assign(colliding, 2);
    EXPECT_NE(s3.group, s1.group);
    EXPECT_EQ(bm.group[s1.group].pool, 1u);
    // A scene cut in pool 2 leaves pool 1's placement where it was.
    assign(random_fp(81), 2);
    EXPECT_EQ(assign(flip(scene, 4), 1).group, s1.group);
}

TEST_F(BankmapTest, PooledStreamsShareGroups) {
    // Two streams in pooled mode use one pool id: similar scenes land together.
    const vrex_fp stream_a = random_fp(90);
    const vrex_fp stream_b = flip(stream_a, 6);
    const vrex_bank_assign a = assign(stream_a, 7);
    const vrex_bank_assign b = assign(stream_b, 7);
    EXPECT_EQ(a.group, b.group);
    EXPECT_EQ(b.opened, 0u);
    EXPECT_EQ(b.distance, 6u);
}

TEST(BankmapPoolKey, SaltIsAnInvolutionAndSeparatesPools) {
    const vrex_fp fp = random_fp(100);
    for (u32 pool = 0; pool < 64; pool++) {
        vrex_fp key, back;
        vrex_pool_key(&fp, pool, &key);
        vrex_pool_key(&key, pool, &back);
        EXPECT_TRUE(vrex_fp_equal(&back, &fp));
        for (u32 other = pool + 1; other < 64; other++) {
            vrex_fp k2;
            vrex_pool_key(&fp, other, &k2);
            // Salts are unrelated 128-bit words: about 64 bits apart, never within a group radius.
            EXPECT_GT(vrex_fp_distance(&key, &k2), 30u) << pool << " vs " << other;
            EXPECT_LT(vrex_fp_distance(&key, &k2), 98u) << pool << " vs " << other;
        }
    }
}

TEST_F(BankmapTest, ReleasePoolFreesOnlyThatPoolsGroups) {
    assign(random_fp(110), 1);  // group 0
    assign(random_fp(111), 2);  // group 1
    assign(random_fp(112), 1);  // group 2
    bm.bank_bytes[0] = 4096;
    vrex_bankmap_release_pool(&bm, 1);
    EXPECT_EQ(bm.group[0].in_use, 0u);
    EXPECT_EQ(bm.group[2].in_use, 0u);
    EXPECT_EQ(bm.group[1].in_use, 1u);
    EXPECT_EQ(bm.group[1].pool, 2u);
    // Live bytes belong to the lifecycle, not to the group bookkeeping.
    EXPECT_EQ(vrex_bankmap_group_bytes(&bm, 0), 4096u);
    // The released pool's old scene is forgotten: it opens the lowest free group again.
    const vrex_bank_assign a = assign(random_fp(110), 1);
    EXPECT_EQ(a.group, 0u);
    EXPECT_EQ(a.opened, 1u);
    EXPECT_EQ(bm.group[0].frames, 1u);
}

TEST_F(BankmapTest, GroupBytesSumsItsBanksOnly) {
    for (u32 b = 0; b < bm.nbanks; b++) bm.bank_bytes[b] = u64{1} << b;
    EXPECT_EQ(vrex_bankmap_group_bytes(&bm, 0), 0xfu);
    EXPECT_EQ(vrex_bankmap_group_bytes(&bm, 3), 0xf000u);
    EXPECT_EQ(vrex_bankmap_group_bytes(&bm, 4), 0u);
    EXPECT_EQ(vrex_bankmap_group_bytes(&bm, VREX_NIL), 0u);
}
