// Device-model operations: configuration and init, streams, FRAME, INSERT, lookups, REMOVE,
// BLOCK_INFO; every error path, each checked to leave the whole device unchanged.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "test_model_fixture.h"

using namespace vrex_test;

namespace {

TEST(ModelConfig, DefaultsMatchTheDocumentedDevice) {
    vrex_model_config cfg{};
    vrex_model_default_config(&cfg);
    EXPECT_EQ(cfg.nbanks, 16u);
    EXPECT_EQ(cfg.group_banks, 2u);
    EXPECT_EQ(cfg.bank_size, 4ull << 20);
    EXPECT_EQ(cfg.max_streams, 16u);
    EXPECT_EQ(cfg.shie_capacity, 16384u);
    EXPECT_EQ(cfg.block_capacity, 16384u);
    EXPECT_EQ(cfg.zombie_frames, 5u);
    EXPECT_GT(vrex_model_arena_size(&cfg), 0u);
}

TEST(ModelConfig, ArenaSizeIsZeroAndInitFailsForEveryInvalidField) {
    struct Case {
        const char* what;
        void (*mutate)(vrex_model_config&);
    };
    const Case cases[] = {
        {"nbanks 0", [](vrex_model_config& c) { c.nbanks = 0; }},
        {"nbanks > max", [](vrex_model_config& c) { c.nbanks = VREX_MAX_BANKS + 2; }},
        {"group_banks 0", [](vrex_model_config& c) { c.group_banks = 0; }},
        {"group_banks not dividing", [](vrex_model_config& c) { c.group_banks = 3; }},
        {"bank_size 0", [](vrex_model_config& c) { c.bank_size = 0; }},
        {"bank_size not 4K multiple", [](vrex_model_config& c) { c.bank_size = 4096 + 512; }},
        {"bank_size KiB over 32 bits", [](vrex_model_config& c) { c.bank_size = 1ull << 42; }},
        {"max_streams 0", [](vrex_model_config& c) { c.max_streams = 0; }},
        {"max_streams > max", [](vrex_model_config& c) { c.max_streams = VREX_MAX_STREAMS + 1; }},
        {"shie_capacity 0", [](vrex_model_config& c) { c.shie_capacity = 0; }},
        {"shie_capacity > max", [](vrex_model_config& c) { c.shie_capacity = VREX_SHIE_MAX_CAPACITY + 1; }},
        {"block_capacity 0", [](vrex_model_config& c) { c.block_capacity = 0; }},
        {"zombie_frames 0", [](vrex_model_config& c) { c.zombie_frames = 0; }},
        {"zombie_frames > 255", [](vrex_model_config& c) { c.zombie_frames = 256; }},
    };
    const vrex_model_config good = small_config();
    std::vector<uint8_t> arena(vrex_model_arena_size(&good) * 2);
    for (const Case& c : cases) {
        SCOPED_TRACE(c.what);
        vrex_model_config cfg = small_config();
        c.mutate(cfg);
        EXPECT_EQ(vrex_model_arena_size(&cfg), 0u);
        auto m = std::make_unique<vrex_model>();
        EXPECT_EQ(vrex_model_init(m.get(), &cfg, arena.data(), arena.size(), nullptr, 0), VREX_EINVAL);
    }
}

TEST(ModelInit, RejectsShortArenaAndBadMemory) {
    vrex_model_config cfg = small_config();
    size_t need = vrex_model_arena_size(&cfg);
    std::vector<uint8_t> arena(need + 64);
    std::vector<uint8_t> mem(cfg.nbanks * cfg.bank_size);
    auto m = std::make_unique<vrex_model>();
    EXPECT_EQ(vrex_model_init(m.get(), &cfg, arena.data(), need - 1, mem.data(), mem.size()), VREX_ENOMEM);
    EXPECT_EQ(vrex_model_init(m.get(), &cfg, nullptr, need, mem.data(), mem.size()), VREX_ENOMEM);
    EXPECT_EQ(vrex_model_init(m.get(), &cfg, arena.data(), need, nullptr, mem.size()), VREX_EINVAL);
    EXPECT_EQ(vrex_model_init(m.get(), &cfg, arena.data(), need, mem.data(), mem.size() - 1), VREX_EINVAL);
    // Misaligned arenas work: the size includes the alignment slack.
    EXPECT_EQ(vrex_model_init(m.get(), &cfg, arena.data() + 3, need, mem.data(), mem.size()), 0);
    EXPECT_EQ(vrex_model_read(m.get(), VREX_REG_ID), VREX_ID_VALUE);
}

TEST(ModelInit, WithoutMemoryFramesFailButIndexOpsWork) {
    Device dev(small_config(), 0);
    ASSERT_EQ(dev.init_rc(), 0);
    ASSERT_EQ(vrex_model_stream_open(dev.get(), 0, 0), 0);
    EXPECT_EQ(vrex_model_frame(dev.get(), 0, 0, kW, kH, kW, nullptr), VREX_EINVAL);
    vrex_fp fp = make_fp(1, 1);
    vrex_lookup_result r{};
    EXPECT_EQ(vrex_model_lookup_similar(dev.get(), 0, 0, &fp, 5, 0, &r), 0);
    EXPECT_FALSE(r.hit);
}

class ModelOps : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(dev_.init_rc(), 0);
        ASSERT_EQ(vrex_model_stream_open(m(), 0, 0), 0);
    }
    vrex_model* m() { return dev_.get(); }
    const vrex_model_config& cfg() { return dev_->cfg; }
    // Runs @op, expects @rc and proves that nothing observable changed.
    template <typename Op>
    void expect_rejected(int rc, Op op) {
        Snapshot before = snapshot(m());
        EXPECT_EQ(op(), rc);
        EXPECT_TRUE(snapshot(m()) == before) << "a failed operation changed the device";
    }
    int insert(uint32_t stream, uint32_t region, int32_t offset, vrex_kv_ref kv, uint32_t* block = nullptr,
               vrex_fp fp = make_fp(0xabc, 0xdef)) {
        uint32_t b;
        return vrex_model_insert(m(), stream, region, offset, &fp, &kv, VREX_NIL, block ? block : &b);
    }
    vrex_kv_ref kv(uint32_t bank = 0, uint32_t off = 0, uint32_t len = 4096, uint32_t tag = 1) {
        return kv_at(cfg(), bank, off, len, tag);
    }
    Device dev_;
};

