// The register file: identity and configuration registers, access semantics (RO, RW, W1C, WO,
// reset magic), command dispatch with STATUS / IRQ / RES_* / counters, and a differential test
// proving that programming commands through registers equals calling the operations directly.
#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

#include "test_model_fixture.h"

using namespace vrex_test;

namespace {

// Drives a device the way the kernel and the HAL do: program ARG_*, write CMD, read STATUS.
class Regs {
  public:
    explicit Regs(vrex_model* m) : m_(m) {}
    uint32_t r(uint32_t off) const { return vrex_model_read(m_, off); }
    void w(uint32_t off, uint32_t v) const { vrex_model_write(m_, off, v); }
    uint64_t r64(uint32_t lo, uint32_t hi) const { return (uint64_t)r(hi) << 32 | r(lo); }
    void w64(uint32_t lo, uint32_t hi, uint64_t v) const {
        w(lo, static_cast<uint32_t>(v));
        w(hi, static_cast<uint32_t>(v >> 32));
    }
    void w_fp(const vrex_fp& fp) const {
        w64(VREX_REG_ARG_FP(0), VREX_REG_ARG_FP(1), fp.w[0]);
        w64(VREX_REG_ARG_FP(2), VREX_REG_ARG_FP(3), fp.w[1]);
    }
    vrex_fp res_fp() const {
        return make_fp(r64(VREX_REG_RES_FP(0), VREX_REG_RES_FP(1)),
                       r64(VREX_REG_RES_FP(2), VREX_REG_RES_FP(3)));
    }
    vrex_kv_ref res_kv() const {
        return vrex_kv_ref{r64(VREX_REG_RES_KV_ADDR_LO, VREX_REG_RES_KV_ADDR_HI), r(VREX_REG_RES_KV_LEN),
                           r(VREX_REG_RES_KV_TAG)};
    }
    // Returns 0 or the errno the device reported.
    int cmd(uint32_t op) const {
        w(VREX_REG_CMD, op);
        uint32_t st = r(VREX_REG_STATUS);
        if (st & VREX_STATUS_ERROR) {
            EXPECT_FALSE(st & VREX_STATUS_DONE);
            return static_cast<int>((st & VREX_STATUS_ERRNO_MASK) >> VREX_STATUS_ERRNO_SHIFT);
        }
        EXPECT_EQ(st, VREX_STATUS_DONE);
        return 0;
    }
    int open(uint32_t stream, uint32_t pool) const {
        w(VREX_REG_ARG_STREAM, stream);
        w(VREX_REG_ARG_POOL, pool);
        return cmd(VREX_CMD_STREAM_OPEN);
    }
    int frame(uint32_t stream, uint64_t src, uint32_t wd = kW, uint32_t ht = kH, uint32_t stride = kW) const {
        w(VREX_REG_ARG_STREAM, stream);
        w64(VREX_REG_ARG_SRC_LO, VREX_REG_ARG_SRC_HI, src);
        w(VREX_REG_ARG_WIDTH, wd);
        w(VREX_REG_ARG_HEIGHT, ht);
        w(VREX_REG_ARG_STRIDE, stride);
        return cmd(VREX_CMD_FRAME);
    }
    int insert(uint32_t stream, uint32_t region, int32_t offset, const vrex_fp& fp, const vrex_kv_ref& kv,
               uint32_t flags = 0, uint32_t block = 0) const {
        w(VREX_REG_ARG_STREAM, stream);
        w(VREX_REG_ARG_REGION, region);
        w(VREX_REG_ARG_OFFSET, static_cast<uint32_t>(offset));
        w(VREX_REG_ARG_FLAGS, flags);
        w_fp(fp);
        w(VREX_REG_ARG_KV_TAG, kv.tag);
        w64(VREX_REG_ARG_KV_ADDR_LO, VREX_REG_ARG_KV_ADDR_HI, kv.addr);
        w(VREX_REG_ARG_KV_LEN, kv.length);
        w(VREX_REG_ARG_BLOCK, block);
        return cmd(VREX_CMD_INSERT);
    }
    int temporal(uint32_t stream, uint32_t region, int32_t offset) const {
        w(VREX_REG_ARG_STREAM, stream);
        w(VREX_REG_ARG_REGION, region);
        w(VREX_REG_ARG_OFFSET, static_cast<uint32_t>(offset));
        return cmd(VREX_CMD_LOOKUP_TEMPORAL);
    }
    int similar(uint32_t stream, uint32_t region, const vrex_fp& fp, uint32_t radius, uint32_t flags) const {
        w(VREX_REG_ARG_STREAM, stream);
        w(VREX_REG_ARG_REGION, region);
        w_fp(fp);
        w(VREX_REG_ARG_RADIUS, radius);
        w(VREX_REG_ARG_FLAGS, flags);
        return cmd(VREX_CMD_LOOKUP_SIMILAR);
    }
    int on_block(uint32_t op, uint32_t block) const {
        w(VREX_REG_ARG_BLOCK, block);
        return cmd(op);
    }
    int on_stream(uint32_t op, uint32_t stream) const {
        w(VREX_REG_ARG_STREAM, stream);
        return cmd(op);
    }
    uint64_t counter(uint32_t i) const { return r64(VREX_REG_CNT_LO(i), VREX_REG_CNT_HI(i)); }

  private:
    vrex_model* m_;
};

class RegisterFile : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(dev_.init_rc(), 0); }
    vrex_model* m() { return dev_.get(); }
    const vrex_model_config& cfg() { return dev_->cfg; }
    uint64_t luma() {
        dev_.put_luma(luma_addr(cfg()), 1);
        return luma_addr(cfg());
    }
    Device dev_;
    Regs regs_{dev_.get()};
};

