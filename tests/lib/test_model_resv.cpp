// The ReSV unit behind the device's register file: parameter registers (defaults, RO/RW, rejected
// values), RESV_HASH / RESV_SELECT / RESV_TRUNCATE through ARG_* and CMD against the lib/resv
// functions driven directly on an independent head (same ids, same ranges in device memory), the
// counters, errors that change nothing, and a device without the unit.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "test_model_fixture.h"

using namespace vrex_test;

namespace {

constexpr uint32_t kDim = 64;
constexpr uint64_t kKeys = 0;         // keys staged at the start of bank 0
constexpr uint64_t kOut = 3 * 65536;  // ranges written to bank 3

vrex_model_config resv_config() {
    vrex_model_config cfg = small_config();
    cfg.resv_heads = 4;
    cfg.resv_tokens = 512;
    cfg.resv_clusters = 512;
    return cfg;
}

class ResvRegs : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(dev_.init_rc(), 0);
        w(VREX_REG_RESV_DIM, kDim);
    }
    uint32_t r(uint32_t off) { return vrex_model_read(dev_.get(), off); }
    void w(uint32_t off, uint32_t v) { vrex_model_write(dev_.get(), off, v); }
    int cmd(uint32_t op) {
        w(VREX_REG_CMD, op);
        uint32_t st = r(VREX_REG_STATUS);
        if (st & VREX_STATUS_ERROR)
            return static_cast<int>((st & VREX_STATUS_ERRNO_MASK) >> VREX_STATUS_ERRNO_SHIFT);
        return 0;
    }
    uint64_t counter(uint32_t i) {
        return uint64_t{r(VREX_REG_RESV_CNT_HI(i))} << 32 | r(VREX_REG_RESV_CNT_LO(i));
    }
    // Keys near a few directions, so that clusters form at th 7.
    std::vector<int16_t> keys(uint32_t n) {
        std::normal_distribution<double> nd(0.0, 1.0);
        if (centres_.empty())
            for (int c = 0; c < 5; c++) {
                std::vector<double> v(kDim);
                for (auto& x : v) x = nd(rng_);
                centres_.push_back(v);
            }
        std::vector<int16_t> out(static_cast<size_t>(n) * kDim);
        for (uint32_t k = 0; k < n; k++) {
            const auto& c = centres_[rng_() % centres_.size()];
            for (uint32_t i = 0; i < kDim; i++)
                out[k * kDim + i] = static_cast<int16_t>(std::lround((c[i] + 0.15 * nd(rng_)) * 8000));
        }
        return out;
    }
    void stage(uint64_t addr, const std::vector<int16_t>& v) {
        std::memcpy(dev_.mem().data() + addr, v.data(), v.size() * sizeof(int16_t));
    }
    int hash(uint32_t head, uint64_t src, uint32_t count) {
        w(VREX_REG_ARG_HEAD, head);
        w(VREX_REG_ARG_SRC_LO, static_cast<uint32_t>(src));
        w(VREX_REG_ARG_SRC_HI, static_cast<uint32_t>(src >> 32));
        w(VREX_REG_ARG_COUNT, count);
        return cmd(VREX_CMD_RESV_HASH);
    }
    int select(uint32_t head, uint64_t src, uint64_t dst, uint32_t max, uint32_t flags = 0) {
        w(VREX_REG_ARG_HEAD, head);
        w(VREX_REG_ARG_SRC_LO, static_cast<uint32_t>(src));
        w(VREX_REG_ARG_SRC_HI, static_cast<uint32_t>(src >> 32));
        w(VREX_REG_ARG_DST_LO, static_cast<uint32_t>(dst));
        w(VREX_REG_ARG_DST_HI, static_cast<uint32_t>(dst >> 32));
        w(VREX_REG_ARG_COUNT, max);
        w(VREX_REG_ARG_FLAGS, flags);
        return cmd(VREX_CMD_RESV_SELECT);
    }
    std::vector<vrex_resv_range> out(uint32_t n) {
        std::vector<vrex_resv_range> v(n);
        std::memcpy(v.data(), dev_.mem().data() + kOut, n * sizeof(vrex_resv_range));
        return v;
    }

    Device dev_{resv_config()};
    std::mt19937_64 rng_{1234};
    std::vector<std::vector<double>> centres_;
};

