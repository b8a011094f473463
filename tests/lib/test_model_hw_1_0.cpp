// The reference model as a hardware 1.0 device (vrex_model_config.hw_version = VREX_VERSION_1_0):
// VERSION reads 1.0, ARG_NEAREST is no register (reads 0, ignores writes: a batch writes one record
// per descriptor), the lookups ignore the tier flags (every tier) and never set RESF_HOST_TIER,
// FCC_REGION_MOTION reads 0; everything 1.0 had answers exactly as on 1.1. Each check runs on a
// 1.1 model with the same history too, so it fails if the 1.0 behaviour were the 1.1 one.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "test_model_fixture.h"

using namespace vrex_test;

namespace {

constexpr uint64_t kTail = 16 * 1024;  // device memory past the banks: descriptors and records

vrex_model_config config_of(uint32_t hw_version) {
    vrex_model_config cfg = small_config();
    cfg.hw_version = hw_version;
    return cfg;
}

// One device of each revision with the same history: three device blocks of region 5 at growing
// distances from @base, two host-tier copies near it, then a frame of another scene.
class Revision {
  public:
    explicit Revision(uint32_t hw_version) : cfg_(config_of(hw_version)), dev_(cfg_, banks() + kTail) {}

    void build() {
        ASSERT_EQ(dev_.init_rc(), 0);
        ASSERT_EQ(vrex_model_stream_open(m(), 0, 0), 0);
        for (uint32_t i = 0; i < 3; i++) {
            ASSERT_EQ(dev_.frame(0, 0), 0);
            const vrex_fp fp = flip(base, 3 * i);
            const vrex_kv_ref kv = kv_at(cfg_, 0, 4096 * i, 4096, 1);
            ASSERT_EQ(vrex_model_insert(m(), 0, 5, 0, &fp, &kv, VREX_NIL, &dblk[i]), 0);
        }
        const vrex_kv_ref h0{VREX_KV_ADDR_EXTERNAL | 0x1000, 4096, 9};
        const vrex_fp near1 = flip(base, 1);
        ASSERT_EQ(vrex_model_insert_host(m(), 0, 5, -2, &near1, &h0, &host), 0)
            << "host-tier inserts are 1.0";
        ASSERT_EQ(dev_.frame(0, 1), 0);
    }
    vrex_model* m() { return dev_.get(); }
    uint64_t banks() const { return uint64_t{cfg_.nbanks} * cfg_.bank_size; }
    uint64_t dst() const { return banks() + VREX_LOOKUP_BATCH_MAX * sizeof(vrex_lookup_desc); }
    static vrex_fp flip(vrex_fp fp, uint32_t bits) {
        for (uint32_t b = 0; b < bits; b++) fp.w[1] ^= uint64_t{1} << (b * 7);
        return fp;
    }
    uint32_t status() { return vrex_model_read(m(), VREX_REG_STATUS); }
    // LOOKUP_SIMILAR through the registers with @flags (PAST_ONLY added).
    void similar(uint32_t flags) {
        vrex_model_write(m(), VREX_REG_ARG_STREAM, 0);
        vrex_model_write(m(), VREX_REG_ARG_REGION, 5);
        vrex_model_write(m(), VREX_REG_ARG_FP(0), static_cast<uint32_t>(base.w[0]));
        vrex_model_write(m(), VREX_REG_ARG_FP(1), static_cast<uint32_t>(base.w[0] >> 32));
        vrex_model_write(m(), VREX_REG_ARG_FP(2), static_cast<uint32_t>(base.w[1]));
        vrex_model_write(m(), VREX_REG_ARG_FP(3), static_cast<uint32_t>(base.w[1] >> 32));
        vrex_model_write(m(), VREX_REG_ARG_RADIUS, 10);
        vrex_model_write(m(), VREX_REG_ARG_FLAGS, VREX_ARGF_PAST_ONLY | flags);
        vrex_model_write(m(), VREX_REG_CMD, VREX_CMD_LOOKUP_SIMILAR);
    }
    // A batch of one descriptor (flags @flags) with ARG_NEAREST @k; the records are at dst().
    void batch(uint32_t k, uint32_t flags) {
        vrex_lookup_desc d{};
        d.stream = 0;
        d.region = 5;
        d.radius = 10;
        d.flags = VREX_ARGF_PAST_ONLY | flags;
        d.fp[0] = base.w[0];
        d.fp[1] = base.w[1];
        std::memcpy(dev_.mem().data() + banks(), &d, sizeof(d));
        std::memset(dev_.mem().data() + dst(), 0xab, 8 * sizeof(vrex_lookup_rec));
        vrex_model_write(m(), VREX_REG_ARG_SRC_LO, static_cast<uint32_t>(banks()));
        vrex_model_write(m(), VREX_REG_ARG_SRC_HI, static_cast<uint32_t>(banks() >> 32));
        vrex_model_write(m(), VREX_REG_ARG_DST_LO, static_cast<uint32_t>(dst()));
        vrex_model_write(m(), VREX_REG_ARG_DST_HI, static_cast<uint32_t>(dst() >> 32));
        vrex_model_write(m(), VREX_REG_ARG_COUNT, 1);
        vrex_model_write(m(), VREX_REG_ARG_NEAREST, k);
        vrex_model_write(m(), VREX_REG_CMD, VREX_CMD_LOOKUP_SIMILAR_BATCH);
    }
    vrex_lookup_rec rec(uint32_t i) {
        vrex_lookup_rec r;
        std::memcpy(&r, dev_.mem().data() + dst() + i * sizeof(r), sizeof(r));
        return r;
    }

