// Conformance of publication, incarnation checks and the fixed KV pool (docs/hal.md "Concurrency and
// publication", "Fixed KV pool") on every backend.
//
// The incarnation cases replay the interleavings deterministically: the backend is wrapped
// so that a hook runs inside a call, at the moment another thread would have acted (right after the
// device destroyed a stream, right after a lookup returned and before the HAL looked at the hit).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "backends.hpp"
#include "device_impl.hpp"
#include "device_test.hpp"
#include "forwarding_backend.hpp"
#include "frames.hpp"
#include "vrex/hal.hpp"

namespace vrex {
namespace {

using test::synthetic_frame;
using test::view_of;

constexpr ModelGeometry kSmall{2, 2, 64, DType::fp16, 16};  // 16 KiB blocks

// A Backend that forwards everything and runs a one-shot hook after some calls.
class HookedBackend final : public test::ForwardingBackend {
  public:
    using ForwardingBackend::ForwardingBackend;
    // before_alias_insert runs inside shie_insert() of an ALIAS item, before the device sees it.
    std::function<void()> after_stream_destroy, after_lookup, before_alias_insert;
    // Control: ALIAS items reach the device without their generation (an insert before uAPI 1.3).
    bool strip_alias_generation = false;
    // The device as vrex.ko of uAPI 1.2 answers: no block generations in inserts, hits and release
    // records (bo_gen only), so the HAL names blocks by id, handle, offset and BO generation.
    bool uapi_1_2 = false;
    // Release records the device delivered (shie_retire), and records to deliver with the next
    // retire after the device's own (a stale record arriving late).
    std::vector<drm_vrex_released_block> delivered, inject;

    std::error_code stream_destroy(std::uint32_t s) override {
        auto ec = in_->stream_destroy(s);
        fire(after_stream_destroy);
        return ec;
    }
    std::error_code shie_insert(std::uint32_t s, std::span<drm_vrex_shie_insert_item> items) override {
        if (std::any_of(items.begin(), items.end(),
                        [](const drm_vrex_shie_insert_item& it) { return it.flags & DRM_VREX_INSERT_ALIAS; }))
            fire(before_alias_insert);
        if (strip_alias_generation)
            for (drm_vrex_shie_insert_item& it : items)
                if (it.flags & DRM_VREX_INSERT_ALIAS) it.block_gen = 0;
        auto ec = in_->shie_insert(s, items);
        if (uapi_1_2)
            for (drm_vrex_shie_insert_item& it : items) it.block_gen = 0;
        return ec;
    }
    std::error_code shie_lookup(std::uint32_t s, std::span<drm_vrex_shie_lookup_item> items) override {
        auto ec = in_->shie_lookup(s, items);
        if (uapi_1_2)
            for (drm_vrex_shie_lookup_item& it : items) it.block_gen = 0;
        fire(after_lookup);
        return ec;
    }
    std::error_code shie_retire(std::uint32_t s, std::span<const std::uint32_t> remove,
                                std::span<drm_vrex_released_block> released, std::uint32_t& count) override {
        auto ec = in_->shie_retire(s, remove, released, count);
        if (ec) return ec;
        for (std::uint32_t i = 0; i < count; i++) {
            if (uapi_1_2) released[i].block_gen = 0;
            delivered.push_back(released[i]);
        }
        for (const drm_vrex_released_block& r : inject)
            if (count < released.size()) released[count++] = r;
        inject.clear();
        return ec;
    }
    Result<ImportedBo> bo_import_dmabuf(int fd) override { return in_->bo_import_dmabuf(fd); }

