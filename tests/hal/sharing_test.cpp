// Conformance of block handles, sharing and eviction (docs/hal.md "Sharing", "Eviction") on every
// backend: stale handles, references across streams, pins, copy-on-write, release notification,
// pressure eviction and all-or-nothing batches.
#include <gtest/gtest.h>
#include <poll.h>
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

constexpr ModelGeometry kSmall{2, 2, 64, DType::fp16, 16};  // 16 KiB blocks

class Sharing : public test::DeviceTest {
  protected:
    static std::unique_ptr<Stream> stream(KvAllocator& a, StreamOptions o = {}) {
        auto s = a.create_stream(o);
        EXPECT_TRUE(s) << s.error().message();
        return s ? std::move(*s) : nullptr;
    }
    // The set-up of the cross-stream tests: an owner and a reader stream in pool @pool, and the
    // owner in a frame of synthetic scene @scene (px: the scene, for the reader's frames too).
    struct OwnerAndReader {
        std::unique_ptr<Stream> owner, reader;
        std::vector<std::uint8_t> px;
        FrameInfo frame;
    };
    static OwnerAndReader owner_and_reader(KvAllocator& a, std::uint32_t pool, std::uint32_t scene) {
        OwnerAndReader r{
            stream(a, {true, pool}), stream(a, {true, pool}), synthetic_frame(128, 96, scene, 0), {}};
        r.frame = r.owner->begin_frame(view_of(r.px)).value_or_throw();
        return r;
    }
    static std::uint64_t slab_bytes(KvAllocator& a) {
        auto st = a.stats();
        std::uint64_t sum = 0;
        for (const BankStats& b : st->banks) sum += b.slab_bytes;
        return sum;
    }
};

TEST_P(Sharing, StaleHandlesGetAClearErrorNeverAnotherBlock) {
    auto a = allocator(kSmall);
    auto s = stream(*a);
    auto px = synthetic_frame(128, 96, 50, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    auto old = s->allocate(1);
    ASSERT_TRUE(old);
    EXPECT_NE(old->generation, 0u);
    ASSERT_TRUE(s->release(*old));
    auto fe = s->end_frame();
    ASSERT_TRUE(fe);
    ASSERT_EQ(fe->count, 1u);
    EXPECT_EQ(fe->released[0].id, old->id);
    EXPECT_EQ(fe->released[0].generation, old->generation);
    EXPECT_EQ(fe->released[0].reason, ReleaseReason::removed);

    // The device hands the freed id out again (LIFO): same id, new generation.
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    auto fresh = s->allocate(1);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(fresh->id, old->id) << "ids are recycled";
    EXPECT_NE(fresh->generation, old->generation);
    EXPECT_EQ(s->release(*old).error(), errc::stale_handle);
    EXPECT_EQ(s->reuse(2, *old).error(), errc::stale_handle);
    EXPECT_EQ(s->export_dmabuf(*old).error(), errc::stale_handle);
    EXPECT_EQ(s->pin(*old).error(), errc::stale_handle);
    EXPECT_EQ(s->copy_on_write(*old, 3).error(), errc::stale_handle);
    EXPECT_NE(make_error_code(errc::stale_handle).message().find("stale"), std::string::npos);
    KvBlock never;
    never.id = fresh->id;  // generation 0 is never valid
    EXPECT_EQ(s->release(never).error(), errc::stale_handle);
    auto fe2 = s->end_frame();
    ASSERT_TRUE(fe2);
    EXPECT_EQ(fe2->count, 0u) << "the stale release did not reach the new block";
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    auto hit = s->retrieve_temporal(1, -1);
    ASSERT_TRUE(hit);
    ASSERT_TRUE(hit->hit);
    EXPECT_EQ(hit->block.generation, fresh->generation);
    ASSERT_TRUE(s->end_frame());
}

// The crash: with spare_slabs = 0 the owner's release destroyed the slab a reader in
// another stream was still reading. The reader's reference now keeps the memory.
TEST_P(Sharing, ACrossStreamHitOutlivesTheOwnersRelease) {
    auto a = tight_allocator(kSmall);
    auto [owner, reader, px, f] = owner_and_reader(*a, 3, 51);
    auto blk = owner->allocate(4);
    ASSERT_TRUE(blk);
    ASSERT_FALSE(blk->data.empty());
    EXPECT_FALSE(blk->shared);
    std::memset(blk->data.data(), 0x6b, blk->data.size());
    ASSERT_TRUE(owner->publish(*blk)) << "other streams see it from now on";

    ASSERT_TRUE(reader->begin_frame(view_of(px)));
    auto hit = reader->retrieve_similar(4, f.fp, 0, Scope::pool);
    ASSERT_TRUE(hit);
    ASSERT_TRUE(hit->hit);
    EXPECT_EQ(hit->stream, owner->id());
    EXPECT_TRUE(hit->block.shared);
    EXPECT_TRUE(hit->block.data.empty()) << "no writable view of a shared block";
    ASSERT_EQ(hit->block.view.size(), a->block_bytes());
    const std::span<const std::byte> seen = hit->block.view;

    // The owner now sees its block as shared too (read-only).
    auto own = owner->retrieve_temporal(4, 0);
    ASSERT_TRUE(own);
    ASSERT_TRUE(own->hit);
    EXPECT_TRUE(own->block.shared);

    ASSERT_TRUE(owner->release(*blk));
    auto fe = owner->end_frame();
    ASSERT_TRUE(fe);
    ASSERT_EQ(fe->count, 1u);
    EXPECT_FALSE(fe->released[0].memory_freed) << "the reader's reference keeps it";
    EXPECT_EQ(owner->release(*blk).error(), errc::stale_handle);
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->deferred_frees, 1u);
    EXPECT_EQ(st->resident_blocks, 1u);
    EXPECT_EQ(slab_bytes(*a), a->block_bytes()) << "the slab stays while referenced";
    // The crash site: reading after the owner's release.
    for (std::size_t i = 0; i < seen.size(); i += 4096) ASSERT_EQ(seen[i], std::byte{0x6b});
    EXPECT_EQ(seen.back(), std::byte{0x6b});

    // Copy-on-write gives the reader a private writable block with the same contents.
    auto mine = reader->copy_on_write(hit->block, 5);
    ASSERT_TRUE(mine) << mine.error().message();
    ASSERT_FALSE(mine->data.empty());
    EXPECT_FALSE(mine->shared);
    EXPECT_NE(mine->view.data(), seen.data());
    EXPECT_EQ(mine->data[100], std::byte{0x6b});
    auto same = reader->copy_on_write(*mine, 6);
    ASSERT_TRUE(same);
    EXPECT_EQ(same->data.data(), mine->data.data()) << "sole owner: no copy";

    ASSERT_TRUE(reader->end_frame());
    st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->resident_blocks, 1u) << "the reference ended with the reader's frame: only the copy";
    EXPECT_EQ(slab_bytes(*a), a->block_bytes());
}