TEST_F(RegisterFile, IdentityAndConfigurationRegisters) {
    EXPECT_EQ(regs_.r(VREX_REG_ID), VREX_ID_VALUE);
    EXPECT_EQ(regs_.r(VREX_REG_VERSION), VREX_VERSION_VALUE);
    EXPECT_EQ(regs_.r(VREX_REG_CAPS),
              VREX_CAP_FCC | VREX_CAP_SHIE | VREX_CAP_POOLED | VREX_CAP_PREDICT_SLOTS);
    EXPECT_EQ(regs_.r(VREX_REG_BANK_COUNT), cfg().nbanks);
    EXPECT_EQ(regs_.r(VREX_REG_BANK_SIZE_KB), 64u);
    EXPECT_EQ(regs_.r(VREX_REG_SHIE_CAPACITY), cfg().shie_capacity);
    EXPECT_EQ(regs_.r(VREX_REG_MAX_STREAMS), cfg().max_streams);
    EXPECT_EQ(regs_.r(VREX_REG_BLOCK_CAPACITY), cfg().block_capacity);
    EXPECT_EQ(regs_.r(VREX_REG_ZOMBIE_FRAMES), cfg().zombie_frames);
    EXPECT_EQ(regs_.r(VREX_REG_GROUP_BANKS), cfg().group_banks);
    EXPECT_EQ(regs_.r(VREX_REG_STATUS), 0u);
    EXPECT_EQ(regs_.r(VREX_REG_IRQ_STATUS), 0u);
    EXPECT_EQ(regs_.r(VREX_REG_IRQ_MASK), 0u);
    for (uint32_t g = 0; g < cfg().nbanks / cfg().group_banks; g++)
        EXPECT_EQ(regs_.r(VREX_REG_GROUP_POOL(g)), VREX_NIL);
    EXPECT_EQ(regs_.r(VREX_REG_GROUP_POOL(cfg().nbanks / cfg().group_banks)), 0u);
    EXPECT_EQ(regs_.r(VREX_REG_BANK_BLOCKS(cfg().nbanks)), 0u);
}

TEST_F(RegisterFile, ReadOnlyWriteOnlyAndUnmappedOffsetsIgnoreWrites) {
    ASSERT_EQ(regs_.open(0, 0), 0);
    ASSERT_EQ(regs_.frame(0, luma()), 0);
    ASSERT_EQ(regs_.insert(0, 3, 0, make_fp(1, 2), kv_at(cfg(), 1, 0, 3000, 4)), 0);
    Snapshot before = snapshot(m());
    for (uint32_t off = 0; off < VREX_REG_WINDOW; off += 4) {
        bool writable = off == VREX_REG_IRQ_STATUS || off == VREX_REG_IRQ_MASK || off == VREX_REG_RESET ||
                        off == VREX_REG_ZOMBIE_FRAMES || off == VREX_REG_SCRATCH || off == VREX_REG_CMD ||
                        (off >= VREX_REG_ARG_STREAM && off <= VREX_REG_ARG_LAST);
        if (!writable) regs_.w(off, 0xa5a5a5a5u);
    }
    // Unaligned and out-of-window accesses: reads 0, writes dropped.
    regs_.w(VREX_REG_SCRATCH + 1, 0x1234);
    regs_.w(VREX_REG_WINDOW, 0x1234);
    regs_.w(VREX_REG_CMD + 2, VREX_CMD_RETIRE);
    EXPECT_TRUE(snapshot(m()) == before);
    EXPECT_EQ(regs_.r(VREX_REG_ID + 1), 0u);
    EXPECT_EQ(regs_.r(VREX_REG_WINDOW), 0u);
    EXPECT_EQ(regs_.r(0xffffffffu & ~3u), 0u);
    // Write-only registers read as 0.
    EXPECT_EQ(regs_.r(VREX_REG_CMD), 0u);
    EXPECT_EQ(regs_.r(VREX_REG_RESET), 0u);
}

TEST_F(RegisterFile, ScratchArgumentsAndZombieFramesAreReadWrite) {
    regs_.w(VREX_REG_SCRATCH, 0xdeadbeef);
    EXPECT_EQ(regs_.r(VREX_REG_SCRATCH), 0xdeadbeefu);
    for (uint32_t off = VREX_REG_ARG_STREAM; off <= VREX_REG_ARG_LAST; off += 4) {
        regs_.w(off, off * 7919);
        EXPECT_EQ(regs_.r(off), off * 7919);
    }
    regs_.w(VREX_REG_ZOMBIE_FRAMES, 0);
    EXPECT_EQ(regs_.r(VREX_REG_ZOMBIE_FRAMES), 5u);
    regs_.w(VREX_REG_ZOMBIE_FRAMES, 256);
    EXPECT_EQ(regs_.r(VREX_REG_ZOMBIE_FRAMES), 5u);
    regs_.w(VREX_REG_ZOMBIE_FRAMES, 1);
    EXPECT_EQ(regs_.r(VREX_REG_ZOMBIE_FRAMES), 1u);
    regs_.w(VREX_REG_ZOMBIE_FRAMES, 255);
    EXPECT_EQ(regs_.r(VREX_REG_ZOMBIE_FRAMES), 255u);
}

