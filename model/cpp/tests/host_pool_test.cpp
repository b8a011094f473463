// vrex::lcp::HostBlockPool: the host tier's demoted copies come from 2 MiB chunks, blocks do not
// overlap, a block given back is handed out again before a new chunk is mapped.
#include "vrex/lcp/host_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

namespace vrex::lcp {
namespace {

constexpr std::size_t kBlock = 16 << 10;

TEST(HostPool, BlocksOfOneChunkAreDistinctAndKeepTheirBytes) {
    HostBlockPool pool(kBlock);
    EXPECT_EQ(pool.chunk_bytes(), std::size_t{2} << 20);
    const std::size_t per = pool.chunk_bytes() / kBlock;
    std::vector<std::span<std::byte>> got;
    for (std::size_t i = 0; i < per + 1; i++) {
        got.push_back(pool.take());
        ASSERT_EQ(got.back().size(), kBlock);
        std::memset(got.back().data(), static_cast<int>(i + 1), kBlock);
    }
    EXPECT_EQ(pool.chunks(), 2U);  // one block past the first chunk maps the second
    EXPECT_EQ(pool.in_use(), per + 1);
    std::vector<std::byte*> starts;
    for (const auto& b : got) starts.push_back(b.data());
    std::sort(starts.begin(), starts.end());
    for (std::size_t i = 1; i < starts.size(); i++)
        EXPECT_GE(starts[i] - starts[i - 1], std::ptrdiff_t{kBlock});
    for (std::size_t i = 0; i < got.size(); i++)  // no block wrote over another
        EXPECT_TRUE(std::all_of(got[i].begin(), got[i].end(),
                                [&](std::byte x) { return x == static_cast<std::byte>(i + 1); }))
            << "block " << i;
}

TEST(HostPool, GivenBackBlocksAreReusedFirst) {
    HostBlockPool pool(kBlock);
    const auto a = pool.take();
    const auto b = pool.take();
    pool.give(a);
    EXPECT_EQ(pool.in_use(), 1U);
    EXPECT_EQ(pool.take().data(), a.data());
    EXPECT_NE(pool.take().data(), b.data());
    EXPECT_EQ(pool.chunks(), 1U);
}

TEST(HostPool, BlocksLargerThanAChunkGetWholeChunks) {
    HostBlockPool pool((std::size_t{2} << 20) + 1);
    EXPECT_EQ(pool.chunk_bytes(), std::size_t{4} << 20);
    const auto a = pool.take();
    const auto b = pool.take();
    EXPECT_EQ(pool.chunks(), 2U);
    EXPECT_NE(a.data(), b.data());
}

// With a preparing thread: the same blocks (distinct, kept, chunk after chunk), the thread's CPU
// time reported, and the pool movable and destroyed with its thread (TSan runs this).
TEST(HostPool, APreparingThreadHandsOutTheSameBlocks) {
    HostBlockPool ahead(kBlock, true);
    const std::size_t per = ahead.chunk_bytes() / kBlock;
    std::vector<std::span<std::byte>> got;
    for (std::size_t i = 0; i < 2 * per + 3; i++) {
        got.push_back(ahead.take());
        std::memset(got.back().data(), static_cast<int>(i % 251), kBlock);
    }
    EXPECT_EQ(ahead.chunks(), 3U);
    for (std::size_t i = 0; i < got.size(); i++)
        ASSERT_TRUE(std::all_of(got[i].begin(), got[i].end(),
                                [&](std::byte x) { return x == static_cast<std::byte>(i % 251); }))
            << "block " << i;
    EXPECT_GT(ahead.prepare_cpu_s(), 0.0);
    EXPECT_EQ(HostBlockPool(kBlock).prepare_cpu_s(), 0.0);
    HostBlockPool moved = std::move(ahead);
    EXPECT_EQ(moved.take().size(), kBlock);
    EXPECT_EQ(moved.in_use(), 2 * per + 4);
}

TEST(HostPool, ZeroBytesIsRefused) {
    EXPECT_THROW(HostBlockPool(0), std::invalid_argument);
}

}  // namespace
}  // namespace vrex::lcp