  private:
    static void fire(std::function<void()>& hook) {
        if (!hook) return;
        auto h = std::move(hook);  // one shot, and the hook may call back into this backend
        hook = nullptr;
        h();
    }
};

class Publication : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        auto be = test::open_backend(GetParam());
        ASSERT_NE(be, nullptr);
        auto hooked = std::make_unique<HookedBackend>(std::move(be));
        hooks_ = hooked.get();
        auto d = adopt_backend(std::move(hooked));
        ASSERT_TRUE(d);
        dev_ = *d;
        if (!dev_->info().caps.pooled) GTEST_SKIP() << "no pooled streams on this device";
    }
    std::shared_ptr<KvAllocator> allocator(AllocatorOptions o = {}) {
        auto a = KvAllocator::create(dev_, kSmall, o);
        EXPECT_TRUE(a) << a.error_message();
        return a ? *a : nullptr;
    }

  public:
    static std::unique_ptr<Stream> stream(KvAllocator& a, StreamOptions o) {
        auto s = a.create_stream(o);
        EXPECT_TRUE(s) << s.error_message();
        return s ? std::move(*s) : nullptr;
    }

  protected:
    HookedBackend* hooks_ = nullptr;
    std::shared_ptr<Device> dev_;
};

// A release record names a block by id, handle and offset and (uAPI 1.2) the generation of the BO it
// points into; a device before uAPI 1.3 names no block generation. A record of an earlier block that
// had the same id at the same handle number and offset, in a BO since destroyed (its handle number
// reused), must release nothing of the block that lives there now: the HAL tells them apart by
// bo_gen alone (block_table.hpp on_device). Without that check the live block is taken for released,
// its memory goes back to the allocator and the next allocation shares it.
TEST_P(Publication, AStaleReleaseRecordOfAnEarlierBufferReleasesNothing) {
    hooks_->uapi_1_2 = true;
    AllocatorOptions o;
    o.blocks_per_slab = 1;  // one BO per block, destroyed with it (no spare):
    o.spare_slabs = 0;      // the earlier block's BO is gone when the later one is placed
    auto a = allocator(o);
    auto s = stream(*a, {});
    auto frame = [&](std::uint32_t t) {
        const auto px = synthetic_frame(128, 96, 72, t);
        return s->begin_frame(view_of(px));
    };
    ASSERT_TRUE(frame(0));
    auto earlier = s->allocate(2);
    ASSERT_TRUE(earlier) << earlier.error_message();
    ASSERT_TRUE(s->release(*earlier));
    ASSERT_TRUE(s->end_frame());
    ASSERT_EQ(hooks_->delivered.size(), 1u);
    drm_vrex_released_block stale = hooks_->delivered[0];
    ASSERT_EQ(stale.block, earlier->id);
    ASSERT_NE(stale.bo_gen, 0u) << "uAPI 1.2 names the BO";

    ASSERT_TRUE(frame(1));
    auto live = s->allocate(2);
    ASSERT_TRUE(live) << live.error_message();
    // The earlier record as the device would deliver it had it reused the block id and the handle
    // number: everything but the BO generation names the live block.
    stale.block = live->id;
    stale.handle = live->handle;
    stale.offset = live->offset;
    hooks_->inject = {stale};
    auto fe = s->end_frame();
    ASSERT_TRUE(fe) << fe.error_message();
    for (const ReleasedBlock& r : fe->released) EXPECT_FALSE(r.memory_freed) << "block " << r.id;

    ASSERT_TRUE(frame(2));
    auto hit = s->retrieve_temporal(2, -1);
    ASSERT_TRUE(hit) << hit.error_message();
    EXPECT_TRUE(hit->hit) << "the live block is still the device's and the HAL's";
    if (hit->hit) {
        EXPECT_EQ(hit->block.id, live->id);
    }
    auto next = s->allocate(3);
    ASSERT_TRUE(next) << next.error_message();
    EXPECT_FALSE(next->handle == live->handle && next->offset == live->offset)
        << "the live block's memory was handed out again";
    ASSERT_TRUE(s->end_frame());
}

