// The ReSV C ABI (vrex_hal.h "ReSV") on every available backend: status codes, size-negotiated
// params, and the same selections as the C++ ResvHead on the same device with the same keys.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends.hpp"
#include "vrex/resv.hpp"
#include "vrex/vrex_hal.h"

namespace {

constexpr uint32_t kDim = 16;

class CApiResv : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        ASSERT_EQ(vrex_hal_device_open(GetParam().c_str(), &dev_), VREX_HAL_OK);
        vrex_hal_resv_default_params(&p_);
        p_.dim = kDim;
        p_.seed = 1234;
        p_.ratio = 0.5;
        p_.tokens_per_block = 4;
    }
    void TearDown() override { vrex_hal_device_close(dev_); }

    // Keys near a few directions, so that clusters form.
    std::vector<float> keys(uint32_t n) {
        std::normal_distribution<float> nd(0.0f, 1.0f);
        if (centres_.empty())
            for (int c = 0; c < 5; c++) {
                std::vector<float> v(kDim);
                for (auto& x : v) x = nd(rng_);
                centres_.push_back(v);
            }
        std::vector<float> out(std::size_t{n} * kDim);
        for (uint32_t k = 0; k < n; k++) {
            const auto& c = centres_[rng_() % centres_.size()];
            for (uint32_t i = 0; i < kDim; i++) out[k * kDim + i] = c[i] + 0.3f * nd(rng_);
        }
        return out;
    }

    vrex_hal_device* dev_ = nullptr;
    vrex_hal_resv_params p_{};
    std::mt19937 rng_{7};
    std::vector<std::vector<float>> centres_;
};

TEST_P(CApiResv, ParamsAreValidatedAndSizeNegotiated) {
    vrex_hal_resv_head* h = nullptr;
    EXPECT_EQ(vrex_hal_resv_head_create(nullptr, &p_, &h), VREX_HAL_ERR_INVALID);
    EXPECT_EQ(vrex_hal_resv_head_create(dev_, nullptr, &h), VREX_HAL_ERR_INVALID);
    vrex_hal_resv_params bad = p_;
    bad.dim = 0;
    EXPECT_EQ(vrex_hal_resv_head_create(dev_, &bad, &h), VREX_HAL_ERR_INVALID);
    bad = p_;
    bad.ratio = 1.5;
    EXPECT_EQ(vrex_hal_resv_head_create(dev_, &bad, &h), VREX_HAL_ERR_INVALID);
    bad = p_;
    bad.mode = 7;
    EXPECT_EQ(vrex_hal_resv_head_create(dev_, &bad, &h), VREX_HAL_ERR_INVALID);
    bad = p_;
    bad.pad[1] = 1;
    EXPECT_EQ(vrex_hal_resv_head_create(dev_, &bad, &h), VREX_HAL_ERR_INVALID);
    bad = p_;
    bad.struct_size = 0;
    EXPECT_EQ(vrex_hal_resv_head_create(dev_, &bad, &h), VREX_HAL_ERR_INVALID);

    // A newer caller's larger struct: accepted with a zero tail, refused with anything else.
    struct {
        vrex_hal_resv_params p;
        uint64_t tail;
    } big{p_, 0};
    big.p.struct_size = sizeof(big);
    ASSERT_EQ(vrex_hal_resv_head_create(dev_, &big.p, &h), VREX_HAL_OK);
    vrex_hal_resv_head_destroy(h);
    big.tail = 1;
    EXPECT_EQ(vrex_hal_resv_head_create(dev_, &big.p, &h), VREX_HAL_ERR_INVALID);

    // An older caller's struct that ends after the seed: the rest are defaults (dim 128).
    vrex_hal_resv_params old = p_;
    old.struct_size = offsetof(vrex_hal_resv_params, ratio);
    old.dim = 64;
    ASSERT_EQ(vrex_hal_resv_head_create(dev_, &old, &h), VREX_HAL_OK);
    std::vector<int16_t> k(64 * 3, 5);
    uint32_t tokens = 0;
    EXPECT_EQ(vrex_hal_resv_append_i16(h, k.data(), 3, &tokens), VREX_HAL_OK);
    EXPECT_EQ(tokens, 3u);
    vrex_hal_resv_head_destroy(h);
}

