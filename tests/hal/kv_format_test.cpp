// KV formats on every backend (docs/hal.md "KV memory contract"): fp8 dtypes, quantisation scales
// stored in each block after its KV, and page-aligned block strides for mmap() of a block's dma-buf
// at KvBlock::offset.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "device_test.hpp"
#include "frames.hpp"
#include "vrex/hal.hpp"

namespace vrex {
namespace {

#define EXPECT_HAS(hay, needle) \
    EXPECT_NE(std::string(hay).find(needle), std::string::npos) << "message: " << (hay)

// 2 * 4 layers * 2 heads * 64 dims * 32 tokens * 1 byte = 32 KiB of fp8 KV, then 2 * 4 * 2 = 16 fp32
// scales (64 bytes): a 32832-byte block, not a page multiple.
constexpr ModelGeometry kFp8{4, 2, 64, DType::fp8_e4m3, 32, ScaleLayout::per_head};

float scale_value(std::uint32_t salt, std::uint64_t i) {
    return 0.5f + static_cast<float>((salt * 31 + i) % 97) / 64.0f;
}

// Fills a block of @g: every KV byte, then every scale, from @salt.
void fill_block(const ModelGeometry& g, std::span<std::byte> data, std::uint32_t salt) {
    for (std::uint64_t i = 0; i < g.kv_bytes(); i++) data[i] = static_cast<std::byte>((i * 7 + salt) & 0xff);
    for (std::uint64_t i = 0; i < g.scale_count(); i++) {
        const float v = scale_value(salt, i);
        std::memcpy(data.data() + g.kv_bytes() + i * sizeof(float), &v, sizeof v);
    }
}

// Checks the block @bytes against fill_block(@salt): the KV bytes and the scale of every
// (layer, K/V, head) at scale_offset().
void expect_block(const ModelGeometry& g, const std::byte* bytes, std::uint32_t salt) {
    for (std::uint64_t i = 0; i < g.kv_bytes(); i += 997)
        ASSERT_EQ(bytes[i], static_cast<std::byte>((i * 7 + salt) & 0xff)) << "KV byte " << i;
    std::uint64_t i = 0;
    for (std::uint32_t l = 0; l < g.layers; l++)
        for (std::uint32_t kv = 0; kv < 2; kv++)
            for (std::uint32_t h = 0; h < g.kv_heads; h++, i++) {
                float v = 0;
                std::memcpy(&v, bytes + g.scale_offset(l, kv, h), sizeof v);
                ASSERT_EQ(v, scale_value(salt, i)) << "scale of layer " << l << " kv " << kv << " head " << h;
            }
}

TEST(KvFormat, Fp8DtypesAndScaleLayouts) {
    EXPECT_EQ(dtype_size(DType::fp8_e4m3), 1u);
    EXPECT_EQ(dtype_size(DType::fp8_e5m2), 1u);
    EXPECT_EQ(dtype_name(DType::fp8_e5m2), "fp8_e5m2");
    EXPECT_EQ(dtype_name(static_cast<DType>(6)), "");

    // Llama-3-8B in fp8: half the bf16 block.
    EXPECT_EQ(*ModelGeometry({32, 8, 128, DType::fp8_e5m2, 16}).block_bytes(), 1024u * 1024);
    EXPECT_EQ(*kFp8.block_bytes(), 32768u + 64);
    EXPECT_EQ(kFp8.kv_bytes(), 32768u);
    EXPECT_EQ(kFp8.scale_count(), 16u);
    EXPECT_EQ(kFp8.scale_offset(0, 0, 0), 32768u) << "scales right after the KV";
    EXPECT_EQ(kFp8.scale_offset(0, 0, 1), 32768u + 4) << "then heads";
    EXPECT_EQ(kFp8.scale_offset(0, 1, 0), 32768u + 2 * 4) << "V after K";
    EXPECT_EQ(kFp8.scale_offset(1, 0, 0), 32768u + 4 * 4) << "then layers";

    ModelGeometry per_layer = kFp8;
    per_layer.scales = ScaleLayout::per_layer;
    EXPECT_EQ(per_layer.scale_count(), 8u);
    EXPECT_EQ(per_layer.scale_offset(3, 1, 1, 9), 32768u + 7 * 4) << "head and token ignored";
    EXPECT_EQ(*per_layer.block_bytes(), 32768u + 64) << "32 bytes of scales padded to 64";
    ModelGeometry per_token = kFp8;
    per_token.scales = ScaleLayout::per_token;
    EXPECT_EQ(per_token.scale_count(), 16u * 32);
    EXPECT_EQ(per_token.scale_offset(1, 0, 1, 3), 32768u + ((2 + 0) * 2 + 1) * 32 * 4 + 3 * 4);
    EXPECT_EQ(*per_token.block_bytes(), 32768u + 16 * 32 * 4);
    ModelGeometry int8 = per_token;
    int8.dtype = DType::int8;
    EXPECT_TRUE(int8.block_bytes()) << "int8 takes scales too";

    // Refusals name the field and the valid range.
    ModelGeometry bf16 = kFp8;
    bf16.dtype = DType::bf16;
    auto e = bf16.block_bytes();
    EXPECT_EQ(e.error(), errc::bad_geometry);
    EXPECT_HAS(e.error_message(), "scales need an 8-bit dtype (int8, fp8_e4m3, fp8_e5m2), dtype is bf16");
    ModelGeometry unknown = kFp8;
    unknown.scales = static_cast<ScaleLayout>(4);
    EXPECT_HAS(unknown.block_bytes().error_message(), "scales 4 is unknown (valid: 0 none, 1 per_layer");
    EXPECT_HAS(ModelGeometry({2, 2, 64, static_cast<DType>(9), 16}).block_bytes().error_message(),
               "dtype 9 is unknown (valid: 0 fp16, 1 bf16, 2 fp32, 3 int8, 4 fp8_e4m3, 5 fp8_e5m2)");
    EXPECT_HAS(ModelGeometry({2, 0, 64, DType::fp16, 16}).block_bytes().error_message(),
               "kv_heads is 0 (valid: 1..");
    EXPECT_HAS(
        ModelGeometry({1, 1, 64, DType::fp8_e4m3, 16}).block_bytes().error_message(),
        "KV of 2048 bytes (2 * layers * kv_heads * head_dim * tokens_per_block * 1) is below the minimum "
        "block of 16384 bytes");
    EXPECT_HAS(ModelGeometry({4096, 4096, 4096, DType::fp32, 4096}).block_bytes().error_message(),
               "over the 4 GiB a block may hold");
}

class KvFormat : public test::DeviceTest {};

// fp8 blocks with per-head scales on the device: the scales are bytes of the block, so a later
// retrieval's view and the dma-buf at the block's offset carry them.
TEST_P(KvFormat, Fp8BlocksCarryTheirScalesThroughRetrievalAndExport) {
    auto a = allocator(kFp8);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->block_bytes(), 32832u);
    auto s = a->create_stream().value();
    auto px = test::synthetic_frame(128, 96, 81, 0);
    ASSERT_TRUE(s->begin_frame(test::view_of(px)));
    auto b = s->allocate_batch(std::vector<std::uint32_t>{0, 1, 2});
    ASSERT_TRUE(b) << b.error_message();
    for (std::uint32_t i = 0; i < 3; i++) {
        ASSERT_EQ((*b)[i].data.size(), 32832u);
        fill_block(kFp8, (*b)[i].data, 10 + i);
    }
    ASSERT_TRUE(s->end_frame());