TEST_F(ResvRegs, IdentityDefaultsAndWriteFiltering) {
    EXPECT_TRUE(r(VREX_REG_CAPS) & VREX_CAP_RESV);
    EXPECT_EQ(r(VREX_REG_RESV_HEADS), 4u);
    EXPECT_EQ(r(VREX_REG_RESV_MAX_TOKENS), 512u);
    EXPECT_EQ(r(VREX_REG_RESV_MAX_CLUSTERS), 512u);
    EXPECT_EQ(r(VREX_REG_RESV_TH), 7u);
    EXPECT_EQ(r(VREX_REG_RESV_RATIO), VREX_RESV_DEFAULT_RATIO);
    EXPECT_EQ(r(VREX_REG_RESV_MODE), uint32_t{VREX_RESV_MODE_MASS});
    EXPECT_EQ(r(VREX_REG_RESV_TOKENS_PER_BLOCK), 16u);
    EXPECT_EQ(r(VREX_REG_RESV_SEED_LO), static_cast<uint32_t>(VREX_RESV_DEFAULT_SEED));
    EXPECT_EQ(r(VREX_REG_RESV_SEED_HI), static_cast<uint32_t>(VREX_RESV_DEFAULT_SEED >> 32));
    EXPECT_EQ(r(VREX_REG_RESV_LUT(0)), 65535u);
    EXPECT_EQ(r(VREX_REG_RESV_LUT(32)), 0u);
    // Out-of-range values leave the register as it was; RO registers ignore writes.
    w(VREX_REG_RESV_DIM, 0);
    w(VREX_REG_RESV_DIM, VREX_RESV_MAX_DIM + 1);
    EXPECT_EQ(r(VREX_REG_RESV_DIM), kDim);
    w(VREX_REG_RESV_TH, 33);
    EXPECT_EQ(r(VREX_REG_RESV_TH), 7u);
    w(VREX_REG_RESV_RATIO, VREX_RESV_RATIO_ONE + 1);
    EXPECT_EQ(r(VREX_REG_RESV_RATIO), VREX_RESV_DEFAULT_RATIO);
    w(VREX_REG_RESV_MODE, 2);
    EXPECT_EQ(r(VREX_REG_RESV_MODE), uint32_t{VREX_RESV_MODE_MASS});
    w(VREX_REG_RESV_TOKENS_PER_BLOCK, 0);
    EXPECT_EQ(r(VREX_REG_RESV_TOKENS_PER_BLOCK), 16u);
    w(VREX_REG_RESV_LUT(3), 0x10000);
    EXPECT_EQ(r(VREX_REG_RESV_LUT(3)), 50614u);
    w(VREX_REG_RESV_HEADS, 99);
    EXPECT_EQ(r(VREX_REG_RESV_HEADS), 4u);
    w(VREX_REG_RESV_RATIO, VREX_RESV_RATIO_ONE);
    EXPECT_EQ(r(VREX_REG_RESV_RATIO), VREX_RESV_RATIO_ONE);
    w(VREX_REG_RESV_LUT(3), 7);
    EXPECT_EQ(r(VREX_REG_RESV_LUT(3)), 7u);
    // Reset restores the defaults.
    w(VREX_REG_RESET, VREX_RESET_MAGIC);
    EXPECT_EQ(r(VREX_REG_RESV_RATIO), VREX_RESV_DEFAULT_RATIO);
    EXPECT_EQ(r(VREX_REG_RESV_LUT(3)), 50614u);
    EXPECT_EQ(r(VREX_REG_RESV_DIM), uint32_t{VREX_RESV_DEFAULT_DIM});
}

