// The C ABI: status codes, handles and the same results as the C++ API (emulated backend).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "backends.hpp"
#include "frames.hpp"
#include "vrex/vrex_hal.h"

namespace {

TEST(CApi, RoundTripAndStatusCodes) {
    vrex_hal_device* dev = nullptr;
    EXPECT_EQ(vrex_hal_device_open("gpu", &dev), VREX_HAL_ERR_UNKNOWN_BACKEND);
    ASSERT_EQ(vrex_hal_device_open("emulated", &dev), VREX_HAL_OK);
    EXPECT_STREQ(vrex_hal_device_backend(dev), "emulated");

    vrex_hal_allocator* alloc = nullptr;
    vrex_hal_geometry small{1, 1, 64, VREX_HAL_FP16, 16, 0};
    EXPECT_EQ(vrex_hal_allocator_create(dev, &small, &alloc), VREX_HAL_ERR_BAD_GEOMETRY);
    vrex_hal_geometry g{2, 2, 64, VREX_HAL_FP16, 16, 0};
    ASSERT_EQ(vrex_hal_allocator_create(dev, &g, &alloc), VREX_HAL_OK);
    vrex_hal_device_close(dev);  // the allocator keeps the device alive
    EXPECT_EQ(vrex_hal_allocator_block_bytes(alloc), 16384u);

    vrex_hal_stream* s = nullptr;
    ASSERT_EQ(vrex_hal_stream_create(alloc, 0, 0, &s), VREX_HAL_OK);
    vrex_hal_block b{};
    EXPECT_EQ(vrex_hal_allocate(s, 0, 0, &b), VREX_HAL_ERR_NOT_IN_FRAME);
    auto px = vrex::test::synthetic_frame(128, 96, 1, 0);
    vrex_hal_frame_info fi{};
    ASSERT_EQ(vrex_hal_begin_frame(s, px.data(), 128, 96, 128, &fi), VREX_HAL_OK);
    ASSERT_EQ(vrex_hal_allocate(s, 4, 0, &b), VREX_HAL_OK);
    EXPECT_EQ(b.size, 16384u);
    EXPECT_EQ(vrex_hal_allocate(s, 4, 0, &b), VREX_HAL_ERR_EXIST);
    EXPECT_EQ(vrex_hal_allocate(s, 4, -1, &b), VREX_HAL_ERR_RANGE) << "before frame 0";
    static_cast<unsigned char*>(b.data)[0] = 7;
    vrex_hal_retrieval r{};
    ASSERT_EQ(vrex_hal_retrieve_similar(s, 4, fi.fp, 0, 0, &r), VREX_HAL_OK);
    EXPECT_EQ(r.hit, 1u);
    EXPECT_EQ(r.block.id, b.id);
    EXPECT_EQ(static_cast<unsigned char*>(r.block.data)[0], 7);
    EXPECT_EQ(vrex_hal_retrieve_similar(s, 4, fi.fp, 0, 0x80, &r), VREX_HAL_ERR_INVALID);
    int fd = -1;
    ASSERT_EQ(vrex_hal_export_dmabuf(s, &b, &fd), VREX_HAL_OK);
    EXPECT_GE(fd, 0);
    close(fd);
    uint32_t released = 99;
    ASSERT_EQ(vrex_hal_end_frame(s, &released), VREX_HAL_OK);
    EXPECT_EQ(released, 0u);
    vrex_hal_stats st{};
    st.struct_size = sizeof(st);
    ASSERT_EQ(vrex_hal_get_stats(alloc, &st), VREX_HAL_OK);
    EXPECT_EQ(st.hits, 1u);
    EXPECT_EQ(st.resident_blocks, 1u);
    EXPECT_EQ(st.bank_resident_blocks[b.bank], 1u);
    EXPECT_STRNE(vrex_hal_strerror(VREX_HAL_ERR_DEVICE_LOST), vrex_hal_strerror(VREX_HAL_ERR_IO));
    vrex_hal_stream_destroy(s);
    vrex_hal_allocator_destroy(alloc);
}

}  // namespace

