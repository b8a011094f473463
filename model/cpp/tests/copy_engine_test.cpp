// vrex::lcp::CopyEngine: queued copies land when the engine runs, in queue order, and are counted;
// an empty run costs no clock read.
#include "vrex/lcp/copy_engine.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <vector>

namespace vrex::lcp {
namespace {

std::vector<std::byte> filled(std::size_t n, int v) {
    return std::vector<std::byte>(n, static_cast<std::byte>(v));
}

bool all_are(const std::vector<std::byte>& b, int v) {
    return std::all_of(b.begin(), b.end(), [&](std::byte x) { return x == static_cast<std::byte>(v); });
}

TEST(CopyEngine, QueuedCopiesLandWhenItRunsInQueueOrder) {
    CopyEngine dma;
    auto a = filled(4096, 1), b = filled(4096, 2), c = filled(4096, 3);
    auto d0 = filled(4096, 0), d1 = filled(4096, 0);
    dma.queue(d0, a);
    dma.queue(d1, b);
    dma.queue(d0, c);  // a later descriptor to the same place wins
    EXPECT_FALSE(dma.idle());
    EXPECT_TRUE(all_are(d0, 0)) << "a queued copy ran before the kick";
    dma.run();
    EXPECT_TRUE(all_are(d0, 3));
    EXPECT_TRUE(all_are(d1, 2));
    EXPECT_TRUE(dma.idle());
    EXPECT_EQ(dma.kicks(), 1U);
    EXPECT_EQ(dma.copies(), 3U);
    EXPECT_EQ(dma.bytes(), 3U * 4096);
    EXPECT_GE(dma.cpu_s(), 0.0);
    dma.run();  // nothing queued: nothing runs, nothing is counted
    EXPECT_EQ(dma.kicks(), 1U);
    EXPECT_EQ(dma.copies(), 3U);
}

TEST(CopyEngine, AnEmptyEngineReadsNoClock) {
    CopyEngine dma;
    dma.run();
    EXPECT_EQ(dma.cpu_s(), 0.0);
    EXPECT_EQ(dma.kicks(), 0U);
}

TEST(CopyEngine, RefusesACopyBetweenBlocksOfDifferentSizes) {
    CopyEngine dma;
    auto a = filled(16, 1), d = filled(8, 0);
    EXPECT_THROW(dma.queue(d, a), std::invalid_argument);
    EXPECT_TRUE(dma.idle());
}

}  // namespace
}  // namespace vrex::lcp