TEST_P(Publication, OtherStreamsSeeABlockOnlyOnceItsOwnerPublishedIt) {
    auto a = allocator();
    auto owner = stream(*a, {true, 2, false});
    auto reader = stream(*a, {true, 2});
    const auto px = synthetic_frame(128, 96, 70, 0);
    auto f = owner->begin_frame(view_of(px));
    ASSERT_TRUE(f);
    auto blk = owner->allocate(3);
    ASSERT_TRUE(blk);
    ASSERT_FALSE(blk->data.empty()) << "writable until published";
    std::memset(blk->data.data(), 0x5a, blk->data.size());

    ASSERT_TRUE(reader->begin_frame(view_of(px)));
    auto miss = reader->retrieve_similar(3, f->fp, 0, Scope::pool);
    ASSERT_TRUE(miss);
    EXPECT_FALSE(miss->hit) << "not published: invisible to other streams";
    // A handle obtained some other way gives nothing either.
    EXPECT_EQ(reader->reuse(3, *blk).error(), std::errc::operation_not_permitted);
    EXPECT_EQ(reader->pin(*blk).error(), std::errc::operation_not_permitted);
    auto cow = reader->copy_on_write(*blk, 4);
    EXPECT_EQ(cow.error(), std::errc::operation_not_permitted);
    EXPECT_NE(cow.error_message().find("not published"), std::string::npos) << cow.error_message();
    EXPECT_EQ(reader->export_dmabuf(*blk).error(), std::errc::operation_not_permitted);
    EXPECT_EQ(reader->publish(*blk).error(), std::errc::operation_not_permitted) << "the owner publishes";
    // The owner itself sees it.
    auto own = owner->retrieve_temporal(3, 0);
    ASSERT_TRUE(own && own->hit);
    EXPECT_EQ(own->block.generation, blk->generation);

    ASSERT_TRUE(owner->publish(*blk));
    ASSERT_TRUE(owner->publish(*blk)) << "again: nothing to do";
    auto hit = reader->retrieve_similar(3, f->fp, 0, Scope::pool);
    ASSERT_TRUE(hit && hit->hit);
    EXPECT_EQ(hit->block.id, blk->id);
    EXPECT_EQ(hit->block.generation, blk->generation);
    EXPECT_TRUE(hit->block.data.empty());
    EXPECT_EQ(hit->block.view[17], std::byte{0x5a});
    // Published: read-only for the owner too; its copy-on-write makes a new, writable block.
    auto again = owner->retrieve_temporal(3, 0);
    ASSERT_TRUE(again && again->hit);
    EXPECT_TRUE(again->block.data.empty()) << "read-only once published";
    auto mine = owner->copy_on_write(again->block, 5);
    ASSERT_TRUE(mine) << mine.error_message();
    EXPECT_NE(mine->id, blk->id);
    ASSERT_FALSE(mine->data.empty());
    EXPECT_EQ(mine->data[17], std::byte{0x5a});
    ASSERT_TRUE(reader->end_frame());
    ASSERT_TRUE(owner->end_frame());
}

