// Conformance of the engine API (Device, ModelGeometry, KvAllocator, Stream) on every backend.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "device_test.hpp"
#include "emulated_backend.hpp"
#include "frames.hpp"
#include "vrex/hal.hpp"

namespace vrex {
namespace {

using test::synthetic_frame;

// 2 * 2 layers * 2 heads * 64 dims * 16 tokens * 2 bytes = 16 KiB: the smallest legal block.
constexpr ModelGeometry kGeom{2, 2, 64, DType::fp16, 16};

LumaView view_of(const std::vector<std::uint8_t>& px, std::uint32_t w, std::uint32_t h) {
    return LumaView{px.data(), w, h, w};
}

TEST(ModelGeometry, BlockBytesAndLimits) {
    EXPECT_EQ(*kGeom.block_bytes(), 16384u);
    EXPECT_EQ(*ModelGeometry({32, 8, 128, DType::bf16, 16}).block_bytes(), 2u * 32 * 8 * 128 * 16 * 2);
    EXPECT_EQ(ModelGeometry({1, 1, 64, DType::fp16, 16}).block_bytes().error(), errc::bad_geometry)
        << "4 KiB";
    EXPECT_EQ(ModelGeometry({0, 2, 64, DType::fp16, 16}).block_bytes().error(), errc::bad_geometry);
    EXPECT_EQ(ModelGeometry({2, 2, 64, static_cast<DType>(9), 16}).block_bytes().error(), errc::bad_geometry);
    EXPECT_EQ(ModelGeometry({4096, 4096, 4096, DType::fp32, 4096}).block_bytes().error(), errc::bad_geometry);
    EXPECT_EQ(dtype_size(DType::int8), 1u);
    EXPECT_EQ(dtype_size(DType::fp32), 4u);
}

TEST(DeviceOpen, BackendChoiceByOptionAndEnvironment) {
    EXPECT_EQ(*parse_backend_choice("emu"), BackendChoice::emulated);
    EXPECT_EQ(*parse_backend_choice("kernel"), BackendChoice::kernel);
    EXPECT_EQ(parse_backend_choice("gpu").error(), errc::unknown_backend);

    DeviceOptions o;
    o.backend = BackendChoice::emulated;
    auto d = Device::open(o);
    ASSERT_TRUE(d);
    EXPECT_EQ((*d)->backend_name(), "emulated");
    EXPECT_EQ((*d)->info().simulated, 1u);

    ::setenv("VREX_BACKEND", "emulated", 1);
    auto e = Device::open();
    ASSERT_TRUE(e);
    EXPECT_EQ((*e)->backend_name(), "emulated");
    ::setenv("VREX_BACKEND", "bogus", 1);
    EXPECT_EQ(Device::open().error(), errc::unknown_backend);
    ::setenv("VREX_BACKEND", "bogus", 1);
    EXPECT_TRUE(Device::open(o)) << "an explicit option wins over the environment";
    ::unsetenv("VREX_BACKEND");

    auto a = Device::open();
    ASSERT_TRUE(a);
    EXPECT_EQ((*a)->backend_name(), test::available_backends().front()) << "auto: first available";
    if (!find_backend_factory("kernel") || !find_backend_factory("kernel")->available()) {
        o.backend = BackendChoice::kernel;
        EXPECT_EQ(Device::open(o).error(), errc::no_device);
    }
}

TEST(Errors, MessagesAreClear) {
    EXPECT_NE(make_error_code(errc::device_lost).message().find("lost"), std::string::npos);
    EXPECT_STREQ(make_error_code(errc::device_lost).category().name(), "vrex");
}

class Allocator : public test::DeviceTest {
  protected:
    void SetUp() override {
        ASSERT_NO_FATAL_FAILURE(test::DeviceTest::SetUp());
        alloc_ = allocator(kGeom);
        ASSERT_NE(alloc_, nullptr);
    }
    std::unique_ptr<Stream> stream(StreamOptions o = {}) {
        auto s = alloc_->create_stream(o);
        EXPECT_TRUE(s);
        return s ? std::move(*s) : nullptr;
    }

