// The C ABI of publication and the fixed KV pool (vrex/vrex_hal.h, c_api_pool.cpp) on every backend:
// the same behaviour as Stream::publish and AllocatorOptions::fixed_pool_blocks, with statuses and
// last errors that name the argument.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "backends.hpp"
#include "frames.hpp"
#include "vrex/vrex_hal.h"

namespace {

class CApiPool : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override { ASSERT_EQ(vrex_hal_device_open(GetParam().c_str(), &dev_), VREX_HAL_OK); }
    void TearDown() override { vrex_hal_device_close(dev_); }
    vrex_hal_device* dev_ = nullptr;
    const vrex_hal_geometry geom_{2, 2, 64, VREX_HAL_FP16, 16, 0};  // 16 KiB blocks
};

TEST_P(CApiPool, PublishMakesABlockVisibleToTheOtherStreamsOfThePool) {
    vrex_hal_allocator* a = nullptr;
    ASSERT_EQ(vrex_hal_allocator_create(dev_, &geom_, &a), VREX_HAL_OK);
    vrex_hal_stream *owner = nullptr, *reader = nullptr;
    EXPECT_EQ(vrex_hal_stream_create_flags(a, 1u << 7, 0, &owner), VREX_HAL_ERR_INVALID);
    EXPECT_NE(std::string(vrex_hal_last_error()).find("unknown bits 128"), std::string::npos)
        << vrex_hal_last_error();
    ASSERT_EQ(
        vrex_hal_stream_create_flags(a, VREX_HAL_STREAM_POOLED | VREX_HAL_STREAM_EXPLICIT_PUBLISH, 9, &owner),
        VREX_HAL_OK);
    ASSERT_EQ(vrex_hal_stream_create_flags(a, VREX_HAL_STREAM_POOLED, 9, &reader), VREX_HAL_OK);
    const auto px = vrex::test::synthetic_frame(128, 96, 90, 0);
    vrex_hal_frame_info fi{};
    ASSERT_EQ(vrex_hal_begin_frame(owner, px.data(), 128, 96, 128, &fi), VREX_HAL_OK);
    vrex_hal_block b[2]{};
    ASSERT_EQ(vrex_hal_allocate(owner, 1, 0, &b[0]), VREX_HAL_OK);
    ASSERT_EQ(vrex_hal_allocate(owner, 2, 0, &b[1]), VREX_HAL_OK);
    std::memset(b[0].data, 0x21, b[0].size);
    ASSERT_EQ(vrex_hal_begin_frame(reader, px.data(), 128, 96, 128, nullptr), VREX_HAL_OK);
    vrex_hal_retrieval r{};
    ASSERT_EQ(vrex_hal_retrieve_similar(reader, 1, fi.fp, 0, VREX_HAL_SCOPE_POOL, &r), VREX_HAL_OK);
    EXPECT_EQ(r.hit, 0u) << "not published";
    EXPECT_EQ(vrex_hal_pin(reader, &b[0]), VREX_HAL_ERR_PERM);
    EXPECT_EQ(vrex_hal_publish(reader, &b[0]), VREX_HAL_ERR_PERM);
    EXPECT_EQ(vrex_hal_publish_batch(owner, b, 2, 8), VREX_HAL_ERR_INVALID);
    EXPECT_NE(std::string(vrex_hal_last_error()).find("block_size 8"), std::string::npos)
        << vrex_hal_last_error();
    ASSERT_EQ(vrex_hal_publish_batch(owner, b, 2, sizeof(vrex_hal_block)), VREX_HAL_OK);
    ASSERT_EQ(vrex_hal_retrieve_similar(reader, 1, fi.fp, 0, VREX_HAL_SCOPE_POOL, &r), VREX_HAL_OK);
    ASSERT_EQ(r.hit, 1u);
    EXPECT_EQ(r.block.generation, b[0].generation);
    EXPECT_TRUE(r.block.flags & VREX_HAL_BLOCK_SHARED);
    EXPECT_EQ(static_cast<const unsigned char*>(r.block.data)[5], 0x21);
    ASSERT_EQ(vrex_hal_end_frame(reader, nullptr), VREX_HAL_OK);
    ASSERT_EQ(vrex_hal_release(owner, &b[1]), VREX_HAL_OK);
    ASSERT_EQ(vrex_hal_end_frame(owner, nullptr), VREX_HAL_OK);
    EXPECT_EQ(vrex_hal_publish(owner, &b[1]), VREX_HAL_ERR_STALE);
    vrex_hal_pool info{};
    info.struct_size = sizeof info;
    EXPECT_EQ(vrex_hal_pool_info(a, &info), VREX_HAL_ERR_NOENT) << "a slab allocator has no pool";
    vrex_hal_stream_destroy(reader);
    vrex_hal_stream_destroy(owner);
    vrex_hal_allocator_destroy(a);
}

