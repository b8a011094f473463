// The vLLM-style paged baseline: append-only growth, block tables, free list, window, fixed pool.
#include <gtest/gtest.h>

#include "pipeline/paged_baseline.hpp"

using vrex::pipeline::PagedBaselineConfig;
using vrex::pipeline::PagedKvBaseline;

TEST(PagedBaseline, AppendOnlyHoldsEveryTokenInWholeBlocks) {
    PagedKvBaseline b({16, 1000, 0, 0});
    const auto s = b.add_sequence();
    EXPECT_TRUE(b.append(s, 1));
    EXPECT_EQ(b.allocated_blocks(), 1u);
    EXPECT_TRUE(b.append(s, 15));
    EXPECT_EQ(b.allocated_blocks(), 1u);  // the first block is now full
    EXPECT_TRUE(b.append(s, 1));
    EXPECT_EQ(b.allocated_blocks(), 2u);
    for (int f = 0; f < 100; f++) EXPECT_TRUE(b.append(s, 256));
    EXPECT_EQ(b.tokens(s), 25617u);
    EXPECT_EQ(b.allocated_blocks(), (25617u + 15) / 16);
    EXPECT_EQ(b.resident_bytes(), b.allocated_blocks() * 16 * 1000);
    EXPECT_EQ(b.block_table(s).size(), b.allocated_blocks());
}

TEST(PagedBaseline, SequencesGetDistinctBlocksAndFreedBlocksAreReusedLifo) {
    PagedKvBaseline b({4, 8, 0, 0});
    const auto a = b.add_sequence(), c = b.add_sequence();
    ASSERT_TRUE(b.append(a, 8));
    ASSERT_TRUE(b.append(c, 4));
    EXPECT_EQ(b.block_table(a), (std::vector<std::uint32_t>{0, 1}));
    EXPECT_EQ(b.block_table(c), (std::vector<std::uint32_t>{2}));
    b.free_sequence(a);
    EXPECT_EQ(b.allocated_blocks(), 1u);
    EXPECT_EQ(b.free_blocks(), 2u);
    ASSERT_TRUE(b.append(c, 4));
    EXPECT_EQ(b.block_table(c), (std::vector<std::uint32_t>{2, 1}));  // last freed first
    EXPECT_EQ(b.pool_blocks(), 3u);
}

TEST(PagedBaseline, WindowFreesBlocksThatLeftTheWindow) {
    PagedKvBaseline b({16, 1, 64, 0});
    const auto s = b.add_sequence();
    for (int i = 0; i < 10; i++) ASSERT_TRUE(b.append(s, 32));
    EXPECT_EQ(b.allocated_blocks(), 4u);  // the last 64 tokens span exactly 4 blocks
    EXPECT_LE(b.pool_blocks(), 6u);       // freed blocks are recycled
}

TEST(PagedBaseline, FixedPoolRefusesAnAppendThatDoesNotFit) {
    PagedKvBaseline b({16, 1, 0, 3});
    const auto s = b.add_sequence();
    ASSERT_TRUE(b.append(s, 48));
    EXPECT_FALSE(b.append(s, 1));
    EXPECT_EQ(b.tokens(s), 48u);
    EXPECT_EQ(b.allocated_blocks(), 3u);
}

TEST(PagedBaseline, RejectsZeroSizedBlocks) {
    EXPECT_THROW(PagedKvBaseline({0, 1, 0, 0}), std::invalid_argument);
    EXPECT_THROW(PagedKvBaseline({16, 0, 0, 0}), std::invalid_argument);
}
