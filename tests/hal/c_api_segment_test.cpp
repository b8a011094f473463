// The C ABI of segments (vrex_hal.h "Segments") on every backend: size-prefixed lists, info and
// stats, all-or-nothing appends, stale handles after truncation, Stream calls that refuse segment
// blocks, closure by the stream's destruction, and messages with context.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends.hpp"
#include "frames.hpp"
#include "vrex/vrex_hal.h"

namespace {

#define EXPECT_HAS(hay, needle) \
    EXPECT_NE(std::string(hay).find(needle), std::string::npos) << "message: " << (hay)

class CApiSegments : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        vrex_hal_device* dev = nullptr;
        ASSERT_EQ(vrex_hal_device_open(GetParam().c_str(), &dev), VREX_HAL_OK) << vrex_hal_last_error();
        vrex_hal_geometry g{2, 2, 64, VREX_HAL_FP16, 16, 0};  // 16 KiB blocks, 16 tokens
        ASSERT_EQ(vrex_hal_allocator_create(dev, &g, &alloc_), VREX_HAL_OK) << vrex_hal_last_error();
        vrex_hal_device_close(dev);
        ASSERT_EQ(vrex_hal_stream_create(alloc_, 0, 0, &s_), VREX_HAL_OK) << vrex_hal_last_error();
    }
    void TearDown() override {
        vrex_hal_stream_destroy(s_);
        vrex_hal_allocator_destroy(alloc_);
    }
    static vrex_hal_block_list list(std::vector<vrex_hal_block>& v) {
        vrex_hal_block_list l{};
        l.struct_size = sizeof(l);
        l.block_size = sizeof(vrex_hal_block);
        l.capacity = static_cast<uint32_t>(v.size());
        l.blocks = v.data();
        return l;
    }
    vrex_hal_allocator* alloc_ = nullptr;
    vrex_hal_stream* s_ = nullptr;
};