    std::shared_ptr<KvAllocator> alloc_;
};

TEST_P(Allocator, FrameAllocateRetrieveRoundTrip) {
    auto s = stream();
    auto px = synthetic_frame(320, 240, 1, 0);
    auto f = s->begin_frame(view_of(px, 320, 240));
    ASSERT_TRUE(f) << f.error().message();
    EXPECT_TRUE(s->in_frame());
    EXPECT_EQ(s->begin_frame(view_of(px, 320, 240)).error(), std::errc::device_or_resource_busy);

    auto b = s->allocate(5);
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ(b->data.size(), 16384u);
    EXPECT_GE(b->bank, f->bank_first);
    EXPECT_LT(b->bank, f->bank_first + f->bank_count) << "in the frame's bank group";
    std::memset(b->data.data(), 0x42, b->data.size());
    ASSERT_TRUE(s->end_frame());

    auto px1 = synthetic_frame(320, 240, 1, 1);
    ASSERT_TRUE(s->begin_frame(view_of(px1, 320, 240)));
    auto t = s->retrieve_temporal(5, -1);
    ASSERT_TRUE(t);
    ASSERT_TRUE(t->hit);
    EXPECT_FALSE(t->approximate);
    EXPECT_EQ(t->block.id, b->id);
    EXPECT_EQ(t->block.frame, f->frame);
    ASSERT_EQ(t->block.view.size(), 16384u);
    EXPECT_EQ(static_cast<unsigned char>(t->block.view[100]), 0x42) << "same memory";
    EXPECT_TRUE(t->block.data.empty()) << "end_frame() published it: read-only from then on";

    auto miss = s->retrieve_temporal(6, -1);
    ASSERT_TRUE(miss);
    EXPECT_FALSE(miss->hit);

    auto sim = s->retrieve_similar(5, f->fp, 0);
    ASSERT_TRUE(sim);
    EXPECT_TRUE(sim->hit);
    EXPECT_EQ(sim->distance, 0u);
    EXPECT_EQ(sim->fp, f->fp);
    Fingerprint near = f->fp;
    near.w[1] ^= 0x7;  // 3 bits away
    auto approx = s->retrieve_similar(5, near, 20);
    ASSERT_TRUE(approx);
    EXPECT_TRUE(approx->approximate);
    EXPECT_EQ(approx->distance, 3u);
    auto past = s->retrieve_similar(5, near, 2);
    ASSERT_TRUE(past);
    EXPECT_FALSE(past->hit) << "outside the radius";

    ASSERT_TRUE(s->reuse(5, *b, 1)) << "alias for a predicted frame";
    auto st = alloc_->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->hits, 2u);
    EXPECT_EQ(st->approx_hits, 1u);
    EXPECT_EQ(st->misses, 2u);
    EXPECT_EQ(st->resident_blocks, 1u);
    EXPECT_EQ(st->resident_bytes, 16384u);
    EXPECT_EQ(st->banks[b->bank].resident_blocks, 1u);
    ASSERT_TRUE(s->end_frame());
}

TEST_P(Allocator, BatchesAndErrorsOutsideFrames) {
    auto s = stream();
    EXPECT_EQ(s->allocate(0).error(), errc::not_in_frame);
    EXPECT_EQ(s->end_frame().error(), errc::not_in_frame);
    EXPECT_EQ(s->begin_frame(LumaView{}).error(), std::errc::invalid_argument);
    auto px = synthetic_frame(128, 96, 2, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px, 128, 96)));
    std::vector<std::uint32_t> regions(16);
    for (std::uint32_t r = 0; r < 16; r++) regions[r] = r;
    auto blocks = s->allocate_batch(regions);
    ASSERT_TRUE(blocks);
    ASSERT_EQ(blocks->size(), 16u);
    EXPECT_EQ(s->allocate(16).error(), std::errc::invalid_argument) << "region 0..15";
    EXPECT_EQ(s->allocate(3).error(), std::errc::file_exists) << "one block per (frame, region)";
    std::vector<Query> qs;
    for (std::uint32_t r = 0; r < 16; r++) qs.push_back(Query::temporal(r, 0));
    qs.push_back(Query::similar(0, s->frame().fp, 0));
    auto res = s->retrieve_batch(qs);
    ASSERT_TRUE(res);
    ASSERT_EQ(res->size(), 17u);
    for (std::uint32_t r = 0; r < 16; r++) EXPECT_EQ((*res)[r].block.id, (*blocks)[r].id);
    EXPECT_TRUE((*res)[16].hit);
    ASSERT_TRUE(s->release((*blocks)[0]));
    KvBlock foreign;
    foreign.id = 0xfffff;
    EXPECT_EQ(s->release(foreign).error(), errc::stale_handle);
    auto n = s->end_frame();
    ASSERT_TRUE(n);
    EXPECT_EQ(n->count, 1u);
    auto st = alloc_->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->removed, 1u);
    EXPECT_EQ(st->resident_blocks, 15u);
}