TEST_F(RegisterFile, IrqStatusIsWriteOneToClearAndMaskIsIndependent) {
    regs_.w(VREX_REG_IRQ_MASK, 0xffffffffu);
    EXPECT_EQ(regs_.r(VREX_REG_IRQ_MASK), VREX_IRQ_ALL);
    regs_.w(VREX_REG_IRQ_MASK, 0);
    ASSERT_EQ(regs_.cmd(VREX_CMD_NOP), 0);
    EXPECT_EQ(regs_.r(VREX_REG_IRQ_STATUS), VREX_IRQ_CMD_DONE) << "status latches even when masked";
    EXPECT_EQ(regs_.cmd(VREX_CMD_MAX + 1), VREX_EINVAL);
    EXPECT_EQ(regs_.r(VREX_REG_IRQ_STATUS), VREX_IRQ_CMD_DONE | VREX_IRQ_CMD_ERROR);
    regs_.w(VREX_REG_IRQ_STATUS, VREX_IRQ_CMD_ERROR);
    EXPECT_EQ(regs_.r(VREX_REG_IRQ_STATUS), VREX_IRQ_CMD_DONE);
    regs_.w(VREX_REG_IRQ_STATUS, 0);
    EXPECT_EQ(regs_.r(VREX_REG_IRQ_STATUS), VREX_IRQ_CMD_DONE);
    regs_.w(VREX_REG_IRQ_STATUS, 0xffffffffu);
    EXPECT_EQ(regs_.r(VREX_REG_IRQ_STATUS), 0u);
}

TEST_F(RegisterFile, UnknownOpcodesFailWithEinvalAndCountAsErrors) {
    EXPECT_EQ(regs_.cmd(VREX_CMD_MAX + 1), VREX_EINVAL);
    EXPECT_EQ(regs_.r(VREX_REG_STATUS), VREX_STATUS_ERROR | (VREX_EINVAL << VREX_STATUS_ERRNO_SHIFT));
    EXPECT_EQ(regs_.cmd(0xffffffffu), VREX_EINVAL);
    EXPECT_EQ(regs_.counter(VREX_CNT_CMD_ERRORS), 2u);
    EXPECT_EQ(regs_.cmd(VREX_CMD_NOP), 0);
    EXPECT_EQ(regs_.r(VREX_REG_STATUS), VREX_STATUS_DONE);
    EXPECT_EQ(regs_.counter(VREX_CNT_CMD_ERRORS), 2u);
}

TEST_F(RegisterFile, ResetNeedsTheMagicAndRestoresThePowerOnState) {
    ASSERT_EQ(regs_.open(0, 0), 0);
    ASSERT_EQ(regs_.frame(0, luma()), 0);
    ASSERT_EQ(regs_.insert(0, 3, 0, make_fp(1, 2), kv_at(cfg(), 1, 0, 3000, 4)), 0);
    regs_.w(VREX_REG_SCRATCH, 7);
    regs_.w(VREX_REG_IRQ_MASK, VREX_IRQ_ALL);
    regs_.w(VREX_REG_ZOMBIE_FRAMES, 9);
    regs_.w(VREX_REG_RESET, VREX_RESET_MAGIC + 1);
    EXPECT_EQ(regs_.counter(VREX_CNT_LIVE_BLOCKS), 1u);
    EXPECT_EQ(regs_.r(VREX_REG_SCRATCH), 7u);

    regs_.w(VREX_REG_RESET, VREX_RESET_MAGIC);
    Device fresh;
    ASSERT_EQ(fresh.init_rc(), 0);
    EXPECT_TRUE(snapshot(m()) == snapshot(fresh.get()));
    EXPECT_EQ(regs_.r(VREX_REG_ZOMBIE_FRAMES), cfg().zombie_frames);
    EXPECT_EQ(regs_.open(0, 0), 0) << "streams are closed after reset";
}

TEST_F(RegisterFile, CountersAre64BitLoHiPairs) {
    m()->cnt[VREX_CNT_LOOKUPS] = 0x0000000500000003ull;
    EXPECT_EQ(regs_.r(VREX_REG_CNT_LO(VREX_CNT_LOOKUPS)), 3u);
    EXPECT_EQ(regs_.r(VREX_REG_CNT_HI(VREX_CNT_LOOKUPS)), 5u);
    EXPECT_EQ(regs_.r(VREX_REG_CNT_LO(VREX_CNT_NUM)), 0u);
}

TEST_F(RegisterFile, FrameCommandFillsResultAndFeatureRegisters) {
    ASSERT_EQ(regs_.open(2, VREX_POOL_PRIVATE + 2), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_STREAM), 2u);
    ASSERT_EQ(regs_.frame(2, luma()), 0);
    const vrex_stream& s = m()->streams[2];
    vrex_fp fp = regs_.res_fp();
    EXPECT_TRUE(vrex_fp_equal(&fp, &s.fp));
    EXPECT_EQ(regs_.r(VREX_REG_RES_FRAME), 0u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_STREAM), 2u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_GROUP), s.group);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BANK_FIRST), s.group * cfg().group_banks);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BANK_COUNT), cfg().group_banks);
    EXPECT_EQ(regs_.r(VREX_REG_RES_FLAGS), VREX_RESF_OPENED) << "first frame opens a free group";
    EXPECT_EQ(regs_.r(VREX_REG_GROUP_POOL(s.group)), VREX_POOL_PRIVATE + 2);
    EXPECT_EQ(regs_.r(VREX_REG_FCC_MOVING_BLOCKS), m()->last_feat.moving_blocks);
    EXPECT_EQ(regs_.r(VREX_REG_FCC_STATIC_RATIO), m()->last_feat.static_ratio);
    ASSERT_EQ(regs_.frame(2, luma()), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_FRAME), 1u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_FLAGS), 0u) << "same scene stays in its group";
    EXPECT_EQ(regs_.counter(VREX_CNT_FRAMES), 2u);

    EXPECT_EQ(regs_.frame(2, dev_.mem().size() - 10), VREX_ERANGE);
    EXPECT_EQ(regs_.r(VREX_REG_RES_FRAME), 0u) << "results are cleared by a failed command";
    EXPECT_EQ(regs_.r(VREX_REG_IRQ_STATUS) & VREX_IRQ_CMD_ERROR, VREX_IRQ_CMD_ERROR);
    EXPECT_EQ(regs_.frame(3, luma()), VREX_EINVAL);
    EXPECT_EQ(regs_.counter(VREX_CNT_CMD_ERRORS), 2u);
}