TEST_P(Sharing, PositionMetadataTravelsWithTheBlock) {
    auto a = allocator(kSmall);
    auto [owner, reader, px, f] = owner_and_reader(*a, 5, 58);
    auto b = owner->allocate(7);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->first_token, 0u);
    EXPECT_EQ(b->token_count, 0u);
    ASSERT_TRUE(owner->set_positions(*b, 4096, 12));
    EXPECT_EQ(owner->set_positions(*b, 0, 17).error(), std::errc::invalid_argument) << "16 tokens a block";
    ASSERT_TRUE(owner->publish(*b));
    auto t = owner->retrieve_temporal(7, 0);
    ASSERT_TRUE(t && t->hit);
    EXPECT_EQ(t->block.first_token, 4096u);
    EXPECT_EQ(t->block.token_count, 12u);
    ASSERT_TRUE(reader->begin_frame(view_of(px)));
    auto h = reader->retrieve_similar(7, f.fp, 0, Scope::pool);
    ASSERT_TRUE(h && h->hit);
    EXPECT_EQ(h->block.first_token, 4096u) << "another stream sees them too";
    EXPECT_EQ(h->block.token_count, 12u);
    EXPECT_EQ(reader->set_positions(h->block, 0, 1).error(), std::errc::operation_not_permitted);
    ASSERT_TRUE(reader->end_frame());
    ASSERT_TRUE(owner->release(*b));
    ASSERT_TRUE(owner->end_frame());
    EXPECT_EQ(owner->set_positions(*b, 0, 1).error(), errc::stale_handle);
}

