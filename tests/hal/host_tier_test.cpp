// Host-tier entries (Stream::index_host_tier, docs/hal.md "Host-tier entries") on every backend: the
// copy of a demoted block in host memory the HAL imported, indexed in the SHIE under the
// fingerprint of the frame that computed it, found by similarity lookups long after the device's
// zombie rule retired every device block of that time, never aged, bounded by its slots.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "device_impl.hpp"
#include "device_test.hpp"
#include "engine_memory.hpp"
#include "frames.hpp"
#include "vrex/hal.hpp"
#include "vrex/imported_memory.hpp"
#include "vrex/vrex_hal.h"

namespace vrex {
namespace {

constexpr std::size_t kSlots = 4;

// The convention of the LCP policy (model/cpp policy.cpp): host-tier entries and recall lookups
// carry the fingerprint's 96 appearance bits, the 32 motion bits (0..31) cleared.
Fingerprint appearance(const Fingerprint& fp) {
    Fingerprint a = fp;
    a.w[0] &= ~std::uint64_t{0xffff'ffff};
    return a;
}

// @fp with @n appearance bits flipped (in the upper word): exactly @n bits from @fp.
Fingerprint flipped(const Fingerprint& fp, unsigned n) {
    Fingerprint f = fp;
    for (unsigned i = 0; i < n; i++) f.w[1] ^= std::uint64_t{1} << (3 * i);
    return f;
}

class HostTier : public test::DeviceTest {
  protected:
    void SetUp() override {
        test::DeviceTest::SetUp();
        alloc_ = allocator(ModelGeometry{2, 2, 64, DType::fp16, 16});  // 16 KiB blocks
        ASSERT_NE(alloc_, nullptr);
        bytes_ = alloc_->block_bytes();
        std::string why;
        engine_ = test::engine_memory(GetParam(), kSlots * bytes_, &why);
        if (!engine_) GTEST_SKIP() << why;
        std::cout << "host memory: " << engine_->source << " (" << GetParam() << " backend)\n";
        engine_->fill(3);
        auto mem = alloc_->import_memory(engine_->dmabuf);
        ASSERT_TRUE(mem) << mem.error_message();
        mem_ = std::move(*mem);
        zombie_ = dev_->info().zombie_frames;
    }
    LumaView frame(std::uint32_t scene, std::uint32_t t) {
        frames_.push_back(test::synthetic_frame(128, 96, scene, t));
        return test::view_of(frames_.back());
    }
    // One frame of @scene with nothing indexed: the released blocks it reported.
    std::vector<ReleasedBlock> idle(Stream& s, std::uint32_t scene, std::uint32_t t) {
        EXPECT_TRUE(s.begin_frame(frame(scene, t)));
        auto fe = s.end_frame();
        EXPECT_TRUE(fe) << fe.error_message();
        return fe ? fe->released : std::vector<ReleasedBlock>{};
    }

    std::shared_ptr<KvAllocator> alloc_;
    std::uint64_t bytes_ = 0;
    std::unique_ptr<test::EngineMemory> engine_;
    std::unique_ptr<ImportedMemory> mem_;
    std::uint32_t zombie_ = 0;
    std::vector<std::vector<std::uint8_t>> frames_;
};

TEST_P(HostTier, ADemotedBlockIsFoundAfterACutLongPastZombieRelease) {
    auto s = alloc_->create_stream().value();
    // Frame 0, scene A: a block computed for region 5 (a device block, never pinned).
    auto f0 = s->begin_frame(frame(11, 0));
    ASSERT_TRUE(f0) << f0.error_message();
    auto dev_block = s->allocate(5);
    ASSERT_TRUE(dev_block) << dev_block.error_message();
    ASSERT_TRUE(s->end_frame());
    // Frame 1: it is demoted. Its bytes go to host slot 2, indexed under frame 0's fingerprint.
    ASSERT_TRUE(s->begin_frame(frame(12, 1)));
    std::memcpy(mem_->host_view().data() + 2 * bytes_, dev_block->view.data(), bytes_);
    auto host = s->index_host_tier(*mem_, 2 * bytes_, 5, 0, appearance(f0->fp));
    ASSERT_TRUE(host) << host.error_message();
    EXPECT_EQ(host->frame, 0u);
    EXPECT_EQ(host->region, 5u);
    EXPECT_EQ(host->bank, DRM_VREX_BANK_NONE);
    EXPECT_EQ(host->offset, 2 * bytes_);
    EXPECT_EQ(mem_->blocks(), 1u);
    // Similarity only: no temporal key, so the device's own (frame, region) entries never collide.
    auto tmp = s->retrieve_temporal(5, -1);
    ASSERT_TRUE(tmp) << tmp.error_message();
    EXPECT_TRUE(tmp->hit) << "frame 0's device entry is still there";
    EXPECT_EQ(tmp->block.id, dev_block->id);
    ASSERT_TRUE(s->end_frame());

    // Scene B for longer than the zombie rule: the device block goes, the host-tier block stays.
    bool device_block_released = false;
    for (std::uint32_t t = 2; t < zombie_ + 6; t++)
        for (const ReleasedBlock& r : idle(*s, 12, t)) {
            EXPECT_NE(r.id, host->id) << "frame " << t << ": the host tier is never aged";
            device_block_released |= r.id == dev_block->id && r.reason == ReleaseReason::zombie;
        }
    EXPECT_TRUE(device_block_released) << "zombie release retired the device block";

    // Scene A comes back after a cut: its motion bits are the cut's, its appearance frame 0's.
    auto back = s->begin_frame(frame(11, 0));
    ASSERT_TRUE(back) << back.error_message();
    auto hit = s->retrieve_similar(5, appearance(back->fp), 8, Scope::stream, true);
    ASSERT_TRUE(hit) << hit.error_message();
    ASSERT_TRUE(hit->hit) << "the host-tier copy is found at the returning view's appearance";
    EXPECT_EQ(hit->block.id, host->id);
    EXPECT_EQ(hit->block.generation, host->generation);
    EXPECT_EQ(hit->frame, 0u);
    EXPECT_EQ(hit->distance, 0u);
    ASSERT_EQ(hit->block.view.size(), bytes_);
    EXPECT_EQ(hit->block.view.data(), mem_->host_view().data() + 2 * bytes_);
    EXPECT_EQ(std::memcmp(hit->block.view.data(), engine_->map + 2 * bytes_, bytes_), 0)
        << "the bytes read back are the host memory's";
    // Not beyond the radius: an appearance 9 bits away is missed at radius 8, found at 9.
    auto far = s->retrieve_similar(5, flipped(appearance(f0->fp), 9), 8, Scope::stream, true);
    ASSERT_TRUE(far) << far.error_message();
    EXPECT_FALSE(far->hit);
    auto edge = s->retrieve_similar(5, flipped(appearance(f0->fp), 9), 9, Scope::stream, true);
    ASSERT_TRUE(edge && edge->hit);
    EXPECT_EQ(edge->block.id, host->id);
    EXPECT_EQ(edge->distance, 9u);
    // Another region never finds it.
    auto other = s->retrieve_similar(4, appearance(f0->fp), 31, Scope::stream, true);
    ASSERT_TRUE(other);
    EXPECT_FALSE(other->hit);
    ASSERT_TRUE(s->end_frame());
    EXPECT_TRUE(engine_->holds(3, 0, 2 * bytes_)) << "vrex wrote nothing into the host memory";
}

TEST_P(HostTier, ReusingASlotRetiresItsOldEntryFirstSoTheTierIsBounded) {
    auto s = alloc_->create_stream().value();
    std::vector<Fingerprint> fps;
    std::vector<KvBlock> hosted;
    // kSlots + 2 demotions into kSlots slots, one per frame, used in turn.
    for (std::uint32_t t = 0; t < kSlots + 2; t++) {
        auto f = s->begin_frame(frame(20 + t, 0));
        ASSERT_TRUE(f) << f.error_message();
        fps.push_back(appearance(f->fp));
        const std::uint64_t offset = (t % kSlots) * bytes_;
        auto h = s->index_host_tier(*mem_, offset, 1, t, fps.back());
        ASSERT_TRUE(h) << "frame " << t << ": " << h.error_message();
        hosted.push_back(*h);
        EXPECT_EQ(mem_->blocks(), std::min<std::uint32_t>(t + 1, kSlots)) << "frame " << t;
        auto fe = s->end_frame();
        ASSERT_TRUE(fe) << fe.error_message();
        if (t >= kSlots) {  // the slot's previous block, retired by the insert
            ASSERT_EQ(fe->released.size(), 1u) << "frame " << t;
            EXPECT_EQ(fe->released[0].id, hosted[t - kSlots].id);
            EXPECT_EQ(fe->released[0].generation, hosted[t - kSlots].generation);
            EXPECT_EQ(fe->released[0].reason, ReleaseReason::removed);
            EXPECT_FALSE(fe->released[0].memory_freed);
        } else {
            EXPECT_TRUE(fe->released.empty()) << "frame " << t;
        }
    }
    ASSERT_TRUE(s->begin_frame(frame(99, 0)));
    for (std::uint32_t t = 0; t < kSlots + 2; t++) {
        auto hit = s->retrieve_similar(1, fps[t], 0, Scope::stream, true);
        ASSERT_TRUE(hit) << hit.error_message();
        if (t < 2) {
            EXPECT_FALSE(hit->hit && hit->block.id == hosted[t].id &&
                         hit->block.generation == hosted[t].generation)
                << "frame " << t << "'s entry went with its slot";
            EXPECT_EQ(s->release(hosted[t]).error(), errc::stale_handle);
        } else {
            ASSERT_TRUE(hit->hit) << "frame " << t;
            EXPECT_EQ(hit->block.id, hosted[t].id);
            EXPECT_EQ(hit->frame, t);
        }
    }
    // The stream's own release of a host-tier block frees the slot for another kind of block.
    ASSERT_TRUE(s->release(hosted.back()));
    ASSERT_TRUE(s->end_frame());
    EXPECT_EQ(mem_->blocks(), kSlots - 1);
}

TEST_P(HostTier, BadInputIsRefusedWithContext) {
    auto s = alloc_->create_stream().value();
    const Fingerprint fp{};
    auto closed = s->index_host_tier(*mem_, 0, 0, 0, fp);
    EXPECT_EQ(closed.error(), errc::not_in_frame);
    EXPECT_NE(closed.error_message().find("no open frame"), std::string::npos) << closed.error_message();
    ASSERT_TRUE(s->begin_frame(frame(30, 0)));
    ASSERT_TRUE(s->end_frame());
    ASSERT_TRUE(s->begin_frame(frame(30, 1)));

    auto mis = s->index_host_tier(*mem_, 32, 0, 0, fp);
    EXPECT_EQ(mis.error(), std::errc::invalid_argument);
    EXPECT_NE(mis.error_message().find("not a multiple of 64"), std::string::npos) << mis.error_message();
    EXPECT_NE(mis.error_message().find("index host-tier block of frame 0, region 0"), std::string::npos)
        << mis.error_message();
    auto past = s->index_host_tier(*mem_, kSlots * bytes_, 0, 0, fp);
    EXPECT_EQ(past.error(), std::errc::invalid_argument);
    EXPECT_NE(past.error_message().find("ends past the"), std::string::npos) << past.error_message();
    auto future = s->index_host_tier(*mem_, 0, 0, 2, fp);
    EXPECT_EQ(future.error(), std::errc::invalid_argument);
    EXPECT_NE(future.error_message().find("past the current frame 1"), std::string::npos)
        << future.error_message();
    auto region = s->index_host_tier(*mem_, 0, 16, 0, fp);
    EXPECT_FALSE(region);
    EXPECT_NE(region.error_message().find("SHIE insert"), std::string::npos) << region.error_message();

    auto other = allocator(ModelGeometry{2, 2, 64, DType::fp16, 16});
    auto omem = other->import_memory(engine_->dmabuf);
    ASSERT_TRUE(omem) << omem.error_message();
    auto foreign = s->index_host_tier(**omem, 0, 0, 0, fp);
    EXPECT_EQ(foreign.error(), std::errc::invalid_argument);
    EXPECT_NE(foreign.error_message().find("another allocator"), std::string::npos)
        << foreign.error_message();

    // A block indexed with index_imported is not a host-tier slot to reuse.
    auto engine_block = s->index_imported(*mem_, bytes_, 2);
    ASSERT_TRUE(engine_block) << engine_block.error_message();
    auto busy = s->index_host_tier(*mem_, bytes_, 2, 0, fp);
    EXPECT_EQ(busy.error(), std::errc::device_or_resource_busy);
    EXPECT_NE(busy.error_message().find("not this stream's host-tier block"), std::string::npos)
        << busy.error_message();
    EXPECT_EQ(mem_->blocks(), 1u) << "nothing was indexed by the failures";

    // The device's own rules, past the HAL (vrex.ko and the emulation): never with ALIAS, never a
    // later frame, never device memory (zombie release ages that).
    Backend& be = backend_of(*dev_);
    auto item = [&](std::uint32_t handle, std::uint64_t offset) {
        drm_vrex_shie_insert_item it{};
        it.handle = handle;
        it.offset = offset;
        it.length = bytes_;
        it.region = 3;
        it.flags = DRM_VREX_INSERT_HOST_TIER;
        return it;
    };
    const std::uint32_t id = s->id();
    auto refused = [&](drm_vrex_shie_insert_item it) {
        const std::error_code ec = be.shie_insert(id, std::span(&it, 1));
        return ec == std::errc::invalid_argument || (!ec && it.result == -EINVAL);
    };
    auto alias = item(0, 0);
    alias.flags |= DRM_VREX_INSERT_ALIAS;
    alias.handle = alias.offset = alias.length = 0;
    EXPECT_TRUE(refused(alias));
    auto later = item(mem_->handle(), 2 * bytes_);
    later.frame_offset = 1;
    EXPECT_TRUE(refused(later));
    auto dev_block = s->allocate(4);
    ASSERT_TRUE(dev_block) << dev_block.error_message();
    EXPECT_TRUE(refused(item(dev_block->handle, dev_block->offset)));
    auto before_first = item(mem_->handle(), 2 * bytes_);
    before_first.frame_offset = -2;  // frame -1
    const std::error_code ec = be.shie_insert(id, std::span(&before_first, 1));
    EXPECT_TRUE(ec == std::errc::invalid_argument || (!ec && before_first.result == -ERANGE))
        << ec.message() << ", result " << before_first.result;
    ASSERT_TRUE(s->end_frame());
}

TEST_P(HostTier, CApiIndexesSizePrefixed) {
    vrex_hal_device* dev = nullptr;
    ASSERT_EQ(vrex_hal_device_open(GetParam().c_str(), &dev), VREX_HAL_OK) << vrex_hal_last_error();
    vrex_hal_geometry g{2, 2, 64, VREX_HAL_FP16, 16, 0};
    vrex_hal_allocator* alloc = nullptr;
    ASSERT_EQ(vrex_hal_allocator_create(dev, &g, &alloc), VREX_HAL_OK) << vrex_hal_last_error();
    vrex_hal_imported* mem = nullptr;
    ASSERT_EQ(vrex_hal_import_memory(alloc, engine_->dmabuf, &mem), VREX_HAL_OK) << vrex_hal_last_error();
    vrex_hal_stream* s = nullptr;
    ASSERT_EQ(vrex_hal_stream_create(alloc, 0, 0, &s), VREX_HAL_OK);
    auto px = test::synthetic_frame(128, 96, 9, 0);
    vrex_hal_frame_info fi{};
    ASSERT_EQ(vrex_hal_begin_frame(s, px.data(), 128, 96, 128, &fi), VREX_HAL_OK) << vrex_hal_last_error();

    vrex_hal_host_tier_request req{};
    req.struct_size = sizeof(req);
    req.block_size = sizeof(vrex_hal_block);
    req.offset = bytes_;
    req.fp[0] = fi.fp[0] & ~std::uint64_t{0xffff'ffff};
    req.fp[1] = fi.fp[1];
    req.region = 7;
    req.frame = 1;  // past the open frame 0
    vrex_hal_block blk{};
    EXPECT_EQ(vrex_hal_index_host_tier(s, mem, &req, &blk), VREX_HAL_ERR_INVALID);
    EXPECT_NE(
        std::string(vrex_hal_stream_last_error(s)).find("vrex_hal_index_host_tier: index host-tier block"),
        std::string::npos)
        << vrex_hal_stream_last_error(s);
    req.frame = 0;
    req.struct_size = 8;
    EXPECT_EQ(vrex_hal_index_host_tier(s, mem, &req, &blk), VREX_HAL_ERR_INVALID);
    req.struct_size = sizeof(req);
    req.flags = 1;
    EXPECT_EQ(vrex_hal_index_host_tier(s, mem, &req, &blk), VREX_HAL_ERR_INVALID);
    req.flags = 0;
    ASSERT_EQ(vrex_hal_index_host_tier(s, mem, &req, &blk), VREX_HAL_OK) << vrex_hal_stream_last_error(s);
    EXPECT_EQ(blk.bank, VREX_HAL_BANK_NONE);
    EXPECT_EQ(blk.offset, bytes_);
    EXPECT_EQ(blk.region, 7u);
    vrex_hal_imported_destroy(mem);
    std::uint32_t n = 0;
    ASSERT_EQ(vrex_hal_end_frame(s, &n), VREX_HAL_OK);
    EXPECT_EQ(n, 0u);
    vrex_hal_stream_destroy(s);
    vrex_hal_allocator_destroy(alloc);
    vrex_hal_device_close(dev);
}

// uAPI 1.6 / ABI 1.3: a similarity query names the tiers it wants and asks for up to N candidates,
// nearest first. Region 6 holds a device block (frame 0's fingerprint) and three host-tier copies
// 1, 2 and 4 bits from it.
TEST_P(HostTier, QueriesByTierReturnUpToNCandidatesNearestFirst) {
    auto s = alloc_->create_stream().value();
    auto f0 = s->begin_frame(frame(40, 0));
    ASSERT_TRUE(f0) << f0.error_message();
    auto dev_block = s->allocate(6);
    ASSERT_TRUE(dev_block) << dev_block.error_message();
    ASSERT_TRUE(s->end_frame());
    ASSERT_TRUE(s->begin_frame(frame(41, 0)));
    std::vector<KvBlock> host;
    const unsigned bits[3] = {1, 2, 4};
    for (std::uint32_t i = 0; i < 3; i++) {
        auto h = s->index_host_tier(*mem_, i * bytes_, 6, i == 1 ? 1 : 0, flipped(f0->fp, bits[i]));
        ASSERT_TRUE(h) << h.error_message();
        host.push_back(*h);
    }
    ASSERT_TRUE(s->end_frame());
    ASSERT_TRUE(s->begin_frame(frame(42, 0)));

    auto ask = [&](Tier t, std::uint32_t n, std::uint32_t radius = 8) {
        Query q = Query::similar(6, f0->fp, radius, Scope::stream, true);
        q.in_tier(t).nearest(n);
        auto got = s->retrieve_batch(std::span(&q, 1));
        EXPECT_TRUE(got) << got.error_message();
        return got ? got->front() : Retrieval{};
    };
    auto ids = [](const Retrieval& r) {
        std::vector<std::pair<std::uint32_t, std::uint32_t>> v;
        for (const Retrieval& c : r.candidates) v.emplace_back(c.block.id, c.distance);
        return v;
    };
    using V = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
    const Retrieval any = ask(Tier::any, 8);
    EXPECT_EQ(ids(any), (V{{dev_block->id, 0}, {host[0].id, 1}, {host[1].id, 2}, {host[2].id, 4}}));
    ASSERT_EQ(any.candidates.size(), 4u);
    EXPECT_TRUE(any.hit);
    EXPECT_EQ(any.block.id, dev_block->id) << "the hit is the nearest candidate";
    EXPECT_FALSE(any.candidates[0].host_tier);
    for (std::size_t i = 1; i < 4; i++) {
        EXPECT_TRUE(any.candidates[i].host_tier) << i;
        EXPECT_EQ(any.candidates[i].block.view.data(), mem_->host_view().data() + (i - 1) * bytes_) << i;
        EXPECT_TRUE(any.candidates[i].approximate) << i;
    }
    EXPECT_EQ(any.candidates[2].frame, 1u);
    EXPECT_EQ(ids(ask(Tier::host, 8)), (V{{host[0].id, 1}, {host[1].id, 2}, {host[2].id, 4}}));
    EXPECT_EQ(ids(ask(Tier::host, 2)), (V{{host[0].id, 1}, {host[1].id, 2}}));
    EXPECT_EQ(ids(ask(Tier::device, 8)), (V{{dev_block->id, 0}}));
    EXPECT_EQ(ids(ask(Tier::any, 8, 3)), (V{{dev_block->id, 0}, {host[0].id, 1}, {host[1].id, 2}}));
    // The single nearest lookup filters by tier too (no candidates list then).
    const Retrieval near_host = ask(Tier::host, 0);
    ASSERT_TRUE(near_host.hit);
    EXPECT_EQ(near_host.block.id, host[0].id);
    EXPECT_TRUE(near_host.candidates.empty());
    EXPECT_FALSE(ask(Tier::host, 8, 0).hit) << "nothing of the host tier at distance 0";
    // Bad queries: past the cap, a temporal lookup with a tier or candidates.
    Query over = Query::similar(6, f0->fp, 8).nearest(kMaxCandidates + 1);
    auto e1 = s->retrieve_batch(std::span(&over, 1));
    EXPECT_EQ(e1.error(), std::errc::invalid_argument);
    EXPECT_NE(e1.error_message().find("at most 8"), std::string::npos) << e1.error_message();
    Query tmp = Query::temporal(6, -1).in_tier(Tier::host);
    EXPECT_EQ(s->retrieve_batch(std::span(&tmp, 1)).error(), std::errc::invalid_argument);
    // Past the HAL: the backend refuses a count past the uAPI's cap itself (vrex.ko, the emulation).
    drm_vrex_shie_lookup_item it{};
    it.kind = DRM_VREX_LOOKUP_SIMILAR;
    it.region = 6;
    it.max_candidates = DRM_VREX_LOOKUP_MAX_CANDIDATES + 1;
    EXPECT_EQ(backend_of(*dev_).shie_lookup(s->id(), std::span(&it, 1)), std::errc::invalid_argument);
    ASSERT_TRUE(s->end_frame());
}

TEST_P(HostTier, CApiRetrievesCandidatesByTier) {
    vrex_hal_device* dev = nullptr;
    ASSERT_EQ(vrex_hal_device_open(GetParam().c_str(), &dev), VREX_HAL_OK) << vrex_hal_last_error();
    vrex_hal_geometry g{2, 2, 64, VREX_HAL_FP16, 16, 0};
    vrex_hal_allocator* alloc = nullptr;
    ASSERT_EQ(vrex_hal_allocator_create(dev, &g, &alloc), VREX_HAL_OK) << vrex_hal_last_error();
    vrex_hal_imported* mem = nullptr;
    ASSERT_EQ(vrex_hal_import_memory(alloc, engine_->dmabuf, &mem), VREX_HAL_OK) << vrex_hal_last_error();
    vrex_hal_stream* s = nullptr;
    ASSERT_EQ(vrex_hal_stream_create(alloc, 0, 0, &s), VREX_HAL_OK);
    auto px = test::synthetic_frame(128, 96, 9, 0);
    vrex_hal_frame_info fi{};
    ASSERT_EQ(vrex_hal_begin_frame(s, px.data(), 128, 96, 128, &fi), VREX_HAL_OK) << vrex_hal_last_error();
    vrex_hal_block dev_block{};
    ASSERT_EQ(vrex_hal_allocate(s, 3, 0, &dev_block), VREX_HAL_OK) << vrex_hal_stream_last_error(s);
    ASSERT_EQ(vrex_hal_end_frame(s, nullptr), VREX_HAL_OK);
    auto px1 = test::synthetic_frame(128, 96, 10, 0);
    ASSERT_EQ(vrex_hal_begin_frame(s, px1.data(), 128, 96, 128, nullptr), VREX_HAL_OK)
        << vrex_hal_last_error();
    for (std::uint32_t i = 0; i < 2; i++) {
        vrex_hal_host_tier_request req{};
        req.struct_size = sizeof(req);
        req.block_size = sizeof(vrex_hal_block);
        req.offset = i * bytes_;
        req.fp[0] = fi.fp[0];
        req.fp[1] = fi.fp[1] ^ ((std::uint64_t{1} << (2 * i + 1)) - 1);  // 1 and 3 bits away
        req.region = 3;
        vrex_hal_block blk{};
        ASSERT_EQ(vrex_hal_index_host_tier(s, mem, &req, &blk), VREX_HAL_OK) << vrex_hal_stream_last_error(s);
    }
    vrex_hal_candidate out[VREX_HAL_MAX_CANDIDATES];
    std::uint32_t n = 99;
    ASSERT_EQ(
        vrex_hal_retrieve_candidates(s, 3, fi.fp, 8, VREX_HAL_PAST_ONLY | VREX_HAL_TIER_HOST, 8, out, &n),
        VREX_HAL_OK)
        << vrex_hal_stream_last_error(s);
    ASSERT_EQ(n, 2u);
    EXPECT_EQ(out[0].retrieval.distance, 1u);
    EXPECT_EQ(out[1].retrieval.distance, 3u);
    EXPECT_TRUE(out[0].retrieval.hit && out[0].host_tier && out[1].host_tier);
    ASSERT_EQ(vrex_hal_retrieve_candidates(s, 3, fi.fp, 8, VREX_HAL_PAST_ONLY, 8, out, &n), VREX_HAL_OK);
    ASSERT_EQ(n, 3u);
    EXPECT_EQ(out[0].retrieval.block.id, dev_block.id);
    EXPECT_EQ(out[0].host_tier, 0u);
    vrex_hal_retrieval one{};
    ASSERT_EQ(vrex_hal_retrieve_similar(s, 3, fi.fp, 8, VREX_HAL_PAST_ONLY | VREX_HAL_TIER_HOST, &one),
              VREX_HAL_OK);
    EXPECT_TRUE(one.hit);
    EXPECT_EQ(one.distance, 1u);
    EXPECT_EQ(vrex_hal_retrieve_candidates(s, 3, fi.fp, 8, 0, 0, out, &n), VREX_HAL_ERR_INVALID);
    EXPECT_NE(std::string(vrex_hal_stream_last_error(s)).find("max 0 is not in 1..8"), std::string::npos)
        << vrex_hal_stream_last_error(s);
    EXPECT_EQ(vrex_hal_retrieve_candidates(s, 3, fi.fp, 8, 1u << 4, 8, out, &n), VREX_HAL_ERR_INVALID);
    EXPECT_EQ(vrex_hal_retrieve_candidates(s, 3, fi.fp, 8, 0, 8, out, nullptr), VREX_HAL_ERR_INVALID);
    ASSERT_EQ(vrex_hal_end_frame(s, nullptr), VREX_HAL_OK);
    vrex_hal_imported_destroy(mem);
    vrex_hal_stream_destroy(s);
    vrex_hal_allocator_destroy(alloc);
    vrex_hal_device_close(dev);
}

INSTANTIATE_TEST_SUITE_P(Backends, HostTier, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