TEST_F(RegisterFile, FrameTakingAnotherPoolsGroupIsAConflict) {
    const uint32_t ngroups = cfg().nbanks / cfg().group_banks;
    ASSERT_EQ(regs_.open(0, 0), 0);
    auto groups_of_pool0 = [&] {
        uint32_t n = 0;
        for (uint32_t g = 0; g < ngroups; g++) n += regs_.r(VREX_REG_GROUP_POOL(g)) == 0u;
        return n;
    };
    // New scenes of pool 0 open groups until none is free.
    for (uint32_t scene = 0; scene < 40 && groups_of_pool0() < ngroups; scene++) {
        dev_.put_luma(luma_addr(cfg()), scene * 7 + 3);
        ASSERT_EQ(regs_.frame(0, luma_addr(cfg())), 0);
        EXPECT_EQ(regs_.r(VREX_REG_RES_FLAGS) & VREX_RESF_CONFLICT, 0u);
    }
    ASSERT_EQ(groups_of_pool0(), ngroups) << "the FCC placed every test scene in too few groups";
    EXPECT_EQ(regs_.counter(VREX_CNT_BANK_CONFLICTS), 0u);

    // Pool 1 owns no group: its first frame takes one from pool 0.
    ASSERT_EQ(regs_.open(1, 1), 0);
    dev_.put_luma(luma_addr(cfg()), 999);
    ASSERT_EQ(regs_.frame(1, luma_addr(cfg())), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_FLAGS), VREX_RESF_CONFLICT | VREX_RESF_OPENED);
    EXPECT_EQ(regs_.r(VREX_REG_GROUP_POOL(regs_.r(VREX_REG_RES_GROUP))), 1u);
    EXPECT_EQ(regs_.counter(VREX_CNT_BANK_CONFLICTS), 1u);
}

TEST_F(RegisterFile, InsertLookupRemoveAndBlockInfoCommands) {
    ASSERT_EQ(regs_.open(0, 0), 0);
    EXPECT_EQ(regs_.insert(0, 0, 0, make_fp(1, 1), kv_at(cfg(), 0, 0, 64, 1)), VREX_EINVAL) << "no frame";
    ASSERT_EQ(regs_.frame(0, luma()), 0);
    vrex_fp fp = make_fp(0x1111222233334444ull, 0x5555666677778888ull);
    vrex_kv_ref kv = kv_at(cfg(), 5, 2048, 1500, 0xbeef);
    ASSERT_EQ(regs_.insert(0, 9, 1, fp, kv), 0);
    uint32_t block = regs_.r(VREX_REG_RES_BLOCK);
    EXPECT_EQ(regs_.r(VREX_REG_RES_FRAME), 1u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_REGION), 9u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BANK_FIRST), 5u);
    EXPECT_EQ(regs_.r(VREX_REG_BANK_KB(5)), 2u);
    EXPECT_EQ(regs_.r(VREX_REG_BANK_BLOCKS(5)), 1u);

    // Errors carry their code in STATUS.
    EXPECT_EQ(regs_.insert(0, 9, 1, fp, kv), VREX_EEXIST);
    EXPECT_EQ(regs_.insert(0, 16, 0, fp, kv), VREX_ERANGE);
    EXPECT_EQ(regs_.insert(0, 1, 0, fp, kv_at(cfg(), 5, 65000, 1000, 0)), VREX_ERANGE);
    EXPECT_EQ(regs_.insert(0, 1, 0, fp, kv, VREX_ARGF_SCOPE_POOL), VREX_EINVAL);
    EXPECT_EQ(regs_.insert(0, 1, 0, fp, kv, VREX_ARGF_ALIAS, VREX_NIL), VREX_ENOENT);
    EXPECT_EQ(regs_.insert(0, 1, 0, fp, kv, VREX_ARGF_ALIAS, block + 1), VREX_ENOENT);
    // Alias: the KV registers are ignored.
    ASSERT_EQ(regs_.insert(0, 2, 0, make_fp(9, 9), vrex_kv_ref{~0ull, 0, 0}, VREX_ARGF_ALIAS, block), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BLOCK), block);

    ASSERT_EQ(regs_.temporal(0, 9, 1), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_FLAGS), VREX_RESF_HIT);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BLOCK), block);
    EXPECT_EQ(regs_.r(VREX_REG_RES_FRAME), 1u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_REGION), 9u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_DISTANCE), 0u);
    vrex_fp got = regs_.res_fp();
    EXPECT_TRUE(vrex_fp_equal(&got, &fp));
    vrex_kv_ref rk = regs_.res_kv();
    EXPECT_EQ(rk.addr, kv.addr);
    EXPECT_EQ(rk.length, kv.length);
    EXPECT_EQ(rk.tag, kv.tag);
    ASSERT_EQ(regs_.temporal(0, 9, 0), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_FLAGS), 0u) << "a miss is a successful command";
    EXPECT_EQ(regs_.r(VREX_REG_RES_BLOCK), VREX_NIL);
    EXPECT_EQ(regs_.temporal(0, 9, -1), VREX_ERANGE);

    vrex_fp near = fp;
    near.w[1] ^= 0x3;
    ASSERT_EQ(regs_.similar(0, 9, near, 20, 0), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_FLAGS), VREX_RESF_HIT | VREX_RESF_APPROX);
    EXPECT_EQ(regs_.r(VREX_REG_RES_DISTANCE), 2u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BLOCK), block);
    EXPECT_EQ(regs_.similar(0, 9, near, 32, 0), VREX_EINVAL);
    EXPECT_EQ(regs_.similar(0, 9, near, 20, VREX_ARGF_ALIAS), VREX_EINVAL);
    EXPECT_EQ(regs_.counter(VREX_CNT_LOOKUPS), 3u);
    EXPECT_EQ(regs_.counter(VREX_CNT_EXACT_HITS), 1u);
    EXPECT_EQ(regs_.counter(VREX_CNT_APPROX_HITS), 1u);
    EXPECT_EQ(regs_.counter(VREX_CNT_MISSES), 1u);

    ASSERT_EQ(regs_.on_block(VREX_CMD_BLOCK_INFO, block), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BLOCK), block);
    EXPECT_EQ(regs_.r(VREX_REG_RES_STREAM), 0u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BANK_FIRST), 5u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_GROUP), 5u / cfg().group_banks);
    EXPECT_EQ(regs_.r(VREX_REG_RES_COUNT), 2u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_LAST_ACCESS), 0u);
    EXPECT_EQ(regs_.res_kv().tag, 0xbeefu);
    EXPECT_EQ(regs_.counter(VREX_CNT_LIVE_ENTRIES), 2u);
    EXPECT_EQ(regs_.counter(VREX_CNT_LIVE_BLOCKS), 1u);

    ASSERT_EQ(regs_.on_block(VREX_CMD_REMOVE, block), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BLOCK), block);
    EXPECT_EQ(regs_.r(VREX_REG_RES_REASON), static_cast<uint32_t>(VREX_RELEASE_REMOVED));
    EXPECT_EQ(regs_.r(VREX_REG_RES_BANK_FIRST), 5u);
    EXPECT_EQ(regs_.res_kv().addr, kv.addr);
    EXPECT_EQ(regs_.counter(VREX_CNT_REMOVES), 1u);
    EXPECT_EQ(regs_.counter(VREX_CNT_LIVE_ENTRIES), 0u);
    EXPECT_EQ(regs_.r(VREX_REG_BANK_KB(5)), 0u);
    EXPECT_EQ(regs_.on_block(VREX_CMD_REMOVE, block), VREX_ENOENT);
    EXPECT_EQ(regs_.on_block(VREX_CMD_BLOCK_INFO, block), VREX_ENOENT);
}

