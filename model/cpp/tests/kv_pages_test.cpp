// vrex::lcp::KvPageTable over the memory hierarchy on the emulated device: a slot reads its block's
// device memory while the block is there, its host copy once demoted and staged, nothing otherwise.
#include "vrex/lcp/kv_pages.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "emulated_stream.hpp"
#include "vrex/lcp/policy.hpp"

namespace vrex::lcp {
namespace {

constexpr std::uint32_t kRegions = 16;
constexpr std::uint32_t kWindow = 4;

const float* floats(std::span<const std::byte> b) {
    return reinterpret_cast<const float*>(b.data());  // NOLINT: a block's bytes are fp32
}

class Pages : public EmulatedStream {
  protected:
    // One frame as the runner has it: region 0 aliases @region0 when given, the other regions get
    // new blocks holding frame t's pattern; the table gets the frame's device memory, the frame
    // enters the hierarchy, cold blocks leave the device and the table follows.
    std::vector<KvBlock> frame(std::optional<KvBlock> region0 = std::nullopt) {
        EXPECT_TRUE(st_->begin_frame({luma_.data(), 128, 96, 128}));
        FrameChoice choice(kRegions);
        choice[0] = region0;
        auto f = apply_choice(*st_, choice);
        EXPECT_TRUE(f) << f.error_message();
        for (const KvBlock& b : f->fresh_blocks)
            std::ranges::fill(b.data, static_cast<std::byte>(1 + t_ * kRegions + b.region));
        std::vector<const float*> device;
        for (const KvBlock& b : f->blocks) {
            device.push_back(floats(b.view));
            seen_.try_emplace(block_key(b), b);
        }
        pages_.add_frame(device);
        EXPECT_TRUE(st_->end_frame());
        std::vector<KvBlock> promoted;  // pinned again: seen_ has them
        EXPECT_TRUE(tiers_->add_frame(*st_, t_, f->blocks, promoted));
        std::vector<std::uint64_t> left;
        EXPECT_TRUE(tiers_->age(*st_, ++t_, left));
        pages_.sync(*tiers_);
        return f->blocks;
    }

    void use(const TierOptions& o) {
        auto t = KvTiers::create(o, alloc_->block_bytes(), kRegions, kWindow);
        ASSERT_TRUE(t) << t.error_message();
        tiers_.emplace(std::move(*t));
    }

    void TearDown() override {
        for (const auto& [key, b] : seen_)
            if (tiers_ && tiers_->entry(key)->tier == Tier::device) {
                EXPECT_TRUE(st_->unpin(b));
            }
    }

    std::optional<KvTiers> tiers_;
    KvPageTable pages_{kRegions};
    std::map<std::uint64_t, KvBlock> seen_;  // every block a frame used, by key
    std::uint32_t t_ = 0;
};

TEST_F(Pages, ADemotedBlockIsReadFromItsHostCopyAndNeverFromItsDeviceMemory) {
    use({.resident_frames = 5});
    KvTiers& t = *tiers_;
    KvPageTable& pages = pages_;
    std::vector<std::vector<KvBlock>> frames;
    for (int i = 0; i < 8; i++) frames.push_back(frame());
    ASSERT_EQ(pages.frames(), 8u);
    // Frames 0..3 were demoted: their pages are gone; frames 4..7 read their device memory.
    for (std::uint32_t r = 0; r < kRegions; r++) {
        EXPECT_EQ(pages.readable()[3 * kRegions + r], nullptr);
        EXPECT_EQ(pages.readable()[4 * kRegions + r], floats(frames[4][r].view));
    }
    // A read stages frame 0, region 5: its page is the host copy, with the block's bytes.
    const std::size_t slot = 5;
    ASSERT_TRUE(t.fetch(block_key(frames[0][5])));
    ASSERT_TRUE(pages.stage(slot, t));
    const float* p = pages.readable()[slot];
    EXPECT_EQ(p, floats(t.host_copy(block_key(frames[0][5]))));
    EXPECT_NE(p, floats(frames[0][5].view));
    const auto* bytes = reinterpret_cast<const std::byte*>(p);  // NOLINT
    EXPECT_TRUE(
        std::all_of(bytes, bytes + alloc_->block_bytes(), [](std::byte b) { return b == std::byte{6}; }));
    EXPECT_TRUE(pages.stage(7 * kRegions, t));  // on the device: its page unchanged
    EXPECT_EQ(pages.readable()[7 * kRegions], floats(frames[7][0].view));
    // The next frame's moves forget the staged copy: it was that step's.
    frame();
    EXPECT_EQ(pages.readable()[slot], nullptr);
}

TEST_F(Pages, APromotedBlockIsReadFromItsDeviceMemoryAgain) {
    use({.resident_frames = 5});
    KvTiers& t = *tiers_;
    KvPageTable& pages = pages_;
    const KvBlock old = frame()[0];
    for (int i = 1; i < 5; i++) frame();
    // Unreferenced for 5 frames: demoted, its page gone; a read stages its host copy.
    ASSERT_EQ(t.slot_tiers()[0], Tier::host);
    EXPECT_EQ(pages.readable()[0], nullptr);
    ASSERT_TRUE(pages.stage(0, t));
    EXPECT_EQ(pages.readable()[0], floats(t.host_copy(block_key(old))));
    frame(old);  // referenced again: promoted, every slot of it read on the device
    ASSERT_EQ(t.bytes().promoted, 1u);
    ASSERT_EQ(t.slot_tiers()[0], Tier::device);
    for (const std::uint32_t s : {0U, 5 * kRegions})
        EXPECT_EQ(pages.readable()[s], floats(old.view)) << "slot " << s;
}

TEST_F(Pages, ADroppedBlockHasNoPage) {
    use({.resident_frames = 5, .drop = true});
    KvTiers& t = *tiers_;
    KvPageTable& pages = pages_;
    for (int i = 0; i < 6; i++) frame();
    ASSERT_EQ(t.slot_tiers()[3], Tier::dropped);
    EXPECT_FALSE(pages.stage(3, t));
    EXPECT_EQ(pages.readable()[3], nullptr);
    EXPECT_THROW(pages.add_frame(std::vector<const float*>(3)), std::invalid_argument);
}

}  // namespace
}  // namespace vrex::lcp