TEST_P(Publication, PublishIsAllOrNothingAndChecksEveryHandle) {
    auto a = allocator();
    auto s = stream(*a, {true, 3, false});
    auto other = stream(*a, {true, 3, false});
    const auto px = synthetic_frame(128, 96, 71, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    ASSERT_TRUE(other->begin_frame(view_of(px)));
    auto mine = s->allocate_batch(std::vector<std::uint32_t>{0, 1});
    auto theirs = other->allocate(2);
    ASSERT_TRUE(mine && theirs);
    auto bad = s->publish_batch(std::vector<KvBlock>{(*mine)[0], *theirs, (*mine)[1]});
    EXPECT_EQ(bad.error(), std::errc::operation_not_permitted);
    EXPECT_NE(bad.error_message().find("block 1 (id " + std::to_string(theirs->id)), std::string::npos)
        << bad.error_message();
    // Nothing was published: the other stream still misses both.
    auto q = other->retrieve_similar(0, s->frame().fp, 0, Scope::pool);
    ASSERT_TRUE(q);
    EXPECT_FALSE(q->hit);
    KvBlock never = (*mine)[0];
    never.generation += 7;
    EXPECT_EQ(s->publish(never).error(), errc::stale_handle);
    ASSERT_TRUE(s->publish_batch(*mine));
    q = other->retrieve_similar(0, s->frame().fp, 0, Scope::pool);
    ASSERT_TRUE(q && q->hit);
    EXPECT_EQ(q->block.id, (*mine)[0].id);
    ASSERT_TRUE(s->end_frame());
    ASSERT_TRUE(other->end_frame());
}

TEST_P(Publication, EndFramePublishesUnlessTheStreamPublishesExplicitly) {
    auto a = allocator();
    auto automatic = stream(*a, {true, 4});
    auto manual = stream(*a, {true, 4, false});
    auto reader = stream(*a, {true, 4});
    const auto px = synthetic_frame(128, 96, 72, 0);
    auto fa = automatic->begin_frame(view_of(px));
    ASSERT_TRUE(fa);
    ASSERT_TRUE(manual->begin_frame(view_of(px)));
    auto ba = automatic->allocate(6);
    auto bm = manual->allocate(7);
    ASSERT_TRUE(ba && bm);
    ASSERT_TRUE(reader->begin_frame(view_of(px)));
    auto h = reader->retrieve_similar(6, fa->fp, 0, Scope::pool);
    ASSERT_TRUE(h);
    EXPECT_FALSE(h->hit) << "not before the owner's end_frame";
    ASSERT_TRUE(reader->end_frame());
    ASSERT_TRUE(automatic->end_frame());
    ASSERT_TRUE(manual->end_frame());
    ASSERT_TRUE(reader->begin_frame(view_of(px)));
    h = reader->retrieve_similar(6, fa->fp, 0, Scope::pool);
    ASSERT_TRUE(h && h->hit) << "published by end_frame";
    EXPECT_EQ(h->block.generation, ba->generation);
    auto hm = reader->retrieve_similar(7, fa->fp, 0, Scope::pool);
    ASSERT_TRUE(hm);
    EXPECT_FALSE(hm->hit) << "publish_at_end_frame = false: still the owner's only";
    ASSERT_TRUE(manual->publish(*bm));
    hm = reader->retrieve_similar(7, fa->fp, 0, Scope::pool);
    ASSERT_TRUE(hm && hm->hit);
    EXPECT_EQ(hm->block.generation, bm->generation);
    ASSERT_TRUE(reader->end_frame());
}

// The first case: a stream's destruction freed the device id, another thread created a
// stream (same id) and allocated, then the destruction released every record with that id.
TEST_P(Publication, DestroyingAStreamNeverReleasesTheBlocksOfTheStreamThatGotItsId) {
    auto a = allocator();
    auto old = stream(*a, {true, 5});
    const auto px = synthetic_frame(128, 96, 73, 0);
    ASSERT_TRUE(old->begin_frame(view_of(px)));
    ASSERT_TRUE(old->allocate(1));
    const std::uint32_t old_id = old->id();
    std::unique_ptr<Stream> fresh;
    std::optional<KvBlock> blk;
    hooks_->after_stream_destroy = [&] {  // "another thread", inside the destruction's window
        fresh = stream(*a, {true, 5});
        ASSERT_TRUE(fresh);
        ASSERT_TRUE(fresh->begin_frame(view_of(px)));
        auto b = fresh->allocate(2);
        ASSERT_TRUE(b) << b.error_message();
        std::memset(b->data.data(), 0x3c, b->data.size());
        blk = *b;
    };
    old.reset();
    ASSERT_TRUE(fresh && blk);
    // The device recycles stream ids lowest first: the new stream has the old one's id (where a
    // device did not, the case is merely easier).
    if (fresh->id() != old_id) std::printf("note: stream id %u not recycled (got %u)\n", old_id, fresh->id());
    // The new stream's block is still its own and live.
    ASSERT_TRUE(fresh->set_positions(*blk, 0, 4));
    auto t = fresh->retrieve_temporal(2, 0);
    ASSERT_TRUE(t && t->hit);
    EXPECT_EQ(t->block.generation, blk->generation);
    EXPECT_FALSE(t->block.data.empty()) << "still writable by its owner";
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->resident_blocks, 1u) << "the old stream's block went, the new one's stayed";
    ASSERT_TRUE(fresh->release(*blk)) << "not stale";
    auto fe = fresh->end_frame();
    ASSERT_TRUE(fe);
    ASSERT_EQ(fe->count, 1u);
    EXPECT_EQ(fe->released[0].generation, blk->generation);
}

