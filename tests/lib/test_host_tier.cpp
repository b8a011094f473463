// Host-tier blocks (vrex_model_insert_host, INSERT with VREX_ARGF_HOST_TIER): the copy of a demoted
// block in external memory, entered under a past frame with a similarity-only SHIE entry, never
// aged by zombie release (docs/hardware.md section 4, docs/hw/shie.md section 2).
#include <gtest/gtest.h>

#include <cstdint>

#include "test_model_fixture.h"

using namespace vrex_test;

namespace {

class HostTier : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(dev_.init_rc(), 0);
        ASSERT_EQ(vrex_model_stream_open(m(), 0, 0), 0);
    }
    vrex_model* m() { return dev_.get(); }
    static vrex_kv_ref external(uint64_t offset) {
        return vrex_kv_ref{VREX_KV_ADDR_EXTERNAL | offset, 4096, 7};
    }
    // Frames @n of scene 1 with a RETIRE after each, as the host ends a frame; zombies released.
    uint32_t idle(uint32_t n) {
        uint32_t released = 0;
        for (uint32_t i = 0; i < n; i++) {
            EXPECT_EQ(dev_.frame(0, 1), 0);
            uint32_t r = 0;
            EXPECT_EQ(vrex_model_retire(m(), 0, &r), 0);
            released += r;
            while (vrex_model_pop_released(m(), nullptr)) {
            }
        }
        return released;
    }
    Device dev_;
};

TEST_F(HostTier, OutlivesZombieReleaseAndIsFoundBySimilarityOnly) {
    ASSERT_EQ(dev_.frame(0, 0), 0);
    const vrex_fp fp = make_fp(0x1234'0000'0000, 0x5678);
    uint32_t device_block, host_block;
    vrex_kv_ref dk = kv_at(m()->cfg, 0, 0, 4096, 1);
    ASSERT_EQ(vrex_model_insert(m(), 0, 3, 0, &fp, &dk, VREX_NIL, &device_block), 0);
    ASSERT_EQ(dev_.frame(0, 1), 0);
    // Frame 0's (frame, region) is taken by the device entry: the host-tier entry has no temporal
    // key, so it goes in beside it, and the temporal lookup still finds the device block.
    const vrex_kv_ref hk = external(0);
    ASSERT_EQ(vrex_model_insert_host(m(), 0, 3, -1, &fp, &hk, &host_block), 0);
    vrex_lookup_result r{};
    ASSERT_EQ(vrex_model_lookup_temporal(m(), 0, 3, -1, &r), 0);
    ASSERT_TRUE(r.hit);
    EXPECT_EQ(r.block, device_block);

    // Longer than the zombie rule: the device block goes, the host-tier block stays.
    EXPECT_EQ(idle(m()->cfg.zombie_frames + 3), 1u);
    EXPECT_NE(vrex_model_block_info(m(), device_block, nullptr), 0);
    vrex_block info{};
    ASSERT_EQ(vrex_model_block_info(m(), host_block, &info), 0);
    EXPECT_EQ(info.host, 1u);
    EXPECT_EQ(info.bank, VREX_BANK_NONE);
    ASSERT_EQ(vrex_model_lookup_similar(m(), 0, 3, &fp, 0, VREX_ARGF_PAST_ONLY, &r), 0);
    ASSERT_TRUE(r.hit);
    EXPECT_EQ(r.block, host_block);
    EXPECT_EQ(r.frame, 0u);
    ASSERT_EQ(vrex_model_lookup_temporal(m(), 0, 3, -3, &r), 0);
    EXPECT_FALSE(r.hit) << "never by a temporal lookup";

    // Removed, it goes with its entry; the chain it was never in is intact.
    ASSERT_EQ(vrex_model_remove(m(), host_block, nullptr), 0);
    ASSERT_EQ(vrex_model_lookup_similar(m(), 0, 3, &fp, 31, 0, &r), 0);
    EXPECT_FALSE(r.hit);
    EXPECT_EQ(m()->shie.live, 0u);
}

TEST_F(HostTier, RefusesDeviceMemoryLaterFramesAndFramesBeforeTheFirst) {
    const vrex_fp fp = make_fp(1, 2);
    uint32_t b;
    const vrex_kv_ref hk = external(0);
    EXPECT_EQ(vrex_model_insert_host(m(), 0, 0, 0, &fp, &hk, &b), VREX_EINVAL);  // no frame yet
    ASSERT_EQ(dev_.frame(0, 0), 0);
    ASSERT_EQ(dev_.frame(0, 0), 0);
    const vrex_kv_ref dk = kv_at(m()->cfg, 0, 0, 4096, 1);
    EXPECT_EQ(vrex_model_insert_host(m(), 0, 0, 0, &fp, &dk, &b), VREX_EINVAL);
    EXPECT_EQ(vrex_model_insert_host(m(), 0, 0, 1, &fp, &hk, &b), VREX_ERANGE);
    EXPECT_EQ(vrex_model_insert_host(m(), 0, 0, -2, &fp, &hk, &b), VREX_ERANGE);
    EXPECT_EQ(vrex_model_insert_host(m(), 0, 16, 0, &fp, &hk, &b), VREX_ERANGE);
    EXPECT_EQ(m()->blocks.live, 0u);
    EXPECT_EQ(m()->shie.live, 0u);
    // Through the register interface: HOST_TIER with ALIAS is refused.
    vrex_model_write(m(), VREX_REG_ARG_STREAM, 0);
    vrex_model_write(m(), VREX_REG_ARG_REGION, 0);
    vrex_model_write(m(), VREX_REG_ARG_OFFSET, 0);
    vrex_model_write(m(), VREX_REG_ARG_FLAGS, VREX_ARGF_HOST_TIER | VREX_ARGF_ALIAS);
    vrex_model_write(m(), VREX_REG_ARG_BLOCK, 0);
    vrex_model_write(m(), VREX_REG_CMD, VREX_CMD_INSERT);
    const uint32_t st = vrex_model_read(m(), VREX_REG_STATUS);
    EXPECT_EQ(st & VREX_STATUS_ERROR, VREX_STATUS_ERROR);
    EXPECT_EQ((st & VREX_STATUS_ERRNO_MASK) >> VREX_STATUS_ERRNO_SHIFT, static_cast<uint32_t>(VREX_EINVAL));
    EXPECT_EQ(m()->blocks.live, 0u);
}

}  // namespace