// KV_ADDR bit 63: memory outside the device (a buffer the driver imported). The device keeps the
// pointer; the block is in no bank and no bank's occupancy registers count it.
TEST_F(RegisterFile, ExternalKvAddressesAreInNoBank) {
    auto bank_sums = [&] {
        uint64_t kb = 0, blocks = 0;
        for (uint32_t b = 0; b < cfg().nbanks; b++) {
            kb += regs_.r(VREX_REG_BANK_KB(b));
            blocks += regs_.r(VREX_REG_BANK_BLOCKS(b));
        }
        return std::pair<uint64_t, uint64_t>(kb, blocks);
    };
    ASSERT_EQ(regs_.open(0, 0), 0);
    ASSERT_EQ(regs_.frame(0, luma()), 0);
    const vrex_fp fp = make_fp(0xabcdull, 0x1234ull);
    const vrex_kv_ref ext{VREX_KV_ADDR_EXTERNAL | 0x40000ull, 65536, 7};
    EXPECT_EQ(regs_.insert(0, 3, 0, fp, vrex_kv_ref{VREX_KV_ADDR_EXTERNAL, 0, 7}), VREX_ERANGE) << "length 0";
    EXPECT_EQ(regs_.insert(0, 3, 0, fp, vrex_kv_ref{~0ull - 8, 16, 7}), VREX_ERANGE) << "wraps";
    ASSERT_EQ(regs_.insert(0, 3, 0, fp, ext), 0);
    const uint32_t block = regs_.r(VREX_REG_RES_BLOCK);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BANK_FIRST), VREX_BANK_NONE);
    EXPECT_EQ(bank_sums(), (std::pair<uint64_t, uint64_t>(0, 0)));
    EXPECT_EQ(regs_.counter(VREX_CNT_LIVE_BLOCKS), 1u);
    ASSERT_EQ(regs_.similar(0, 3, fp, 0, 0), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BLOCK), block);
    EXPECT_EQ(regs_.res_kv().addr, ext.addr) << "the pointer comes back verbatim";
    // A bank block next to it is counted as usual.
    ASSERT_EQ(regs_.insert(0, 4, 0, fp, kv_at(cfg(), 2, 0, 2048, 1)), 0);
    EXPECT_EQ(bank_sums(), (std::pair<uint64_t, uint64_t>(2, 1)));
    ASSERT_EQ(regs_.on_block(VREX_CMD_REMOVE, block), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BANK_FIRST), VREX_BANK_NONE);
    EXPECT_EQ(regs_.res_kv().addr, ext.addr);
    EXPECT_EQ(bank_sums(), (std::pair<uint64_t, uint64_t>(2, 1))) << "the release took nothing from a bank";
    EXPECT_EQ(regs_.counter(VREX_CNT_LIVE_BLOCKS), 1u);
}