TEST_F(ModelOps, StreamOpenValidatesIdPoolAndBusy) {
    expect_rejected(VREX_EBUSY, [&] { return vrex_model_stream_open(m(), 0, 0); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_stream_open(m(), cfg().max_streams, 0); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_stream_open(m(), 1, VREX_POOL_PRIVATE); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_stream_open(m(), 1, VREX_POOL_PRIVATE + 2); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_stream_open(m(), 1, 0xffffffffu); });
    EXPECT_EQ(vrex_model_stream_open(m(), 1, VREX_POOL_PRIVATE + 1), 0);
    EXPECT_EQ(vrex_model_stream_open(m(), 2, VREX_POOL_PRIVATE - 1), 0);
    EXPECT_EQ(m()->streams[1].pool, VREX_POOL_PRIVATE + 1);
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_stream_close(m(), 3, nullptr); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_stream_close(m(), 99, nullptr); });
}

TEST_F(ModelOps, FrameNumbersCountersAndFeatureRegisters) {
    for (uint32_t i = 0; i < 4; i++) {
        vrex_frame_result r{};
        ASSERT_EQ(dev_.frame(0, 1, &r), 0);
        EXPECT_EQ(r.frame, i);
        EXPECT_EQ(m()->streams[0].frame, i);
        EXPECT_EQ(m()->streams[0].nframes, i + 1);
        EXPECT_TRUE(vrex_fp_equal(&r.fp, &m()->streams[0].fp));
        EXPECT_EQ(r.bank.bank_count, cfg().group_banks);
        EXPECT_EQ(vrex_model_read(m(), VREX_REG_FCC_STATIC_RATIO), r.feat.static_ratio);
        EXPECT_EQ(vrex_model_read(m(), VREX_REG_FCC_CENTRE_MOTION), r.feat.centre_motion);
        EXPECT_EQ(vrex_model_read(m(), VREX_REG_FCC_MOVING_BLOCKS), r.feat.moving_blocks);
        EXPECT_EQ(static_cast<int32_t>(vrex_model_read(m(), VREX_REG_FCC_ROI_DX)), r.feat.roi_dx);
        EXPECT_EQ(static_cast<int32_t>(vrex_model_read(m(), VREX_REG_FCC_ROI_DY)), r.feat.roi_dy);
    }
    EXPECT_EQ(m()->cnt[VREX_CNT_FRAMES], 4u);
    EXPECT_EQ(m()->streams[0].has_prev, 1u);
}

