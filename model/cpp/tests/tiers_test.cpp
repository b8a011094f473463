// vrex::lcp::KvTiers on the emulated device: the C++ runner's memory hierarchy (hierarchy.py's rules):
// demotion copies and unpins, coldness, staging reads and recalls, promotion, the byte accounting.
#include "vrex/lcp/tiers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "emulated_stream.hpp"
#include "vrex/lcp/policy.hpp"

namespace vrex::lcp {
namespace {

constexpr std::uint32_t kRegions = 16;
constexpr std::uint32_t kWindow = 4;

class Tiers : public EmulatedStream {
  protected:
    // One frame: @reuse[r] set aliases that block, else a new pinned block filled with frame t's
    // pattern; then the frame enters @tiers and cold blocks are demoted.
    std::vector<KvBlock> frame(KvTiers& tiers, const std::vector<std::optional<KvBlock>>& reuse = {}) {
        for (std::size_t i = 0; i < luma_.size(); i++) luma_[i] = static_cast<std::uint8_t>(i * 7 + t_);
        EXPECT_TRUE(st_->begin_frame({luma_.data(), 128, 96, 128}));
        std::vector<std::optional<KvBlock>> choice = reuse;
        choice.resize(kRegions);
        auto f = apply_choice(*st_, choice);
        EXPECT_TRUE(f) << f.error_message();
        for (const KvBlock& b : f->fresh_blocks) {
            std::memset(b.data.data(), static_cast<int>(1 + t_ * kRegions + b.region), b.data.size());
            pinned_.push_back(b);
        }
        EXPECT_TRUE(st_->end_frame());
        std::vector<KvBlock> repinned;
        EXPECT_TRUE(tiers.add_frame(*st_, t_, f->blocks, repinned));
        pinned_.insert(pinned_.end(), repinned.begin(), repinned.end());
        tiers.account(0);
        std::vector<std::uint64_t> demoted;
        EXPECT_TRUE(tiers.age(*st_, t_ + 1, demoted));
        std::erase_if(pinned_, [&](const KvBlock& b) {
            return std::find(demoted.begin(), demoted.end(), block_key(b)) != demoted.end();
        });
        t_++;
        return f->blocks;
    }

    void TearDown() override {
        if (st_) {
            EXPECT_TRUE(unpin_all(*st_, pinned_));
        }
    }

    KvTiers tiers(Coldness c = Coldness::zombie) {
        auto t = KvTiers::create({5, c}, alloc_->block_bytes(), kRegions, kWindow);
        EXPECT_TRUE(t) << t.error_message();
        return std::move(*t);
    }

    std::vector<KvBlock> pinned_;
    std::uint32_t t_ = 0;
};

TEST_F(Tiers, RefusesAResidencyBelowTheWindow) {
    EXPECT_FALSE(KvTiers::create({3, Coldness::zombie}, alloc_->block_bytes(), kRegions, kWindow));
    EXPECT_FALSE(KvTiers::create({5, Coldness::zombie}, 0, kRegions, kWindow));
}

TEST_F(Tiers, ColdBlocksAreCopiedToHostAndUnpinned) {
    KvTiers t = tiers();
    std::vector<std::vector<KvBlock>> frames;
    for (int i = 0; i < 8; i++) frames.push_back(frame(t));
    // After frame 7 (aged for frame 8): frames 4..7 stay on the device (with frame 8, the 5 resident
    // frames), 0..3 were demoted (unpinned: a second unpin fails).
    EXPECT_EQ(t.device_blocks(), 4 * kRegions);
    EXPECT_EQ(t.host_blocks(), 4 * kRegions);
    EXPECT_EQ(t.bytes().demoted, 4 * kRegions);
    for (std::uint32_t r = 0; r < kRegions; r++) {
        EXPECT_EQ(t.slot_tiers()[3 * kRegions + r], Tier::host);
        EXPECT_EQ(t.slot_tiers()[4 * kRegions + r], Tier::device);
        EXPECT_FALSE(st_->unpin(frames[0][r]));
    }
    // The host copy holds the block's bytes (frame 0, region 5's pattern).
    const auto bytes = t.fetch_prefill(block_key(frames[0][5]));
    ASSERT_EQ(bytes.size(), alloc_->block_bytes());
    EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{6}; }));
    EXPECT_EQ(t.bytes().recalled, 1u);
    EXPECT_EQ(t.bytes().fetched, 1u);
    // A device block's recall is its own memory: no staging.
    EXPECT_EQ(t.fetch_prefill(block_key(frames[7][0])).data(), frames[7][0].view.data());
    EXPECT_EQ(t.bytes().fetched, 1u);
    EXPECT_TRUE(t.fetch_prefill(12345).empty());
}