// Block generations: every allocation takes a new one (never 0, never reused, not even by RESET),
// and an ALIAS insert that names a generation fails with ENOENT once the slot holds another one.
TEST_F(RegisterFile, AliasWithAGenerationNamesOneIncarnationOfTheSlot) {
    auto gen = [&] { return regs_.r64(VREX_REG_RES_BLOCK_GEN_LO, VREX_REG_RES_BLOCK_GEN_HI); };
    auto alias = [&](uint32_t region, uint32_t block, uint64_t g) {
        regs_.w64(VREX_REG_ARG_BLOCK_GEN_LO, VREX_REG_ARG_BLOCK_GEN_HI, g);
        const int rc = regs_.insert(0, region, 0, make_fp(region, 7), vrex_kv_ref{0, 0, 0}, VREX_ARGF_ALIAS, block);
        regs_.w64(VREX_REG_ARG_BLOCK_GEN_LO, VREX_REG_ARG_BLOCK_GEN_HI, 0);
        return rc;
    };
    ASSERT_EQ(regs_.open(0, 0), 0);
    ASSERT_EQ(regs_.frame(0, luma()), 0);
    ASSERT_EQ(regs_.insert(0, 0, 0, make_fp(1, 1), kv_at(cfg(), 0, 0, 1024, 1)), 0);
    const uint32_t block = regs_.r(VREX_REG_RES_BLOCK);
    const uint64_t first = gen();
    EXPECT_NE(first, 0u);
    ASSERT_EQ(alias(1, block, first), 0);
    EXPECT_EQ(gen(), first) << "an alias reports the generation of the block it points at";
    ASSERT_EQ(regs_.temporal(0, 1, 0), 0);
    EXPECT_EQ(gen(), first) << "a hit too";
    ASSERT_EQ(regs_.on_block(VREX_CMD_BLOCK_INFO, block), 0);
    EXPECT_EQ(gen(), first);
    ASSERT_EQ(regs_.on_block(VREX_CMD_REMOVE, block), 0);
    EXPECT_EQ(gen(), first) << "the release names the generation it ended";
    EXPECT_EQ(alias(2, block, first), VREX_ENOENT) << "released";

    // The slot is handed out again (lowest free first): same id, another generation.
    ASSERT_EQ(regs_.insert(0, 3, 0, make_fp(3, 3), kv_at(cfg(), 0, 4096, 1024, 2)), 0);
    ASSERT_EQ(regs_.r(VREX_REG_RES_BLOCK), block);
    const uint64_t second = gen();
    EXPECT_GT(second, first);
    EXPECT_EQ(alias(4, block, first), VREX_ENOENT) << "the predecessor's generation never reaches the successor";
    EXPECT_EQ(regs_.counter(VREX_CNT_INSERTS), 3u) << "the refused alias inserted nothing";
    EXPECT_EQ(alias(5, block, second), 0);
    EXPECT_EQ(alias(6, block, 0), 0) << "generation 0: any, as before generations existed";
    EXPECT_EQ(alias(7, block + 1, second), VREX_ENOENT);

    // RESET empties the table but keeps counting.
    regs_.w(VREX_REG_RESET, VREX_RESET_MAGIC);
    ASSERT_EQ(regs_.open(0, 0), 0);
    ASSERT_EQ(regs_.frame(0, luma()), 0);
    ASSERT_EQ(regs_.insert(0, 0, 0, make_fp(1, 1), kv_at(cfg(), 0, 0, 1024, 1)), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BLOCK), block);
    EXPECT_GT(gen(), second) << "no generation is reused across a reset";
}

TEST_F(RegisterFile, RetirePopAndCloseCommands) {
    ASSERT_EQ(regs_.open(1, 0), 0);
    ASSERT_EQ(regs_.frame(1, luma()), 0);
    ASSERT_EQ(regs_.insert(1, 0, 0, make_fp(1, 0), kv_at(cfg(), 0, 0, 100, 10)), 0);
    uint32_t zombie = regs_.r(VREX_REG_RES_BLOCK);
    ASSERT_EQ(regs_.insert(1, 1, 0, make_fp(2, 0), kv_at(cfg(), 1, 0, 100, 11)), 0);
    uint32_t closed = regs_.r(VREX_REG_RES_BLOCK);
    regs_.w(VREX_REG_ZOMBIE_FRAMES, 1);
    ASSERT_EQ(regs_.frame(1, luma()), 0);
    ASSERT_EQ(regs_.temporal(1, 1, -1), 0);  // keeps block "closed" warm
    ASSERT_EQ(regs_.on_stream(VREX_CMD_RETIRE, 1), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_COUNT), 0u);
    EXPECT_EQ(regs_.r(VREX_REG_IRQ_STATUS) & VREX_IRQ_ZOMBIES, 0u);
    ASSERT_EQ(regs_.frame(1, luma()), 0);
    ASSERT_EQ(regs_.temporal(1, 1, -2), 0);
    ASSERT_EQ(regs_.on_stream(VREX_CMD_RETIRE, 1), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_COUNT), 1u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_STREAM), 1u);
    EXPECT_EQ(regs_.r(VREX_REG_IRQ_STATUS) & VREX_IRQ_ZOMBIES, VREX_IRQ_ZOMBIES);
    EXPECT_EQ(regs_.counter(VREX_CNT_EVICTIONS), 1u);
    EXPECT_EQ(regs_.on_stream(VREX_CMD_RETIRE, 2), VREX_EINVAL);

    ASSERT_EQ(regs_.on_stream(VREX_CMD_STREAM_CLOSE, 1), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_COUNT), 1u);
    EXPECT_EQ(regs_.counter(VREX_CNT_EVICTIONS), 1u) << "closing is not an eviction";

    ASSERT_EQ(regs_.cmd(VREX_CMD_POP_RELEASED), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_FLAGS), VREX_RESF_HIT);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BLOCK), zombie);
    EXPECT_EQ(regs_.r(VREX_REG_RES_REASON), static_cast<uint32_t>(VREX_RELEASE_ZOMBIE));
    EXPECT_EQ(regs_.r(VREX_REG_RES_KV_TAG), 10u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_STREAM), 1u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_COUNT), 1u) << "one record still queued";
    ASSERT_EQ(regs_.cmd(VREX_CMD_POP_RELEASED), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BLOCK), closed);
    EXPECT_EQ(regs_.r(VREX_REG_RES_REASON), static_cast<uint32_t>(VREX_RELEASE_STREAM_CLOSED));
    EXPECT_EQ(regs_.r(VREX_REG_RES_BANK_FIRST), 1u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_COUNT), 0u);
    ASSERT_EQ(regs_.cmd(VREX_CMD_POP_RELEASED), 0);
    EXPECT_EQ(regs_.r(VREX_REG_RES_FLAGS), 0u);
    EXPECT_EQ(regs_.r(VREX_REG_RES_BLOCK), VREX_NIL);
    EXPECT_EQ(regs_.on_stream(VREX_CMD_STREAM_CLOSE, 1), VREX_EINVAL);
    EXPECT_EQ(regs_.open(1, VREX_POOL_PRIVATE + 3), VREX_EINVAL);
    EXPECT_EQ(regs_.open(1, 0), 0);
    EXPECT_EQ(regs_.open(1, 0), VREX_EBUSY);
}