TEST_P(Sharing, ZombieAgingAndStreamCloseOfTheOwnerKeepReferencedMemory) {
    auto a = tight_allocator(kSmall);
    auto [owner, reader, px, f] = owner_and_reader(*a, 4, 52);
    auto aged = owner->allocate(1);
    auto closed = owner->allocate(2);
    ASSERT_TRUE(aged && closed);
    std::memset(aged->data.data(), 0x11, aged->data.size());
    std::memset(closed->data.data(), 0x22, closed->data.size());
    ASSERT_TRUE(owner->publish_batch(std::vector<KvBlock>{*aged, *closed}));
    ASSERT_TRUE(owner->end_frame());

    ASSERT_TRUE(reader->begin_frame(view_of(px)));
    auto h1 = reader->retrieve_similar(1, f.fp, 0, Scope::pool);
    auto h2 = reader->retrieve_similar(2, f.fp, 0, Scope::pool);
    ASSERT_TRUE(h1 && h2 && h1->hit && h2->hit);
    ASSERT_TRUE(reader->pin(h1->block)) << "a pin outlives the reader's frame";

    // The owner's clock ages both blocks out while the reader is in its frame.
    const std::uint32_t z = dev_->info().zombie_frames;
    std::uint32_t released = 0;
    for (std::uint32_t i = 0; i <= z && !released; i++) {
        ASSERT_TRUE(owner->begin_frame(view_of(px)));
        auto fe = owner->end_frame();
        ASSERT_TRUE(fe);
        released = fe->count;
        for (const ReleasedBlock& r : fe->released) {
            EXPECT_EQ(r.reason, ReleaseReason::zombie);
            EXPECT_FALSE(r.memory_freed);
        }
    }
    ASSERT_EQ(released, 2u);
    EXPECT_EQ(h1->block.view[7], std::byte{0x11});
    EXPECT_EQ(h2->block.view[7], std::byte{0x22});
    owner.reset();  // closing the owner does not free referenced memory either
    EXPECT_EQ(h2->block.view[9], std::byte{0x22});
    ASSERT_TRUE(reader->end_frame());
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->resident_blocks, 1u) << "the pinned block only";
    EXPECT_EQ(h1->block.view[3], std::byte{0x11});
    ASSERT_TRUE(reader->unpin(h1->block));
    EXPECT_EQ(reader->unpin(h1->block).error(), std::errc::no_such_file_or_directory);
    st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->resident_blocks, 0u);
    EXPECT_EQ(slab_bytes(*a), 0u);
}

TEST_P(Sharing, ReleasesAreReportedByEndFrameCallbackAndEventFd) {
    auto a = allocator(kSmall);
    auto s = stream(*a);
    std::vector<ReleasedBlock> seen;
    collect_releases(*s, seen);
    auto fd = s->release_event_fd();
    ASSERT_TRUE(fd);
    auto px = synthetic_frame(128, 96, 53, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    auto blocks = s->allocate_batch(std::vector<std::uint32_t>{0, 1, 2});
    ASSERT_TRUE(blocks);
    ASSERT_TRUE(s->release((*blocks)[1]));
    pollfd p{*fd, POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 0), 0) << "nothing released yet";
    auto fe = s->end_frame();
    ASSERT_TRUE(fe);
    ASSERT_EQ(fe->count, 1u);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].id, (*blocks)[1].id);
    EXPECT_EQ(seen[0].generation, (*blocks)[1].generation);
    EXPECT_EQ(seen[0].reason, ReleaseReason::removed);
    EXPECT_EQ(poll(&p, 1, 0), 1);
    std::uint64_t n = 0;
    ASSERT_EQ(read(*fd, &n, sizeof(n)), static_cast<ssize_t>(sizeof(n)));
    EXPECT_EQ(n, 1u);

    // Zombies: the other two, after zombie_frames cold frames.
    const std::uint32_t z = dev_->info().zombie_frames;
    for (std::uint32_t i = 0; i <= z; i++) {
        ASSERT_TRUE(s->begin_frame(view_of(px)));
        ASSERT_TRUE(s->end_frame());
    }
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[1].reason, ReleaseReason::zombie);
    EXPECT_EQ(seen[2].reason, ReleaseReason::zombie);
    ASSERT_EQ(read(*fd, &n, sizeof(n)), static_cast<ssize_t>(sizeof(n)));
    EXPECT_EQ(n, 2u);
    s->on_release({});
}