TEST_F(ModelOps, FrameUsesThePreviousImageOfItsOwnStream) {
    // A shifted copy of the previous image shows motion; the same picture as a first frame does not.
    dev_.put_luma(luma_addr(cfg()), 5, 0);
    ASSERT_EQ(vrex_model_frame(m(), 0, luma_addr(cfg()), kW, kH, kW, nullptr), 0);
    dev_.put_luma(luma_addr(cfg()), 5, 4);
    vrex_frame_result moved{};
    ASSERT_EQ(vrex_model_frame(m(), 0, luma_addr(cfg()), kW, kH, kW, &moved), 0);
    ASSERT_EQ(vrex_model_stream_open(m(), 1, 0), 0);
    vrex_frame_result first{};
    ASSERT_EQ(vrex_model_frame(m(), 1, luma_addr(cfg()), kW, kH, kW, &first), 0);
    EXPECT_EQ(first.feat.moving_blocks, 0u);
    EXPECT_GT(moved.feat.moving_blocks, 0u);
}

// The FRAME command's region motion: the lib call on the vectors the search wrote, in the result and
// in the FCC_REGION_MOTION registers (byte k of register i is region 4i + k).
TEST_F(ModelOps, FrameReportsRegionMotionInItsResultAndRegisters) {
    const auto regs_match = [&](const vrex_frame_result& r) {
        for (uint32_t i = 0; i < VREX_FCC_REGION_MOTION_REGS; i++)
            for (uint32_t k = 0; k < 4; k++)
                EXPECT_EQ((vrex_model_read(m(), VREX_REG_FCC_REGION_MOTION(i)) >> (8 * k)) & 0xff,
                          r.region_motion[4 * i + k])
                    << "region " << 4 * i + k;
    };
    dev_.put_luma(luma_addr(cfg()), 5, 0);
    vrex_frame_result first{};
    ASSERT_EQ(vrex_model_frame(m(), 0, luma_addr(cfg()), kW, kH, kW, &first), 0);
    regs_match(first);
    for (uint8_t v : first.region_motion) EXPECT_EQ(v, 0u) << "a first frame has no motion";

    dev_.put_luma(luma_addr(cfg()), 5, 4);
    vrex_frame_result moved{};
    ASSERT_EQ(vrex_model_frame(m(), 0, luma_addr(cfg()), kW, kH, kW, &moved), 0);
    regs_match(moved);
    uint8_t want[VREX_FCC_REGIONS];
    vrex_fcc_region_motion(m()->mv, want);
    uint32_t moving = 0;
    for (uint32_t r = 0; r < VREX_FCC_REGIONS; r++) {
        EXPECT_EQ(moved.region_motion[r], want[r]) << "region " << r;
        moving += moved.region_motion[r] > 0;
    }
    EXPECT_EQ(moving, VREX_FCC_REGIONS) << "the whole picture moved: every region";

    vrex_frame_result still{};
    ASSERT_EQ(vrex_model_frame(m(), 0, luma_addr(cfg()), kW, kH, kW, &still), 0);
    regs_match(still);
    for (uint8_t v : still.region_motion) EXPECT_EQ(v, 0u) << "the same picture again: no motion";
}

