// Conformance of ReSV through the HAL: the Backend seam's DRM_VREX_RESV_* operations (validation,
// errno values, per-file heads, release on close) and ResvHead (float keys, all-or-nothing appends,
// selections), checked against lib/resv driven directly. Runs once per available backend: the
// emulation and vrex.ko's simulated device (QEMU) both have the unit, so a device that does not
// report DRM_VREX_CAP_RESV fails here rather than skipping.
#include "vrex/resv.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "backends.hpp"
#include "device_impl.hpp"

extern "C" {
#include "resv.h"
}

namespace vrex {
namespace {

constexpr std::uint32_t kDim = 32;

std::error_code ec(std::errc e) {
    return std::make_error_code(e);
}

class Resv : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        auto be = test::open_backend(GetParam());
        ASSERT_NE(be, nullptr);
        be_ = be.get();
        auto d = adopt_backend(std::move(be));
        ASSERT_TRUE(d);
        dev_ = *d;
        ASSERT_TRUE(dev_->info().caps.resv)
            << GetParam() << ": the device has no ReSV unit (DRM_VREX_CAP_RESV)";
        auto st = be_->resv_stats();
        ASSERT_TRUE(st);
        stats_ = *st;
    }

    drm_vrex_resv_params params() {
        drm_vrex_resv_params p{};
        vrex_resv_params lib{};
        vrex_resv_default_params(&lib);
        p.seed = 77;
        p.dim = kDim;
        p.th = lib.th;
        p.ratio = lib.ratio;
        p.mode = DRM_VREX_RESV_MODE_MASS;
        p.tokens_per_block = 4;
        p.bytes_per_token = 128;
        std::memcpy(p.lut, lib.lut, sizeof(p.lut));
        return p;
    }
    std::uint32_t bo(std::uint64_t size) {
        drm_vrex_bo_create a{};
        a.size = size;
        a.bank_mask = 1;
        EXPECT_FALSE(be_->bo_create(a));
        return a.handle;
    }
    // Keys near a few directions so that clusters form.
    std::vector<float> keys(std::uint32_t n) {
        std::normal_distribution<float> nd(0.0f, 1.0f);
        if (centres_.empty())
            for (int c = 0; c < 4; c++) {
                std::vector<float> v(kDim);
                for (auto& x : v) x = nd(rng_);
                centres_.push_back(v);
            }
        std::vector<float> out(std::size_t{n} * kDim);
        for (std::uint32_t k = 0; k < n; k++) {
            const auto& c = centres_[rng_() % centres_.size()];
            for (std::uint32_t i = 0; i < kDim; i++) out[k * kDim + i] = c[i] + 0.2f * nd(rng_);
        }
        return out;
    }

    Backend* be_ = nullptr;
    std::shared_ptr<Device> dev_;
    drm_vrex_resv_stats stats_{};
    std::mt19937_64 rng_{99};
    std::vector<std::vector<float>> centres_;
};