TEST_P(Sharing, BatchesAreAllOrNothing) {
    auto a = allocator(kSmall);
    auto s = stream(*a);
    auto px = synthetic_frame(128, 96, 54, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    // The 17th item collides with the 4th (one block per frame and region): the device inserts
    // the first 16, then the batch fails and they are removed again.
    std::vector<std::uint32_t> regions;
    for (std::uint32_t r = 0; r < 16; r++) regions.push_back(r);
    regions.push_back(3);
    EXPECT_EQ(s->allocate_batch(regions).error(), std::errc::file_exists);
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->resident_blocks, 0u) << "no orphan";
    EXPECT_EQ(st->allocations, 0u);
    EXPECT_EQ(st->device.live_blocks, 0u);
    auto miss = s->retrieve_temporal(0, 0);
    ASSERT_TRUE(miss);
    EXPECT_FALSE(miss->hit);
    regions.pop_back();
    auto ok = s->allocate_batch(regions);
    ASSERT_TRUE(ok) << "every region is free again";
    EXPECT_EQ(ok->size(), 16u);
    auto fe = s->end_frame();
    ASSERT_TRUE(fe);
    EXPECT_EQ(fe->count, 0u) << "rolled-back blocks are not reported as releases";
}

// Fills device memory with half-bank blocks: frame after frame of 8 blocks until ENOSPC.
TEST_P(Sharing, WithoutPressureEvictionENOSPCIsFinalAndLeavesNoOrphan) {
    auto a = tight_allocator(half_bank_geometry());
    auto s = stream(*a);
    auto px = synthetic_frame(128, 96, 55, 0);
    std::error_code failed;
    for (int frame = 0; frame < 5 && !failed; frame++) {
        ASSERT_TRUE(s->begin_frame(view_of(px)));
        auto before = a->stats();
        ASSERT_TRUE(before);
        auto b = s->allocate_batch(std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7});
        if (!b) {
            failed = b.error();
            auto after = a->stats();
            ASSERT_TRUE(after);
            EXPECT_EQ(after->resident_blocks, before->resident_blocks) << "all or nothing";
            EXPECT_EQ(after->device.live_blocks, before->device.live_blocks);
        }
        ASSERT_TRUE(s->end_frame());
    }
    EXPECT_EQ(failed, std::errc::no_space_on_device);
}

TEST_P(Sharing, PressureEvictsZombiesFirst) {
    auto a = tight_allocator(half_bank_geometry(), {.evict_under_pressure = true});
    auto s = stream(*a);
    std::vector<ReleasedBlock> seen;
    collect_releases(*s, seen);
    auto px = synthetic_frame(128, 96, 56, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    auto first = s->allocate_batch(std::vector<std::uint32_t>{0, 1, 2, 3});
    ASSERT_TRUE(first);
    ASSERT_TRUE(s->end_frame());
    const std::uint32_t z = dev_->info().zombie_frames;
    for (std::uint32_t i = 0; i < z; i++) {
        ASSERT_TRUE(s->begin_frame(view_of(px)));
        ASSERT_EQ(s->end_frame()->count, 0u);
    }
    // Frame z + 1: frame 0's blocks are zombies now (released at this frame's end at the latest).
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    std::uint32_t made = 0;
    std::error_code last;
    for (std::int32_t off = 0; off <= 2 && !last; off++)
        for (std::uint32_t r = 0; r < 16 && !last; r++) {
            auto b = s->allocate(r, off);
            if (b)
                made++;
            else
                last = b.error();
        }
    EXPECT_EQ(last, std::errc::no_space_on_device) << "blocks of the current frame are never evicted";
    EXPECT_GT(made, 4u);
    ASSERT_EQ(seen.size(), 4u);
    std::vector<std::uint32_t> got, want;
    for (std::size_t i = 0; i < 4; i++) {
        got.push_back(seen[i].id);
        want.push_back((*first)[i].id);
        EXPECT_EQ(seen[i].reason, ReleaseReason::zombie);
    }
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want) << "frame 0's blocks, in the device's release order";
    auto fe = s->end_frame();
    ASSERT_TRUE(fe);
    EXPECT_EQ(fe->count, 4u) << "mid-frame releases are reported by the next end_frame";
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->pressure_evictions, 0u);
    EXPECT_EQ(st->evictions, 4u);
}