TEST_F(ModelOps, FrameRejectsClosedStreamsBadGeometryAndLumaOutsideMemory) {
    uint64_t mem = dev_.mem().size();
    uint64_t a = luma_addr(cfg());
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_frame(m(), 1, a, kW, kH, kW, nullptr); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_frame(m(), 77, a, kW, kH, kW, nullptr); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_frame(m(), 0, a, 0, kH, kW, nullptr); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_frame(m(), 0, a, kW, 0, kW, nullptr); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_frame(m(), 0, a, kW, kH, kW - 1, nullptr); });
    // Below the FCC minimum: rejected by the fingerprint unit, still nothing changes.
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_frame(m(), 0, a, 32, 32, 32, nullptr); });
    // Last byte one past the end.
    expect_rejected(VREX_ERANGE,
                    [&] { return vrex_model_frame(m(), 0, mem - kW * kH + 1, kW, kH, kW, nullptr); });
    expect_rejected(VREX_ERANGE, [&] { return vrex_model_frame(m(), 0, mem, kW, kH, kW, nullptr); });
    expect_rejected(VREX_ERANGE, [&] { return vrex_model_frame(m(), 0, ~0ull - 10, kW, kH, kW, nullptr); });
    // A huge stride would overflow 32-bit arithmetic.
    expect_rejected(VREX_ERANGE, [&] { return vrex_model_frame(m(), 0, 0, kW, kH, 0xffffffffu, nullptr); });
    // Exactly fitting at the very end is fine: (h - 1) * stride + w bytes.
    EXPECT_EQ(vrex_model_frame(m(), 0, mem - (kH - 1) * 100 - kW, kW, kH, 100, nullptr), 0);
}

TEST_F(ModelOps, InsertCreatesBlockInTheBankOfItsAddress) {
    ASSERT_EQ(dev_.frame(0), 0);
    uint32_t block = VREX_NIL;
    ASSERT_EQ(insert(0, 5, 0, kv(3, 1024, 5000, 42), &block), 0);
    vrex_block b{};
    ASSERT_EQ(vrex_model_block_info(m(), block, &b), 0);
    EXPECT_EQ(b.bank, 3u);
    EXPECT_EQ(b.kv.tag, 42u);
    EXPECT_EQ(b.kv.length, 5000u);
    EXPECT_EQ(b.kv.addr, 3 * cfg().bank_size + 1024);
    EXPECT_EQ(b.stream, 0u);
    EXPECT_EQ(b.nentries, 1u);
    EXPECT_EQ(b.last_access, 0u);
    EXPECT_EQ(m()->bankmap.bank_bytes[3], 5000u);
    EXPECT_EQ(vrex_model_read(m(), VREX_REG_BANK_KB(3)), 5u);  // rounded up per block
    EXPECT_EQ(vrex_model_read(m(), VREX_REG_BANK_BLOCKS(3)), 1u);
    ASSERT_EQ(insert(0, 6, 0, kv(3, 8192, 1, 43)), 0);
    EXPECT_EQ(vrex_model_read(m(), VREX_REG_BANK_KB(3)), 6u);
    EXPECT_EQ(m()->cnt[VREX_CNT_INSERTS], 2u);
    EXPECT_EQ(m()->cnt[VREX_CNT_LIVE_BLOCKS], 2u);
    EXPECT_EQ(m()->cnt[VREX_CNT_LIVE_ENTRIES], 2u);
    vrex_released rec{};
    ASSERT_EQ(vrex_model_remove(m(), block, &rec), 0);
    EXPECT_EQ(vrex_model_read(m(), VREX_REG_BANK_KB(3)), 1u);
    EXPECT_EQ(m()->bankmap.bank_bytes[3], 1u);
}

