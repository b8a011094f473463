// The device's tier filter (VREX_ARGF_TIER_DEVICE / _HOST on LOOKUP_SIMILAR and batch descriptors,
// VREX_RESF_HOST_TIER on hits) and LOOKUP_SIMILAR_BATCH with ARG_NEAREST = k: descriptor i's k
// records are its k nearest entries within the radius, nearest first, then misses; one lookup is
// counted per query, every returned block is touched; a k or a record count past the caps fails
// the command whole.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "test_model_fixture.h"

using namespace vrex_test;

namespace {

constexpr uint64_t kTail = 16 * 1024;  // device memory past the banks: descriptors and records

class ModelNearest : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(dev_.init_rc(), 0);
        ASSERT_EQ(vrex_model_stream_open(m(), 0, 0), 0);
        // Frame 0 computes three blocks of region 5 at growing distances from base_; frame 1 demotes
        // copies of two of them to the host tier (under frame 0), then a cut to another scene.
        ASSERT_EQ(dev_.frame(0, 0), 0);
        insert_device(base_, &dblk_[0]);
        ASSERT_EQ(dev_.frame(0, 0), 0);
        insert_device(flip(base_, 3), &dblk_[1]);
        ASSERT_EQ(dev_.frame(0, 0), 0);
        insert_device(flip(base_, 6), &dblk_[2]);
        const vrex_kv_ref h0{VREX_KV_ADDR_EXTERNAL | 0x1000, 4096, 9};
        const vrex_kv_ref h1{VREX_KV_ADDR_EXTERNAL | 0x2000, 4096, 9};
        ASSERT_EQ(vrex_model_insert_host(m(), 0, 5, -2, &near1_, &h0, &host_[0]), 0);
        ASSERT_EQ(vrex_model_insert_host(m(), 0, 5, -1, &near4_, &h1, &host_[1]), 0);
        ASSERT_EQ(dev_.frame(0, 1), 0);
    }
    vrex_model* m() { return dev_.get(); }
    static vrex_fp flip(vrex_fp fp, uint32_t bits) {
        for (uint32_t b = 0; b < bits; b++) fp.w[1] ^= uint64_t{1} << (b * 7);
        return fp;
    }
    void insert_device(const vrex_fp& fp, uint32_t* block) {
        const vrex_kv_ref kv = kv_at(m()->cfg, 0, 4096 * next_++, 4096, 1);
        ASSERT_EQ(vrex_model_insert(m(), 0, 5, 0, &fp, &kv, VREX_NIL, block), 0);
    }
    vrex_lookup_result similar(uint32_t flags, uint32_t radius = 10) {
        vrex_lookup_result r{};
        EXPECT_EQ(vrex_model_lookup_similar(m(), 0, 5, &base_, radius, VREX_ARGF_PAST_ONLY | flags, &r), 0);
        return r;
    }
    uint64_t banks() const { return uint64_t{m_cfg().nbanks} * m_cfg().bank_size; }
    const vrex_model_config& m_cfg() const { return cfg_; }
    // One batch of @n copies of the query (flags @flags) with ARG_NEAREST @k; returns the error code.
    int batch(uint32_t n, uint32_t k, uint32_t flags, uint32_t radius = 10) {
        vrex_lookup_desc d{};
        d.stream = 0;
        d.region = 5;
        d.radius = radius;
        d.flags = VREX_ARGF_PAST_ONLY | flags;
        d.fp[0] = base_.w[0];
        d.fp[1] = base_.w[1];
        for (uint32_t i = 0; i < n; i++)
            std::memcpy(dev_.mem().data() + banks() + i * sizeof(d), &d, sizeof(d));
        vrex_model_write(m(), VREX_REG_ARG_SRC_LO, static_cast<uint32_t>(banks()));
        vrex_model_write(m(), VREX_REG_ARG_SRC_HI, static_cast<uint32_t>(banks() >> 32));
        vrex_model_write(m(), VREX_REG_ARG_DST_LO, static_cast<uint32_t>(dst()));
        vrex_model_write(m(), VREX_REG_ARG_DST_HI, static_cast<uint32_t>(dst() >> 32));
        vrex_model_write(m(), VREX_REG_ARG_COUNT, n);
        vrex_model_write(m(), VREX_REG_ARG_NEAREST, k);
        vrex_model_write(m(), VREX_REG_CMD, VREX_CMD_LOOKUP_SIMILAR_BATCH);
        const uint32_t st = vrex_model_read(m(), VREX_REG_STATUS);
        return st & VREX_STATUS_ERROR
                   ? static_cast<int>((st & VREX_STATUS_ERRNO_MASK) >> VREX_STATUS_ERRNO_SHIFT)
                   : 0;
    }
    uint64_t dst() const { return banks() + VREX_LOOKUP_BATCH_MAX * sizeof(vrex_lookup_desc); }
    vrex_lookup_rec rec(uint32_t i) {
        vrex_lookup_rec r;
        std::memcpy(&r, dev_.mem().data() + dst() + i * sizeof(r), sizeof(r));
        return r;
    }

    vrex_model_config cfg_ = small_config();
    Device dev_{cfg_, uint64_t{cfg_.nbanks} * cfg_.bank_size + kTail};
    vrex_fp base_ = make_fp(0x00ff'00ff'0000'0000ull, 0x1234'5678'9abc'def0ull);
    vrex_fp near1_ = flip(base_, 1);
    vrex_fp near4_ = flip(base_, 4);
    uint32_t dblk_[3] = {};
    uint32_t host_[2] = {};
    uint32_t next_ = 0;
};

