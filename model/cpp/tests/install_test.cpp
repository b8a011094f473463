// vrex::lcp::install_blocks: an installed block holds its source's bytes (recall), or with refresh
// its source's layers 1.. and the frame's own layer 0 (the guard's keys as K, the features
// zero-padded as V); the copies are the copy engine's, one kick for the frame.
#include "vrex/lcp/install.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

namespace vrex::lcp {
namespace {

// The builtin model's shape but 2 layers and feat_dim below KVH x hd, so V's zero padding shows.
constexpr InstallShape kShape{
    .layers = 2, .kv_heads = 2, .tokens_per_region = 4, .head_dim = 8, .feat_dim = 12};
constexpr std::size_t kRegions = 3;
constexpr std::size_t kLayerFloats = 2 * 2 * 4 * 8;  // K and V of one layer
constexpr std::size_t kBlockFloats = kShape.layers * kLayerFloats;

std::vector<float> numbered(std::size_t n, float base) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; i++) v[i] = base + static_cast<float>(i);
    return v;
}

std::span<std::byte> bytes_of(std::vector<float>& v) {
    return std::as_writable_bytes(std::span(v));
}

TEST(Install, ARecallHoldsTheSourcesBytesInOneKick) {
    CopyEngine dma;
    std::vector<float> s1 = numbered(kBlockFloats, 1000), s2 = numbered(kBlockFloats, 5000);
    std::vector<float> d1(kBlockFloats, -1), d2(kBlockFloats, -1);
    const BlockInstall ins[] = {{0, bytes_of(d1), bytes_of(s1)}, {2, bytes_of(d2), bytes_of(s2)}};
    install_blocks(dma, kShape, ins, nullptr);
    EXPECT_EQ(d1, s1);
    EXPECT_EQ(d2, s2);
    EXPECT_EQ(dma.kicks(), 1U);
    EXPECT_EQ(dma.copies(), 2U);
}

TEST(Install, ARefreshKeepsTheSourcesDeeperLayersAndWritesLayerZeroFromTheFrame) {
    CopyEngine dma;
    const std::vector<float> k0 = numbered(kRegions * 2 * 4 * 8, 0.5F);   // [regions, KVH, T, hd]
    const std::vector<float> tokens = numbered(kRegions * 4 * 12, 9000);  // [regions * T, feat_dim]
    std::vector<float> src = numbered(kBlockFloats, 100), dst(kBlockFloats, -1);
    const std::uint32_t region = 1;
    const BlockInstall ins[] = {{region, bytes_of(dst), bytes_of(src)}};
    const Layer0 layer0{k0, tokens};
    install_blocks(dma, kShape, ins, &layer0);
    for (std::size_t i = kLayerFloats; i < kBlockFloats; i++)
        ASSERT_EQ(dst[i], src[i]) << "layer 1, float " << i;
    const std::size_t kfloats = 2 * 4 * 8;  // layer 0's K: KVH x T x hd, k0's slice of the region
    for (std::size_t i = 0; i < kfloats; i++) ASSERT_EQ(dst[i], k0[region * kfloats + i]) << "K " << i;
    for (std::size_t h = 0; h < 2; h++)
        for (std::size_t tok = 0; tok < 4; tok++)
            for (std::size_t d = 0; d < 8; d++) {
                const std::size_t c = h * 8 + d;
                const float want = c < 12 ? tokens[(region * 4 + tok) * 12 + c] : 0.0F;
                ASSERT_EQ(dst[kfloats + (h * 4 + tok) * 8 + d], want) << "V head " << h << " token " << tok;
            }
    EXPECT_EQ(dma.bytes(), (kBlockFloats - kLayerFloats) * sizeof(float));  // layer 0 is not copied
}

// Features that end inside the first head: the second head is all padding.
TEST(Install, ARefreshPadsAHeadPastTheFeaturesWithZeros) {
    constexpr InstallShape shape{
        .layers = 2, .kv_heads = 2, .tokens_per_region = 4, .head_dim = 8, .feat_dim = 6};
    CopyEngine dma;
    const std::vector<float> k0 = numbered(kRegions * 2 * 4 * 8, 0.5F);
    const std::vector<float> tokens = numbered(kRegions * 4 * 6, 9000);
    std::vector<float> src = numbered(kBlockFloats, 100), dst(kBlockFloats, -1);
    const BlockInstall ins[] = {{2, bytes_of(dst), bytes_of(src)}};
    const Layer0 layer0{k0, tokens};
    install_blocks(dma, shape, ins, &layer0);
    const std::size_t kfloats = 2 * 4 * 8;
    for (std::size_t i = 0; i < kfloats; i++) ASSERT_EQ(dst[i], k0[2 * kfloats + i]) << "K " << i;
    for (std::size_t h = 0; h < 2; h++)
        for (std::size_t tok = 0; tok < 4; tok++)
            for (std::size_t d = 0; d < 8; d++) {
                const std::size_t c = h * 8 + d;
                const float want = c < 6 ? tokens[(2 * 4 + tok) * 6 + c] : 0.0F;
                ASSERT_EQ(dst[kfloats + (h * 4 + tok) * 8 + d], want) << "V head " << h << " token " << tok;
            }
}

// A layer 0 shorter than the region needs is refused before any byte moves (it was read past its end).
TEST(Install, RefusesALayerZeroTooShortForTheRegion) {
    CopyEngine dma;
    const std::vector<float> k0 = numbered(2 * 2 * 4 * 8, 0.5F), tokens = numbered(kRegions * 4 * 12, 9000);
    std::vector<float> src(kBlockFloats), dst(kBlockFloats, -1);
    const BlockInstall ins[] = {{2, bytes_of(dst), bytes_of(src)}};  // region 2: k0 holds regions 0 and 1
    const Layer0 layer0{k0, tokens};
    EXPECT_THROW(install_blocks(dma, kShape, ins, &layer0), std::invalid_argument);
    EXPECT_TRUE(dma.idle());
    EXPECT_EQ(dst, std::vector<float>(kBlockFloats, -1));
    const std::vector<float> all_keys = numbered(kRegions * 2 * 4 * 8, 0.5F);
    const std::vector<float> few = numbered(kRegions * 4 * 12 - 1, 9000);  // the last token's features short
    const Layer0 short_tokens{all_keys, few};
    EXPECT_THROW(install_blocks(dma, kShape, ins, &short_tokens), std::invalid_argument);
}

TEST(Install, RefusesABlockOfAnotherSize) {
    CopyEngine dma;
    std::vector<float> src(kBlockFloats), dst(kBlockFloats - 1);
    const BlockInstall ins[] = {{0, bytes_of(dst), bytes_of(src)}};
    EXPECT_THROW(install_blocks(dma, kShape, ins, nullptr), std::invalid_argument);
    EXPECT_TRUE(dma.idle());
}

}  // namespace
}  // namespace vrex::lcp