TEST_F(ModelOps, InsertRejectsEveryInvalidArgumentWithoutChanges) {
    vrex_fp fp = make_fp(1, 2);
    vrex_kv_ref k = kv();
    uint32_t out;
    // No frame yet.
    expect_rejected(VREX_EINVAL, [&] { return insert(0, 0, 0, k); });
    ASSERT_EQ(dev_.frame(0), 0);
    expect_rejected(VREX_EINVAL, [&] { return insert(1, 0, 0, k); });  // closed stream
    expect_rejected(VREX_EINVAL, [&] { return insert(1000, 0, 0, k); });
    expect_rejected(VREX_EINVAL,
                    [&] { return vrex_model_insert(m(), 0, 0, 0, nullptr, &k, VREX_NIL, &out); });
    expect_rejected(VREX_EINVAL,
                    [&] { return vrex_model_insert(m(), 0, 0, 0, &fp, nullptr, VREX_NIL, &out); });
    expect_rejected(VREX_ERANGE, [&] { return insert(0, 16, 0, k); });
    expect_rejected(VREX_ERANGE, [&] { return insert(0, 0, -4, k); });
    expect_rejected(VREX_ERANGE, [&] { return insert(0, 0, 3, k); });
    expect_rejected(VREX_ERANGE, [&] { return insert(0, 0, -1, k); });           // frame 0 - 1 < 0
    expect_rejected(VREX_ERANGE, [&] { return insert(0, 0, 0, kv(0, 0, 0)); });  // zero length
    expect_rejected(VREX_ERANGE, [&] { return insert(0, 0, 0, kv(2, 65536 - 100, 101)); });  // crosses bank
    expect_rejected(VREX_ERANGE, [&] { return insert(0, 0, 0, kv(cfg().nbanks, 0, 16)); });  // past banks
    expect_rejected(VREX_ERANGE, [&] {
        return insert(0, 0, 0, vrex_kv_ref{~0ull - 8, 16, 0});
    });  // address overflow
    expect_rejected(VREX_ENOENT, [&] { return vrex_model_insert(m(), 0, 0, 0, &fp, nullptr, 5, &out); });
    expect_rejected(VREX_ENOENT, [&] {
        return vrex_model_insert(m(), 0, 0, 0, &fp, nullptr, cfg().block_capacity, &out);
    });
    // Boundaries that are valid.
    EXPECT_EQ(insert(0, 15, 2, kv(2, 65536 - 100, 100)), 0);
    EXPECT_EQ(insert(0, 0, 0, kv(cfg().nbanks - 1, 0, 16)), 0);
}

TEST_F(ModelOps, InsertDuplicateAndFullTablesUndoTheBlock) {
    ASSERT_EQ(dev_.frame(0), 0);
    ASSERT_EQ(insert(0, 1, 0, kv()), 0);
    expect_rejected(VREX_EEXIST, [&] { return insert(0, 1, 0, kv(1)); });

    // Fill the block table (32 blocks) across frames, then the next insert has no block.
    uint32_t n = 1;
    for (int f = 0; n < cfg().block_capacity; f++) {
        ASSERT_EQ(dev_.frame(0), 0);
        for (uint32_t r = 0; r < 16 && n < cfg().block_capacity; r++, n++)
            ASSERT_EQ(insert(0, r, 0, kv(r % 4, 0, 128, n)), 0);
    }
    expect_rejected(VREX_ENOSPC, [&] { return insert(0, 15, 2, kv()); });
}

TEST_F(ModelOps, InsertIntoFullShieFailsWithoutLeakingABlock) {
    vrex_model_config c = small_config();
    c.shie_capacity = 8;
    Device dev(c);
    ASSERT_EQ(dev.init_rc(), 0);
    vrex_model* mm = dev.get();
    ASSERT_EQ(vrex_model_stream_open(mm, 0, 0), 0);
    ASSERT_EQ(dev.frame(0), 0);
    vrex_fp fp = make_fp(3, 3);
    vrex_kv_ref k = kv_at(c, 0, 0, 64, 0);
    uint32_t b = VREX_NIL;
    for (uint32_t r = 0; r < 8; r++) ASSERT_EQ(vrex_model_insert(mm, 0, r, 0, &fp, &k, VREX_NIL, &b), 0);
    Snapshot before = snapshot(mm);
    EXPECT_EQ(vrex_model_insert(mm, 0, 8, 0, &fp, &k, VREX_NIL, &b), VREX_ENOSPC);
    EXPECT_EQ(vrex_model_insert(mm, 0, 9, 0, &fp, nullptr, 0, &b), VREX_ENOSPC);
    EXPECT_TRUE(snapshot(mm) == before);
    EXPECT_EQ(mm->blocks.live, 8u);
}