namespace {

struct Seen {
    std::vector<vrex_hal_released> blocks;
};

void on_release(void* user, const vrex_hal_released* blocks, uint32_t count) {
    auto* seen = static_cast<Seen*>(user);
    seen->blocks.insert(seen->blocks.end(), blocks, blocks + count);
}

TEST(CApi, StaleHandlesReleaseListsAndCallbacks) {
    vrex_hal_device* dev = nullptr;
    ASSERT_EQ(vrex_hal_device_open("emulated", &dev), VREX_HAL_OK);
    vrex_hal_allocator* alloc = nullptr;
    vrex_hal_geometry g{2, 2, 64, VREX_HAL_FP16, 16, 0};
    ASSERT_EQ(vrex_hal_allocator_create(dev, &g, &alloc), VREX_HAL_OK);
    vrex_hal_device_close(dev);
    vrex_hal_stream* s = nullptr;
    ASSERT_EQ(vrex_hal_stream_create(alloc, 0, 0, &s), VREX_HAL_OK);
    Seen seen;
    ASSERT_EQ(vrex_hal_stream_on_release(s, on_release, &seen), VREX_HAL_OK);
    int efd = -1;
    ASSERT_EQ(vrex_hal_stream_release_fd(s, &efd), VREX_HAL_OK);
    EXPECT_GE(efd, 0);

    auto px = vrex::test::synthetic_frame(128, 96, 2, 0);
    ASSERT_EQ(vrex_hal_begin_frame(s, px.data(), 128, 96, 128, nullptr), VREX_HAL_OK);
    vrex_hal_block b{};
    ASSERT_EQ(vrex_hal_allocate(s, 1, 0, &b), VREX_HAL_OK);
    EXPECT_NE(b.generation, 0u);
    EXPECT_EQ(b.flags & VREX_HAL_BLOCK_SHARED, 0u);
    ASSERT_EQ(vrex_hal_release(s, &b), VREX_HAL_OK);
    uint32_t n = 0;
    ASSERT_EQ(vrex_hal_end_frame(s, &n), VREX_HAL_OK);
    EXPECT_EQ(n, 1u);
    vrex_hal_released rel[4]{};
    uint32_t count = 0;
    ASSERT_EQ(vrex_hal_released_blocks(s, rel, 4, &count), VREX_HAL_OK);
    ASSERT_EQ(count, 1u);
    EXPECT_EQ(rel[0].id, b.id);
    EXPECT_EQ(rel[0].generation, b.generation);
    EXPECT_EQ(rel[0].reason, static_cast<uint32_t>(VREX_HAL_RELEASE_REMOVED));
    EXPECT_EQ(rel[0].memory_freed, 1u);
    ASSERT_EQ(seen.blocks.size(), 1u);
    EXPECT_EQ(seen.blocks[0].id, b.id);
    uint64_t ev = 0;
    EXPECT_EQ(read(efd, &ev, sizeof(ev)), static_cast<ssize_t>(sizeof(ev)));
    EXPECT_EQ(ev, 1u);

    ASSERT_EQ(vrex_hal_begin_frame(s, px.data(), 128, 96, 128, nullptr), VREX_HAL_OK);
    vrex_hal_block again{};
    ASSERT_EQ(vrex_hal_allocate(s, 1, 0, &again), VREX_HAL_OK);
    EXPECT_EQ(again.id, b.id) << "recycled id";
    EXPECT_EQ(vrex_hal_release(s, &b), VREX_HAL_ERR_STALE);
    EXPECT_EQ(vrex_hal_pin(s, &b), VREX_HAL_ERR_STALE);
    EXPECT_NE(std::string(vrex_hal_strerror(VREX_HAL_ERR_STALE)).find("stale"), std::string::npos);
    ASSERT_EQ(vrex_hal_pin(s, &again), VREX_HAL_OK);
    ASSERT_EQ(vrex_hal_unpin(s, &again), VREX_HAL_OK);
    vrex_hal_block same{};
    ASSERT_EQ(vrex_hal_copy_on_write(s, &again, 2, 0, &same), VREX_HAL_OK);
    EXPECT_EQ(same.data, again.data) << "sole owner: the block itself";
    ASSERT_EQ(vrex_hal_end_frame(s, &n), VREX_HAL_OK);
    EXPECT_EQ(n, 0u);
    ASSERT_EQ(vrex_hal_stream_on_release(s, nullptr, nullptr), VREX_HAL_OK);
    vrex_hal_stream_destroy(s);
    vrex_hal_allocator_destroy(alloc);
}

}  // namespace