// The second case: between a reader's lookup and its look at the hit, the owner released
// the block and allocated again: same id, same slot, another frame's KV.
TEST_P(Publication, AHitOnAnIncarnationReleasedDuringTheLookupIsAMissNeverItsSuccessor) {
    AllocatorOptions o;
    o.blocks_per_slab = 1;
    o.spare_slabs = 1;
    auto a = allocator(o);
    auto owner = stream(*a, {true, 6});
    auto reader = stream(*a, {true, 6});
    const auto px = synthetic_frame(128, 96, 74, 0);
    auto f = owner->begin_frame(view_of(px));
    ASSERT_TRUE(f);
    auto first = owner->allocate(8);
    ASSERT_TRUE(first);
    ASSERT_TRUE(owner->publish(*first));
    ASSERT_TRUE(reader->begin_frame(view_of(px)));
    std::optional<KvBlock> second;
    hooks_->after_lookup = [&] {  // the owner's thread, while the reader's lookup is in flight
        ASSERT_TRUE(owner->release(*first));
        ASSERT_TRUE(owner->end_frame());
        ASSERT_TRUE(owner->begin_frame(view_of(synthetic_frame(128, 96, 75, 0))));
        auto b = owner->allocate(8);
        ASSERT_TRUE(b);
        ASSERT_TRUE(owner->publish(*b));
        second = *b;
    };
    auto hit = reader->retrieve_similar(8, f->fp, 0, Scope::pool);
    ASSERT_TRUE(hit);
    ASSERT_TRUE(second);
    ASSERT_EQ(second->id, first->id) << "the device recycled the id";
    ASSERT_EQ(second->offset, first->offset) << "and the slot";
    EXPECT_FALSE(hit->hit) << "got block (id " << hit->block.id << ", generation " << hit->block.generation
                           << ") for the entry of frame " << hit->frame
                           << " (the released one was generation " << first->generation << ")";
    // Once the lookup starts after the new incarnation, it is found (under its own fingerprint).
    auto later = reader->retrieve_similar(8, owner->frame().fp, 0, Scope::pool);
    ASSERT_TRUE(later && later->hit);
    EXPECT_EQ(later->block.generation, second->generation);
    ASSERT_TRUE(reader->end_frame());
    ASSERT_TRUE(owner->end_frame());
}

// issue 24's last window: Stream::reuse() of another stream's block checks the block under the
// allocator lock, then names it to the device in an ALIAS insert. If the owner releases the block
// in between and the device gives its id to the owner's next block, an alias by id alone points the
// reader's entry at the successor (another frame's KV). The device generation in the alias insert
// (uAPI 1.3 block_gen) makes the device refuse it: reuse() reports the handle stale.
// The race itself, replayed: the reader's reuse() of the owner's block, with the owner's release
// and reallocation run inside the alias insert. Returns what reuse() said and whether the reader's
// new entry leads to the owner's new block.
struct ReuseRace {
    bool ran = false, recycled = false, reuse_ok = false, entry_is_successor = false;
    std::error_code error;
    std::string message;
};