TEST_F(ModelOps, AliasInsertJoinsTheBlockChainAndTouchesIt) {
    ASSERT_EQ(dev_.frame(0), 0);
    uint32_t block;
    ASSERT_EQ(insert(0, 1, 0, kv(2, 0, 300, 9), &block), 0);
    ASSERT_EQ(dev_.frame(0), 0);
    ASSERT_EQ(dev_.frame(0), 0);
    vrex_fp fp = make_fp(77, 77);
    uint32_t out = VREX_NIL;
    ASSERT_EQ(vrex_model_insert(m(), 0, 1, 0, &fp, nullptr, block, &out), 0);
    EXPECT_EQ(out, block);
    vrex_block b{};
    ASSERT_EQ(vrex_model_block_info(m(), block, &b), 0);
    EXPECT_EQ(b.nentries, 2u);
    EXPECT_EQ(b.last_access, 2u);
    EXPECT_EQ(m()->blocks.live, 1u);
    EXPECT_EQ(vrex_model_read(m(), VREX_REG_BANK_BLOCKS(2)), 1u) << "an alias adds no KV";
    vrex_lookup_result r{};
    ASSERT_EQ(vrex_model_lookup_similar(m(), 0, 1, &fp, 0, 0, &r), 0);
    EXPECT_EQ(r.block, block);
    EXPECT_EQ(r.kv.tag, 9u);
    EXPECT_EQ(r.frame, 2u);
}

TEST_F(ModelOps, TemporalLookupHitsMissesAndCounters) {
    ASSERT_EQ(dev_.frame(0), 0);
    vrex_fp fp = make_fp(0x1234, 0x5678);
    uint32_t now, next;
    ASSERT_EQ(insert(0, 4, 0, kv(1, 0, 100, 1), &now, fp), 0);
    ASSERT_EQ(insert(0, 4, 1, kv(1, 4096, 100, 2), &next, fp), 0);  // predicted slot
    vrex_lookup_result r{};
    ASSERT_EQ(vrex_model_lookup_temporal(m(), 0, 4, 0, &r), 0);
    EXPECT_TRUE(r.hit);
    EXPECT_FALSE(r.approx);
    EXPECT_EQ(r.block, now);
    EXPECT_EQ(r.frame, 0u);
    EXPECT_EQ(r.stream, 0u);
    EXPECT_EQ(r.region, 4u);
    EXPECT_TRUE(vrex_fp_equal(&r.fp, &fp));
    ASSERT_EQ(dev_.frame(0), 0);
    ASSERT_EQ(vrex_model_lookup_temporal(m(), 0, 4, 0, &r), 0);
    EXPECT_EQ(r.block, next);
    ASSERT_EQ(vrex_model_lookup_temporal(m(), 0, 4, -1, &r), 0);
    EXPECT_EQ(r.block, now);
    ASSERT_EQ(vrex_model_lookup_temporal(m(), 0, 4, 2, &r), 0);
    EXPECT_FALSE(r.hit);
    EXPECT_EQ(r.block, VREX_NIL);
    ASSERT_EQ(vrex_model_lookup_temporal(m(), 0, 5, 0, &r), 0);
    EXPECT_FALSE(r.hit);
    EXPECT_EQ(m()->cnt[VREX_CNT_LOOKUPS], 5u);
    EXPECT_EQ(m()->cnt[VREX_CNT_EXACT_HITS], 3u);
    EXPECT_EQ(m()->cnt[VREX_CNT_MISSES], 2u);
    EXPECT_EQ(m()->cnt[VREX_CNT_APPROX_HITS], 0u);
}

