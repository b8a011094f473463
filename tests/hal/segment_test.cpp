// Conformance of segments (vrex/segment.hpp, docs/hal.md "Segments") on every backend: appends
// across block boundaries with positions, truncation and stale handles, the Stream calls that
// refuse segment blocks, placement outside the stream's bank group, survival through zombie aging
// and pressure eviction of frame blocks, all-or-nothing ENOSPC, a stream's destruction.
#include "vrex/segment.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "device_test.hpp"
#include "frames.hpp"
#include "vrex/hal.hpp"

namespace vrex {
namespace {

using test::collect_releases;
using test::synthetic_frame;
using test::view_of;

constexpr ModelGeometry kSmall{2, 2, 64, DType::fp16, 16};  // 16 KiB blocks, 16 tokens each

class Segments : public test::DeviceTest {
  protected:
    static std::unique_ptr<Stream> stream(KvAllocator& a) {
        auto s = a.create_stream();
        EXPECT_TRUE(s) << s.error_message();
        return s ? std::move(*s) : nullptr;
    }
    static Segment open(Stream& s, SegmentKind k, std::uint32_t first) {
        return s.open_segment(k, first).value_or_throw();
    }
    static bool contains(std::span<const ReleasedBlock> rel, const KvBlock& b) {
        return std::any_of(rel.begin(), rel.end(), [&](const ReleasedBlock& r) {
            return r.id == b.id && r.generation == b.generation;
        });
    }
};

TEST_P(Segments, AppendFillsTheLastBlockFirstAndCarriesPositions) {
    auto a = allocator(kSmall);
    auto s = stream(*a);
    Segment seg = open(*s, SegmentKind::prompt, 100);
    EXPECT_EQ(seg.kind(), SegmentKind::prompt);
    EXPECT_EQ(seg.tokens(), 0u);
    EXPECT_EQ(seg.end_position(), 100u);

    auto one = seg.append(10);
    ASSERT_TRUE(one) << one.error_message();
    ASSERT_EQ(one->size(), 1u);
    const KvBlock b0 = (*one)[0];
    EXPECT_TRUE(is_segment_block(b0));
    EXPECT_NE(b0.generation, 0u);
    EXPECT_EQ(b0.first_token, 100u);
    EXPECT_EQ(b0.token_count, 10u);
    EXPECT_FALSE(b0.shared);
    ASSERT_EQ(b0.data.size(), a->block_bytes()) << "the owner's segment block is writable";
    std::memset(b0.data.data(), 0x21, b0.data.size());

    EXPECT_EQ(seg.blocks_touched(20), 2u);
    auto two = seg.append(20);  // 6 into block 0, 14 into a new block
    ASSERT_TRUE(two) << two.error_message();
    ASSERT_EQ(two->size(), 2u);
    EXPECT_EQ((*two)[0].id, b0.id);
    EXPECT_EQ((*two)[0].generation, b0.generation);
    EXPECT_EQ((*two)[0].first_token, 100u);
    EXPECT_EQ((*two)[0].token_count, 16u);
    EXPECT_EQ((*two)[1].first_token, 116u);
    EXPECT_EQ((*two)[1].token_count, 14u);
    EXPECT_NE((*two)[1].id, b0.id);

    auto three = seg.append(2 + 16 + 1);  // fills block 1, one full block, one token in another
    ASSERT_TRUE(three);
    ASSERT_EQ(three->size(), 3u);
    EXPECT_EQ((*three)[0].id, (*two)[1].id);
    EXPECT_EQ((*three)[0].token_count, 16u);
    EXPECT_EQ((*three)[1].first_token, 132u);
    EXPECT_EQ((*three)[1].token_count, 16u);
    EXPECT_EQ((*three)[2].first_token, 148u);
    EXPECT_EQ((*three)[2].token_count, 1u);
    auto none = seg.append(0);
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());