TEST_P(CApiResv, SelectionsMatchTheCxxApi) {
    vrex_hal_resv_head* h = nullptr;
    ASSERT_EQ(vrex_hal_resv_head_create(dev_, &p_, &h), VREX_HAL_OK);
    vrex::DeviceOptions o;
    auto choice = vrex::parse_backend_choice(GetParam());
    ASSERT_TRUE(choice);
    o.backend = *choice;
    auto dev = vrex::Device::open(o);
    ASSERT_TRUE(dev) << dev.error().message();
    vrex::ResvParams cp;
    cp.dim = kDim;
    cp.seed = 1234;
    cp.ratio = 0.5;
    cp.tokens_per_block = 4;
    auto ref = vrex::ResvHead::create(*dev, cp, 256);
    ASSERT_TRUE(ref) << ref.error().message();

    const std::vector<float> k = keys(700);
    uint32_t tokens = 0;
    ASSERT_EQ(vrex_hal_resv_append_f32(h, k.data(), 700, &tokens), VREX_HAL_OK);
    EXPECT_EQ(tokens, 700u);
    EXPECT_EQ(vrex_hal_resv_head_tokens(h), 700u);
    ASSERT_TRUE((*ref)->append(std::span<const float>(k)));

    int nonempty = 0;
    for (int round = 0; round < 6; round++) {
        const std::vector<float> q = keys(1);
        const bool blocks = round % 2;
        std::vector<vrex_hal_resv_range> r(700);
        vrex_hal_resv_selection sel{};
        ASSERT_EQ(
            vrex_hal_resv_select_f32(h, q.data(), blocks ? VREX_HAL_RESV_BLOCKS : 0, r.data(), 700, &sel),
            VREX_HAL_OK);
        auto want = (*ref)->select(std::span<const float>(q), blocks);
        ASSERT_TRUE(want);
        EXPECT_EQ(sel.tokens, want->tokens);
        EXPECT_EQ(sel.clusters, want->clusters);
        EXPECT_EQ(sel.qhash, want->qhash);
        EXPECT_EQ(sel.cutoff, want->cutoff);
        EXPECT_EQ(sel.head_tokens, 700u);
        ASSERT_EQ(sel.ranges, want->ranges.size());
        for (uint32_t i = 0; i < sel.ranges; i++)
            EXPECT_TRUE(r[i].first == want->ranges[i].first && r[i].count == want->ranges[i].count) << i;
        nonempty += sel.tokens > 0 && sel.tokens < 700;

        // A short buffer: the total is reported, only the room is written.
        if (sel.ranges >= 2) {
            std::vector<vrex_hal_resv_range> two(3, vrex_hal_resv_range{0xdead, 0xbeef});
            vrex_hal_resv_selection s2{};
            ASSERT_EQ(
                vrex_hal_resv_select_f32(h, q.data(), blocks ? VREX_HAL_RESV_BLOCKS : 0, two.data(), 1, &s2),
                VREX_HAL_OK);
            EXPECT_EQ(s2.ranges, sel.ranges);
            EXPECT_EQ(two[0].first, r[0].first);
            EXPECT_EQ(two[1].first, 0xdeadu);
        }
    }
    EXPECT_GT(nonempty, 2) << "ratio 0.5 selects a proper subset";

    vrex_hal_resv_selection sel{};
    const std::vector<float> q = keys(1);
    EXPECT_EQ(vrex_hal_resv_select_f32(h, q.data(), 0x80, nullptr, 0, &sel), VREX_HAL_ERR_INVALID);
    EXPECT_NE(
        std::string(vrex_hal_last_error())
            .find("vrex_hal_resv_select_f32: flags 0x80 has unknown bits 0x80 (valid: VREX_HAL_RESV_BLOCKS)"),
        std::string::npos)
        << vrex_hal_last_error();
    EXPECT_EQ(vrex_hal_resv_select_f32(h, q.data(), 0, nullptr, 4, &sel), VREX_HAL_ERR_INVALID);
    EXPECT_EQ(vrex_hal_resv_select_f32(h, nullptr, 0, nullptr, 0, &sel), VREX_HAL_ERR_INVALID);
    ASSERT_EQ(vrex_hal_resv_select_f32(h, q.data(), 0, nullptr, 0, &sel), VREX_HAL_OK);

    EXPECT_EQ(vrex_hal_resv_truncate(h, 701), VREX_HAL_ERR_INVALID);
    EXPECT_EQ(std::string(vrex_hal_last_error()).rfind("vrex_hal_resv_truncate: ", 0), 0u)
        << vrex_hal_last_error();
    ASSERT_EQ(vrex_hal_resv_truncate(h, 100), VREX_HAL_OK);
    EXPECT_EQ(vrex_hal_resv_head_tokens(h), 100u);

    vrex_hal_resv_stats st{};
    ASSERT_EQ(vrex_hal_resv_get_stats(dev_, &st), VREX_HAL_OK);
    EXPECT_GE(st.heads_in_use, 2u);
    EXPECT_GE(st.selects, 13u);
    EXPECT_GE(st.keys, 1400u);
    // More keys than the head holds: NOSPC, nothing appended.
    const std::vector<float> many = keys(st.max_tokens);
    EXPECT_EQ(vrex_hal_resv_append_f32(h, many.data(), st.max_tokens, &tokens), VREX_HAL_ERR_NOSPC);
    EXPECT_EQ(std::string(vrex_hal_last_error()).rfind("vrex_hal_resv_append_f32: ", 0), 0u)
        << vrex_hal_last_error();
    EXPECT_EQ(vrex_hal_resv_head_tokens(h), 100u);
    EXPECT_EQ(vrex_hal_resv_append_f32(h, nullptr, 1, &tokens), VREX_HAL_ERR_INVALID);
    vrex_hal_resv_head_destroy(h);
}