TEST_P(Resv, HeadCreateValidatesAndHeadsAreBounded) {
    drm_vrex_resv_head_create a{};
    a.params = params();
    a.params.dim = 0;
    EXPECT_EQ(be_->resv_head_create(a), ec(std::errc::invalid_argument));
    a.params = params();
    a.params.pad[1] = 1;
    EXPECT_EQ(be_->resv_head_create(a), ec(std::errc::invalid_argument));
    a.params = params();
    a.params.ratio = DRM_VREX_RESV_RATIO_ONE + 1;
    EXPECT_EQ(be_->resv_head_create(a), ec(std::errc::invalid_argument));
    a.params = params();
    a.flags = 1;
    EXPECT_EQ(be_->resv_head_create(a), ec(std::errc::invalid_argument));
    a.flags = 0;
    std::vector<std::uint32_t> heads;
    for (std::uint32_t i = 0; i < stats_.heads; i++) {
        ASSERT_FALSE(be_->resv_head_create(a)) << i;
        heads.push_back(a.head);
    }
    EXPECT_EQ(be_->resv_head_create(a), ec(std::errc::device_or_resource_busy));
    EXPECT_EQ(std::set<std::uint32_t>(heads.begin(), heads.end()).size(), heads.size());
    EXPECT_EQ(be_->resv_stats()->heads_in_use, stats_.heads);
    // Another file neither sees these heads nor can use them; closing this file frees them.
    auto other = test::open_backend(GetParam());
    ASSERT_NE(other, nullptr);
    EXPECT_EQ(other->resv_truncate(heads[0], 0), ec(std::errc::no_such_file_or_directory));
    EXPECT_EQ(other->resv_head_destroy(heads[0]), ec(std::errc::no_such_file_or_directory));
    EXPECT_EQ(other->resv_head_create(a), ec(std::errc::device_or_resource_busy));
    ASSERT_FALSE(be_->resv_head_destroy(heads[0]));
    EXPECT_EQ(be_->resv_head_destroy(heads[0]), ec(std::errc::no_such_file_or_directory));
    dev_.reset();  // closes the file
    be_ = nullptr;
    for (std::uint32_t i = 0; i < stats_.heads; i++) ASSERT_FALSE(other->resv_head_create(a)) << i;
}