    EXPECT_EQ(seg.tokens(), 49u);
    EXPECT_EQ(seg.end_position(), 149u);
    auto all = seg.blocks();
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), 4u);
    for (std::size_t i = 0; i < all->size(); i++) {
        EXPECT_EQ((*all)[i].first_token, 100u + 16u * i) << "block " << i;
        EXPECT_EQ((*all)[i].token_count, i < 3 ? 16u : 1u) << "block " << i;
    }
    EXPECT_EQ((*all)[0].view[a->block_bytes() - 1], std::byte{0x21}) << "the memory stays the block's";

    // Not indexed: a frame's lookups never find them.
    auto px = synthetic_frame(128, 96, 80, 0);
    auto f = s->begin_frame(view_of(px));
    ASSERT_TRUE(f);
    auto hit = s->retrieve_similar(0, f->fp, 31);
    ASSERT_TRUE(hit);
    EXPECT_FALSE(hit->hit);
    ASSERT_TRUE(s->end_frame());

    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->segments_open, 1u);
    EXPECT_EQ(st->segment_blocks, 4u);
    EXPECT_EQ(st->segment_tokens, 49u);
    EXPECT_EQ(st->segment_allocations, 4u);
    EXPECT_EQ(st->allocations, 0u) << "frame counters count frame blocks only";
    EXPECT_EQ(st->resident_blocks, 4u);
    std::uint64_t per_bank = 0;
    for (const BankStats& b : st->banks) per_bank += b.segment_blocks;
    EXPECT_EQ(per_bank, 4u);
}

TEST_P(Segments, TruncateReleasesWholeBlocksAndTheirHandlesGoStale) {
    auto a = allocator(kSmall);
    auto s = stream(*a);
    Segment seg = open(*s, SegmentKind::generated, 0);
    auto b = seg.append(40);  // 16 + 16 + 8
    ASSERT_TRUE(b);
    ASSERT_EQ(b->size(), 3u);
    const KvBlock third = (*b)[2];

    auto rel = seg.truncate(20);  // keeps 0..19: block 1 keeps 4 tokens, block 2 goes
    ASSERT_TRUE(rel) << rel.error_message();
    ASSERT_EQ(rel->size(), 1u);
    EXPECT_EQ((*rel)[0].id, third.id);
    EXPECT_EQ((*rel)[0].generation, third.generation);
    EXPECT_EQ((*rel)[0].reason, ReleaseReason::removed);
    EXPECT_TRUE((*rel)[0].memory_freed);
    EXPECT_EQ(seg.tokens(), 20u);
    auto kept = seg.blocks();
    ASSERT_TRUE(kept);
    ASSERT_EQ(kept->size(), 2u);
    EXPECT_EQ((*kept)[1].token_count, 4u);
    EXPECT_EQ(s->export_dmabuf(third).error(), errc::stale_handle);
    EXPECT_EQ(s->pin(third).error(), errc::stale_handle);

    // Appending again recycles the id with a new generation: the old handle stays stale.
    auto more = seg.append(30);  // 12 into block 1, then 16 + 2
    ASSERT_TRUE(more);
    ASSERT_EQ(more->size(), 3u);
    EXPECT_EQ((*more)[0].id, (*kept)[1].id);
    EXPECT_EQ((*more)[1].id, third.id) << "segment ids are recycled";
    EXPECT_NE((*more)[1].generation, third.generation);
    EXPECT_EQ((*more)[1].first_token, 32u);
    EXPECT_EQ(s->pin(third).error(), errc::stale_handle);
    auto fd = s->export_dmabuf((*more)[1]);
    ASSERT_TRUE(fd) << fd.error_message();
    close(*fd);

    // Out of range, then a new prompt: truncate to the start empties it.
    auto bad = seg.truncate(51);
    EXPECT_EQ(bad.error(), std::errc::result_out_of_range);
    EXPECT_NE(bad.error_message().find("position 51 outside 0..50"), std::string::npos)
        << bad.error_message();
    auto empty = seg.truncate(0);
    ASSERT_TRUE(empty);
    EXPECT_EQ(empty->size(), 4u);
    EXPECT_EQ(seg.tokens(), 0u);
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->segment_blocks, 0u);
    EXPECT_EQ(st->segment_tokens, 0u);
    EXPECT_EQ(st->segment_releases, 5u);
    EXPECT_EQ(st->resident_blocks, 0u);
}

