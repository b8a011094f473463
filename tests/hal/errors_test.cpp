// Errors with context (docs/hal.md "Errors") and release_batch on every backend: the C++ Result
// carries vrex::Error (code + where it failed), the C ABI keeps the message per stream and per
// thread, and the C batch calls are all or nothing like the C++ ones.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "device_test.hpp"
#include "frames.hpp"
#include "vrex/hal.hpp"
#include "vrex/vrex_hal.h"

namespace vrex {
namespace {

using test::synthetic_frame;
using test::view_of;

// A message that names its context: @needle somewhere in @hay.
#define EXPECT_HAS(hay, needle) \
    EXPECT_NE(std::string(hay).find(needle), std::string::npos) << "message: " << (hay)

constexpr ModelGeometry kSmall{2, 2, 64, DType::fp16, 16};  // 16 KiB blocks

class Errors : public test::DeviceTest {
  protected:
};

TEST_P(Errors, OutOfDeviceMemoryNamesTheCallFrameRegionAndBankGroup) {
    AllocatorOptions o;
    o.blocks_per_slab = 1;
    o.spare_slabs = 0;
    // Half-bank blocks: device memory fills after two blocks a bank.
    const ModelGeometry big{static_cast<std::uint32_t>(dev_->info().bank_size / 2 / (64 * 1024)), 8, 128,
                            DType::bf16, 16};
    auto a = allocator(big, o);
    ASSERT_TRUE(a);
    auto s = a->create_stream();
    ASSERT_TRUE(s);
    auto px = synthetic_frame(128, 96, 61, 0);
    std::string msg;
    std::uint32_t frame = 0;
    for (int f = 0; f < 64 && msg.empty(); f++) {
        auto fi = (*s)->begin_frame(view_of(px));
        ASSERT_TRUE(fi) << fi.error_message();
        frame = fi->frame;
        for (std::uint32_t r = 0; r < 8 && msg.empty(); r++) {
            auto b = (*s)->allocate(r);
            if (!b) {
                EXPECT_EQ(b.error(), std::errc::no_space_on_device);
                msg = b.error_message();
                EXPECT_HAS(msg, "region " + std::to_string(r));
            }
        }
        ASSERT_TRUE((*s)->end_frame());
    }
    ASSERT_FALSE(msg.empty()) << "device memory never ran out";
    EXPECT_HAS(msg,
               "allocate (stream " + std::to_string((*s)->id()) + ", frame " + std::to_string(frame) + ")");
    EXPECT_HAS(msg, "block for frame " + std::to_string(frame));
    EXPECT_HAS(msg, "bank group (banks ");
    EXPECT_HAS(msg, "full");
    EXPECT_HAS(msg, std::make_error_code(std::errc::no_space_on_device).message());
}

TEST_P(Errors, StaleHandlesBadPlanesAndBadGeometryCarryContext) {
    auto bad = KvAllocator::create(dev_, ModelGeometry{0, 2, 64, DType::fp16, 16});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error(), errc::bad_geometry);
    EXPECT_HAS(bad.error_message(), "create KV allocator: geometry (layers 0, kv_heads 2");

    auto a = allocator(kSmall);
    auto s = a->create_stream().value();
    const std::vector<std::uint8_t> none;
    auto f = s->begin_frame(LumaView{nullptr, 0, 96, 128});
    EXPECT_EQ(f.error(), std::errc::invalid_argument);
    EXPECT_HAS(f.error_message(), "begin frame (stream " + std::to_string(s->id()) + "): luma plane 0x96");