TEST_F(ModelOps, LookupsRejectInvalidArgumentsWithoutCounting) {
    vrex_fp fp = make_fp(1, 1);
    vrex_lookup_result r{};
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_lookup_temporal(m(), 0, 0, 0, &r); });  // no frame
    ASSERT_EQ(dev_.frame(0), 0);
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_lookup_temporal(m(), 2, 0, 0, &r); });
    expect_rejected(VREX_ERANGE, [&] { return vrex_model_lookup_temporal(m(), 0, 16, 0, &r); });
    expect_rejected(VREX_ERANGE, [&] { return vrex_model_lookup_temporal(m(), 0, 0, -4, &r); });
    expect_rejected(VREX_ERANGE, [&] { return vrex_model_lookup_temporal(m(), 0, 0, 3, &r); });
    expect_rejected(VREX_ERANGE, [&] { return vrex_model_lookup_temporal(m(), 0, 0, -1, &r); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_lookup_similar(m(), 2, 0, &fp, 5, 0, &r); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_lookup_similar(m(), 0, 0, nullptr, 5, 0, &r); });
    expect_rejected(VREX_EINVAL, [&] {
        return vrex_model_lookup_similar(m(), 0, 0, &fp, VREX_SHIE_MAX_RADIUS + 1, 0, &r);
    });
    expect_rejected(VREX_EINVAL,
                    [&] { return vrex_model_lookup_similar(m(), 0, 0, &fp, 5, VREX_ARGF_ALIAS, &r); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_lookup_similar(m(), 0, 0, &fp, 5, 1u << 8, &r); });
    expect_rejected(VREX_ERANGE, [&] { return vrex_model_lookup_similar(m(), 0, 16, &fp, 5, 0, &r); });
    // PAST_ONLY needs a current frame.
    ASSERT_EQ(vrex_model_stream_open(m(), 1, 0), 0);
    expect_rejected(VREX_EINVAL,
                    [&] { return vrex_model_lookup_similar(m(), 1, 0, &fp, 5, VREX_ARGF_PAST_ONLY, &r); });
    EXPECT_EQ(vrex_model_lookup_similar(m(), 0, 0, &fp, VREX_SHIE_MAX_RADIUS, 0, &r), 0);
}

TEST_F(ModelOps, SimilarLookupDistanceScopeAndPastOnly) {
    ASSERT_EQ(vrex_model_stream_open(m(), 1, 0), 0);                      // same pool
    ASSERT_EQ(vrex_model_stream_open(m(), 2, VREX_POOL_PRIVATE + 2), 0);  // own pool
    for (uint32_t s = 0; s < 3; s++) ASSERT_EQ(dev_.frame(s, s), 0);
    vrex_fp base = make_fp(0xf0f0f0f0f0f0f0f0ull, 0x0123456789abcdefull);
    vrex_fp near = base;
    near.w[0] ^= 0x7;  // distance 3
    uint32_t b1, b2, b0;
    ASSERT_EQ(insert(1, 2, 0, kv(0, 0, 64, 1), &b1, base), 0);
    ASSERT_EQ(insert(2, 2, 0, kv(0, 4096, 64, 2), &b2, base), 0);

    vrex_lookup_result r{};
    ASSERT_EQ(vrex_model_lookup_similar(m(), 0, 2, &near, 20, 0, &r), 0);
    EXPECT_FALSE(r.hit) << "stream scope sees only stream 0";
    ASSERT_EQ(vrex_model_lookup_similar(m(), 0, 2, &near, 20, VREX_ARGF_SCOPE_POOL, &r), 0);
    ASSERT_TRUE(r.hit);
    EXPECT_TRUE(r.approx);
    EXPECT_EQ(r.distance, 3u);
    EXPECT_EQ(r.block, b1) << "pool scope never crosses into another pool";
    EXPECT_EQ(r.stream, 1u);
    ASSERT_EQ(vrex_model_lookup_similar(m(), 0, 2, &near, 2, VREX_ARGF_SCOPE_POOL, &r), 0);
    EXPECT_FALSE(r.hit) << "radius 2 < distance 3";
    ASSERT_EQ(vrex_model_lookup_similar(m(), 0, 3, &near, 20, VREX_ARGF_SCOPE_POOL, &r), 0);
    EXPECT_FALSE(r.hit) << "other region";

    // PAST_ONLY: an entry of the current frame is invisible, one of an earlier frame is found.
    ASSERT_EQ(insert(0, 7, 0, kv(0, 8192, 64, 3), &b0, base), 0);
    ASSERT_EQ(vrex_model_lookup_similar(m(), 0, 7, &base, 0, VREX_ARGF_PAST_ONLY, &r), 0);
    EXPECT_FALSE(r.hit);
    ASSERT_EQ(dev_.frame(0), 0);
    ASSERT_EQ(vrex_model_lookup_similar(m(), 0, 7, &base, 0, VREX_ARGF_PAST_ONLY, &r), 0);
    EXPECT_TRUE(r.hit);
    EXPECT_FALSE(r.approx);
    EXPECT_EQ(r.block, b0);
    EXPECT_EQ(m()->cnt[VREX_CNT_APPROX_HITS], 1u);
    EXPECT_EQ(m()->cnt[VREX_CNT_EXACT_HITS], 1u);
    EXPECT_EQ(m()->cnt[VREX_CNT_MISSES], 4u);
    EXPECT_EQ(m()->cnt[VREX_CNT_LOOKUPS], 6u);
}