namespace {

TEST(CApi, VersionAndSizePrefixedAllocatorOptions) {
    EXPECT_EQ(vrex_hal_version(), static_cast<uint32_t>(VREX_HAL_VERSION));
    EXPECT_EQ(vrex_hal_version() >> 16, static_cast<uint32_t>(VREX_HAL_VERSION_MAJOR));
    vrex_hal_device* dev = nullptr;
    ASSERT_EQ(vrex_hal_device_open("emulated", &dev), VREX_HAL_OK);
    // Qwen2-VL-7B: the default options did not fit a 4 MiB bank before blocks_per_slab = 0 (auto).
    vrex_hal_geometry qwen{28, 4, 128, VREX_HAL_BF16, 16, 0};
    vrex_hal_allocator* a = nullptr;
    ASSERT_EQ(vrex_hal_allocator_create(dev, &qwen, &a), VREX_HAL_OK);
    EXPECT_EQ(vrex_hal_allocator_block_bytes(a), 917504u);
    vrex_hal_allocator_destroy(a);

    vrex_hal_allocator_options o{};
    o.struct_size = sizeof(o);
    o.blocks_per_slab = 16;  // 16 x 896 KiB does not fit a bank
    EXPECT_EQ(vrex_hal_allocator_create_with(dev, &qwen, &o, &a), VREX_HAL_ERR_INVALID);
    o.blocks_per_slab = 2;
    o.flags = VREX_HAL_ALLOC_EVICT_UNDER_PRESSURE | VREX_HAL_ALLOC_SPARE_SLABS;
    ASSERT_EQ(vrex_hal_allocator_create_with(dev, &qwen, &o, &a), VREX_HAL_OK);
    vrex_hal_allocator_destroy(a);
    o.flags = 1u << 7;
    EXPECT_EQ(vrex_hal_allocator_create_with(dev, &qwen, &o, &a), VREX_HAL_ERR_INVALID) << "unknown flag";

    // An older caller's smaller struct: only struct_size and blocks_per_slab.
    o = vrex_hal_allocator_options{};
    o.struct_size = 8;
    o.blocks_per_slab = 3;
    o.flags = 0xff;  // past struct_size: ignored
    ASSERT_EQ(vrex_hal_allocator_create_with(dev, &qwen, &o, &a), VREX_HAL_OK);
    vrex_hal_allocator_destroy(a);
    o.struct_size = 2;
    EXPECT_EQ(vrex_hal_allocator_create_with(dev, &qwen, &o, &a), VREX_HAL_ERR_INVALID);

    // A newer caller's larger struct: accepted when the unknown tail is zero.
    struct {
        vrex_hal_allocator_options base;
        uint32_t future[2];
    } newer{};
    newer.base.struct_size = sizeof(newer);
    ASSERT_EQ(vrex_hal_allocator_create_with(dev, &qwen, &newer.base, &a), VREX_HAL_OK);
    vrex_hal_allocator_destroy(a);
    newer.future[1] = 1;
    EXPECT_EQ(vrex_hal_allocator_create_with(dev, &qwen, &newer.base, &a), VREX_HAL_ERR_INVALID);
    vrex_hal_device_close(dev);
}

}  // namespace

// ---- 1.0: device options, block layout (fp8, scales), page-aligned blocks, size-prefixed stats ----