// ---- differential: registers vs direct calls -------------------------------------------------

struct Outcome {
    int rc = 0;
    std::vector<uint64_t> out;
    bool operator==(const Outcome&) const = default;
};

void push_lookup(Outcome& o, const vrex_lookup_result& r) {
    o.out = {r.hit,    r.approx,  r.distance, r.block,   r.frame,     r.stream,
             r.region, r.fp.w[0], r.fp.w[1],  r.kv.addr, r.kv.length, r.kv.tag};
}

void push_lookup_regs(Outcome& o, const Regs& g) {
    uint32_t f = g.r(VREX_REG_RES_FLAGS);
    vrex_lookup_result r{};
    r.hit = f & VREX_RESF_HIT ? 1 : 0;
    r.approx = f & VREX_RESF_APPROX ? 1 : 0;
    r.distance = g.r(VREX_REG_RES_DISTANCE);
    r.block = g.r(VREX_REG_RES_BLOCK);
    r.frame = g.r(VREX_REG_RES_FRAME);
    r.stream = g.r(VREX_REG_RES_STREAM);
    r.region = g.r(VREX_REG_RES_REGION);
    r.fp = g.res_fp();
    r.kv = g.res_kv();
    push_lookup(o, r);
}

void push_released(Outcome& o, const vrex_released& r) {
    o.out = {r.block, r.stream, r.bank, r.reason, r.kv.addr, r.kv.length, r.kv.tag};
}

void push_released_regs(Outcome& o, const Regs& g) {
    o.out = {g.r(VREX_REG_RES_BLOCK),
             g.r(VREX_REG_RES_STREAM),
             g.r(VREX_REG_RES_BANK_FIRST),
             g.r(VREX_REG_RES_REASON),
             g.res_kv().addr,
             g.res_kv().length,
             g.res_kv().tag};
}

// The device state both paths must agree on: every register except the command latches and
// command status (which only the register path touches), plus the internal tables.
Snapshot comparable(vrex_model* m) {
    Snapshot s = snapshot(m);
    auto blank = [&s](uint32_t from, uint32_t to) {
        for (uint32_t off = from; off <= to; off += 4) s.regs[off / 4] = 0;
    };
    blank(VREX_REG_IRQ_STATUS, VREX_REG_IRQ_STATUS);
    blank(VREX_REG_STATUS, VREX_REG_ARG_LAST);
    blank(VREX_REG_RES_FLAGS, VREX_REG_RES_LAST);
    blank(VREX_REG_CNT_LO(VREX_CNT_CMD_ERRORS), VREX_REG_CNT_HI(VREX_CNT_CMD_ERRORS));
    return s;
}