ReuseRace race_reuse_against_release(KvAllocator& a, HookedBackend& hooks) {
    ReuseRace out;
    auto owner = Publication::stream(a, {true, 7});
    auto reader = Publication::stream(a, {true, 7});
    const auto px = synthetic_frame(128, 96, 76, 0);
    auto f = owner->begin_frame(view_of(px));
    auto first = owner->allocate(8);
    if (!f || !first || !owner->publish(*first) || !reader->begin_frame(view_of(px))) return out;
    auto hit = reader->retrieve_similar(8, f->fp, 0, Scope::pool);
    if (!hit || !hit->hit || hit->block.id != first->id) return out;
    std::optional<KvBlock> second;
    hooks.before_alias_insert = [&] {  // the owner's thread, between reuse()'s check and its insert
        if (!owner->release(*first) || !owner->end_frame() ||
            !owner->begin_frame(view_of(synthetic_frame(128, 96, 77, 0))))
            return;
        auto b = owner->allocate(8);
        if (!b) return;
        std::memset(b->data.data(), 0x77, b->data.size());
        if (owner->publish(*b)) second = *b;
    };
    auto reused = reader->reuse(5, hit->block);
    out.ran = second.has_value();
    out.recycled = second && second->id == first->id;
    out.reuse_ok = static_cast<bool>(reused);
    if (!reused) {
        out.error = reused.error();
        out.message = reused.error_message();
    }
    auto t = reader->retrieve_temporal(5, 0);
    out.entry_is_successor = second && t && t->hit && t->block.generation == second->generation;
    (void)reader->end_frame();
    (void)owner->end_frame();
    return out;
}

TEST_P(Publication, AReuseRacingItsOwnersReleaseNeverAliasesTheSuccessor) {
    AllocatorOptions o;
    o.blocks_per_slab = 1;
    o.spare_slabs = 1;
    auto a = allocator(o);
    const ReuseRace r = race_reuse_against_release(*a, *hooks_);
    ASSERT_TRUE(r.ran) << "the owner released and reallocated inside the alias insert";
    ASSERT_TRUE(r.recycled) << "the device gave the released block's id to the new block";
    EXPECT_FALSE(r.reuse_ok) << "the alias reached the owner's new block under the old id";
    if (!r.reuse_ok) {
        EXPECT_EQ(r.error, errc::stale_handle) << r.message;
    }
    EXPECT_FALSE(r.entry_is_successor) << "the reader's region 5 now finds the owner's new block";
}

// Control: the same race with the generation taken out of the alias insert (what the HAL sent
// before uAPI 1.3, and what an older vrex.ko that reports no generation gets): the alias lands on
// the successor. This is the failure the generation closes.
TEST_P(Publication, WithoutTheGenerationTheRacingAliasReachesTheSuccessor) {
    AllocatorOptions o;
    o.blocks_per_slab = 1;
    o.spare_slabs = 1;
    auto a = allocator(o);
    hooks_->strip_alias_generation = true;
    const ReuseRace r = race_reuse_against_release(*a, *hooks_);
    ASSERT_TRUE(r.ran);
    ASSERT_TRUE(r.recycled);
    EXPECT_TRUE(r.reuse_ok) << r.message;
    EXPECT_TRUE(r.entry_is_successor) << "the id alone named the new block";
}