    auto px = synthetic_frame(128, 96, 62, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    auto again = s->begin_frame(view_of(px));
    EXPECT_EQ(again.error(), std::errc::device_or_resource_busy);
    EXPECT_HAS(again.error_message(), "is still open");
    auto b = s->allocate(5);
    ASSERT_TRUE(b);
    ASSERT_TRUE(s->release(*b));
    ASSERT_TRUE(s->end_frame());
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    auto stale = s->release(*b);
    EXPECT_EQ(stale.error(), errc::stale_handle);
    const std::string handle =
        "id " + std::to_string(b->id) + ", generation " + std::to_string(b->generation);
    EXPECT_HAS(stale.error_message(), "release (stream " + std::to_string(s->id()));
    EXPECT_HAS(stale.error_message(), handle);
    EXPECT_HAS(stale.error_message(), "stale");
    auto pin = s->pin(*b);
    EXPECT_HAS(pin.error_message(), "pin block (" + handle + ")");
    // The throwing helper carries the same message.
    try {
        std::move(s->pin(*b)).value_or_throw();
        ADD_FAILURE() << "no exception";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code(), errc::stale_handle);
        EXPECT_HAS(std::string(e.what()), "pin block (" + handle + ")");
    }
    auto dup = s->allocate_batch(std::vector<std::uint32_t>{1, 2, 1});
    EXPECT_EQ(dup.error(), std::errc::file_exists);
    EXPECT_HAS(dup.error_message(), "allocate batch of 3 blocks");
    EXPECT_HAS(dup.error_message(), "region 1: SHIE insert");
    ASSERT_TRUE(s->end_frame());
}

TEST_P(Errors, ReleaseBatchIsAllOrNothing) {
    auto a = allocator(kSmall);
    auto s = a->create_stream().value();
    auto other = a->create_stream().value();
    auto px = synthetic_frame(128, 96, 63, 0);
    ASSERT_TRUE(s->begin_frame(view_of(px)));
    auto blocks = s->allocate_batch(std::vector<std::uint32_t>{0, 1, 2});
    ASSERT_TRUE(blocks);
    KvBlock stale = (*blocks)[2];
    stale.generation += 1;
    std::vector<KvBlock> mixed = {(*blocks)[0], (*blocks)[1], stale};
    auto r = s->release_batch(mixed);
    EXPECT_EQ(r.error(), errc::stale_handle);
    EXPECT_HAS(r.error_message(), "release batch of 3 blocks");
    EXPECT_HAS(r.error_message(), "block 2 (id");
    // A block of another stream that this stream does not reference: ENOENT, nothing released.
    ASSERT_TRUE(other->begin_frame(view_of(px)));
    auto foreign = other->allocate(9);
    ASSERT_TRUE(foreign);
    std::vector<KvBlock> with_foreign = {(*blocks)[0], *foreign};
    EXPECT_EQ(s->release_batch(with_foreign).error(), std::errc::no_such_file_or_directory);
    auto fe = s->end_frame();
    ASSERT_TRUE(fe);
    EXPECT_EQ(fe->count, 0u) << "a failed batch released nothing";

    ASSERT_TRUE(s->begin_frame(view_of(px)));
    ASSERT_TRUE(s->release_batch(*blocks));
    fe = s->end_frame();
    ASSERT_TRUE(fe);
    EXPECT_EQ(fe->count, 3u);
    for (const ReleasedBlock& rb : fe->released) EXPECT_EQ(rb.reason, ReleaseReason::removed);
    ASSERT_TRUE(other->end_frame());
}

INSTANTIATE_TEST_SUITE_P(Backends, Errors, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

// ---- C ABI -------------------------------------------------------------------------------------

struct CHandles {
    vrex_hal_device* dev = nullptr;
    vrex_hal_allocator* alloc = nullptr;
    vrex_hal_stream* s = nullptr;
    ~CHandles() {
        vrex_hal_stream_destroy(s);
        vrex_hal_allocator_destroy(alloc);
        vrex_hal_device_close(dev);
    }
};

TEST(CApiErrors, LastErrorPerThreadAndPerStream) {
    CHandles h;
    EXPECT_EQ(vrex_hal_device_open("gpu", &h.dev), VREX_HAL_ERR_UNKNOWN_BACKEND);
    EXPECT_HAS(std::string(vrex_hal_last_error()), "vrex_hal_device_open: ");
    EXPECT_HAS(std::string(vrex_hal_last_error()), "unknown vrex backend");
    ASSERT_EQ(vrex_hal_device_open("emulated", &h.dev), VREX_HAL_OK);
    vrex_hal_geometry bad{0, 2, 64, VREX_HAL_FP16, 16, 0};
    EXPECT_EQ(vrex_hal_allocator_create(h.dev, &bad, &h.alloc), VREX_HAL_ERR_BAD_GEOMETRY);
    EXPECT_HAS(std::string(vrex_hal_last_error()), "geometry (layers 0");
    vrex_hal_allocator_options o{};
    o.struct_size = sizeof(o) + 8;
    std::vector<unsigned char> bigger(sizeof(o) + 8, 0);
    std::memcpy(bigger.data(), &o, sizeof(o));
    bigger.back() = 1;
    vrex_hal_geometry g{2, 2, 64, VREX_HAL_FP16, 16, 0};
    EXPECT_EQ(vrex_hal_allocator_create_with(
                  h.dev, &g, reinterpret_cast<vrex_hal_allocator_options*>(bigger.data()), &h.alloc),
              VREX_HAL_ERR_INVALID);
    EXPECT_HAS(std::string(vrex_hal_last_error()),
               "allocator options: byte " + std::to_string(sizeof(o) + 7));
    ASSERT_EQ(vrex_hal_allocator_create(h.dev, &g, &h.alloc), VREX_HAL_OK);
    ASSERT_EQ(vrex_hal_stream_create(h.alloc, 0, 0, &h.s), VREX_HAL_OK);
    EXPECT_STREQ(vrex_hal_stream_last_error(h.s), "");
    vrex_hal_block b{};
    EXPECT_EQ(vrex_hal_allocate(h.s, 3, 0, &b), VREX_HAL_ERR_NOT_IN_FRAME);
    const std::string stream_msg = vrex_hal_stream_last_error(h.s);
    EXPECT_HAS(stream_msg, "vrex_hal_allocate: allocate (stream ");
    EXPECT_HAS(stream_msg, "begin_frame first");
    EXPECT_EQ(stream_msg, std::string(vrex_hal_last_error()));
    // Another thread's failure does not touch this thread's message; the stream keeps its own.
    std::thread([] {
        vrex_hal_device* d = nullptr;
        EXPECT_EQ(vrex_hal_device_open("nope", &d), VREX_HAL_ERR_UNKNOWN_BACKEND);
    }).join();
    EXPECT_EQ(stream_msg, std::string(vrex_hal_last_error()));
    EXPECT_EQ(vrex_hal_device_open("nope", &h.dev), VREX_HAL_ERR_UNKNOWN_BACKEND);
    EXPECT_EQ(stream_msg, std::string(vrex_hal_stream_last_error(h.s))) << "a call on no stream leaves it";
}

// Every argument the C ABI refuses is named in the last error, with its valid range or values.
TEST(CApiErrors, ArgumentErrorsNameTheArgumentAndTheValidRange) {
    CHandles h;
    ASSERT_EQ(vrex_hal_device_open("emulated", &h.dev), VREX_HAL_OK);
    const vrex_hal_geometry qwen{28, 4, 128, VREX_HAL_BF16, 16, 0};  // 896 KiB blocks: 4 a bank
    ASSERT_EQ(vrex_hal_allocator_create(h.dev, &qwen, &h.alloc), VREX_HAL_OK);
    ASSERT_EQ(vrex_hal_stream_create(h.alloc, 0, 0, &h.s), VREX_HAL_OK);
    auto px = synthetic_frame(128, 96, 65, 0);
    ASSERT_EQ(vrex_hal_begin_frame(h.s, px.data(), 128, 96, 128, nullptr), VREX_HAL_OK);
    vrex_hal_block b{};
    vrex_hal_retrieval r{};
    const uint64_t fp[2] = {1, 2};
    uint32_t count = 0;
    vrex_hal_allocator* a = nullptr;
    vrex_hal_allocator_options o{};
    o.struct_size = sizeof(o);
    const std::vector<std::uint32_t> regions = {0, 1, 2};
    vrex_hal_batch batch{};
    batch.struct_size = sizeof(batch);
    batch.block_size = sizeof(vrex_hal_block);
    batch.count = 3;
    batch.blocks = &b;
    vrex_hal_stats st{};

    struct Case {
        const char* what;
        std::function<vrex_hal_status()> call;
        vrex_hal_status status;
        std::string message;
    };
    const Case cases[] = {
        {"NULL stream", [&] { return vrex_hal_allocate(nullptr, 0, 0, &b); }, VREX_HAL_ERR_INVALID,
         "vrex_hal_allocate: stream is NULL"},
        {"NULL block", [&] { return vrex_hal_allocate(h.s, 0, 0, nullptr); }, VREX_HAL_ERR_INVALID,
         "vrex_hal_allocate: block is NULL"},
        {"NULL fp", [&] { return vrex_hal_retrieve_similar(h.s, 0, nullptr, 3, 0, &r); },
         VREX_HAL_ERR_INVALID, "vrex_hal_retrieve_similar: fp is NULL"},
        {"unknown flags", [&] { return vrex_hal_retrieve_similar(h.s, 0, fp, 3, 0x80, &r); },
         VREX_HAL_ERR_INVALID,
         "flags 0x80 has unknown bits 0x80 (valid: VREX_HAL_SCOPE_POOL | VREX_HAL_PAST_ONLY | "
         "VREX_HAL_TIER_DEVICE "
         "| VREX_HAL_TIER_HOST)"},
        {"released capacity", [&] { return vrex_hal_released_blocks(h.s, nullptr, 4, &count); },
         VREX_HAL_ERR_INVALID, "out is NULL with capacity 4 (valid: NULL only with capacity 0)"},
        {"NULL stats", [&] { return vrex_hal_get_stats(h.alloc, nullptr); }, VREX_HAL_ERR_INVALID,
         "vrex_hal_get_stats: stats is NULL"},
        {"stats struct_size", [&] { return vrex_hal_get_stats(h.alloc, &st); }, VREX_HAL_ERR_INVALID,
         "stats: struct_size 0 is below 8 (valid: 8 and up; sizeof is " + std::to_string(sizeof(st)) + ")"},
        {"allocator flags",
         [&] {
             o.flags = 1u << 7;
             return vrex_hal_allocator_create_with(h.dev, &qwen, &o, &a);
         },
         VREX_HAL_ERR_INVALID,
         "allocator options: flags 0x80 has unknown bits 0x80 (valid: VREX_HAL_ALLOC_EVICT_UNDER_PRESSURE | "
         "VREX_HAL_ALLOC_SPARE_SLABS | VREX_HAL_ALLOC_PAGE_ALIGNED)"},
        {"blocks_per_slab",
         [&] {
             o.flags = 0;
             o.blocks_per_slab = 16;
             return vrex_hal_allocator_create_with(h.dev, &qwen, &o, &a);
         },
         VREX_HAL_ERR_INVALID,
         "blocks_per_slab 16 blocks of 917504 bytes do not fit a bank of 4194304 bytes (valid: 0 for the "
         "default, 1..4)"},
        {"options struct_size",
         [&] {
             o.struct_size = 2;
             return vrex_hal_allocator_create_with(h.dev, &qwen, &o, &a);
         },
         VREX_HAL_ERR_INVALID, "allocator options: struct_size 2 is below 4 (valid: 4.."},
        {"geometry",
         [&] {
             const vrex_hal_geometry g{28, 4, 0, VREX_HAL_BF16, 16, 0};
             return vrex_hal_allocator_create(h.dev, &g, &a);
         },
         VREX_HAL_ERR_BAD_GEOMETRY, "vrex_hal_allocator_create: create KV allocator: geometry (layers 28"},
        {"geometry field",
         [&] {
             const vrex_hal_geometry g{28, 4, 0, VREX_HAL_BF16, 16, 0};
             return vrex_hal_allocator_create(h.dev, &g, &a);
         },
         VREX_HAL_ERR_BAD_GEOMETRY, "head_dim is 0 (valid: 1..4294967295"},
        {"batch flags",
         [&] {
             batch.flags = 1;
             return vrex_hal_allocate_batch(h.s, &batch);
         },
         VREX_HAL_ERR_INVALID, "batch: flags 0x1 (valid: 0)"},
        {"batch regions",
         [&] {
             batch.flags = 0;
             return vrex_hal_allocate_batch(h.s, &batch);
         },
         VREX_HAL_ERR_INVALID, "batch: regions is NULL with count 3 (valid: NULL only with count 0)"},
        {"batch block_size",
         [&] {
             batch.regions = regions.data();
             batch.block_size = 8;
             return vrex_hal_allocate_batch(h.s, &batch);
         },
         VREX_HAL_ERR_INVALID,
         "batch: block_size 8 is below sizeof(struct vrex_hal_block) " +
             std::to_string(sizeof(vrex_hal_block)) + " (valid: " + std::to_string(sizeof(vrex_hal_block)) +
             " and up)"},
    };
    for (const Case& c : cases) {
        EXPECT_EQ(c.call(), c.status) << c.what;
        EXPECT_HAS(std::string(vrex_hal_last_error()), c.message) << c.what;
    }
    EXPECT_EQ(a, nullptr) << "no allocator made by a refused call";
    ASSERT_EQ(vrex_hal_end_frame(h.s, nullptr), VREX_HAL_OK);
}

TEST(CApiErrors, BatchesAreSizePrefixedAndAllOrNothing) {
    CHandles h;
    ASSERT_EQ(vrex_hal_device_open("emulated", &h.dev), VREX_HAL_OK);
    vrex_hal_geometry g{2, 2, 64, VREX_HAL_FP16, 16, 0};
    ASSERT_EQ(vrex_hal_allocator_create(h.dev, &g, &h.alloc), VREX_HAL_OK);
    ASSERT_EQ(vrex_hal_stream_create(h.alloc, 0, 0, &h.s), VREX_HAL_OK);
    auto px = synthetic_frame(128, 96, 64, 0);
    ASSERT_EQ(vrex_hal_begin_frame(h.s, px.data(), 128, 96, 128, nullptr), VREX_HAL_OK);

    // A newer caller's block struct (16 bytes longer): the stride is honoured, the tail zeroed.
    struct Wide {
        vrex_hal_block b;
        std::uint64_t future[2];
    };
    std::vector<Wide> out(4);
    for (Wide& w : out) w.future[0] = w.future[1] = 0xdeadbeef;
    std::vector<std::uint32_t> regions = {0, 1, 2, 1};  // region 1 twice: EEXIST
    vrex_hal_batch batch{};
    batch.struct_size = sizeof(batch);
    batch.block_size = sizeof(Wide);
    batch.count = 4;
    batch.regions = regions.data();
    batch.blocks = &out[0].b;
    EXPECT_EQ(vrex_hal_allocate_batch(h.s, &batch), VREX_HAL_ERR_EXIST);
    EXPECT_HAS(std::string(vrex_hal_stream_last_error(h.s)), "region 1: SHIE insert");
    vrex_hal_stats st{};
    st.struct_size = sizeof(st);
    ASSERT_EQ(vrex_hal_get_stats(h.alloc, &st), VREX_HAL_OK);
    EXPECT_EQ(st.resident_blocks, 0u) << "all or nothing";

    batch.count = 3;
    batch.block_size = sizeof(vrex_hal_block) - 4;
    EXPECT_EQ(vrex_hal_allocate_batch(h.s, &batch), VREX_HAL_ERR_INVALID);
    EXPECT_HAS(std::string(vrex_hal_stream_last_error(h.s)), "block_size");
    batch.block_size = sizeof(Wide);
    batch.flags = 1;
    EXPECT_EQ(vrex_hal_allocate_batch(h.s, &batch), VREX_HAL_ERR_INVALID);
    batch.flags = 0;
    batch.struct_size = 8;
    EXPECT_EQ(vrex_hal_allocate_batch(h.s, &batch), VREX_HAL_ERR_INVALID);
    EXPECT_HAS(std::string(vrex_hal_stream_last_error(h.s)), "struct_size 8");
    batch.struct_size = sizeof(batch);
    ASSERT_EQ(vrex_hal_allocate_batch(h.s, &batch), VREX_HAL_OK) << vrex_hal_stream_last_error(h.s);
    for (std::uint32_t i = 0; i < 3; i++) {
        EXPECT_EQ(out[i].b.region, regions[i]);
        EXPECT_EQ(out[i].b.size, 16384u);
        EXPECT_NE(out[i].b.generation, 0u);
        EXPECT_EQ(out[i].future[0], 0u);
        EXPECT_EQ(out[i].future[1], 0u);
    }
    EXPECT_EQ(out[3].future[0], 0xdeadbeefu) << "only count entries written";

    // Release: a stale handle among them fails the whole batch.
    std::vector<vrex_hal_block> rel = {out[0].b, out[1].b, out[2].b};
    rel[1].generation += 7;
    vrex_hal_batch rb{};
    rb.struct_size = sizeof(rb);
    rb.block_size = sizeof(vrex_hal_block);
    rb.count = 3;
    rb.blocks = rel.data();
    EXPECT_EQ(vrex_hal_release_batch(h.s, &rb), VREX_HAL_ERR_STALE);
    EXPECT_HAS(std::string(vrex_hal_stream_last_error(h.s)), "block 1 (id " + std::to_string(rel[1].id));
    uint32_t released = 99;
    ASSERT_EQ(vrex_hal_end_frame(h.s, &released), VREX_HAL_OK);
    EXPECT_EQ(released, 0u);
    ASSERT_EQ(vrex_hal_begin_frame(h.s, px.data(), 128, 96, 128, nullptr), VREX_HAL_OK);
    rel[1].generation -= 7;
    ASSERT_EQ(vrex_hal_release_batch(h.s, &rb), VREX_HAL_OK);
    ASSERT_EQ(vrex_hal_end_frame(h.s, &released), VREX_HAL_OK);
    EXPECT_EQ(released, 3u);
}

}  // namespace
}  // namespace vrex