TEST_F(ModelOps, SimilarHitTouchesTheOwnerStreamsClock) {
    ASSERT_EQ(vrex_model_stream_open(m(), 1, 0), 0);
    ASSERT_EQ(dev_.frame(1), 0);
    vrex_fp fp = make_fp(5, 6);
    uint32_t block;
    ASSERT_EQ(insert(1, 0, 0, kv(), &block, fp), 0);
    for (int i = 0; i < 3; i++) ASSERT_EQ(dev_.frame(1), 0);
    ASSERT_EQ(dev_.frame(0), 0);
    vrex_lookup_result r{};
    ASSERT_EQ(vrex_model_lookup_similar(m(), 0, 0, &fp, 0, VREX_ARGF_SCOPE_POOL, &r), 0);
    ASSERT_EQ(r.block, block);
    vrex_block b{};
    ASSERT_EQ(vrex_model_block_info(m(), block, &b), 0);
    EXPECT_EQ(b.last_access, 3u) << "stream 1's frame, not the querying stream's frame 0";
}

TEST_F(ModelOps, RemoveBlockInfoAndRetireRejectUnknownTargets) {
    vrex_released rec{};
    vrex_block b{};
    expect_rejected(VREX_ENOENT, [&] { return vrex_model_remove(m(), 0, &rec); });
    expect_rejected(VREX_ENOENT, [&] { return vrex_model_remove(m(), VREX_NIL, &rec); });
    expect_rejected(VREX_ENOENT, [&] { return vrex_model_block_info(m(), 3, &b); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_retire(m(), 1, nullptr); });
    expect_rejected(VREX_EINVAL, [&] { return vrex_model_retire(m(), 500, nullptr); });
    uint32_t n = 9;
    EXPECT_EQ(vrex_model_retire(m(), 0, &n), 0);  // open, no frame: nothing to release
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(vrex_model_pop_released(m(), &rec), 0);
}

TEST_F(ModelOps, ResetForgetsEverything) {
    ASSERT_EQ(dev_.frame(0), 0);
    ASSERT_EQ(insert(0, 0, 0, kv()), 0);
    vrex_model_write(m(), VREX_REG_ZOMBIE_FRAMES, 9);
    vrex_model_reset(m());
    EXPECT_EQ(m()->streams[0].open, 0u);
    EXPECT_EQ(m()->blocks.live, 0u);
    EXPECT_EQ(m()->shie.live, 0u);
    EXPECT_EQ(m()->cnt[VREX_CNT_INSERTS], 0u);
    EXPECT_EQ(vrex_model_read(m(), VREX_REG_ZOMBIE_FRAMES), 5u);
    EXPECT_EQ(vrex_model_read(m(), VREX_REG_BANK_KB(0)), 0u);
    // The same as a freshly initialised device.
    Device fresh;
    ASSERT_EQ(fresh.init_rc(), 0);
    EXPECT_TRUE(snapshot(m()) == snapshot(fresh.get()));
}

}  // namespace