TEST_P(Segments, StreamCallsRefuseSegmentBlocksButPinAndExportThem) {
    auto a = allocator(kSmall);
    auto s = stream(*a);
    auto other = stream(*a);
    Segment seg = open(*s, SegmentKind::prompt, 0);
    auto b = seg.append(16);
    ASSERT_TRUE(b);
    const KvBlock blk = (*b)[0];
    std::memset(blk.data.data(), 0x4d, blk.data.size());
    auto px = synthetic_frame(128, 96, 81, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    auto r = s->release(blk);
    EXPECT_EQ(r.error(), std::errc::invalid_argument);
    EXPECT_NE(r.error_message().find("segment block"), std::string::npos) << r.error_message();
    EXPECT_EQ(s->release_batch(std::span(&blk, 1)).error(), std::errc::invalid_argument);
    EXPECT_EQ(s->reuse(3, blk).error(), std::errc::invalid_argument);
    EXPECT_EQ(s->set_positions(blk, 7, 1).error(), std::errc::invalid_argument);
    EXPECT_EQ(s->copy_on_write(blk, 3).error(), std::errc::invalid_argument);
    auto fe = s->end_frame();
    ASSERT_TRUE(fe);
    EXPECT_EQ(fe->count, 0u);

    // dma-buf: the slab's buffer with the block at its offset.
    auto fd = s->export_dmabuf(blk);
    ASSERT_TRUE(fd) << fd.error_message();
    const std::size_t len = blk.offset + a->block_bytes();
    void* p = mmap(nullptr, len, PROT_READ, MAP_SHARED, *fd, 0);
    ASSERT_NE(p, MAP_FAILED);
    EXPECT_EQ(static_cast<const unsigned char*>(p)[blk.offset], 0x4d);
    EXPECT_EQ(static_cast<const unsigned char*>(p)[len - 1], 0x4d);
    munmap(p, len);
    close(*fd);

    // Another stream's pin keeps the memory past the truncation; the block is read-only meanwhile.
    ASSERT_TRUE(other->pin(blk));
    auto shared = seg.blocks();
    ASSERT_TRUE(shared);
    EXPECT_TRUE((*shared)[0].shared);
    EXPECT_TRUE((*shared)[0].data.empty());
    auto rel = seg.truncate(0);
    ASSERT_TRUE(rel);
    ASSERT_EQ(rel->size(), 1u);
    EXPECT_FALSE((*rel)[0].memory_freed);
    EXPECT_EQ(blk.view[100], std::byte{0x4d});
    EXPECT_EQ(a->stats()->resident_blocks, 1u);
    ASSERT_TRUE(other->unpin(blk));
    EXPECT_EQ(a->stats()->resident_blocks, 0u);
    EXPECT_EQ(other->pin(blk).error(), errc::stale_handle);
}

TEST_P(Segments, PlacedOutsideTheStreamsBankGroupAndPacked) {
    const auto& info = dev_->info();
    if (info.bank_count <= info.group_banks) GTEST_SKIP() << "one bank group: nowhere else to go";
    AllocatorOptions o;
    o.blocks_per_slab = 4;
    auto a = allocator(kSmall, o);
    auto s = stream(*a);
    auto px = synthetic_frame(128, 96, 82, 0);
    auto f = s->begin_frame(view_of(px));
    ASSERT_TRUE(f);
    auto frame_blk = s->allocate(0);
    ASSERT_TRUE(frame_blk);
    EXPECT_GE(frame_blk->bank, f->bank_first);
    EXPECT_LT(frame_blk->bank, f->bank_first + f->bank_count);

    Segment prompt = open(*s, SegmentKind::prompt, 0);
    Segment gen = open(*s, SegmentKind::generated, 48);
    auto p = prompt.append(48);  // 3 blocks
    ASSERT_TRUE(p);
    auto g = gen.append(16);  // 1 block: the 4th slot of the prompt's slab
    ASSERT_TRUE(g);
    std::set<std::uint32_t> handles;
    for (const auto* v : {&*p, &*g})
        for (const KvBlock& b : *v) {
            EXPECT_TRUE(b.bank < f->bank_first || b.bank >= f->bank_first + f->bank_count)
                << "segment block in bank " << b.bank << ", the frame's group is " << f->bank_first << ".."
                << f->bank_first + f->bank_count - 1;
            handles.insert(b.handle);
        }
    EXPECT_EQ(handles.size(), 1u) << "segment blocks are packed into one slab";
    EXPECT_NE(*handles.begin(), frame_blk->handle);
    // The frame's next blocks still find their group's slab free of segment blocks.
    auto more = s->allocate_batch(std::vector<std::uint32_t>{1, 2, 3});
    ASSERT_TRUE(more);
    for (const KvBlock& b : *more) EXPECT_EQ(b.handle, frame_blk->handle);
    ASSERT_TRUE(s->end_frame());
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->segment_in_group, 0u);
    EXPECT_EQ(st->fallback_allocations, 0u);
    EXPECT_EQ(st->segments_open, 2u);
}