TEST_P(CApiSegments, AppendTruncateAndListsAreSizePrefixedAndAllOrNothing) {
    vrex_hal_segment* seg = nullptr;
    EXPECT_EQ(vrex_hal_segment_open(s_, 9, 0, &seg), VREX_HAL_ERR_INVALID);
    EXPECT_HAS(vrex_hal_last_error(), "vrex_hal_segment_open: unknown segment kind 9");
    EXPECT_EQ(vrex_hal_segment_open(nullptr, VREX_HAL_SEGMENT_PROMPT, 0, &seg), VREX_HAL_ERR_INVALID);
    ASSERT_EQ(vrex_hal_segment_open(s_, VREX_HAL_SEGMENT_PROMPT, 10, &seg), VREX_HAL_OK)
        << vrex_hal_last_error();

    // A list too small for the answer: refused before anything changes, count says what is needed.
    std::vector<vrex_hal_block> two(2);
    vrex_hal_block_list l = list(two);
    l.capacity = 1;
    EXPECT_EQ(vrex_hal_segment_append(seg, 20, &l), VREX_HAL_ERR_RANGE);
    EXPECT_EQ(l.count, 2u);
    EXPECT_HAS(vrex_hal_last_error(), "touches 2 blocks, the list has room for 1");
    vrex_hal_segment_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(vrex_hal_segment_get_info(seg, &info), VREX_HAL_OK);
    EXPECT_EQ(info.tokens, 0u) << "nothing appended";
    EXPECT_EQ(info.blocks, 0u);

    l.capacity = 2;
    l.struct_size = 8;
    EXPECT_EQ(vrex_hal_segment_append(seg, 20, &l), VREX_HAL_ERR_INVALID);
    EXPECT_HAS(vrex_hal_last_error(), "struct_size 8");
    l.struct_size = sizeof(l);
    l.block_size = 8;
    EXPECT_EQ(vrex_hal_segment_append(seg, 20, &l), VREX_HAL_ERR_INVALID);
    EXPECT_HAS(vrex_hal_last_error(), "block_size 8");
    l.block_size = sizeof(vrex_hal_block);
    ASSERT_EQ(vrex_hal_segment_append(seg, 20, &l), VREX_HAL_OK) << vrex_hal_last_error();
    ASSERT_EQ(l.count, 2u);
    EXPECT_EQ(two[0].first_token, 10u);
    EXPECT_EQ(two[0].token_count, 16u);
    EXPECT_EQ(two[1].first_token, 26u);
    EXPECT_EQ(two[1].token_count, 4u);
    EXPECT_EQ(two[0].size, 16384u);
    EXPECT_EQ(two[0].flags, static_cast<uint32_t>(VREX_HAL_BLOCK_SEGMENT)) << "a segment block, writable";
    static_cast<unsigned char*>(two[1].data)[0] = 0x5e;
    ASSERT_EQ(vrex_hal_segment_append(seg, 3, nullptr), VREX_HAL_OK);

    // A newer caller's larger info struct: its tail is zeroed; an older smaller one gets its part.
    struct {
        vrex_hal_segment_info i;
        uint32_t future[2];
    } wide{};
    wide.i.struct_size = sizeof(wide);
    wide.future[0] = wide.future[1] = 0xdeadbeef;
    ASSERT_EQ(vrex_hal_segment_get_info(seg, &wide.i), VREX_HAL_OK);
    EXPECT_EQ(wide.i.kind, static_cast<uint32_t>(VREX_HAL_SEGMENT_PROMPT));
    EXPECT_EQ(wide.i.first_position, 10u);
    EXPECT_EQ(wide.i.tokens, 23u);
    EXPECT_EQ(wide.i.blocks, 2u);
    EXPECT_EQ(wide.i.flags, static_cast<uint32_t>(VREX_HAL_SEGMENT_OPEN));
    EXPECT_EQ(wide.i.stream, vrex_hal_stream_id(s_));
    EXPECT_EQ(wide.future[0], 0u);
    EXPECT_EQ(wide.future[1], 0u);
    vrex_hal_segment_info narrow{};
    narrow.struct_size = 12;  // struct_size, kind, first_position
    narrow.tokens = 77;
    ASSERT_EQ(vrex_hal_segment_get_info(seg, &narrow), VREX_HAL_OK);
    EXPECT_EQ(narrow.first_position, 10u);
    EXPECT_EQ(narrow.tokens, 77u) << "nothing past the caller's struct_size is written";

    // The Stream calls: release refuses a segment block, export works, a truncated block is stale.
    auto px = vrex::test::synthetic_frame(128, 96, 90, 0);
    ASSERT_EQ(vrex_hal_begin_frame(s_, px.data(), 128, 96, 128, nullptr), VREX_HAL_OK);
    EXPECT_EQ(vrex_hal_release(s_, &two[0]), VREX_HAL_ERR_INVALID);
    EXPECT_HAS(vrex_hal_stream_last_error(s_), "segment block");
    EXPECT_EQ(vrex_hal_set_positions(s_, &two[0], 0, 1), VREX_HAL_ERR_INVALID);
    ASSERT_EQ(vrex_hal_end_frame(s_, nullptr), VREX_HAL_OK);
    int fd = -1;
    ASSERT_EQ(vrex_hal_export_dmabuf(s_, &two[1], &fd), VREX_HAL_OK) << vrex_hal_stream_last_error(s_);
    close(fd);
    uint32_t released = 99;
    EXPECT_EQ(vrex_hal_segment_truncate(seg, 9, &released), VREX_HAL_ERR_RANGE);
    EXPECT_HAS(vrex_hal_last_error(), "vrex_hal_segment_truncate: truncate segment");
    EXPECT_EQ(released, 99u);
    ASSERT_EQ(vrex_hal_segment_truncate(seg, 26, &released), VREX_HAL_OK);
    EXPECT_EQ(released, 1u);
    EXPECT_EQ(vrex_hal_export_dmabuf(s_, &two[1], &fd), VREX_HAL_ERR_STALE);
    EXPECT_EQ(vrex_hal_pin(s_, &two[1]), VREX_HAL_ERR_STALE);

    // The list call: the first capacity blocks, count = all.
    ASSERT_EQ(vrex_hal_segment_append(seg, 40, nullptr), VREX_HAL_OK);  // block 0 is full: 16 + 16 + 8
    std::vector<vrex_hal_block> one(1);
    vrex_hal_block_list all = list(one);
    ASSERT_EQ(vrex_hal_segment_blocks(seg, &all), VREX_HAL_OK);
    EXPECT_EQ(all.count, 4u);
    EXPECT_EQ(one[0].id, two[0].id);
    EXPECT_EQ(one[0].generation, two[0].generation);

    vrex_hal_segment_stats st{};
    st.struct_size = sizeof(st);
    ASSERT_EQ(vrex_hal_get_segment_stats(alloc_, &st), VREX_HAL_OK);
    EXPECT_EQ(st.segments_open, 1u);
    EXPECT_EQ(st.blocks, 4u);
    EXPECT_EQ(st.tokens, 56u);
    EXPECT_EQ(st.allocations, 5u);
    EXPECT_EQ(st.releases, 1u);
    EXPECT_EQ(st.bank_blocks[one[0].bank] > 0, true);
    st.struct_size = 2;
    EXPECT_EQ(vrex_hal_get_segment_stats(alloc_, &st), VREX_HAL_ERR_INVALID);
    vrex_hal_stats fs{};
    fs.struct_size = sizeof(fs);
    ASSERT_EQ(vrex_hal_get_stats(alloc_, &fs), VREX_HAL_OK);
    EXPECT_EQ(fs.resident_blocks, 4u);
    EXPECT_EQ(fs.allocations, 0u);

    vrex_hal_segment_close(seg);
    ASSERT_EQ(vrex_hal_get_stats(alloc_, &fs), VREX_HAL_OK);
    EXPECT_EQ(fs.resident_blocks, 0u) << "closing releases every block";
    vrex_hal_segment_close(nullptr);
}

TEST_P(CApiSegments, DestroyingTheStreamClosesItsSegments) {
    vrex_hal_segment* seg = nullptr;
    ASSERT_EQ(vrex_hal_segment_open(s_, VREX_HAL_SEGMENT_GENERATED, 0, &seg), VREX_HAL_OK);
    ASSERT_EQ(vrex_hal_segment_append(seg, 33, nullptr), VREX_HAL_OK);
    vrex_hal_stream_destroy(s_);
    s_ = nullptr;
    EXPECT_EQ(vrex_hal_segment_append(seg, 1, nullptr), VREX_HAL_ERR_STALE);
    EXPECT_HAS(vrex_hal_last_error(), "its stream was destroyed");
    EXPECT_EQ(vrex_hal_segment_truncate(seg, 0, nullptr), VREX_HAL_ERR_STALE);
    vrex_hal_segment_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(vrex_hal_segment_get_info(seg, &info), VREX_HAL_OK);
    EXPECT_EQ(info.flags, 0u);
    EXPECT_EQ(info.tokens, 0u);
    vrex_hal_stats fs{};
    fs.struct_size = sizeof(fs);
    ASSERT_EQ(vrex_hal_get_stats(alloc_, &fs), VREX_HAL_OK);
    EXPECT_EQ(fs.resident_blocks, 0u);
    vrex_hal_segment_close(seg);
}

INSTANTIATE_TEST_SUITE_P(Backends, CApiSegments, ::testing::ValuesIn(vrex::test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