// The seam against lib/resv driven directly: the same hashes, clusters and ranges.
TEST_P(Resv, HashAndSelectMatchTheReferenceModel) {
    drm_vrex_resv_head_create a{};
    a.params = params();
    ASSERT_FALSE(be_->resv_head_create(a));
    const std::uint32_t n = 300;
    const std::uint32_t h = bo(std::uint64_t{n} * kDim * 2 + 4096 + 8 * n);
    auto map = be_->bo_map(h);
    ASSERT_TRUE(map);
    std::vector<float> k = keys(n);
    std::vector<std::int16_t> q(k.size());
    for (std::uint32_t i = 0; i < n; i++)
        resv_quantize(std::span(k).subspan(i * kDim, kDim), std::span(q).subspan(i * kDim, kDim));
    std::memcpy(map->data(), q.data(), q.size() * 2);

    drm_vrex_resv_hash hash{};
    hash.head = a.head;
    hash.count = n;
    hash.handle = h;
    hash.offset = 1;
    EXPECT_EQ(be_->resv_hash(hash), ec(std::errc::invalid_argument));  // misaligned
    hash.offset = 0;
    hash.handle = h + 1000;
    EXPECT_EQ(be_->resv_hash(hash), ec(std::errc::no_such_file_or_directory));
    hash.handle = h;
    hash.count = 0;
    EXPECT_EQ(be_->resv_hash(hash), ec(std::errc::invalid_argument));
    hash.count = 1u << 30;  // past the BO
    EXPECT_EQ(be_->resv_hash(hash), ec(std::errc::invalid_argument));
    hash.count = n;
    ASSERT_FALSE(be_->resv_hash(hash));
    EXPECT_EQ(hash.tokens, n);

    // The reference: same seed, same params, same keys.
    vrex_resv_hcu hcu{};
    ASSERT_EQ(vrex_resv_hcu_init(&hcu, 77, kDim), VREX_OK);
    std::vector<std::byte> arena(vrex_resv_head_arena_size(n, n));
    vrex_resv_head ref{};
    ASSERT_EQ(vrex_resv_head_init(&ref, n, n, arena.data(), arena.size()), VREX_OK);
    for (std::uint32_t i = 0; i < n; i++)
        ASSERT_EQ(vrex_resv_add(&ref, vrex_resv_hash(&hcu, &q[i * kDim]), a.params.th, nullptr, nullptr),
                  VREX_OK);
    EXPECT_EQ(hash.clusters, ref.nclusters);
    EXPECT_GT(ref.nclusters, 1u);
    EXPECT_LT(ref.nclusters, n / 2) << "keys near 4 directions must cluster";

    vrex_resv_params lp{};
    vrex_resv_default_params(&lp);
    const std::uint64_t out = 4096 + std::uint64_t{n} * kDim * 2;
    for (int round = 0; round < 8; round++) {
        std::vector<float> qf = keys(1);
        std::vector<std::int16_t> qq(kDim);
        resv_quantize(qf, qq);
        std::memcpy(map->data(), qq.data(), kDim * 2);
        drm_vrex_resv_select_item it{};
        it.head = a.head;
        it.flags = round % 2 ? DRM_VREX_RESV_SELECT_BLOCKS : 0;
        it.query_handle = h;
        it.out_handle = h;
        it.out_offset = out;
        it.max_ranges = n;
        ASSERT_FALSE(be_->resv_select(std::span(&it, 1)));
        const std::uint32_t qh = vrex_resv_hash(&hcu, qq.data());
        vrex_resv_selection sel{};
        ASSERT_EQ(vrex_resv_select(&ref, qh, &lp, &sel), VREX_OK);
        std::vector<vrex_resv_range> want(n);
        const std::uint32_t nr = it.flags ? vrex_resv_block_ranges(&ref, 4, want.data(), n)
                                          : vrex_resv_token_ranges(&ref, want.data(), n);
        EXPECT_EQ(it.qhash, qh);
        EXPECT_EQ(it.tokens, sel.tokens);
        EXPECT_EQ(it.clusters, sel.clusters);
        EXPECT_EQ(it.cutoff, sel.cutoff);
        EXPECT_EQ(it.head_tokens, n);
        ASSERT_EQ(it.ranges, nr);
        std::vector<vrex_resv_range> got(nr);
        std::memcpy(got.data(), map->data() + out, nr * 8);
        for (std::uint32_t i = 0; i < nr; i++)
            EXPECT_TRUE(got[i].first == want[i].first && got[i].count == want[i].count) << i;
    }

    // A batch with one bad item applies nothing.
    drm_vrex_resv_select_item items[2]{};
    items[0].head = a.head;
    items[0].query_handle = h;
    items[1] = items[0];
    items[1].pad = 1;
    const std::uint64_t selects = be_->resv_stats()->selects;
    EXPECT_EQ(be_->resv_select(items), ec(std::errc::invalid_argument));
    items[1].pad = 0;
    items[1].max_ranges = 1;
    items[1].out_handle = h;
    items[1].out_offset = 2;  // misaligned output
    EXPECT_EQ(be_->resv_select(items), ec(std::errc::invalid_argument));
    EXPECT_EQ(be_->resv_stats()->selects, selects);
    items[1].out_offset = 0;
    ASSERT_FALSE(be_->resv_select(items));
    EXPECT_EQ(be_->resv_stats()->selects, selects + 2);

    EXPECT_EQ(be_->resv_truncate(a.head, n + 1), ec(std::errc::invalid_argument));
    ASSERT_FALSE(be_->resv_truncate(a.head, 10));
    hash.count = 1;
    ASSERT_FALSE(be_->resv_hash(hash));
    EXPECT_EQ(hash.tokens, 11u);
}