TEST_P(Segments, SurviveZombieAgingAndPressureEvictionOfFrameBlocks) {
    auto a = tight_allocator(half_bank_geometry(), {.evict_under_pressure = true});
    auto s = stream(*a);
    std::vector<ReleasedBlock> seen;
    collect_releases(*s, seen);
    Segment seg = open(*s, SegmentKind::prompt, 0);
    auto kept = seg.append(2 * 16);
    ASSERT_TRUE(kept) << kept.error_message();
    ASSERT_EQ(kept->size(), 2u);
    for (const KvBlock& b : *kept) std::memset(b.data.data(), 0x77, b.data.size());

    auto px = synthetic_frame(128, 96, 83, 0);
    std::vector<ReleasedBlock> ended;
    for (int f = 0; f < 5; f++) {  // 40 half-bank blocks: more than the device holds
        ASSERT_TRUE(s->begin_frame(view_of(px)));
        auto b = s->allocate_batch(std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7});
        ASSERT_TRUE(b) << "frame " << f << ": " << b.error_message();
        auto fe = s->end_frame();
        ASSERT_TRUE(fe);
        ended.insert(ended.end(), fe->released.begin(), fe->released.end());
    }
    const std::uint32_t z = dev_->info().zombie_frames;
    for (std::uint32_t i = 0; i < z + 2; i++) {  // every frame block ages out
        ASSERT_TRUE(s->begin_frame(view_of(px)));
        auto fe = s->end_frame();
        ASSERT_TRUE(fe);
        ended.insert(ended.end(), fe->released.begin(), fe->released.end());
    }
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_GT(st->pressure_evictions, 0u) << "the test did not apply pressure";
    EXPECT_GT(st->evictions, 0u) << "no frame block aged out";
    EXPECT_EQ(st->resident_blocks, 2u) << "only the segment's blocks are left";
    for (const KvBlock& b : *kept) {
        EXPECT_FALSE(contains(seen, b)) << "segment block " << b.id << " was released";
        EXPECT_FALSE(contains(ended, b)) << "segment block " << b.id << " was released";
        EXPECT_EQ(b.view[0], std::byte{0x77});
        EXPECT_EQ(b.view[b.view.size() - 1], std::byte{0x77});
        auto fd = s->export_dmabuf(b);
        ASSERT_TRUE(fd) << "the handle is live: " << fd.error_message();
        close(*fd);
    }
    auto now = seg.blocks();
    ASSERT_TRUE(now);
    ASSERT_EQ(now->size(), 2u);
    EXPECT_EQ((*now)[0].generation, (*kept)[0].generation);
    EXPECT_EQ(seg.tokens(), 32u);
}