TEST_P(CApiResv, HeadsAreBoundedAndReleased) {
    vrex_hal_resv_stats st{};
    ASSERT_EQ(vrex_hal_resv_get_stats(dev_, &st), VREX_HAL_OK);
    std::vector<vrex_hal_resv_head*> heads;
    p_.max_batch = 4;
    for (uint32_t i = st.heads_in_use; i < st.heads; i++) {
        vrex_hal_resv_head* h = nullptr;
        ASSERT_EQ(vrex_hal_resv_head_create(dev_, &p_, &h), VREX_HAL_OK) << i;
        heads.push_back(h);
    }
    vrex_hal_resv_head* h = nullptr;
    EXPECT_EQ(vrex_hal_resv_head_create(dev_, &p_, &h), VREX_HAL_ERR_BUSY);
    vrex_hal_resv_head_destroy(heads.back());
    heads.pop_back();
    ASSERT_EQ(vrex_hal_resv_head_create(dev_, &p_, &h), VREX_HAL_OK);
    heads.push_back(h);
    for (auto* x : heads) vrex_hal_resv_head_destroy(x);
    vrex_hal_resv_stats after{};
    ASSERT_EQ(vrex_hal_resv_get_stats(dev_, &after), VREX_HAL_OK);
    EXPECT_EQ(after.heads_in_use, st.heads_in_use);
    EXPECT_EQ(vrex_hal_resv_get_stats(dev_, nullptr), VREX_HAL_ERR_INVALID);
}

INSTANTIATE_TEST_SUITE_P(Backends, CApiResv, ::testing::ValuesIn(vrex::test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