TEST_F(ModelNearest, TierFlagsFilterTheSingleLookupAndHitsSayTheirTier) {
    vrex_lookup_result r = similar(0);
    ASSERT_TRUE(r.hit);
    EXPECT_EQ(r.block, dblk_[0]) << "every tier: the nearest (distance 0)";
    EXPECT_FALSE(r.host);
    r = similar(VREX_ARGF_TIER_HOST);
    ASSERT_TRUE(r.hit);
    EXPECT_EQ(r.block, host_[0]);
    EXPECT_TRUE(r.host);
    EXPECT_EQ(r.distance, 1u);
    r = similar(VREX_ARGF_TIER_DEVICE | VREX_ARGF_TIER_HOST);
    EXPECT_EQ(r.block, dblk_[0]) << "both bits: every tier";
    // Through the registers: RES_FLAGS says host tier.
    vrex_model_write(m(), VREX_REG_ARG_STREAM, 0);
    vrex_model_write(m(), VREX_REG_ARG_REGION, 5);
    vrex_model_write(m(), VREX_REG_ARG_FP(0), static_cast<uint32_t>(base_.w[0]));
    vrex_model_write(m(), VREX_REG_ARG_FP(1), static_cast<uint32_t>(base_.w[0] >> 32));
    vrex_model_write(m(), VREX_REG_ARG_FP(2), static_cast<uint32_t>(base_.w[1]));
    vrex_model_write(m(), VREX_REG_ARG_FP(3), static_cast<uint32_t>(base_.w[1] >> 32));
    vrex_model_write(m(), VREX_REG_ARG_RADIUS, 10);
    vrex_model_write(m(), VREX_REG_ARG_FLAGS, VREX_ARGF_PAST_ONLY | VREX_ARGF_TIER_HOST);
    vrex_model_write(m(), VREX_REG_CMD, VREX_CMD_LOOKUP_SIMILAR);
    EXPECT_EQ(vrex_model_read(m(), VREX_REG_STATUS), uint32_t{VREX_STATUS_DONE});
    EXPECT_EQ(vrex_model_read(m(), VREX_REG_RES_FLAGS),
              VREX_RESF_HIT | VREX_RESF_APPROX | VREX_RESF_HOST_TIER);
    EXPECT_EQ(vrex_model_read(m(), VREX_REG_RES_BLOCK), host_[0]);
    // A flag bit past the tiers is refused.
    vrex_model_write(m(), VREX_REG_ARG_FLAGS, VREX_BIT(7));
    vrex_model_write(m(), VREX_REG_CMD, VREX_CMD_LOOKUP_SIMILAR);
    EXPECT_TRUE(vrex_model_read(m(), VREX_REG_STATUS) & VREX_STATUS_ERROR);
}