// Commands through the register file against lib/resv driven directly on an independent head.
TEST_F(ResvRegs, HashAndSelectMatchTheLibraryDrivenDirectly) {
    w(VREX_REG_RESV_SEED_LO, 0x1111);
    w(VREX_REG_RESV_SEED_HI, 0x2222);
    w(VREX_REG_RESV_TOKENS_PER_BLOCK, 8);
    w(VREX_REG_RESV_BYTES_PER_TOKEN, 256);
    vrex_resv_hcu hcu{};
    ASSERT_EQ(vrex_resv_hcu_init(&hcu, 0x0000222200001111ull, kDim), VREX_OK);
    std::vector<std::byte> arena(vrex_resv_head_arena_size(512, 512));
    vrex_resv_head ref{};
    ASSERT_EQ(vrex_resv_head_init(&ref, 512, 512, arena.data(), arena.size()), VREX_OK);
    vrex_resv_params p{};
    vrex_resv_default_params(&p);

    uint64_t selected = 0, scanned = 0, ranges_total = 0;
    for (int batch = 0; batch < 6; batch++) {
        uint32_t n = 10 + static_cast<uint32_t>(rng_() % 60);
        std::vector<int16_t> k = keys(n);
        stage(kKeys, k);
        ASSERT_EQ(hash(2, kKeys, n), 0);
        for (uint32_t i = 0; i < n; i++)
            ASSERT_EQ(vrex_resv_add(&ref, vrex_resv_hash(&hcu, &k[i * kDim]), p.th, nullptr, nullptr),
                      VREX_OK);
        EXPECT_EQ(r(VREX_REG_RES_COUNT), ref.ntokens);
        EXPECT_EQ(r(VREX_REG_RES_TOKENS), n);
        EXPECT_EQ(r(VREX_REG_RES_CLUSTERS), ref.nclusters);
        const vrex_resv_head& hd = dev_->resv.heads[2];
        ASSERT_EQ(hd.nclusters, ref.nclusters);
        for (uint32_t t = 0; t < ref.ntokens; t++) ASSERT_EQ(hd.hash[t], ref.hash[t]);

        for (uint32_t flags : {0u, uint32_t{VREX_ARGF_RESV_BLOCKS}}) {
            std::vector<int16_t> q = keys(1);
            stage(kKeys, q);
            ASSERT_EQ(select(2, kKeys, kOut, 512, flags), 0);
            uint32_t qh = vrex_resv_hash(&hcu, q.data());
            vrex_resv_selection sel{};
            ASSERT_EQ(vrex_resv_select(&ref, qh, &p, &sel), VREX_OK);
            std::vector<vrex_resv_range> want(512);
            uint32_t nr = flags ? vrex_resv_block_ranges(&ref, 8, want.data(), 512)
                                : vrex_resv_token_ranges(&ref, want.data(), 512);
            EXPECT_EQ(r(VREX_REG_RES_FP(0)), qh);
            EXPECT_EQ(r(VREX_REG_RES_TOKENS), sel.tokens);
            EXPECT_EQ(r(VREX_REG_RES_CLUSTERS), sel.clusters);
            EXPECT_EQ(r(VREX_REG_RES_DISTANCE), sel.cutoff);
            EXPECT_EQ(r(VREX_REG_RES_HEAD_TOKENS), ref.ntokens);
            ASSERT_EQ(r(VREX_REG_RES_COUNT), nr);
            std::vector<vrex_resv_range> got = out(nr);
            for (uint32_t i = 0; i < nr; i++)
                EXPECT_TRUE(got[i].first == want[i].first && got[i].count == want[i].count) << i;
            EXPECT_GT(sel.tokens, 0u);
            EXPECT_LT(sel.tokens, ref.ntokens + 1);
            selected += sel.tokens;
            scanned += ref.ntokens;
            ranges_total += nr;
        }
    }
    EXPECT_EQ(counter(VREX_RESV_CNT_KEYS), ref.ntokens);
    EXPECT_EQ(counter(VREX_RESV_CNT_CLUSTERS), ref.nclusters);
    EXPECT_EQ(counter(VREX_RESV_CNT_SELECTS), 12u);
    EXPECT_EQ(counter(VREX_RESV_CNT_TOKENS_SCANNED), scanned);
    EXPECT_EQ(counter(VREX_RESV_CNT_TOKENS_SELECTED), selected);
    EXPECT_EQ(counter(VREX_RESV_CNT_BYTES_SELECTED), selected * 256);
    EXPECT_EQ(counter(VREX_RESV_CNT_RANGES), ranges_total);
    // Other heads are untouched.
    EXPECT_EQ(dev_->resv.heads[0].ntokens, 0u);
    EXPECT_EQ(dev_->resv.heads[3].ntokens, 0u);
    // Truncate through the register file.
    w(VREX_REG_ARG_HEAD, 2);
    w(VREX_REG_ARG_COUNT, 5);
    ASSERT_EQ(cmd(VREX_CMD_RESV_TRUNCATE), 0);
    EXPECT_EQ(dev_->resv.heads[2].ntokens, 5u);
    ASSERT_EQ(vrex_resv_truncate(&ref, 5), VREX_OK);
    EXPECT_EQ(r(VREX_REG_RES_CLUSTERS), ref.nclusters);
}