    auto next = test::synthetic_frame(128, 96, 81, 1);
    ASSERT_TRUE(s->begin_frame(test::view_of(next)));
    for (std::uint32_t i = 0; i < 3; i++) {
        auto r = s->retrieve_temporal(i, -1);
        ASSERT_TRUE(r && r->hit) << r.error_message();
        ASSERT_EQ(r->block.view.size(), 32832u);
        ASSERT_NO_FATAL_FAILURE(expect_block(kFp8, r->block.view.data(), 10 + i));
    }

    // The dma-buf: block 2 (at an offset that is not a page multiple) read through a mapping of the
    // buffer from 0, its scales at offset + scale_offset().
    const KvBlock& x = (*b)[2];
    auto fd = s->export_dmabuf(x);
    ASSERT_TRUE(fd) << fd.error_message();
    const std::size_t len = x.offset + a->block_bytes();
    void* p = mmap(nullptr, len, PROT_READ, MAP_SHARED, *fd, 0);
    ASSERT_NE(p, MAP_FAILED) << std::strerror(errno);
    ASSERT_NO_FATAL_FAILURE(expect_block(kFp8, static_cast<const std::byte*>(p) + x.offset, 12));
    munmap(p, len);
    close(*fd);

    // Writing a scale through the block changes what the next retrieval reads.
    const float twice = 2 * scale_value(10, 0);
    std::memcpy((*b)[0].data.data() + kFp8.scale_offset(0, 0, 0), &twice, sizeof twice);
    auto r = s->retrieve_temporal(0, -1);
    ASSERT_TRUE(r && r->hit);
    float read = 0;
    std::memcpy(&read, r->block.view.data() + kFp8.scale_offset(0, 0, 0), sizeof read);
    EXPECT_EQ(read, twice);
    ASSERT_TRUE(s->end_frame());
}

// Without page alignment a block's offset is a multiple of its size only; mmap() of the dma-buf at
// KvBlock::offset then fails for a block whose size is not a page multiple. page_aligned_blocks
// rounds the stride up to the page size so every block maps at its own offset.
TEST_P(KvFormat, PageAlignedBlocksMapAtTheirOffset) {
    const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    AllocatorOptions o;
    o.blocks_per_slab = 4;
    for (bool aligned : {false, true}) {
        SCOPED_TRACE(aligned ? "page_aligned_blocks" : "packed");
        o.page_aligned_blocks = aligned;
        auto a = allocator(kFp8, o);
        ASSERT_TRUE(a);
        const std::uint64_t stride = aligned ? (32832 + page - 1) / page * page : 32832;
        EXPECT_EQ(a->block_bytes(), stride);
        EXPECT_EQ(*a->geometry().block_bytes(), 32832u) << "the layout itself is unchanged";
        auto s = a->create_stream().value();
        auto px = test::synthetic_frame(128, 96, 82, 0);
        ASSERT_TRUE(s->begin_frame(test::view_of(px)));
        auto b = s->allocate_batch(std::vector<std::uint32_t>{0, 1, 2});
        ASSERT_TRUE(b) << b.error_message();
        for (std::uint32_t i = 0; i < 3; i++) {
            const KvBlock& k = (*b)[i];
            ASSERT_EQ(k.handle, (*b)[0].handle) << "one slab";
            EXPECT_EQ(k.offset % stride, 0u);
            fill_block(kFp8, k.data, 20 + i);
            auto fd = s->export_dmabuf(k);
            ASSERT_TRUE(fd) << fd.error_message();
            void* p = mmap(nullptr, 32832, PROT_READ, MAP_SHARED, *fd, static_cast<off_t>(k.offset));
            if (!aligned && k.offset % page) {
                EXPECT_EQ(p, MAP_FAILED) << "offset " << k.offset << " is not a page multiple";
                EXPECT_EQ(errno, EINVAL);
            } else {
                ASSERT_NE(p, MAP_FAILED) << "offset " << k.offset << ": " << std::strerror(errno);
                EXPECT_EQ(k.offset % page, 0u);
                ASSERT_NO_FATAL_FAILURE(expect_block(kFp8, static_cast<const std::byte*>(p), 20 + i));
                munmap(p, 32832);
            }
            close(*fd);
        }
        ASSERT_TRUE(s->end_frame());
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, KvFormat, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