TEST_P(CApiPool, FixedPoolThroughTheCAbi) {
    vrex_hal_allocator* a = nullptr;
    EXPECT_EQ(vrex_hal_allocator_create_pool(dev_, &geom_, 0, 0, &a), VREX_HAL_ERR_INVALID);
    EXPECT_NE(std::string(vrex_hal_last_error()).find("pool_blocks is 0"), std::string::npos)
        << vrex_hal_last_error();
    EXPECT_EQ(vrex_hal_allocator_create_pool(dev_, &geom_, 1u << 30, 0, &a), VREX_HAL_ERR_INVALID);
    EXPECT_NE(std::string(vrex_hal_last_error()).find("do not fit one bank"), std::string::npos)
        << vrex_hal_last_error();
    ASSERT_EQ(vrex_hal_allocator_create_pool(dev_, &geom_, 4, VREX_HAL_ALLOC_EVICT_UNDER_PRESSURE, &a),
              VREX_HAL_OK);
    vrex_hal_pool info{};
    info.struct_size = sizeof info;
    ASSERT_EQ(vrex_hal_pool_info(a, &info), VREX_HAL_OK);
    EXPECT_EQ(info.blocks, 4u);
    EXPECT_EQ(info.block_bytes, 16384u);
    EXPECT_EQ(info.bytes, 4u * 16384u);
    vrex_hal_stream* s = nullptr;
    ASSERT_EQ(vrex_hal_stream_create(a, 0, 0, &s), VREX_HAL_OK);
    const auto px = vrex::test::synthetic_frame(128, 96, 91, 0);
    ASSERT_EQ(vrex_hal_begin_frame(s, px.data(), 128, 96, 128, nullptr), VREX_HAL_OK);
    vrex_hal_block b{};
    ASSERT_EQ(vrex_hal_allocate(s, 3, 0, &b), VREX_HAL_OK);
    EXPECT_EQ(b.handle, info.handle);
    uint32_t index = 99;
    ASSERT_EQ(vrex_hal_pool_index(a, &b, &index), VREX_HAL_OK);
    EXPECT_EQ(b.offset, std::uint64_t{index} * info.block_bytes);
    std::memset(b.data, 0x37, b.size);
    int fd = -1;
    ASSERT_EQ(vrex_hal_pool_export_dmabuf(a, &fd), VREX_HAL_OK);
    void* p = mmap(nullptr, info.bytes, PROT_READ, MAP_SHARED, fd, 0);
    ASSERT_NE(p, MAP_FAILED);
    EXPECT_EQ(static_cast<const unsigned char*>(p)[b.offset + 11], 0x37);
    munmap(p, info.bytes);
    close(fd);
    EXPECT_EQ(vrex_hal_pool_index(a, nullptr, &index), VREX_HAL_ERR_INVALID);
    EXPECT_NE(std::string(vrex_hal_last_error()).find("block is NULL"), std::string::npos)
        << vrex_hal_last_error();
    ASSERT_EQ(vrex_hal_end_frame(s, nullptr), VREX_HAL_OK);
    vrex_hal_stream_destroy(s);
    vrex_hal_allocator_destroy(a);
}

INSTANTIATE_TEST_SUITE_P(Backends, CApiPool, ::testing::ValuesIn(vrex::test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