TEST_F(ModelNearest, BatchReturnsTheKNearestFirstThenMisses) {
    const uint64_t lookups = m()->cnt[VREX_CNT_LOOKUPS];
    const uint64_t exact = m()->cnt[VREX_CNT_EXACT_HITS];
    ASSERT_EQ(batch(2, 8, 0), 0);
    EXPECT_EQ(vrex_model_read(m(), VREX_REG_RES_TOKENS), 2u) << "hits: queries, not records";
    EXPECT_EQ(m()->cnt[VREX_CNT_LOOKUPS], lookups + 2);
    EXPECT_EQ(m()->cnt[VREX_CNT_EXACT_HITS], exact + 2);
    // Distances 0 (device), 1 (host), 3 (device), 4 (host), 6 (device), then misses; both queries.
    const uint32_t want[5] = {dblk_[0], host_[0], dblk_[1], host_[1], dblk_[2]};
    const uint32_t dist[5] = {0, 1, 3, 4, 6};
    for (uint32_t q = 0; q < 2; q++) {
        for (uint32_t j = 0; j < 8; j++) {
            const vrex_lookup_rec r = rec(q * 8 + j);
            EXPECT_EQ(r.status, 0u);
            if (j < 5) {
                EXPECT_EQ(r.block, want[j]) << q << "/" << j;
                EXPECT_EQ(r.distance, dist[j]) << q << "/" << j;
                EXPECT_EQ(r.flags & VREX_RESF_HOST_TIER, j == 1 || j == 3 ? VREX_RESF_HOST_TIER : 0u);
                EXPECT_TRUE(r.flags & VREX_RESF_HIT);
            } else {
                EXPECT_EQ(r.flags, 0u) << q << "/" << j;
                EXPECT_EQ(r.block, VREX_NIL) << q << "/" << j;
            }
        }
    }
    // Every block returned was touched at the current frame.
    for (uint32_t b : want) EXPECT_EQ(m()->blocks.b[b].last_access, m()->streams[0].frame) << b;

    ASSERT_EQ(batch(1, 3, VREX_ARGF_TIER_HOST), 0);
    EXPECT_EQ(rec(0).block, host_[0]);
    EXPECT_EQ(rec(1).block, host_[1]);
    EXPECT_EQ(rec(2).block, VREX_NIL);
    ASSERT_EQ(batch(1, 2, VREX_ARGF_TIER_DEVICE, 4), 0);
    EXPECT_EQ(rec(0).block, dblk_[0]);
    EXPECT_EQ(rec(1).block, dblk_[1]);
    // ARG_NEAREST 1 is the nearest-only batch of before.
    ASSERT_EQ(batch(2, 1, 0), 0);
    EXPECT_EQ(rec(0).block, dblk_[0]);
    EXPECT_EQ(rec(1).block, dblk_[0]);
}

TEST_F(ModelNearest, CountsPastTheCapsFailTheBatchWhole) {
    std::memset(dev_.mem().data() + dst(), 0xab, VREX_LOOKUP_BATCH_MAX * sizeof(vrex_lookup_rec));
    const std::vector<uint8_t> before(dev_.mem().begin() + static_cast<std::ptrdiff_t>(dst()),
                                      dev_.mem().end());
    const uint64_t lookups = m()->cnt[VREX_CNT_LOOKUPS];
    EXPECT_EQ(batch(1, VREX_LOOKUP_NEAREST_MAX + 1, 0), VREX_EINVAL);
    EXPECT_EQ(batch(VREX_LOOKUP_BATCH_MAX / 8 + 1, 8, 0), VREX_EINVAL) << "records past the batch's space";
    const std::vector<uint8_t> after(dev_.mem().begin() + static_cast<std::ptrdiff_t>(dst()),
                                     dev_.mem().end());
    EXPECT_TRUE(before == after) << "a refused batch writes no record";
    EXPECT_EQ(m()->cnt[VREX_CNT_LOOKUPS], lookups);
    EXPECT_EQ(batch(VREX_LOOKUP_BATCH_MAX / 8, 8, 0), 0) << "exactly the space is fine";
}

}  // namespace