TEST_P(Sharing, PressureEvictsLeastRecentlyUsedUnpinnedBlocks) {
    auto a = tight_allocator(half_bank_geometry(), {.evict_under_pressure = true});
    auto s = stream(*a);
    std::vector<ReleasedBlock> seen;
    collect_releases(*s, seen);
    const std::vector<std::uint32_t> regions{0, 1, 2, 3, 4, 5, 6, 7};
    auto px = synthetic_frame(128, 96, 57, 0);
    std::vector<std::vector<KvBlock>> frames;
    for (int f = 0; f < 5; f++) {
        ASSERT_TRUE(s->begin_frame(view_of(px)));
        auto b = s->allocate_batch(regions);
        ASSERT_TRUE(b) << "frame " << f << ": " << b.error().message();
        frames.push_back(*b);
        if (f == 0) {
            std::memset((*b)[1].data.data(), 0x3c, (*b)[1].data.size());
            ASSERT_TRUE(s->pin((*b)[1]));
        }
        if (f == 1) {  // a use makes frame 0's region 0 recent
            auto t = s->retrieve_temporal(0, -1);
            ASSERT_TRUE(t && t->hit);
            EXPECT_EQ(t->block.id, frames[0][0].id);
        }
        ASSERT_TRUE(s->end_frame());
    }
    ASSERT_FALSE(seen.empty()) << "five frames of 8 half-bank blocks exceed the device";
    // LRU order: frame 0 regions 2..7 (region 1 pinned, region 0 used in frame 1), then frame 1's
    // blocks, then frame 0 region 0.
    std::vector<std::uint32_t> expect;
    for (std::uint32_t r = 2; r < 8; r++) expect.push_back(frames[0][r].id);
    for (std::uint32_t r = 0; r < 8; r++) expect.push_back(frames[1][r].id);
    expect.push_back(frames[0][0].id);
    ASSERT_LE(seen.size(), expect.size());
    for (std::size_t i = 0; i < seen.size(); i++) {
        EXPECT_EQ(seen[i].id, expect[i]) << "eviction " << i;
        EXPECT_EQ(seen[i].reason, ReleaseReason::pressure);
    }
    EXPECT_EQ(s->release(frames[0][2]).error(), errc::stale_handle);
    EXPECT_EQ(frames[0][1].view[5], std::byte{0x3c}) << "the pinned block stays";
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->pressure_evictions, seen.size());
    ASSERT_TRUE(s->unpin(frames[0][1]));
}

// Pressure eviction takes only the allocating stream's own unpinned, unshared blocks: another
// stream's blocks (old, unpinned, never used again) survive, and a stream with nothing of its own
// to evict gets ENOSPC rather than someone else's memory.
TEST_P(Sharing, PressureEvictsOnlyTheCallingStreamsOwnBlocks) {
    auto a = tight_allocator(half_bank_geometry(), {.evict_under_pressure = true});
    auto victim = stream(*a);
    auto greedy = stream(*a);
    std::vector<ReleasedBlock> victim_seen;
    collect_releases(*victim, victim_seen);
    auto px = synthetic_frame(128, 96, 58, 0);
    // The victim fills about half of device memory in one frame and then idles.
    const std::uint32_t half = dev_->info().bank_count;  // two half-bank blocks a bank: half the device
    std::vector<std::uint32_t> regions;
    for (std::uint32_t r = 0; r < half; r++) regions.push_back(r);
    auto vf = victim->begin_frame(view_of(px));
    ASSERT_TRUE(vf);
    auto kept = victim->allocate_batch(regions);
    ASSERT_TRUE(kept) << kept.error_message();
    for (const KvBlock& b : *kept) std::memset(b.data.data(), 0x5a, 64);
    ASSERT_TRUE(victim->end_frame());
    // The greedy stream allocates frame after frame: it may only ever evict its own blocks.
    std::vector<ReleasedBlock> greedy_seen;
    collect_releases(*greedy, greedy_seen);
    std::set<std::uint32_t> greedy_ids;
    std::error_code failed;
    for (int f = 0; f < 6 && !failed; f++) {
        ASSERT_TRUE(greedy->begin_frame(view_of(px)));
        for (std::uint32_t r = 0; r < 8; r++) {
            auto b = greedy->allocate(r);
            if (!b) {
                failed = b.error();
                break;
            }
            greedy_ids.insert(b->id);
        }
        ASSERT_TRUE(greedy->end_frame());
    }
    EXPECT_TRUE(victim_seen.empty()) << "the victim lost " << victim_seen.size()
                                     << " blocks to another stream";
    for (const ReleasedBlock& r : greedy_seen) {
        EXPECT_EQ(r.reason, ReleaseReason::pressure);
        EXPECT_TRUE(greedy_ids.contains(r.id)) << "evicted block " << r.id << " is not the greedy stream's";
    }
    EXPECT_FALSE(greedy_seen.empty())
        << "the greedy stream never needed to evict: the test did not apply pressure";
    for (const KvBlock& b : *kept) {
        auto t = victim->retrieve_similar(b.region, vf->fp, 0);
        ASSERT_TRUE(t);
        EXPECT_TRUE(t->hit) << "the victim's region " << b.region << " is gone";
        EXPECT_EQ(b.view[10], std::byte{0x5a});
    }
    // A stream with no block of its own cannot evict anything: ENOSPC, never the others' memory.
    greedy.reset();  // room for the new stream's staging buffer
    auto empty = stream(*a);
    ASSERT_TRUE(empty->begin_frame(view_of(px)));
    std::error_code last;
    for (std::uint32_t r = 0; r < 4 * half && !last; r++) {
        auto b = empty->allocate(r);
        if (!b) last = b.error();
    }
    EXPECT_EQ(last, std::errc::no_space_on_device);
    EXPECT_TRUE(victim_seen.empty());
    ASSERT_TRUE(empty->end_frame());
}