TEST_P(Resv, ResvHeadAppendsAllOrNothingAndSelects) {
    ResvParams p;
    p.dim = kDim;
    p.seed = 5;
    p.tokens_per_block = 8;
    auto head = ResvHead::create(dev_, p, 64);
    ASSERT_TRUE(head) << head.error().message();
    ResvHead& hd = **head;
    std::vector<float> k = keys(1000);
    auto t = hd.append(std::span<const float>(k));
    ASSERT_TRUE(t);
    EXPECT_EQ(*t, 1000u);
    EXPECT_EQ(hd.append(std::span<const float>(k).subspan(0, kDim - 1)).error(),
              ec(std::errc::invalid_argument));
    // More than the head holds: ENOSPC, and the batches that fitted are taken back.
    std::vector<float> big = keys(stats_.max_tokens);
    EXPECT_EQ(hd.append(std::span<const float>(big)).error(), ec(std::errc::no_space_on_device));
    EXPECT_EQ(hd.tokens(), 1000u);

    const auto before = *resv_stats(*dev_);
    std::vector<float> q = keys(1);
    auto s = hd.select(std::span<const float>(q));
    ASSERT_TRUE(s);
    EXPECT_EQ(s->head_tokens, 1000u);
    std::uint32_t covered = 0, end = 0;
    for (std::size_t i = 0; i < s->ranges.size(); i++) {
        EXPECT_GT(s->ranges[i].count, 0u);
        if (i) {
            EXPECT_GT(s->ranges[i].first, end);
        }
        end = s->ranges[i].first + s->ranges[i].count;
        covered += s->ranges[i].count;
    }
    EXPECT_LE(end, 1000u);
    EXPECT_EQ(covered, s->tokens);
    EXPECT_GT(s->tokens, 0u);
    auto b = hd.select(std::span<const float>(q), true);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->tokens, s->tokens);      // same query, same selection
    for (const ResvRange& r : s->ranges)  // every selected token's block is in a block range
        for (std::uint32_t tok = r.first; tok < r.first + r.count; tok++) {
            bool in = false;
            for (const ResvRange& br : b->ranges) in |= tok / 8 >= br.first && tok / 8 < br.first + br.count;
            ASSERT_TRUE(in) << tok;
        }
    const auto after = *resv_stats(*dev_);
    EXPECT_EQ(after.selects, before.selects + 2);
    EXPECT_EQ(after.tokens_scanned, before.tokens_scanned + 2000);
    EXPECT_EQ(after.tokens_selected, before.tokens_selected + 2 * s->tokens);
    EXPECT_EQ(after.bytes_selected, before.bytes_selected + 2ull * s->tokens * 4 * kDim);

    EXPECT_EQ(hd.truncate(1001).error(), ec(std::errc::invalid_argument));
    ASSERT_TRUE(hd.truncate(0));
    auto empty = hd.select(std::span<const float>(q));
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->ranges.empty());
    EXPECT_EQ(empty->tokens, 0u);

    ResvParams bad = p;
    bad.ratio = 1.5;
    EXPECT_EQ(ResvHead::create(dev_, bad).error(), ec(std::errc::invalid_argument));
}

// The host's resv_hash (no device: the engines' insertion-time hashes) keeps its thread's last HCU:
// seeds and dimensions in turn, a refused call between them, each against an HCU made for the call.
TEST(ResvHostHash, EqualsAFreshHcuAcrossSeedsDimensionsAndRefusals) {
    std::mt19937 g(5);
    std::normal_distribution<float> nd;
    struct Call {
        std::uint64_t seed;
        std::uint32_t dim;
    };
    const Call calls[] = {{11, 64}, {12, 64}, {11, 32}, {11, 64}, {12, 128}, {11, 64}};
    for (const Call& c : calls) {
        std::vector<float> keys(3 * std::size_t{c.dim});
        for (float& x : keys) x = nd(g);
        std::vector<std::uint32_t> got(3);
        ASSERT_TRUE(resv_hash(c.seed, c.dim, keys, got)) << c.seed << "/" << c.dim;
        vrex_resv_hcu ref{};
        ASSERT_EQ(vrex_resv_hcu_init(&ref, c.seed, c.dim), VREX_OK);
        std::vector<std::int16_t> q(c.dim);
        for (std::size_t i = 0; i < got.size(); i++) {
            resv_quantize(std::span<const float>(keys).subspan(i * c.dim, c.dim), q);
            EXPECT_EQ(got[i], vrex_resv_hash(&ref, q.data())) << c.seed << "/" << c.dim << " key " << i;
        }
        std::vector<std::uint32_t> none(1);
        EXPECT_EQ(resv_hash(c.seed, 0, {}, none).error(), ec(std::errc::invalid_argument));
        EXPECT_EQ(resv_hash(c.seed, VREX_RESV_MAX_DIM + 1, keys, none).error(),
                  ec(std::errc::invalid_argument));
        EXPECT_EQ(resv_hash(c.seed, c.dim, std::span<const float>(keys).first(c.dim - 1), none).error(),
                  ec(std::errc::invalid_argument));
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, Resv, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