TEST_P(Publication, FixedPoolIsOneBufferWithStableAddresses) {
    AllocatorOptions o;
    o.fixed_pool_blocks = 6;
    auto a = allocator(o);
    ASSERT_TRUE(a);
    auto pool = a->pool();
    ASSERT_TRUE(pool) << pool.error_message();
    EXPECT_EQ(pool->blocks, 6u);
    EXPECT_EQ(pool->block_bytes, a->block_bytes());
    EXPECT_EQ(pool->bytes, 6 * a->block_bytes());
    auto s = stream(*a, {});
    const auto px = synthetic_frame(128, 96, 76, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    auto blocks = s->allocate_batch(std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5});
    ASSERT_TRUE(blocks) << blocks.error_message();
    std::set<std::uint32_t> indices;
    for (const KvBlock& b : *blocks) {
        EXPECT_EQ(b.handle, pool->handle) << "every block in the one BO";
        auto i = a->pool_index(b);
        ASSERT_TRUE(i);
        EXPECT_EQ(b.offset, std::uint64_t{*i} * a->block_bytes());
        indices.insert(*i);
        std::memset(b.data.data(), 0x40 + static_cast<int>(*i), b.data.size());
    }
    EXPECT_EQ(indices.size(), 6u);
    auto full = s->allocate(6);
    EXPECT_EQ(full.error(), std::errc::no_space_on_device);
    EXPECT_NE(full.error_message().find("fixed KV pool of 6 blocks full"), std::string::npos)
        << full.error_message();

    // One dma-buf for the whole pool: block i at i x block_bytes.
    auto fd = a->export_pool_dmabuf();
    ASSERT_TRUE(fd) << fd.error_message();
    void* p = mmap(nullptr, pool->bytes, PROT_READ, MAP_SHARED, *fd, 0);
    ASSERT_NE(p, MAP_FAILED);
    const auto* bytes = static_cast<const unsigned char*>(p);
    for (std::uint32_t i = 0; i < 6; i++) EXPECT_EQ(bytes[i * a->block_bytes() + 99], 0x40 + i);
    munmap(p, pool->bytes);
    close(*fd);

    // Freed blocks return to the pool; the pool itself never goes (nor moves).
    ASSERT_TRUE(s->release_batch(*blocks));
    ASSERT_TRUE(s->end_frame());
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->resident_blocks, 0u);
    EXPECT_EQ(st->slabs_created, 1u);
    EXPECT_EQ(st->slabs_released, 0u);
    std::uint64_t held = 0;
    for (const BankStats& b : st->banks) held += b.slab_bytes;
    EXPECT_EQ(held, pool->bytes);
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    auto again = s->allocate(0);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->handle, pool->handle);
    auto slab_alloc = allocator();
    EXPECT_EQ(slab_alloc->pool().error(), std::errc::no_such_file_or_directory);
    EXPECT_EQ(slab_alloc->pool_index(*again).error(), std::errc::no_such_file_or_directory);
    ASSERT_TRUE(s->end_frame());
}

TEST_P(Publication, FixedPoolUnderPressureEvictsAndRefusesWhatCannotFit) {
    AllocatorOptions o;
    o.fixed_pool_blocks = 3;
    o.evict_under_pressure = true;
    auto a = allocator(o);
    ASSERT_TRUE(a);
    auto s = stream(*a, {});
    for (std::uint32_t f = 0; f < 4; f++) {
        ASSERT_TRUE(s->begin_frame(view_of(synthetic_frame(128, 96, 80 + f, 0))));
        auto b = s->allocate_batch(std::vector<std::uint32_t>{0, 1});
        ASSERT_TRUE(b) << "frame " << f << ": " << b.error_message();
        ASSERT_TRUE(s->end_frame());
    }
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_GT(st->pressure_evictions, 0u);
    EXPECT_EQ(st->slabs_created, 1u) << "no memory beyond the pool";

    AllocatorOptions huge;
    huge.fixed_pool_blocks = static_cast<std::uint32_t>(dev_->info().bank_size / a->block_bytes() + 1);
    auto refused = KvAllocator::create(dev_, kSmall, huge);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), std::errc::invalid_argument);
    EXPECT_NE(refused.error_message().find("fixed_pool_blocks " + std::to_string(huge.fixed_pool_blocks)),
              std::string::npos)
        << refused.error_message();
    EXPECT_NE(refused.error_message().find("(1.." + std::to_string(huge.fixed_pool_blocks - 1) + ")"),
              std::string::npos)
        << refused.error_message();
}

INSTANTIATE_TEST_SUITE_P(Backends, Publication, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