TEST_P(Allocator, ZombiesReturnMemoryAfterZFrames) {
    auto s = stream();
    auto px = synthetic_frame(128, 96, 3, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px, 128, 96)));
    ASSERT_TRUE(s->allocate(1));
    ASSERT_TRUE(s->end_frame());
    const std::uint32_t z = dev_->info().zombie_frames;
    std::uint32_t released = 0;
    std::uint32_t frames = 0;
    while (!released && frames < z + 3) {
        ASSERT_TRUE(s->begin_frame(view_of(px, 128, 96)));
        auto n = s->end_frame();
        ASSERT_TRUE(n);
        released = n->count;
        frames++;
    }
    EXPECT_EQ(released, 1u);
    EXPECT_EQ(frames, z + 1);
    auto st = alloc_->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->evictions, 1u);
    EXPECT_EQ(st->resident_blocks, 0u);
    std::uint64_t slab_bytes = 0;
    for (const BankStats& bs : st->banks) slab_bytes += bs.slab_bytes;
    EXPECT_EQ(slab_bytes, 16u * 16384) << "the slab stays for reuse";
}

TEST_P(Allocator, DmabufExportOfABlock) {
    auto s = stream();
    auto px = synthetic_frame(128, 96, 4, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px, 128, 96)));
    auto b = s->allocate(2);
    ASSERT_TRUE(b);
    auto fd = s->export_dmabuf(*b);
    ASSERT_TRUE(fd) << fd.error().message();
    const std::size_t len = b->offset + b->data.size();
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    ASSERT_NE(p, MAP_FAILED);
    static_cast<unsigned char*>(p)[b->offset + 7] = 0x99;
    EXPECT_EQ(static_cast<unsigned char>(b->data[7]), 0x99);
    munmap(p, len);
    close(*fd);
    ASSERT_TRUE(s->end_frame());
}