TEST(RegisterDifferential, RandomSequenceGivesIdenticalResultsThroughRegistersAndDirectCalls) {
    vrex_model_config cfg = small_config();
    cfg.zombie_frames = 2;
    Device direct(cfg), viaregs(cfg);
    ASSERT_EQ(direct.init_rc(), 0);
    ASSERT_EQ(viaregs.init_rc(), 0);
    vrex_model* d = direct.get();
    Regs g(viaregs.get());
    std::mt19937 rng(77);
    std::vector<vrex_fp> fps;
    uint32_t errors = 0, hits = 0;

    for (int step = 0; step < 2500; step++) {
        Outcome a, b;
        uint32_t op = rng() % 11;
        uint32_t stream = rng() % 8 == 0 ? rng() % 6 : rng() % 3;        // mostly valid, sometimes not
        uint32_t region = rng() % 20 == 0 ? 16 + rng() % 3 : rng() % 4;  // few regions: more hits
        int32_t offset = static_cast<int32_t>(rng() % 8) - 4;
        uint32_t block = rng() % 10 == 0 ? VREX_NIL - rng() % 2 : rng() % (cfg.block_capacity + 2);
        vrex_fp fp = fps.empty() || rng() % 3 == 0 ? make_fp((uint64_t)rng() << 32 | rng(), rng())
                                                   : fps[rng() % fps.size()];
        if (rng() % 2) fp.w[rng() % 2] ^= 1ull << (rng() % 64);
        switch (op) {
            case 0: {
                uint32_t pool = rng() % 4 == 0 ? VREX_POOL_PRIVATE + rng() % 5 : rng() % 2;
                a.rc = vrex_model_stream_open(d, stream, pool);
                b.rc = g.open(stream, pool);
                break;
            }
            case 1: {
                uint32_t scene = rng() % 5, shift = rng() % 3;
                uint64_t src = rng() % 30 == 0 ? viaregs.mem().size() - 100 : luma_addr(cfg, rng() % 2);
                if (src != viaregs.mem().size() - 100) {
                    direct.put_luma(src, scene, shift);
                    viaregs.put_luma(src, scene, shift);
                }
                vrex_frame_result r{};
                a.rc = vrex_model_frame(d, stream, src, kW, kH, kW, &r);
                if (!a.rc)
                    a.out = {
                        r.fp.w[0],
                        r.fp.w[1],
                        r.frame,
                        r.bank.group,
                        r.bank.bank_first,
                        r.bank.bank_count,
                        (r.bank.opened ? VREX_RESF_OPENED : 0u) | (r.bank.conflict ? VREX_RESF_CONFLICT : 0u),
                        r.bank.distance};
                b.rc = g.frame(stream, src);
                if (!b.rc)
                    b.out = {g.res_fp().w[0],
                             g.res_fp().w[1],
                             g.r(VREX_REG_RES_FRAME),
                             g.r(VREX_REG_RES_GROUP),
                             g.r(VREX_REG_RES_BANK_FIRST),
                             g.r(VREX_REG_RES_BANK_COUNT),
                             g.r(VREX_REG_RES_FLAGS),
                             g.r(VREX_REG_RES_DISTANCE)};
                break;
            }
            case 2:
            case 3: {
                bool alias = rng() % 4 == 0;
                vrex_kv_ref kv =
                    kv_at(cfg, rng() % 7, (rng() % 64) * 1024, rng() % 50 == 0 ? 0 : 1 + rng() % 2048, step);
                uint32_t out = VREX_NIL;
                if (alias && block == VREX_NIL)
                    a.rc = VREX_ENOENT;  // ALIAS of VREX_NIL: the direct call has no way to say it
                else
                    a.rc = vrex_model_insert(d, stream, region, offset, &fp, &kv, alias ? block : VREX_NIL,
                                             &out);
                if (!a.rc) {
                    a.out = {out};
                    fps.push_back(fp);
                }
                b.rc = g.insert(stream, region, offset, fp, kv, alias ? VREX_ARGF_ALIAS : 0u, block);
                if (!b.rc) b.out = {g.r(VREX_REG_RES_BLOCK)};
                break;
            }
            case 4: {
                vrex_lookup_result r{};
                a.rc = vrex_model_lookup_temporal(d, stream, region, offset, &r);
                if (!a.rc) push_lookup(a, r);
                b.rc = g.temporal(stream, region, offset);
                if (!b.rc) push_lookup_regs(b, g);
                hits += !a.rc && r.hit;
                break;
            }
            case 5:
            case 6: {
                uint32_t radius = rng() % 36, flags = rng() % 10 == 0 ? rng() % 8 : rng() % 4;
                vrex_lookup_result r{};
                a.rc = vrex_model_lookup_similar(d, stream, region, &fp, radius, flags, &r);
                if (!a.rc) push_lookup(a, r);
                b.rc = g.similar(stream, region, fp, radius, flags);
                if (!b.rc) push_lookup_regs(b, g);
                hits += !a.rc && r.hit;
                break;
            }
            case 7: {
                vrex_released r{};
                a.rc = vrex_model_remove(d, block, &r);
                if (!a.rc) push_released(a, r);
                b.rc = g.on_block(VREX_CMD_REMOVE, block);
                if (!b.rc) push_released_regs(b, g);
                break;
            }
            case 8: {
                uint32_t n = 0;
                bool close = rng() % 8 == 0;
                a.rc = close ? vrex_model_stream_close(d, stream, &n) : vrex_model_retire(d, stream, &n);
                if (!a.rc) a.out = {n};
                b.rc = g.on_stream(close ? VREX_CMD_STREAM_CLOSE : VREX_CMD_RETIRE, stream);
                if (!b.rc) b.out = {g.r(VREX_REG_RES_COUNT)};
                break;
            }
            case 9: {
                vrex_released r{};
                int got = vrex_model_pop_released(d, &r);
                if (got) push_released(a, r);
                a.out.push_back(vrex_blocks_queued(&d->blocks));
                b.rc = g.cmd(VREX_CMD_POP_RELEASED);
                if (g.r(VREX_REG_RES_FLAGS) & VREX_RESF_HIT) push_released_regs(b, g);
                b.out.push_back(g.r(VREX_REG_RES_COUNT));
                break;
            }
            case 10: {
                vrex_block r{};
                a.rc = vrex_model_block_info(d, block, &r);
                if (!a.rc)
                    a.out = {r.kv.addr, r.kv.length, r.kv.tag, r.last_access, r.nentries, r.stream, r.bank};
                b.rc = g.on_block(VREX_CMD_BLOCK_INFO, block);
                if (!b.rc)
                    b.out = {g.res_kv().addr,
                             g.res_kv().length,
                             g.res_kv().tag,
                             g.r(VREX_REG_RES_LAST_ACCESS),
                             g.r(VREX_REG_RES_COUNT),
                             g.r(VREX_REG_RES_STREAM),
                             g.r(VREX_REG_RES_BANK_FIRST)};
                break;
            }
        }
        ASSERT_TRUE(a == b) << "step " << step << " op " << op << ": rc " << a.rc << " vs " << b.rc;
        errors += a.rc != 0;
    }
    EXPECT_TRUE(comparable(d) == comparable(viaregs.get()));
    EXPECT_EQ(g.counter(VREX_CNT_CMD_ERRORS), errors);
    EXPECT_GT(errors, 100u);
    EXPECT_GT(hits, 25u) << hits;
    EXPECT_GT(d->cnt[VREX_CNT_INSERTS], 100u);
}

}  // namespace