TEST_P(Segments, OutOfMemoryIsAllOrNothing) {
    auto a = tight_allocator(half_bank_geometry());
    auto s = stream(*a);
    Segment seg = open(*s, SegmentKind::prompt, 0);
    auto first = seg.append(1);
    ASSERT_TRUE(first);
    std::memset((*first)[0].data.data(), 0x39, (*first)[0].data.size());
    // Frame blocks fill device memory.
    auto px = synthetic_frame(128, 96, 84, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    std::vector<KvBlock> frame_blocks;
    std::error_code full;
    for (std::int32_t off = 0; off <= 2 && !full; off++)
        for (std::uint32_t r = 0; r < 16 && !full; r++) {
            auto b = s->allocate(r, off);
            if (b)
                frame_blocks.push_back(*b);
            else
                full = b.error();
        }
    ASSERT_EQ(full, std::errc::no_space_on_device);
    ASSERT_GE(frame_blocks.size(), 2u);
    // Room for one block again: an append that needs three fails and keeps nothing.
    ASSERT_TRUE(s->release(frame_blocks.back()));
    ASSERT_TRUE(s->end_frame());
    auto before = a->stats();
    ASSERT_TRUE(before);
    auto big_append = seg.append(15 + 3 * 16);  // the partial block, then 3 new ones
    ASSERT_FALSE(big_append);
    EXPECT_EQ(big_append.error(), std::errc::no_space_on_device);
    EXPECT_NE(big_append.error_message().find("append 63 tokens to segment"), std::string::npos)
        << big_append.error_message();
    EXPECT_NE(big_append.error_message().find("block 2 of 3"), std::string::npos)
        << big_append.error_message();
    auto after = a->stats();
    ASSERT_TRUE(after);
    EXPECT_EQ(seg.tokens(), 1u);
    auto blocks = seg.blocks();
    ASSERT_TRUE(blocks);
    ASSERT_EQ(blocks->size(), 1u);
    EXPECT_EQ((*blocks)[0].token_count, 1u) << "the partial block was not filled";
    EXPECT_EQ((*blocks)[0].view[7], std::byte{0x39});
    EXPECT_EQ(after->resident_blocks, before->resident_blocks);
    EXPECT_EQ(after->segment_blocks, 1u);
    EXPECT_EQ(after->segment_allocations, before->segment_allocations);
    EXPECT_EQ(after->segment_in_group, before->segment_in_group);
    std::uint64_t held_before = 0, held_after = 0;
    for (const BankStats& b : before->banks) held_before += b.slab_bytes;
    for (const BankStats& b : after->banks) held_after += b.slab_bytes;
    EXPECT_EQ(held_after, held_before) << "a slab taken for the failed append was given back";
    // The one free block is still there.
    auto fits = seg.append(15 + 16);
    ASSERT_TRUE(fits) << fits.error_message();
    EXPECT_EQ(fits->size(), 2u);
}

TEST_P(Segments, StreamDestructionClosesItsSegments) {
    auto a = allocator(kSmall);
    auto s = stream(*a);
    Segment seg = open(*s, SegmentKind::prompt, 0);
    ASSERT_TRUE(seg.append(40));
    EXPECT_EQ(a->stats()->resident_blocks, 3u);
    s.reset();
    EXPECT_FALSE(seg.is_open());
    EXPECT_EQ(seg.tokens(), 0u);
    auto r = seg.append(1);
    EXPECT_EQ(r.error(), errc::stale_handle);
    EXPECT_NE(r.error_message().find("its stream was destroyed"), std::string::npos) << r.error_message();
    EXPECT_EQ(seg.blocks().error(), errc::stale_handle);
    EXPECT_EQ(seg.truncate(0).error(), errc::stale_handle);
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->segments_open, 0u);
    EXPECT_EQ(st->segment_blocks, 0u);
    EXPECT_EQ(st->resident_blocks, 0u);
    seg.close();  // closing again is harmless

    // A segment closed (or destroyed) by its owner releases everything too.
    auto s2 = stream(*a);
    {
        Segment tmp = open(*s2, SegmentKind::generated, 5);
        ASSERT_TRUE(tmp.append(17));
        Segment moved = std::move(tmp);
        EXPECT_EQ(tmp.append(1).error(), errc::stale_handle) << "moved from";
        EXPECT_EQ(moved.tokens(), 17u);
        EXPECT_EQ(a->stats()->resident_blocks, 2u);
    }
    EXPECT_EQ(a->stats()->resident_blocks, 0u);
    EXPECT_EQ(a->stats()->segments_open, 0u);
}

TEST_P(Segments, BadInputGetsAnErrorWithContext) {
    auto a = allocator(kSmall);
    auto s = stream(*a);
    auto bad = s->open_segment(static_cast<SegmentKind>(7), 0);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error(), std::errc::invalid_argument);
    EXPECT_NE(bad.error_message().find("open segment at position 0 (stream " + std::to_string(s->id())),
              std::string::npos)
        << bad.error_message();
    EXPECT_NE(bad.error_message().find("unknown segment kind 7"), std::string::npos) << bad.error_message();

    Segment seg = open(*s, SegmentKind::generated, 0xFFFF'FFF0u);
    auto over = seg.append(100);
    EXPECT_EQ(over.error(), std::errc::invalid_argument);
    EXPECT_NE(over.error_message().find("past 2^32 - 1"), std::string::npos) << over.error_message();
    EXPECT_EQ(seg.tokens(), 0u);
    ASSERT_TRUE(seg.append(14));
    EXPECT_EQ(seg.end_position(), 0xFFFF'FFFEu);
    auto below = seg.truncate(5);
    EXPECT_EQ(below.error(), std::errc::result_out_of_range);
    EXPECT_NE(below.error_message().find("truncate segment"), std::string::npos) << below.error_message();
    EXPECT_EQ(seg.tokens(), 14u);
}

INSTANTIATE_TEST_SUITE_P(Backends, Segments, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