TEST_P(Allocator, FourStreamsOnFourThreads) {
    constexpr int kStreams = 4;
    constexpr int kFrames = 12;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kStreams; i++) {
        threads.emplace_back([&, i] {
            auto s = alloc_->create_stream();
            if (!s) {
                failures++;
                return;
            }
            for (int t = 0; t < kFrames; t++) {
                auto px = synthetic_frame(160, 120, 10 + i, t);
                auto f = (*s)->begin_frame(view_of(px, 160, 120));
                auto b = f ? (*s)->allocate(static_cast<std::uint32_t>(i)) : Result<KvBlock>(f.error());
                if (!b) {
                    failures++;
                    return;
                }
                std::memset(b->data.data(), i + 1, b->data.size());
                if (t > 0) {
                    auto r = (*s)->retrieve_temporal(static_cast<std::uint32_t>(i), -1);
                    // Each stream sees its own previous block, filled with its own byte.
                    if (!r || !r->hit || static_cast<int>(r->block.view[0]) != i + 1) failures++;
                }
                if (!(*s)->end_frame()) failures++;
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    auto st = alloc_->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->allocations, static_cast<std::uint64_t>(kStreams * kFrames));
    EXPECT_EQ(st->hits, static_cast<std::uint64_t>(kStreams * (kFrames - 1)));
}

TEST_P(Allocator, PooledStreamsShareLookupsAndReuseBlocks) {
    auto a = stream({true, 7});
    auto b = stream({true, 7});
    auto c = stream();
    auto px = synthetic_frame(160, 120, 20, 0);
    auto fa = a->begin_frame(view_of(px, 160, 120));
    ASSERT_TRUE(fa);
    auto blk = a->allocate(9);
    ASSERT_TRUE(blk);
    ASSERT_TRUE(a->publish(*blk));
    auto fb = b->begin_frame(view_of(px, 160, 120));
    ASSERT_TRUE(fb);
    EXPECT_EQ(fb->group, fa->group) << "pooled streams place similar scenes together";
    auto own = b->retrieve_similar(9, fa->fp, 0, Scope::stream);
    ASSERT_TRUE(own);
    EXPECT_FALSE(own->hit) << "stream scope";
    auto pooled = b->retrieve_similar(9, fa->fp, 0, Scope::pool);
    ASSERT_TRUE(pooled);
    ASSERT_TRUE(pooled->hit);
    EXPECT_EQ(pooled->stream, a->id());
    EXPECT_EQ(pooled->block.id, blk->id);
    ASSERT_TRUE(b->reuse(9, pooled->block));
    auto t = b->retrieve_temporal(9, 0);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->block.id, blk->id) << "alias entry";
    ASSERT_TRUE(c->begin_frame(view_of(px, 160, 120)));
    auto other = c->retrieve_similar(9, fa->fp, 0, Scope::pool);
    ASSERT_TRUE(other);
    EXPECT_FALSE(other->hit) << "another pool";
    ASSERT_TRUE(a->end_frame());
    ASSERT_TRUE(b->end_frame());
    ASSERT_TRUE(c->end_frame());
}

TEST_P(Allocator, GroupFullFallsBackToOtherBanks) {
    auto s = stream();
    auto px = synthetic_frame(128, 96, 30, 0);
    auto f = s->begin_frame(view_of(px, 128, 96));
    ASSERT_TRUE(f);
    // Occupy the frame's whole bank group with other buffers.
    Backend& be = backend_of(*dev_);
    std::vector<std::uint32_t> fillers;
    for (;;) {
        drm_vrex_bo_create a{};
        a.size = 64 * 1024;
        a.bank_mask = ((std::uint64_t{1} << f->bank_count) - 1) << f->bank_first;
        if (be.bo_create(a)) break;
        fillers.push_back(a.handle);
    }
    ASSERT_FALSE(fillers.empty());
    auto b = s->allocate(0);
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_TRUE(b->bank < f->bank_first || b->bank >= f->bank_first + f->bank_count);
    auto st = alloc_->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->fallback_allocations, 1u);
    ASSERT_TRUE(s->end_frame());
    for (std::uint32_t h : fillers) EXPECT_FALSE(be.bo_destroy(h));
}

std::uint64_t device_bo_bytes(Backend& be) {
    auto banks = be.bank_info();
    EXPECT_TRUE(banks);
    std::uint64_t sum = 0;
    for (std::uint32_t b = 0; banks && b < banks->bank_count && b < DRM_VREX_MAX_BANKS; b++)
        sum += banks->bo_bytes[b];
    return sum;
}

std::uint64_t held_slab_bytes(const Stats& st) {
    std::uint64_t sum = 0;
    for (const BankStats& b : st.banks) sum += b.slab_bytes;
    return sum;
}

std::vector<std::uint32_t> iota_regions(std::uint32_t n) {
    std::vector<std::uint32_t> r(n);
    for (std::uint32_t i = 0; i < n; i++) r[i] = i;
    return r;
}

TEST_P(Allocator, EndFrameReturnsEmptySlabsToTheDeviceBeyondTheSpare) {
    constexpr std::uint64_t kSlab = 4 * 16384;
    for (const std::uint32_t spare : {0u, 1u}) {
        auto a = tight_allocator(kGeom, {.blocks_per_slab = 4, .spare_slabs = spare});
        ASSERT_NE(a, nullptr);
        auto s = a->create_stream();
        ASSERT_TRUE(s);
        auto px = synthetic_frame(128, 96, 40, 0);
        ASSERT_TRUE((*s)->begin_frame(view_of(px, 128, 96)));
        // Staging BO in place: from here on only slabs move the device's BO bytes.
        const std::uint64_t before = device_bo_bytes(backend_of(*dev_));
        auto blocks = (*s)->allocate_batch(iota_regions(16));
        ASSERT_TRUE(blocks);
        EXPECT_EQ(device_bo_bytes(backend_of(*dev_)), before + 4 * kSlab);
        for (const KvBlock& b : *blocks) ASSERT_TRUE((*s)->release(b));
        auto n = (*s)->end_frame();
        ASSERT_TRUE(n);
        EXPECT_EQ(n->count, 16u);
        EXPECT_EQ(device_bo_bytes(backend_of(*dev_)), before + spare * kSlab) << "spare " << spare;
        auto st = a->stats();
        ASSERT_TRUE(st);
        EXPECT_EQ(held_slab_bytes(*st), spare * kSlab);
        EXPECT_EQ(st->slabs_created, 4u);
        EXPECT_EQ(st->slabs_released, 4u - spare);

        // The next frame takes the spare before creating a slab.
        ASSERT_TRUE((*s)->begin_frame(view_of(px, 128, 96)));
        ASSERT_TRUE((*s)->allocate(0));
        st = a->stats();
        ASSERT_TRUE(st);
        EXPECT_EQ(st->slabs_created, 4u + (spare ? 0 : 1));
        ASSERT_TRUE((*s)->end_frame());
    }
}