INSTANTIATE_TEST_SUITE_P(Backends, Sharing, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex

namespace vrex {
namespace {

// The KV memory contract (docs/hal.md): real model geometries fit the default emulated device, and
// the layout inside a block is [layer][K, V][kv_head][token][head_dim], tightly packed.
TEST(KvContract, DefaultEmulatedDeviceTakesRealModelGeometries) {
    DeviceOptions o;
    o.backend = BackendChoice::emulated;
    auto d = Device::open(o);
    ASSERT_TRUE(d);
    struct Model {
        const char* name;
        ModelGeometry g;
        std::uint64_t bytes;
    };
    const Model models[] = {
        {"Qwen2-VL-7B", {28, 4, 128, DType::bf16, 16}, 2ull * 28 * 4 * 128 * 16 * 2},
        {"Llama-3-8B", {32, 8, 128, DType::bf16, 16}, 2ull * 32 * 8 * 128 * 16 * 2},
        {"vrex tiny", {4, 2, 64, DType::fp32, 4}, 16384},
    };
    for (const Model& m : models) {
        auto a = KvAllocator::create(*d, m.g);
        ASSERT_TRUE(a) << m.name << ": " << a.error().message();
        EXPECT_EQ((*a)->block_bytes(), m.bytes) << m.name;
        EXPECT_GE((*a)->options().blocks_per_slab, 1u);
        EXPECT_LE((*a)->options().blocks_per_slab * m.bytes, (*d)->info().bank_size) << m.name;
        auto s = (*a)->create_stream();
        ASSERT_TRUE(s);
        auto px = test::synthetic_frame(128, 96, 60, 0);
        ASSERT_TRUE((*s)->begin_frame(view_of(px)));
        auto b = (*s)->allocate_batch(std::vector<std::uint32_t>{0, 1});
        ASSERT_TRUE(b) << m.name << ": " << b.error().message();
        for (const KvBlock& k : *b) {
            EXPECT_EQ(k.data.size(), m.bytes);
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(k.data.data()) % ModelGeometry::kBlockAlign, 0u);
            EXPECT_EQ(k.offset % ModelGeometry::kBlockAlign, 0u);
        }
        ASSERT_TRUE((*s)->end_frame());
    }
    AllocatorOptions too_many;
    too_many.blocks_per_slab = 16;  // 16 x 2 MiB does not fit a 4 MiB bank: explicit values are checked
    EXPECT_EQ(KvAllocator::create(*d, models[1].g, too_many).error(), std::errc::invalid_argument);
}

TEST(KvContract, LayoutIsLayerKvHeadTokenDimTightlyPacked) {
    const ModelGeometry g{4, 2, 64, DType::fp32, 4};
    const std::uint64_t row = 64 * 4;
    EXPECT_EQ(g.element_offset(0, 0, 0, 0), 0u);
    EXPECT_EQ(g.element_offset(0, 0, 0, 1), row) << "tokens of one head are adjacent";
    EXPECT_EQ(g.element_offset(0, 0, 1, 0), 4 * row) << "then heads";
    EXPECT_EQ(g.element_offset(0, 1, 0, 0), 2 * 4 * row) << "V after K of the layer";
    EXPECT_EQ(g.element_offset(1, 0, 0, 0), 2 * 2 * 4 * row) << "then layers";
    EXPECT_EQ(g.element_offset(3, 1, 1, 3) + row, *g.block_bytes()) << "no padding";
    EXPECT_EQ(ModelGeometry({2, 2, 65, DType::fp16, 31}).block_bytes().error(), errc::bad_geometry)
        << "not a multiple of 64 bytes";
}

}  // namespace
}  // namespace vrex