// Bad commands fail with a clear errno and leave heads, counters and device memory alone.
TEST_F(ResvRegs, ErrorsChangeNothing) {
    stage(kKeys, keys(100));
    ASSERT_EQ(hash(0, kKeys, 100), 0);
    auto state = [this] {
        const vrex_resv_head& hd = dev_->resv.heads[0];
        std::vector<uint32_t> s{hd.ntokens, hd.nclusters};
        for (uint32_t c = 0; c < hd.nclusters; c++) {
            s.push_back(hd.c[c].count);
            s.push_back(hd.c[c].last);
        }
        for (uint32_t i = 0; i < VREX_RESV_CNT_NUM; i++) s.push_back(static_cast<uint32_t>(counter(i)));
        return s;
    };
    auto before = state();
    uint64_t mem = dev_.mem().size();
    EXPECT_EQ(hash(4, kKeys, 1), VREX_EINVAL);              // no such head
    EXPECT_EQ(hash(0, kKeys + 1, 1), VREX_ERANGE);          // misaligned keys
    EXPECT_EQ(hash(0, mem - kDim, 1), VREX_ERANGE);         // keys past the end
    EXPECT_EQ(hash(0, 0, 0xffffffffu), VREX_ERANGE);        // count overflows memory
    EXPECT_EQ(hash(0, kKeys, 413), VREX_ENOSPC);            // 100 + 413 > 512
    EXPECT_EQ(select(0, kKeys, kOut, 4, 1), VREX_EINVAL);   // unknown flag
    EXPECT_EQ(select(0, kKeys, kOut + 2, 4), VREX_ERANGE);  // misaligned output
    EXPECT_EQ(select(0, kKeys, mem - 8, 2), VREX_ERANGE);   // output past the end
    EXPECT_EQ(select(4, kKeys, kOut, 4), VREX_EINVAL);
    w(VREX_REG_ARG_HEAD, 0);
    w(VREX_REG_ARG_COUNT, 101);
    EXPECT_EQ(cmd(VREX_CMD_RESV_TRUNCATE), VREX_EINVAL);
    EXPECT_EQ(state(), before);
    EXPECT_EQ(select(0, kKeys, mem - 8, 0), 0);  // max 0 writes nothing: any address
}

// A batch that runs out of clusters half way is undone.
TEST(ResvModel, BatchOverflowingTheClusterTableIsUndone) {
    vrex_model_config cfg = resv_config();
    cfg.resv_clusters = 3;
    Device dev(cfg);
    ASSERT_EQ(dev.init_rc(), 0);
    vrex_model_write(dev.get(), VREX_REG_RESV_TH, 0);
    std::vector<int16_t> k(static_cast<size_t>(20) * VREX_RESV_DEFAULT_DIM);
    std::mt19937_64 rng(5);
    for (auto& v : k) v = static_cast<int16_t>(rng());
    std::memcpy(dev.mem().data(), k.data(), k.size() * 2);
    vrex_resv_hash_result res{};
    ASSERT_EQ(vrex_model_resv_hash(dev.get(), 1, 0, 2, &res), VREX_OK);
    EXPECT_EQ(res.tokens, 2u);
    uint32_t clusters = dev->resv.heads[1].nclusters;
    EXPECT_EQ(vrex_model_resv_hash(dev.get(), 1, 2 * VREX_RESV_DEFAULT_DIM * 2, 18, &res), VREX_ENOSPC);
    EXPECT_EQ(dev->resv.heads[1].ntokens, 2u);
    EXPECT_EQ(dev->resv.heads[1].nclusters, clusters);
    EXPECT_EQ(dev->resv.cnt[VREX_RESV_CNT_KEYS], 2u);
}

TEST(ResvModel, DeviceWithoutTheUnit) {
    Device dev;  // small_config: resv_heads 0
    ASSERT_EQ(dev.init_rc(), 0);
    EXPECT_FALSE(vrex_model_read(dev.get(), VREX_REG_CAPS) & VREX_CAP_RESV);
    vrex_model_write(dev.get(), VREX_REG_RESV_TH, 3);
    EXPECT_EQ(vrex_model_read(dev.get(), VREX_REG_RESV_TH), 0u);
    EXPECT_EQ(vrex_model_read(dev.get(), VREX_REG_RESV_LUT(0)), 0u);
    EXPECT_EQ(vrex_model_resv_hash(dev.get(), 0, 0, 1, nullptr), VREX_EINVAL);
    EXPECT_EQ(vrex_model_resv_truncate(dev.get(), 0, 0), VREX_EINVAL);
    vrex_model_config bad = resv_config();
    bad.resv_clusters = bad.resv_tokens + 1;
    EXPECT_EQ(vrex_model_arena_size(&bad), 0u);
    bad = resv_config();
    bad.resv_heads = VREX_MAX_RESV_HEADS + 1;
    EXPECT_EQ(vrex_model_arena_size(&bad), 0u);
}

}  // namespace

namespace {

// The ReSV block sits above the group table and its parts do not overlap.
static_assert(VREX_REG_GROUP_POOL(VREX_MAX_GROUPS) <= VREX_REG_RESV_SEED_LO);
static_assert(VREX_REG_RESV_MAX_CLUSTERS < VREX_REG_RESV_LUT(0));
static_assert(VREX_REG_RESV_LUT(VREX_RESV_LUT_SIZE - 1) < VREX_REG_RESV_CNT_BASE);
static_assert(VREX_REG_RESV_CNT_HI(VREX_RESV_CNT_NUM - 1) < VREX_REG_WINDOW);
static_assert(VREX_REG_ARG_LAST < VREX_REG_RES_FLAGS);

}  // namespace