// The emulated device backs a BO when it creates it, as vrex.ko's carveout is backed from probe on:
// a KV block's first writes must not fault its pages in one by one (in a VM several microseconds a
// page, which made every freshly written block -- exact's full cache most of all -- pay for the
// emulation in the prefill's time).
TEST_P(Allocator, ANewSlabIsBackedBeforeItIsWritten) {
    if (dev_->backend_name() != "emulated")
        GTEST_SKIP() << "vrex.ko maps its carveout's pages as they are touched; they are backed already";
    auto s = stream();
    auto px = synthetic_frame(128, 96, 42, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px, 128, 96)));
    auto b = s->allocate(0);
    ASSERT_TRUE(b) << b.error().message();
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto lo = reinterpret_cast<std::uintptr_t>(b->data.data()) / page * page;
    const auto hi = reinterpret_cast<std::uintptr_t>(b->data.data() + b->data.size());
    std::vector<unsigned char> resident((hi - lo + page - 1) / page);
    ASSERT_EQ(::mincore(reinterpret_cast<void*>(lo), hi - lo, resident.data()), 0);  // NOLINT
    for (std::size_t i = 0; i < resident.size(); i++)
        EXPECT_TRUE(resident[i] & 1) << "page " << i << " of a block nobody has written yet";
    EXPECT_EQ(static_cast<unsigned char>(b->data[b->data.size() - 1]), 0) << "a new BO reads as zeros";
    ASSERT_TRUE(s->end_frame());
}

TEST_P(Allocator, ALiveBlockKeepsItsSlabAndItsView) {
    auto a = tight_allocator(kGeom, {.blocks_per_slab = 2});
    ASSERT_NE(a, nullptr);
    auto s = a->create_stream();
    ASSERT_TRUE(s);
    auto px = synthetic_frame(128, 96, 41, 0);
    ASSERT_TRUE((*s)->begin_frame(view_of(px, 128, 96)));
    auto blocks = (*s)->allocate_batch(iota_regions(2));
    ASSERT_TRUE(blocks);
    const KvBlock gone = (*blocks)[0];
    const KvBlock kept = (*blocks)[1];
    ASSERT_EQ(gone.handle, kept.handle) << "one slab";
    std::memset(kept.data.data(), 0x5a, kept.data.size());
    ASSERT_TRUE((*s)->release(gone));
    ASSERT_TRUE((*s)->end_frame());
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->slabs_released, 0u) << "a slab with a live block stays";
    EXPECT_EQ(static_cast<unsigned char>(kept.data[kept.data.size() - 1]), 0x5a);

    // The slab goes with its last block; a new slab may get the same GEM handle (lowest free id),
    // and a retrieval of a block in it must map the new BO, never the destroyed one's memory.
    ASSERT_TRUE((*s)->begin_frame(view_of(px, 128, 96)));
    ASSERT_TRUE((*s)->release(kept));
    ASSERT_TRUE((*s)->end_frame());
    st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->slabs_released, 1u);
    EXPECT_EQ(held_slab_bytes(*st), 0u);
    ASSERT_TRUE((*s)->begin_frame(view_of(px, 128, 96)));
    auto fresh = (*s)->allocate(3);
    ASSERT_TRUE(fresh);
    std::memset(fresh->data.data(), 0x77, fresh->data.size());
    auto r = (*s)->retrieve_temporal(3, 0);
    ASSERT_TRUE(r);
    ASSERT_TRUE(r->hit);
    EXPECT_EQ(r->block.handle, fresh->handle);
    EXPECT_EQ(r->block.data.data(), fresh->data.data()) << "the live slab's mapping";
    EXPECT_EQ(static_cast<unsigned char>(r->block.data[0]), 0x77);
    ASSERT_TRUE((*s)->end_frame());
}