    vrex_fp base = make_fp(0x00ff'00ff'0000'0000ull, 0x1234'5678'9abc'def0ull);
    uint32_t dblk[3] = {};
    uint32_t host = 0;

  private:
    vrex_model_config cfg_;
    Device dev_;
};

TEST(ModelHw10, ConfigTakesOnlyTheTwoRevisions) {
    vrex_model_config cfg = small_config();
    EXPECT_GT(vrex_model_arena_size(&cfg), 0u) << "0: the newest revision";
    for (uint32_t v : {VREX_VERSION_1_0, VREX_VERSION_VALUE}) {
        cfg.hw_version = v;
        EXPECT_GT(vrex_model_arena_size(&cfg), 0u) << std::hex << v;
    }
    for (uint32_t v : {0x00010002u, 0x00020000u, 0x00000001u, 0xffffffffu}) {
        cfg.hw_version = v;
        EXPECT_EQ(vrex_model_arena_size(&cfg), 0u) << std::hex << v;
    }
    vrex_model_default_config(&cfg);
    EXPECT_EQ(cfg.hw_version, VREX_VERSION_VALUE);
}

TEST(ModelHw10, VersionAndArgNearestRegister) {
    Revision v10(VREX_VERSION_1_0), v11(0);
    v10.build();
    v11.build();
    EXPECT_EQ(vrex_model_read(v10.m(), VREX_REG_VERSION), VREX_VERSION_1_0);
    EXPECT_EQ(vrex_model_read(v11.m(), VREX_REG_VERSION), VREX_VERSION_VALUE) << "0 is the newest";
    vrex_model_write(v10.m(), VREX_REG_ARG_NEAREST, 4);
    vrex_model_write(v11.m(), VREX_REG_ARG_NEAREST, 4);
    EXPECT_EQ(vrex_model_read(v10.m(), VREX_REG_ARG_NEAREST), 0u) << "no such register on 1.0";
    EXPECT_EQ(vrex_model_read(v11.m(), VREX_REG_ARG_NEAREST), 4u);
    // RESET keeps the revision.
    vrex_model_write(v10.m(), VREX_REG_RESET, VREX_RESET_MAGIC);
    EXPECT_EQ(vrex_model_read(v10.m(), VREX_REG_VERSION), VREX_VERSION_1_0);
}

TEST(ModelHw10, LookupsIgnoreTierFlagsAndNeverSayHostTier) {
    Revision v10(VREX_VERSION_1_0), v11(0);
    v10.build();
    v11.build();
    // TIER_HOST: 1.1 answers the host-tier copy (distance 1), 1.0 the nearest of every tier.
    v11.similar(VREX_ARGF_TIER_HOST);
    EXPECT_EQ(vrex_model_read(v11.m(), VREX_REG_RES_BLOCK), v11.host);
    EXPECT_EQ(vrex_model_read(v11.m(), VREX_REG_RES_FLAGS),
              VREX_RESF_HIT | VREX_RESF_APPROX | VREX_RESF_HOST_TIER);
    v10.similar(VREX_ARGF_TIER_HOST);
    EXPECT_EQ(v10.status(), uint32_t{VREX_STATUS_DONE}) << "the bits are ignored, not refused";
    EXPECT_EQ(vrex_model_read(v10.m(), VREX_REG_RES_BLOCK), v10.dblk[0]);
    EXPECT_EQ(vrex_model_read(v10.m(), VREX_REG_RES_FLAGS), uint32_t{VREX_RESF_HIT});
    // A host-tier entry that is the nearest: found on 1.0 too, without RESF_HOST_TIER.
    const vrex_kv_ref kv{VREX_KV_ADDR_EXTERNAL | 0x3000, 4096, 9};
    uint32_t exact10 = 0, exact11 = 0;
    for (Revision* r : {&v10, &v11}) {
        vrex_fp fp = r->base;
        fp.w[0] ^= 1;  // a bit no device block differs in: distance 0 to this query only
        r->base = fp;
        ASSERT_EQ(vrex_model_insert_host(r->m(), 0, 5, -1, &fp, &kv, r == &v10 ? &exact10 : &exact11), 0);
    }
    v10.similar(0);
    v11.similar(0);
    EXPECT_EQ(vrex_model_read(v10.m(), VREX_REG_RES_BLOCK), exact10);
    EXPECT_EQ(vrex_model_read(v11.m(), VREX_REG_RES_BLOCK), exact11);
    EXPECT_EQ(vrex_model_read(v10.m(), VREX_REG_RES_FLAGS), uint32_t{VREX_RESF_HIT});
    EXPECT_EQ(vrex_model_read(v11.m(), VREX_REG_RES_FLAGS), VREX_RESF_HIT | VREX_RESF_HOST_TIER);
    // Other flag bits are refused on both.
    v10.similar(VREX_BIT(7));
    EXPECT_TRUE(v10.status() & VREX_STATUS_ERROR);
}

TEST(ModelHw10, BatchWritesOneRecordPerDescriptor) {
    Revision v10(VREX_VERSION_1_0), v11(0);
    v10.build();
    v11.build();
    v11.batch(4, VREX_ARGF_TIER_DEVICE);
    ASSERT_EQ(v11.status(), uint32_t{VREX_STATUS_DONE});
    EXPECT_EQ(v11.rec(0).block, v11.dblk[0]);
    EXPECT_EQ(v11.rec(1).block, v11.dblk[1]) << "1.1: the 4 nearest device entries";
    v10.batch(4, VREX_ARGF_TIER_DEVICE);
    ASSERT_EQ(v10.status(), uint32_t{VREX_STATUS_DONE});
    EXPECT_EQ(v10.rec(0).status, 0u);
    EXPECT_EQ(v10.rec(0).block, v10.dblk[0]);
    EXPECT_EQ(v10.rec(0).flags, uint32_t{VREX_RESF_HIT});
    const vrex_lookup_rec untouched = v10.rec(1);
    EXPECT_EQ(untouched.block, 0xababababu) << "1.0 wrote one record, not ARG_NEAREST's 4";
    // A k past 1.1's cap is no error on 1.0 (the register does not exist).
    v10.batch(VREX_LOOKUP_NEAREST_MAX + 1, VREX_ARGF_TIER_HOST);
    EXPECT_EQ(v10.status(), uint32_t{VREX_STATUS_DONE});
    EXPECT_EQ(v10.rec(0).block, v10.dblk[0]) << "TIER_HOST ignored";
    EXPECT_EQ(v10.rec(0).flags & VREX_RESF_HOST_TIER, 0u);
    v11.batch(VREX_LOOKUP_NEAREST_MAX + 1, 0);
    EXPECT_TRUE(v11.status() & VREX_STATUS_ERROR);
}

TEST(ModelHw10, RegionMotionReadsZeroWhileTheOldFeaturesStay) {
    Revision v10(VREX_VERSION_1_0), v11(0);
    v10.build();
    v11.build();
    // The last frame cut from scene 0 to scene 1: the search found motion in some region.
    uint32_t moved = 0;
    for (uint32_t i = 0; i < VREX_FCC_REGION_MOTION_REGS; i++) {
        moved |= vrex_model_read(v11.m(), VREX_REG_FCC_REGION_MOTION(i));
        EXPECT_EQ(vrex_model_read(v10.m(), VREX_REG_FCC_REGION_MOTION(i)), 0u) << i;
    }
    EXPECT_NE(moved, 0u) << "the cut to scene 1 moved something on 1.1 (else this test proves nothing)";
    for (uint32_t off : {VREX_REG_FCC_CENTRE_MOTION, VREX_REG_FCC_STATIC_RATIO, VREX_REG_FCC_MOVING_BLOCKS,
                         VREX_REG_FCC_ROI_DX, VREX_REG_CAPS, VREX_REG_SHIE_CAPACITY})
        EXPECT_EQ(vrex_model_read(v10.m(), off), vrex_model_read(v11.m(), off)) << std::hex << off;
}

}  // namespace
