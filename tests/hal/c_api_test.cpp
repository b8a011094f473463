// The C ABI: status codes, handles and the same results as the C++ API (emulated backend).
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

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