TEST_P(Allocator, FullGroupTakesIdleSlotsElsewhereBeforeANewSlab) {
    auto a = tight_allocator(kGeom, {.blocks_per_slab = 4});
    ASSERT_NE(a, nullptr);
    auto s1 = a->create_stream();
    auto s2 = a->create_stream();
    ASSERT_TRUE(s1 && s2);
    auto px1 = synthetic_frame(128, 96, 42, 0);
    auto f1 = (*s1)->begin_frame(view_of(px1, 128, 96));
    ASSERT_TRUE(f1);
    // Two slabs in the first group, each left with one live block and three free slots.
    auto blocks = (*s1)->allocate_batch(iota_regions(8));
    ASSERT_TRUE(blocks);
    for (std::size_t i = 0; i < blocks->size(); i++) {
        if (i % 4 != 0) {
            ASSERT_TRUE((*s1)->release((*blocks)[i]));
        }
    }
    ASSERT_TRUE((*s1)->end_frame());
    auto st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(held_slab_bytes(*st), 2u * 4 * 16384);

    // Another pool, another scene: a free group of its own.
    auto px2 = synthetic_frame(128, 96, 43, 0);
    auto f2 = (*s2)->begin_frame(view_of(px2, 128, 96));
    ASSERT_TRUE(f2);
    ASSERT_NE(f2->bank_first, f1->bank_first) << "the test needs two bank groups";
    auto in_f2 = [&](const KvBlock& b) {
        return b.bank >= f2->bank_first && b.bank < f2->bank_first + f2->bank_count;
    };
    // Six idle slots outside the group (>= one slab): they are used before a new slab.
    for (std::uint32_t r = 0; r < 2; r++) {
        auto b = (*s2)->allocate(r);
        ASSERT_TRUE(b);
        EXPECT_FALSE(in_f2(*b));
    }
    st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->fallback_allocations, 2u);
    EXPECT_EQ(held_slab_bytes(*st), 2u * 4 * 16384) << "no new slab";
    // Four idle slots left, still a slab's worth: one more borrowed; then three: a slab in the group.
    auto third = (*s2)->allocate(2);
    ASSERT_TRUE(third);
    EXPECT_FALSE(in_f2(*third));
    auto fourth = (*s2)->allocate(3);
    ASSERT_TRUE(fourth);
    EXPECT_TRUE(in_f2(*fourth)) << "idle memory below a slab: placement stays in the group";
    st = a->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->fallback_allocations, 3u);
    EXPECT_EQ(held_slab_bytes(*st), 3u * 4 * 16384);
    ASSERT_TRUE((*s2)->end_frame());
}

TEST_P(Allocator, DeviceLossIsAnErrorNotACrash) {
    auto* emu = dynamic_cast<EmulatedBackend*>(&backend_of(*dev_));
    if (!emu) GTEST_SKIP() << "device loss is injected through the emulation (kernel: QEMU hot-unplug tests)";
    auto s = stream();
    auto px = synthetic_frame(128, 96, 5, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px, 128, 96)));
    auto b = s->allocate(0);
    ASSERT_TRUE(b);
    emu->simulate_device_loss();
    EXPECT_EQ(s->allocate(1).error(), errc::device_lost);
    EXPECT_EQ(s->retrieve_temporal(0, 0).error(), errc::device_lost);
    EXPECT_EQ(s->end_frame().error(), errc::device_lost);
    EXPECT_EQ(alloc_->stats().error(), errc::device_lost);
    EXPECT_EQ(alloc_->create_stream().error(), errc::device_lost);
    b->data[0] = std::byte{1};  // the mapping stays valid until the device object goes
    // A new open gets a fresh device.
    auto fresh = test::open_backend(GetParam());
    ASSERT_NE(fresh, nullptr);
    EXPECT_TRUE(fresh->device_info());
}

INSTANTIATE_TEST_SUITE_P(Backends, Allocator, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
