// vrex::lcp::HostBlockPool: the host tier's demoted copies come from 2 MiB chunks, blocks do not
// overlap, a block given back is handed out again before a new chunk is mapped.
#include "vrex/lcp/host_pool.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

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

// Whether every page of @bytes is resident (faulted in), by mincore().
bool resident(std::span<std::byte> bytes) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const auto addr = reinterpret_cast<std::uintptr_t>(bytes.data());
    const std::uintptr_t first = addr / page * page;
    const std::size_t len = addr + bytes.size() - first;
    std::vector<unsigned char> vec((len + page - 1) / page);
    if (::mincore(reinterpret_cast<void*>(first), len, vec.data()) != 0) return false;
    return std::all_of(vec.begin(), vec.end(), [](unsigned char v) { return (v & 1) != 0; });
}

// A reservation maps and faults in its slots in the constructor (whole chunks): takes within it map
// nothing more, hand out distinct slots whose pages were resident before the take, and keep their bytes.
TEST(HostPool, ReservedSlotsAreResidentDistinctAndKeepTheirBytes) {
    HostBlockPool pool(kBlock, false, 300);
    const std::size_t per = pool.chunk_bytes() / kBlock;
    EXPECT_EQ(pool.reserved(), 3 * per);  // 300 slots round up to 3 chunks of 128
    EXPECT_EQ(pool.chunks(), 3U);
    EXPECT_GT(pool.reserve_wall_s(), 0.0);
    EXPECT_GE(pool.reserve_cpu_s(), 0.0);
    std::vector<std::span<std::byte>> got;
    for (std::size_t i = 0; i < pool.reserved(); i++) {
        got.push_back(pool.take());
        ASSERT_TRUE(resident(got.back())) << "slot " << i << " was not faulted in by the reservation";
        std::memset(got.back().data(), static_cast<int>(i % 251 + 1), kBlock);
    }
    EXPECT_EQ(pool.chunks(), 3U);
    EXPECT_EQ(pool.grown(), 0U);
    std::set<std::byte*> starts;
    for (const auto& b : got) starts.insert(b.data());
    EXPECT_EQ(starts.size(), got.size());
    for (auto it = std::next(starts.begin()); it != starts.end(); ++it)
        EXPECT_GE(*it - *std::prev(it), std::ptrdiff_t{kBlock});
    for (std::size_t i = 0; i < got.size(); i++)
        ASSERT_TRUE(std::all_of(got[i].begin(), got[i].end(),
                                [&](std::byte x) { return x == static_cast<std::byte>(i % 251 + 1); }))
            << "slot " << i;
}

// Past the reservation the pool grows chunk by chunk, as without one, and counts the slots it grew
// for; a slot given back and taken again is no growth.
TEST(HostPool, GrowthPastTheReservationWorksAndIsCounted) {
    HostBlockPool pool(kBlock, false, 1);
    const std::size_t per = pool.chunk_bytes() / kBlock;
    EXPECT_EQ(pool.reserved(), per);
    std::vector<std::span<std::byte>> got;
    for (std::size_t i = 0; i < per + 2; i++) {
        got.push_back(pool.take());
        std::memset(got.back().data(), static_cast<int>(i % 251 + 1), kBlock);
    }
    EXPECT_EQ(pool.chunks(), 2U);
    EXPECT_EQ(pool.grown(), 2U);
    pool.give(got[3]);
    got[3] = pool.take();
    std::memset(got[3].data(), 4, kBlock);
    EXPECT_EQ(pool.grown(), 2U);
    EXPECT_EQ(pool.in_use(), per + 2);
    for (std::size_t i = 0; i < got.size(); i++)
        ASSERT_TRUE(std::all_of(got[i].begin(), got[i].end(),
                                [&](std::byte x) { return x == static_cast<std::byte>(i % 251 + 1); }))
            << "slot " << i;
    // With a preparing thread, growth past a reservation comes from it.
    HostBlockPool ahead(kBlock, true, per);
    for (std::size_t i = 0; i < per + 1; i++) EXPECT_EQ(ahead.take().size(), kBlock);
    EXPECT_EQ(ahead.grown(), 1U);
    EXPECT_EQ(ahead.chunks(), 2U);
}

// No reservation: nothing mapped, no setup cost, every first take of a slot is growth (today's pool).
TEST(HostPool, ZeroReservationIsTheGrowingPool) {
    HostBlockPool pool(kBlock, false, 0);
    EXPECT_EQ(pool.reserved(), 0U);
    EXPECT_EQ(pool.chunks(), 0U);
    EXPECT_EQ(pool.reserve_cpu_s(), 0.0);
    EXPECT_EQ(pool.reserve_wall_s(), 0.0);
    (void)pool.take();
    EXPECT_EQ(pool.chunks(), 1U);
    EXPECT_EQ(pool.grown(), 1U);
}

TEST(HostPool, ZeroBytesIsRefused) {
    EXPECT_THROW(HostBlockPool(0), std::invalid_argument);
}

}  // namespace
}  // namespace vrex::lcp
