// The emulated device's geometry options (BackendOptions::emu_*, C: struct vrex_hal_device_options):
// bounds with errors naming the field and its valid range, and devices large enough for real
// models (Llama-3-8B at 8192 resident tokens; 70B-class and Gemma-2-9B blocks, which do not fit the
// default 4 MiB banks).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "frames.hpp"
#include "vrex/hal.hpp"

namespace vrex {
namespace {

#define EXPECT_HAS(hay, needle) \
    EXPECT_NE(std::string(hay).find(needle), std::string::npos) << "message: " << (hay)

Result<std::shared_ptr<Device>> emulated(std::uint32_t banks, std::uint64_t bank_size,
                                         std::uint32_t group = 0, std::uint32_t zombie = 0) {
    DeviceOptions o;
    o.backend = BackendChoice::emulated;
    o.backend_options.emu_banks = banks;
    o.backend_options.emu_bank_size = bank_size;
    o.backend_options.emu_group_banks = group;
    o.backend_options.emu_zombie_frames = zombie;
    return Device::open(o);
}

constexpr std::uint64_t MiB = 1024 * 1024;

TEST(EmulatedDeviceOptions, OutOfRangeFieldsAreNamedWithTheirRange) {
    struct Case {
        std::uint32_t banks;
        std::uint64_t bank_size;
        std::uint32_t group;
        std::uint32_t zombie;
        const char* message;
    };
    const Case cases[] = {
        {65, 0, 0, 0, "emu_banks 65 is out of range (valid: 1..64, 0 for 16)"},
        {0, 4096, 0, 0,
         "emu_bank_size 4096 is out of range (valid: a multiple of 4096 in 65536..68719476736 bytes"},
        {0, 3 * MiB + 1, 0, 0, "emu_bank_size 3145729 is out of range"},
        {0, 128ull << 30, 0, 0, "emu_bank_size 137438953472 is out of range"},
        {16, 0, 3, 0, "emu_group_banks 3 does not divide the 16 banks (valid: a divisor of emu_banks"},
        {4, 0, 8, 0, "emu_group_banks 8 does not divide the 4 banks"},
        {0, 0, 0, 256, "emu_zombie_frames 256 is out of range (valid: 1..255, 0 for 5)"},
        {64, 32ull << 30, 0, 0,
         "emu_banks x emu_bank_size = 64 x 34359738368 bytes is over the 1099511627776"},
    };
    for (const Case& c : cases) {
        auto d = emulated(c.banks, c.bank_size, c.group, c.zombie);
        ASSERT_FALSE(d) << c.message;
        EXPECT_EQ(d.error(), std::errc::invalid_argument);
        EXPECT_HAS(d.error_message(), c.message);
    }
    auto odd = emulated(3, 0);
    ASSERT_TRUE(odd) << odd.error_message();
    EXPECT_EQ((*odd)->info().bank_count, 3u);
    EXPECT_EQ((*odd)->info().group_banks, 1u) << "the default pairs do not divide 3 banks";
}

// Llama-3-8B (32 x 8 x 128, bf16, 16 tokens: 2 MiB blocks) with 8192 tokens resident at once: 512
// blocks, 1 GiB, on 16 banks of 128 MiB (the default 16 x 4 MiB holds 512 tokens).
TEST(EmulatedDeviceOptions, Llama3At8192TokensResident) {
    auto d = emulated(16, 128 * MiB, 0, 255);
    ASSERT_TRUE(d) << d.error_message();
    EXPECT_EQ((*d)->info().bank_size, 128 * MiB);
    EXPECT_EQ((*d)->info().zombie_frames, 255u);
    auto a = KvAllocator::create(*d, ModelGeometry{32, 8, 128, DType::bf16, 16});
    ASSERT_TRUE(a) << a.error_message();
    EXPECT_EQ((*a)->options().blocks_per_slab, 16u);
    auto s = (*a)->create_stream().value();
    std::vector<std::uint32_t> regions(16);
    for (std::uint32_t r = 0; r < 16; r++) regions[r] = r;
    std::vector<KvBlock> all;
    for (std::uint32_t f = 0; f < 32; f++) {
        auto px = test::synthetic_frame(128, 96, 90 + f, 0);
        ASSERT_TRUE(s->begin_frame(LumaView{px.data(), 128, 96, 128}));
        auto b = s->allocate_batch(regions);
        ASSERT_TRUE(b) << "frame " << f << ": " << b.error_message();
        for (KvBlock& k : *b) {
            k.data.front() = std::byte{static_cast<unsigned char>(f)};
            k.data.back() = std::byte{static_cast<unsigned char>(k.region)};
            all.push_back(k);
        }
        ASSERT_TRUE(s->end_frame());
    }
    auto st = (*a)->stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->resident_blocks, 512u) << "8192 tokens";
    EXPECT_EQ(st->resident_bytes, 1024 * MiB);
    for (const KvBlock& k : all) {
        ASSERT_EQ(k.view.front(), std::byte{static_cast<unsigned char>(k.frame)});
        ASSERT_EQ(k.view.back(), std::byte{static_cast<unsigned char>(k.region)});
    }
}

// 70B-class (Llama-3-70B: 80 x 8 x 128, bf16, 16 tokens: 5 MiB) and Gemma-2-9B (42 x 8 x 256, bf16:
// 5.25 MiB) blocks: refused by the default device (4 MiB banks) with an error naming the sizes and
// the way out, accepted by one with 64 MiB banks.
TEST(EmulatedDeviceOptions, SeventyBAndGemma2GeometriesNeedLargerBanks) {
    struct Model {
        const char* name;
        ModelGeometry g;
        std::uint64_t bytes;
    };
    const Model models[] = {
        {"Llama-3-70B", {80, 8, 128, DType::bf16, 16}, 5 * MiB},
        {"Gemma-2-9B", {42, 8, 256, DType::bf16, 16}, 2ull * 42 * 8 * 256 * 16 * 2},
    };
    auto small = emulated(0, 0);
    ASSERT_TRUE(small);
    auto big = emulated(16, 64 * MiB);
    ASSERT_TRUE(big) << big.error_message();
    for (const Model& m : models) {
        SCOPED_TRACE(m.name);
        auto refused = KvAllocator::create(*small, m.g);
        ASSERT_FALSE(refused);
        EXPECT_EQ(refused.error(), errc::bad_geometry);
        EXPECT_HAS(refused.error_message(),
                   "a block of " + std::to_string(m.bytes) +
                       " bytes does not fit a bank of 4194304 bytes (valid: blocks up "
                       "to the bank size");
        EXPECT_HAS(refused.error_message(), "emu_bank_size");
        auto a = KvAllocator::create(*big, m.g);
        ASSERT_TRUE(a) << a.error_message();
        EXPECT_EQ((*a)->block_bytes(), m.bytes);
        EXPECT_EQ((*a)->options().blocks_per_slab, 12u) << "as many as fit a 64 MiB bank";
        auto s = (*a)->create_stream().value();
        auto px = test::synthetic_frame(128, 96, 95, 0);
        ASSERT_TRUE(s->begin_frame(LumaView{px.data(), 128, 96, 128}));
        auto b = s->allocate_batch(std::vector<std::uint32_t>{0, 1, 2, 3});
        ASSERT_TRUE(b) << b.error_message();
        for (const KvBlock& k : *b) {
            ASSERT_EQ(k.data.size(), m.bytes);
            std::memset(k.data.data() + m.bytes - 4096, 0x5a, 4096);
        }
        auto r = s->retrieve_temporal(3, 0);
        ASSERT_TRUE(r && r->hit);
        EXPECT_EQ(r->block.view.back(), std::byte{0x5a});
        ASSERT_TRUE(s->end_frame());
    }
}

}  // namespace
}  // namespace vrex