namespace {

#define EXPECT_HAS(hay, needle) \
    EXPECT_NE(std::string(hay).find(needle), std::string::npos) << "message: " << (hay)

vrex_hal_device_options emu_options(uint32_t banks, uint64_t bank_size) {
    vrex_hal_device_options o{};
    o.struct_size = sizeof(o);
    o.emu_banks = banks;
    o.emu_bank_size = bank_size;
    return o;
}

TEST(CApi, DeviceOptionsSizeTheEmulatedDevice) {
    const vrex_hal_geometry llama70{80, 8, 128, VREX_HAL_BF16, 16, 0};  // 5 MiB blocks
    vrex_hal_device* dev = nullptr;
    vrex_hal_allocator* a = nullptr;
    ASSERT_EQ(vrex_hal_device_open_with("emulated", nullptr, &dev), VREX_HAL_OK) << "NULL: defaults";
    EXPECT_EQ(vrex_hal_allocator_create(dev, &llama70, &a), VREX_HAL_ERR_BAD_GEOMETRY);
    EXPECT_HAS(vrex_hal_last_error(),
               "vrex_hal_allocator_create: create KV allocator: a block of 5242880 bytes "
               "does not fit a bank of 4194304 bytes");
    vrex_hal_device_close(dev);

    vrex_hal_device_options o = emu_options(16, 64ull << 20);
    ASSERT_EQ(vrex_hal_device_open_with("emulated", &o, &dev), VREX_HAL_OK) << vrex_hal_last_error();
    ASSERT_EQ(vrex_hal_allocator_create(dev, &llama70, &a), VREX_HAL_OK) << vrex_hal_last_error();
    EXPECT_EQ(vrex_hal_allocator_block_bytes(a), 5u << 20);
    vrex_hal_allocator_destroy(a);
    vrex_hal_device_close(dev);

    // Every refusal names the field and its valid range.
    struct Case {
        vrex_hal_device_options o;
        const char* message;
    };
    std::vector<Case> cases = {
        {emu_options(65, 0),
         "vrex_hal_device_open_with: emulated device: emu_banks 65 is out of range (valid: 1..64"},
        {emu_options(0, 1000),
         "emu_bank_size 1000 is out of range (valid: a multiple of 4096 in 65536..68719476736"},
        {emu_options(64, 64ull << 30), "is over the 1099511627776 bytes of address space"},
    };
    Case group{emu_options(16, 0), "emu_group_banks 5 does not divide the 16 banks"};
    group.o.emu_group_banks = 5;
    cases.push_back(group);
    Case zombie{emu_options(0, 0), "emu_zombie_frames 300 is out of range (valid: 1..255"};
    zombie.o.emu_zombie_frames = 300;
    cases.push_back(zombie);
    Case flags{emu_options(0, 0), "device options: flags 0x4 has unknown bits 0x4 (valid: 0)"};
    flags.o.flags = 4;
    cases.push_back(flags);
    Case pad{emu_options(0, 0), "device options: pad is 1 (valid: 0)"};
    pad.o.pad = 1;
    cases.push_back(pad);
    Case small{emu_options(0, 0), "device options: struct_size 4 is below 8 (valid: 8.."};
    small.o.struct_size = 4;
    cases.push_back(small);
    for (Case& c : cases) {
        EXPECT_EQ(vrex_hal_device_open_with("emulated", &c.o, &dev), VREX_HAL_ERR_INVALID) << c.message;
        EXPECT_HAS(vrex_hal_last_error(), c.message);
    }
    EXPECT_EQ(vrex_hal_device_open_with("gpu", nullptr, &dev), VREX_HAL_ERR_UNKNOWN_BACKEND);
    EXPECT_HAS(vrex_hal_last_error(), "backend \"gpu\" (valid: NULL, \"auto\", \"kernel\", \"emulated\")");
    EXPECT_EQ(vrex_hal_device_open_with("emulated", nullptr, nullptr), VREX_HAL_ERR_INVALID);
    EXPECT_HAS(vrex_hal_last_error(), "vrex_hal_device_open_with: out is NULL");
}

TEST(CApi, BlockLayoutOfFp8WithScales) {
    vrex_hal_geometry g{4, 2, 64, VREX_HAL_FP8_E4M3, 32, VREX_HAL_SCALES_PER_HEAD};
    vrex_hal_block_layout l{};
    l.struct_size = sizeof(l);
    ASSERT_EQ(vrex_hal_geometry_layout(&g, &l), VREX_HAL_OK) << vrex_hal_last_error();
    EXPECT_EQ(l.struct_size, sizeof(l));
    EXPECT_EQ(l.element_size, 1u);
    EXPECT_EQ(l.kv_bytes, 32768u);
    EXPECT_EQ(l.scales_offset, 32768u);
    EXPECT_EQ(l.scale_count, 16u);
    EXPECT_EQ(l.scales_bytes, 64u);
    EXPECT_EQ(l.block_bytes, 32832u);
    g.scales = VREX_HAL_SCALES_PER_TOKEN;
    g.dtype = VREX_HAL_FP8_E5M2;
    ASSERT_EQ(vrex_hal_geometry_layout(&g, &l), VREX_HAL_OK);
    EXPECT_EQ(l.scale_count, 16u * 32);
    EXPECT_EQ(l.block_bytes, 32768u + 16 * 32 * 4);

    g.dtype = VREX_HAL_BF16;
    EXPECT_EQ(vrex_hal_geometry_layout(&g, &l), VREX_HAL_ERR_BAD_GEOMETRY);
    EXPECT_HAS(vrex_hal_last_error(), "vrex_hal_geometry_layout: geometry: scales need an 8-bit dtype");
    g = vrex_hal_geometry{4, 2, 64, 77, 32, 0};
    EXPECT_EQ(vrex_hal_geometry_layout(&g, &l), VREX_HAL_ERR_BAD_GEOMETRY);
    EXPECT_HAS(vrex_hal_last_error(),
               "dtype 77 is unknown (valid: 0 fp16, 1 bf16, 2 fp32, 3 int8, 4 fp8_e4m3, 5 "
               "fp8_e5m2)");
    g = vrex_hal_geometry{4, 2, 64, VREX_HAL_INT8, 32, 9};
    EXPECT_EQ(vrex_hal_geometry_layout(&g, &l), VREX_HAL_ERR_BAD_GEOMETRY);
    EXPECT_HAS(vrex_hal_last_error(),
               "scales 9 is unknown (valid: 0 none, 1 per_layer, 2 per_head, 3 per_token)");
    // An older caller's layout struct: only the fields it has room for.
    g.scales = VREX_HAL_SCALES_PER_LAYER;
    struct {
        vrex_hal_block_layout l;
        uint64_t guard;
    } older{};
    older.l.struct_size = offsetof(vrex_hal_block_layout, kv_bytes);
    older.l.kv_bytes = 7;
    older.guard = 9;
    ASSERT_EQ(vrex_hal_geometry_layout(&g, &older.l), VREX_HAL_OK);
    EXPECT_EQ(older.l.block_bytes, 32768u + 64);
    EXPECT_EQ(older.l.kv_bytes, 7u) << "past the caller's struct_size: untouched";
    EXPECT_EQ(older.guard, 9u);
    older.l.struct_size = 4;
    EXPECT_EQ(vrex_hal_geometry_layout(&g, &older.l), VREX_HAL_ERR_INVALID);
    EXPECT_HAS(vrex_hal_last_error(), "layout: struct_size 4 is below 8");
    EXPECT_EQ(vrex_hal_geometry_layout(nullptr, &l), VREX_HAL_ERR_INVALID);
    EXPECT_HAS(vrex_hal_last_error(), "geom is NULL");
}

// Size-prefixed stats: pressure evictions and slab counts, an older caller's smaller struct, a newer
// caller's larger one. A 2-bank device of 64 KiB banks holds 8 blocks of 16 KiB.
TEST(CApi, SizePrefixedStatsCountPressureEvictionsAndSlabs) {
    vrex_hal_device_options dopt = emu_options(2, 64 * 1024);
    vrex_hal_device* dev = nullptr;
    ASSERT_EQ(vrex_hal_device_open_with("emulated", &dopt, &dev), VREX_HAL_OK) << vrex_hal_last_error();
    vrex_hal_geometry g{2, 2, 64, VREX_HAL_FP16, 16, 0};
    vrex_hal_allocator_options o{};
    o.struct_size = sizeof(o);
    o.blocks_per_slab = 1;
    o.flags = VREX_HAL_ALLOC_EVICT_UNDER_PRESSURE | VREX_HAL_ALLOC_SPARE_SLABS;  // spare_slabs 0
    vrex_hal_allocator* a = nullptr;
    ASSERT_EQ(vrex_hal_allocator_create_with(dev, &g, &o, &a), VREX_HAL_OK) << vrex_hal_last_error();
    vrex_hal_stream* s = nullptr;
    ASSERT_EQ(vrex_hal_stream_create(a, 0, 0, &s), VREX_HAL_OK);
    // Frame 0 fills the device (the frame's staging buffer takes part of a bank, so count): its own
    // blocks are never evicted for it. Frame 1's 3 blocks evict 3 of frame 0's.
    auto px = vrex::test::synthetic_frame(128, 96, 40, 0);
    ASSERT_EQ(vrex_hal_begin_frame(s, px.data(), 128, 96, 128, nullptr), VREX_HAL_OK);
    uint32_t filled = 0;
    vrex_hal_block b{};
    vrex_hal_status st0 = VREX_HAL_OK;
    while (filled < 16 && (st0 = vrex_hal_allocate(s, filled, 0, &b)) == VREX_HAL_OK) filled++;
    ASSERT_EQ(st0, VREX_HAL_ERR_NOSPC) << "2 x 64 KiB hold fewer than 16 blocks of 16 KiB";
    ASSERT_GE(filled, 4u);
    ASSERT_EQ(vrex_hal_end_frame(s, nullptr), VREX_HAL_OK);
    px = vrex::test::synthetic_frame(128, 96, 40, 1);
    ASSERT_EQ(vrex_hal_begin_frame(s, px.data(), 128, 96, 128, nullptr), VREX_HAL_OK);
    for (uint32_t r = 0; r < 3; r++)
        ASSERT_EQ(vrex_hal_allocate(s, r, 0, &b), VREX_HAL_OK)
            << "region " << r << ": " << vrex_hal_stream_last_error(s);
    ASSERT_EQ(vrex_hal_end_frame(s, nullptr), VREX_HAL_OK);
    vrex_hal_stats st{};
    st.struct_size = sizeof(st);
    ASSERT_EQ(vrex_hal_get_stats(a, &st), VREX_HAL_OK) << vrex_hal_last_error();
    EXPECT_EQ(st.struct_size, sizeof(st));
    EXPECT_EQ(st.bank_count, 2u);
    EXPECT_EQ(st.allocations, filled + 3u);
    EXPECT_EQ(st.pressure_evictions, 3u) << "frame 1's blocks took the place of 3 of frame 0's";
    EXPECT_EQ(st.resident_blocks, filled);
    EXPECT_EQ(st.slabs, filled) << "one block a slab";
    EXPECT_EQ(st.slabs_created - st.slabs_released, st.slabs);
    EXPECT_EQ(st.slab_bytes, filled * 16384u);
    EXPECT_EQ(st.bank_slab_bytes[0] + st.bank_slab_bytes[1], st.slab_bytes);

    // An older caller (a struct that ends before the slab counts) gets its fields and no more.
    struct {
        unsigned char bytes[offsetof(vrex_hal_stats, slabs)];
        uint64_t guard;
    } older;
    std::memset(&older, 0xee, sizeof(older));
    uint32_t size = sizeof(older.bytes);
    std::memcpy(older.bytes, &size, sizeof size);
    ASSERT_EQ(vrex_hal_get_stats(a, reinterpret_cast<vrex_hal_stats*>(&older)), VREX_HAL_OK);
    vrex_hal_stats seen{};
    std::memcpy(&seen, older.bytes, sizeof(older.bytes));
    EXPECT_EQ(seen.struct_size, sizeof(older.bytes));
    EXPECT_EQ(seen.pressure_evictions, 3u);
    EXPECT_EQ(seen.resident_bytes, filled * 16384u);
    EXPECT_EQ(older.guard, 0xeeeeeeeeeeeeeeeeull) << "nothing written past the caller's struct";

    // A newer caller's larger struct: the unknown tail zeroed, struct_size = what was written.
    struct {
        vrex_hal_stats st;
        uint64_t future[3];
    } newer;
    std::memset(&newer, 0xee, sizeof(newer));
    newer.st.struct_size = sizeof(newer);
    ASSERT_EQ(vrex_hal_get_stats(a, &newer.st), VREX_HAL_OK);
    EXPECT_EQ(newer.st.struct_size, sizeof(vrex_hal_stats));
    EXPECT_EQ(newer.st.pressure_evictions, 3u);
    EXPECT_EQ(newer.future[0], 0u);
    EXPECT_EQ(newer.future[2], 0u);

    st.struct_size = 0;
    EXPECT_EQ(vrex_hal_get_stats(a, &st), VREX_HAL_ERR_INVALID);
    EXPECT_HAS(vrex_hal_last_error(), "vrex_hal_get_stats: stats: struct_size 0 is below 8");
    vrex_hal_stream_destroy(s);
    vrex_hal_allocator_destroy(a);
    vrex_hal_device_close(dev);
}

// fp8 blocks with per-head scales and page-aligned blocks through the C ABI, on every backend: the
// scales written at layout.scales_offset come back with a later retrieval, and mmap() of the
// block's dma-buf at block.offset maps the block.
class CApiKvFormat : public ::testing::TestWithParam<std::string> {};

TEST_P(CApiKvFormat, Fp8ScalesAndPageAlignedDmaBufMapping) {
    vrex_hal_device* dev = nullptr;
    ASSERT_EQ(vrex_hal_device_open(GetParam().c_str(), &dev), VREX_HAL_OK) << vrex_hal_last_error();
    const vrex_hal_geometry g{4, 2, 64, VREX_HAL_FP8_E5M2, 32, VREX_HAL_SCALES_PER_HEAD};
    vrex_hal_block_layout l{};
    l.struct_size = sizeof(l);
    ASSERT_EQ(vrex_hal_geometry_layout(&g, &l), VREX_HAL_OK);
    vrex_hal_allocator_options o{};
    o.struct_size = sizeof(o);
    o.blocks_per_slab = 4;
    o.flags = VREX_HAL_ALLOC_PAGE_ALIGNED;
    vrex_hal_allocator* a = nullptr;
    ASSERT_EQ(vrex_hal_allocator_create_with(dev, &g, &o, &a), VREX_HAL_OK) << vrex_hal_last_error();
    const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t stride = vrex_hal_allocator_block_bytes(a);
    EXPECT_EQ(stride, (l.block_bytes + page - 1) / page * page);
    vrex_hal_stream* s = nullptr;
    ASSERT_EQ(vrex_hal_stream_create(a, 0, 0, &s), VREX_HAL_OK);
    auto px = vrex::test::synthetic_frame(128, 96, 83, 0);
    ASSERT_EQ(vrex_hal_begin_frame(s, px.data(), 128, 96, 128, nullptr), VREX_HAL_OK);
    std::vector<vrex_hal_block> blocks(3);
    for (uint32_t r = 0; r < 3; r++) {
        ASSERT_EQ(vrex_hal_allocate(s, r, 0, &blocks[r]), VREX_HAL_OK) << vrex_hal_stream_last_error(s);
        EXPECT_EQ(blocks[r].size, stride);
        EXPECT_EQ(blocks[r].offset % page, 0u);
        auto* bytes = static_cast<unsigned char*>(blocks[r].data);
        std::memset(bytes, 0x40 + r, l.kv_bytes);
        for (uint32_t i = 0; i < l.scale_count; i++) {
            const float v = 0.25f * static_cast<float>(r + 1) + static_cast<float>(i);
            std::memcpy(bytes + l.scales_offset + 4 * i, &v, sizeof v);
        }
    }
    ASSERT_EQ(vrex_hal_end_frame(s, nullptr), VREX_HAL_OK);
    px = vrex::test::synthetic_frame(128, 96, 83, 1);
    ASSERT_EQ(vrex_hal_begin_frame(s, px.data(), 128, 96, 128, nullptr), VREX_HAL_OK);
    for (uint32_t r = 0; r < 3; r++) {
        vrex_hal_retrieval got{};
        ASSERT_EQ(vrex_hal_retrieve_temporal(s, r, -1, &got), VREX_HAL_OK);
        ASSERT_EQ(got.hit, 1u);
        int fd = -1;
        ASSERT_EQ(vrex_hal_export_dmabuf(s, &got.block, &fd), VREX_HAL_OK) << vrex_hal_stream_last_error(s);
        void* p =
            mmap(nullptr, l.block_bytes, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(got.block.offset));
        ASSERT_NE(p, MAP_FAILED) << "block at offset " << got.block.offset;
        for (const auto* bytes :
             {static_cast<const unsigned char*>(got.block.data), static_cast<const unsigned char*>(p)}) {
            EXPECT_EQ(bytes[0], 0x40 + r);
            EXPECT_EQ(bytes[l.kv_bytes - 1], 0x40 + r);
            for (uint32_t i = 0; i < l.scale_count; i++) {
                float v = 0;
                std::memcpy(&v, bytes + l.scales_offset + 4 * i, sizeof v);
                ASSERT_EQ(v, 0.25f * static_cast<float>(r + 1) + static_cast<float>(i)) << "scale " << i;
            }
        }
        munmap(p, l.block_bytes);
        close(fd);
    }
    ASSERT_EQ(vrex_hal_end_frame(s, nullptr), VREX_HAL_OK);
    vrex_hal_stream_destroy(s);
    vrex_hal_allocator_destroy(a);
    vrex_hal_device_close(dev);
}

INSTANTIATE_TEST_SUITE_P(Backends, CApiKvFormat, ::testing::ValuesIn(vrex::test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