TEST_F(Tiers, AccountsDeviceBytesWithStagingAndTotalWithHost) {
    KvTiers t = tiers();
    std::vector<std::vector<KvBlock>> frames;
    for (int i = 0; i < 7; i++) frames.push_back(frame(t));
    const std::uint64_t bb = alloc_->block_bytes();
    // One read stages 3 demoted blocks (one twice: counted once), another 1; a recall stages 1.
    t.fetch(block_key(frames[0][1]));
    t.fetch(block_key(frames[0][2]));
    t.fetch(block_key(frames[0][2]));
    t.fetch(block_key(frames[1][3]));
    t.end_read();
    t.fetch(block_key(frames[1][4]));
    t.end_read();
    (void)t.fetch_prefill(block_key(frames[1][9]));
    t.account(1000);
    EXPECT_EQ(t.bytes().fetched, 5u);
    EXPECT_EQ(t.bytes().fetched_series.back(), 5u);  // this step's (the earlier steps staged none)
    EXPECT_EQ(t.bytes().fetched_series.size(), t.bytes().device_series.size());
    // device: frames 3..6 + 1 block staged for the prefill + the largest read (3) + metadata; host:
    // frames 0..2. The device peak was a full step's 5 frames (frame 6 before its aging).
    EXPECT_EQ(t.bytes().device_series.back(), (4 * kRegions + 1 + 3) * bb + 1000);
    EXPECT_EQ(t.bytes().device_peak, 5 * kRegions * bb);
    EXPECT_EQ(t.bytes().host_peak, 3 * kRegions * bb);
    EXPECT_EQ(t.bytes().total_peak, (4 * kRegions + 1 + 3 + 3 * kRegions) * bb + 1000);
}

TEST_F(Tiers, ZombieColdnessKeepsAReferencedBlock) {
    KvTiers z = tiers(Coldness::zombie);
    // Region 0's block of frame 0 is aliased by every later frame: referenced, never cold.
    const KvBlock kept = frame(z)[0];
    for (int i = 1; i < 8; i++) frame(z, {kept});
    EXPECT_EQ(z.slot_tiers()[0], Tier::device);
    EXPECT_EQ(z.slot_tiers()[1], Tier::host);
    EXPECT_EQ(z.bytes().promoted, 0u);
}

TEST_F(Tiers, FifoDemotesAReferencedBlockStagesItForTheWindowAndPromotesItWhenReferenced) {
    KvTiers f = tiers(Coldness::fifo);
    const KvBlock old = frame(f)[0];
    for (int i = 1; i < 5; i++) frame(f, {old});
    // Computed 5 frames ago: demoted although the window's frames reference it.
    EXPECT_EQ(f.slot_tiers()[0], Tier::host);
    EXPECT_EQ(f.slot_tiers()[4 * kRegions], Tier::host);
    const auto before = f.bytes().fetched;
    f.stage_window(t_);
    EXPECT_EQ(f.bytes().fetched, before + 1);  // staged once for the window, whatever the references
    // Referenced by a new frame: pinned again (promoted: the device bytes equal the host copy).
    frame(f, {old});
    EXPECT_EQ(f.bytes().promoted, 1u);
}

TEST_F(Tiers, FifoAtTheWindowStagesOnlyTheWindowsFrames) {
    // resident_frames = the window: after frame 3, frame 0 is demoted; the next prefill's window is
    // frames 1..3, all on the device, so nothing is staged (frame 0 was, by an off-by-one).
    auto f = KvTiers::create({kWindow, Coldness::fifo}, alloc_->block_bytes(), kRegions, kWindow);
    ASSERT_TRUE(f) << f.error_message();
    for (int i = 0; i < 4; i++) frame(*f);
    EXPECT_EQ(f->slot_tiers()[0], Tier::host);
    f->stage_window(t_);
    EXPECT_EQ(f->bytes().fetched, 0u);
}

TEST_F(Tiers, UseColdnessKeepsABlockTheReadSelected) {
    // The same frames under each rule; at frame 3 a read selects region 2's block of frame 0 and a
    // recall installs from region 7's (touch): with use they stay 3 more frames, the rest of frame 0
    // goes at the resident edge; zombie and fifo age by references and creation alone.
    for (const Coldness c : {Coldness::use, Coldness::zombie, Coldness::fifo}) {
        KvTiers t = tiers(c);
        const std::vector<KvBlock> first = frame(t);
        for (int i = 1; i < 4; i++) frame(t);
        t.touch(block_key(first[2]), t_ - 1);
        t.touch(block_key(first[7]), t_ - 1);
        t.touch(12345, t_ - 1);  // unknown: ignored
        frame(t);                // frame 4, aged for frame 5: frame 0 is 5 frames old
        const bool kept = c == Coldness::use;
        EXPECT_EQ(t.slot_tiers()[2], kept ? Tier::device : Tier::host);
        EXPECT_EQ(t.slot_tiers()[7], kept ? Tier::device : Tier::host);
        EXPECT_EQ(t.slot_tiers()[3], Tier::host);
        EXPECT_EQ(t.device_blocks(), 4 * kRegions + (kept ? 2u : 0u));
        for (int i = 5; i < 7; i++) frame(t);  // read at frame 3: warm until frame 8 begins
        EXPECT_EQ(t.slot_tiers()[2], kept ? Tier::device : Tier::host);
        frame(t);  // frame 7, aged for frame 8: frames 0..3 are 5 frames old, the read too
        EXPECT_EQ(t.slot_tiers()[2], Tier::host);
        EXPECT_EQ(t.slot_tiers()[7], Tier::host);
        EXPECT_EQ(t.device_blocks(), 4 * kRegions);
        EXPECT_EQ(t.bytes().demoted, 4 * kRegions);
    }
}

}  // namespace
}  // namespace vrex::lcp
