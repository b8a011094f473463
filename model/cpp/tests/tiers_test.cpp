// vrex::lcp::KvTiers on the emulated device: the memory hierarchy of both paths (hierarchy.py binds it):
// demotion copies and unpins, coldness, staging reads and recalls, promotion, the disk tier below
// host memory, dropping (the no-demotion control), the byte accounting.
#include "vrex/lcp/tiers.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
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
        if (before_age_) before_age_();
        aged_ = tiers.age(*st_, t_ + 1, demoted, &spilled_);
        if (before_age_) {
            after_age_();
        } else {
            EXPECT_TRUE(aged_) << aged_.error_message();
        }
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

    KvTiers tiers(Coldness c = Coldness::zombie) { return tiers({.resident_frames = 5, .coldness = c}); }
    KvTiers tiers(const TierOptions& o) {
        auto t = KvTiers::create(o, alloc_->block_bytes(), kRegions, kWindow);
        EXPECT_TRUE(t) << t.error_message();
        return std::move(*t);
    }

    std::vector<KvBlock> pinned_;
    std::vector<std::uint64_t> spilled_;            // every spill of frame(), in order
    std::function<void()> before_age_, after_age_;  // set: aged_ is the test's to check
    Result<void> aged_;
    std::uint32_t t_ = 0;
};

// A byte of frame() @t's pattern for region @r.
std::byte pattern(std::uint32_t t, std::uint32_t r) {
    return static_cast<std::byte>(1 + t * kRegions + r);
}

bool all_equal(std::span<const std::byte> bytes, std::byte b) {
    return !bytes.empty() && std::all_of(bytes.begin(), bytes.end(), [&](std::byte x) { return x == b; });
}

// Tiers with a directory of their own for the disk tier, which must be empty again at the end.
class DiskTiers : public Tiers {
  protected:
    void SetUp() override {
        Tiers::SetUp();
        char name[] = "/tmp/vrex-tiers-test-XXXXXX";
        ASSERT_NE(::mkdtemp(name), nullptr);
        dir_ = name;
    }
    void TearDown() override {
        Tiers::TearDown();
        EXPECT_EQ(entries(), 0u) << "the spill file was left in " << dir_;
        EXPECT_EQ(::rmdir(dir_.c_str()), 0);
    }
    std::size_t entries() const {
        return static_cast<std::size_t>(
            std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()));
    }
    TierOptions spilling(std::uint32_t host_blocks, Coldness c = Coldness::zombie) const {
        return {.resident_frames = 5, .coldness = c, .host_blocks = host_blocks, .disk_dir = dir_};
    }
    std::string dir_;
};

TEST_F(Tiers, RefusesAResidencyBelowTheWindow) {
    EXPECT_FALSE(KvTiers::create({.resident_frames = 3}, alloc_->block_bytes(), kRegions, kWindow));
    EXPECT_FALSE(KvTiers::create({.resident_frames = 5}, 0, kRegions, kWindow));
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

// The moves' copies are the copy engine's: a frame's demotions in one kick (before their unpins),
// a question's staged copies when its read ends, each counted with its bytes.
TEST_F(Tiers, AFramesDemotionsRunInOneKickAndAReadsStagingWhenItEnds) {
    KvTiers t = tiers();
    std::vector<std::vector<KvBlock>> frames;
    for (int i = 0; i < 8; i++) frames.push_back(frame(t));
    const CopyEngine& dma = t.copy_engine();
    EXPECT_EQ(dma.copies(), 4 * kRegions);  // frames 0..3, one copy each
    EXPECT_EQ(dma.kicks(), 4U);             // one per demoting frame, not one per block
    EXPECT_EQ(dma.bytes(), 4 * kRegions * alloc_->block_bytes());
    EXPECT_TRUE(dma.idle());
    auto got = t.fetch(block_key(frames[1][2]));
    ASSERT_TRUE(got) << got.error_message();
    EXPECT_TRUE(all_equal(*got, pattern(1, 2)));
    EXPECT_FALSE(dma.idle());  // staged when the read ends
    EXPECT_EQ(dma.copies(), 4 * kRegions);
    t.end_read();
    EXPECT_TRUE(dma.idle());
    EXPECT_EQ(dma.copies(), 4 * kRegions + 1);
    EXPECT_EQ(dma.kicks(), 5U);
    EXPECT_TRUE(all_equal(t.host_copy(block_key(frames[1][2])), pattern(1, 2)));
}

// An unpin that fails within a frame's demotions: the blocks before it left, the failing one is on
// the host (its copy made), and the blocks after it stay on the device with their host slots given
// back; the next frame demotes them.
TEST_F(Tiers, AFailedUnpinLeavesTheRestOnTheDeviceWithoutHostSlots) {
    KvTiers t = tiers();
    std::vector<std::vector<KvBlock>> frames;
    for (int i = 0; i < 4; i++) frames.push_back(frame(t));
    before_age_ = [&] { ASSERT_TRUE(st_->unpin(frames[0][7])); };
    after_age_ = [] {};
    frames.push_back(frame(t));  // frame 4: frame 0 goes cold
    ASSERT_FALSE(aged_);
    EXPECT_EQ(aged_.error(), std::errc::no_such_file_or_directory) << aged_.error_message();
    EXPECT_EQ(t.host_blocks(), 8U);  // regions 0..7 of frame 0
    EXPECT_EQ(t.host_pool().in_use(), 8U) << "the copies of the blocks that stayed were not given back";
    EXPECT_EQ(t.device_blocks(), 5 * kRegions - 8);
    for (std::uint32_t r = 0; r < kRegions; r++)
        EXPECT_EQ(t.entry(block_key(frames[0][r]))->tier, r <= 7 ? Tier::host : Tier::device) << r;
    std::erase_if(pinned_, [&](const KvBlock& b) { return block_key(b) == block_key(frames[0][7]); });
    before_age_ = nullptr;
    frame(t);  // frame 5: frame 0's rest and frame 1 leave
    EXPECT_EQ(t.host_blocks(), 2 * kRegions);
    EXPECT_EQ(t.host_pool().in_use(), 2 * kRegions);
    for (std::uint32_t r = 8; r < kRegions; r++)
        EXPECT_TRUE(all_equal(t.host_copy(block_key(frames[0][r])), pattern(0, r))) << r;
}

// A host reservation (TierOptions::host_reserve_blocks, whole chunks): the demotions land in it and
// keep their bytes, with the tiers and counters of ColdBlocksAreCopiedToHostAndUnpinned; past it the
// host tier grows and counts the slots it grew for.
TEST_F(Tiers, AHostReservationHoldsTheDemotionsAndGrowsPastIt) {
    KvTiers t = tiers({.resident_frames = 5, .host_reserve_blocks = kRegions});
    const std::size_t per = t.host_pool().chunk_bytes() / alloc_->block_bytes();
    ASSERT_EQ(t.host_pool().reserved(), per);  // one chunk
    ASSERT_EQ(t.host_pool().chunks(), 1u);
    std::vector<std::vector<KvBlock>> frames;
    for (int i = 0; i < 8; i++) frames.push_back(frame(t));
    EXPECT_EQ(t.device_blocks(), 4 * kRegions);
    EXPECT_EQ(t.host_blocks(), 4 * kRegions);
    EXPECT_EQ(t.bytes().demoted, 4 * kRegions);
    EXPECT_EQ(t.host_pool().grown(), 0u);
    EXPECT_EQ(t.host_pool().chunks(), 1u);
    // Frames until the demotions pass the reservation by one frame's blocks.
    const std::size_t frames_past = per / kRegions + 1 + 4;
    while (frames.size() < frames_past) frames.push_back(frame(t));
    EXPECT_EQ(t.bytes().demoted, (frames_past - 4) * kRegions);
    EXPECT_EQ(t.host_pool().grown(), (frames_past - 4) * kRegions - per);
    EXPECT_EQ(t.host_pool().chunks(), 2u);
    for (std::uint32_t f = 0; f + 4 < frames_past; f++)
        for (std::uint32_t r = 0; r < kRegions; r++)
            ASSERT_TRUE(all_equal(t.host_copy(block_key(frames[f][r])), pattern(f, r))) << f << "." << r;
    // No reservation: today's tier, nothing mapped before the first demotion.
    EXPECT_EQ(tiers().host_pool().reserved(), 0u);
    // Nothing is ever copied with drop: no reservation.
    EXPECT_EQ(tiers({.resident_frames = 5, .drop = true, .host_reserve_blocks = 1000}).host_pool().reserved(),
              0u);
}

// Capped by host_blocks, the reservation is what the host tier can hold (host_blocks + 1: the copy
// that spills is made first), in whole chunks.
TEST_F(DiskTiers, AHostReservationIsCappedAtTheHostTier) {
    const std::size_t per = (std::size_t{2} << 20) / alloc_->block_bytes();
    TierOptions o = spilling(static_cast<std::uint32_t>(per) + 5);
    o.host_reserve_blocks = static_cast<std::uint32_t>(10 * per);
    EXPECT_EQ(tiers(o).host_pool().reserved(), 2 * per);
    o.host_blocks = static_cast<std::uint32_t>(per) - 1;  // host_blocks + 1 = one chunk
    EXPECT_EQ(tiers(o).host_pool().reserved(), per);
}

TEST_F(Tiers, AccountsDeviceBytesWithStagingAndTotalWithHost) {
    KvTiers t = tiers();
    std::vector<std::vector<KvBlock>> frames;
    for (int i = 0; i < 7; i++) frames.push_back(frame(t));
    const std::uint64_t bb = alloc_->block_bytes();
    // One read stages 3 demoted blocks (one twice: counted once), another 1; a recall stages 1.
    EXPECT_TRUE(t.fetch(block_key(frames[0][1])));
    EXPECT_TRUE(t.fetch(block_key(frames[0][2])));
    EXPECT_TRUE(t.fetch(block_key(frames[0][2])));
    EXPECT_TRUE(t.fetch(block_key(frames[1][3])));
    t.end_read();
    EXPECT_TRUE(t.fetch(block_key(frames[1][4])));
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
    auto f = KvTiers::create({.resident_frames = kWindow, .coldness = Coldness::fifo}, alloc_->block_bytes(),
                             kRegions, kWindow);
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

TEST_F(DiskTiers, SpillsTheLeastRecentlyReferencedHostCopyFirst) {
    KvTiers t = tiers(spilling(20));
    std::vector<std::vector<KvBlock>> frames;
    frames.push_back(frame(t));
    // Region 0's block of frame 0 is referenced until frame 2: its last reference ties with frame
    // 2's blocks and it entered first, so it spills after frame 1's blocks and before frame 2's.
    for (int i = 1; i < 3; i++) frames.push_back(frame(t, {frames[0][0]}));
    for (int i = 3; i < 10; i++) frames.push_back(frame(t));
    EXPECT_EQ(entries(), 0u);  // the spill file has no name
    // After frame 9 (aged for frame 10): frames 6..9 on the device, 0..5 demoted (one block fewer:
    // frame 1 and 2 alias frame 0's region 0), 20 of them on the host, the rest on disk.
    const std::size_t demoted = 6 * kRegions - 2;
    EXPECT_EQ(t.device_blocks(), 4 * kRegions);
    EXPECT_EQ(t.host_blocks(), 20u);
    EXPECT_EQ(t.disk_blocks(), demoted - 20);
    EXPECT_EQ(t.bytes().demoted, demoted);
    EXPECT_EQ(t.bytes().spilled, demoted - 20);
    std::vector<std::uint64_t> want;
    for (std::uint32_t r = 1; r < kRegions; r++) want.push_back(block_key(frames[0][r]));
    for (std::uint32_t r = 1; r < kRegions; r++) want.push_back(block_key(frames[1][r]));
    want.push_back(block_key(frames[0][0]));
    for (std::uint32_t f = 2; want.size() < demoted - 20; f++)
        for (std::uint32_t r = f == 2 ? 1 : 0; r < kRegions && want.size() < demoted - 20; r++)
            want.push_back(block_key(frames[f][r]));
    EXPECT_EQ(spilled_, want);
    for (const std::uint64_t k : want) EXPECT_EQ(t.entry(k)->tier, Tier::disk);
    EXPECT_EQ(t.keys_on(Tier::disk).size(), want.size());
    EXPECT_EQ(t.slot_tiers()[0], Tier::disk);
    EXPECT_EQ(t.slot_tiers()[5 * kRegions + 15], Tier::host);
    // Under a host limit each demotion's copy runs alone, before its spill: the host pool never
    // holds more than the limit and the one copy that spills.
    EXPECT_EQ(t.copy_engine().kicks(), demoted);
    EXPECT_EQ(t.copy_engine().copies(), demoted);
    EXPECT_EQ(t.host_pool().grown(), 21U);
}

TEST_F(DiskTiers, ReadsSpilledBlocksBackWithTheirBytes) {
    KvTiers t = tiers(spilling(3));
    std::vector<std::vector<KvBlock>> frames;
    // 70 spills: the file grows past its first chunk of slots.
    for (int i = 0; i < 10; i++) frames.push_back(frame(t));
    ASSERT_GT(t.disk_blocks(), DiskBlockPool::kSlotsPerChunk);
    for (std::uint32_t f = 0; f < 6; f++)
        for (std::uint32_t r = 0; r < kRegions; r++) {
            const std::uint64_t k = block_key(frames[f][r]);
            const auto tier = t.entry(k)->tier;
            ASSERT_TRUE(tier == Tier::disk || tier == Tier::host);
            EXPECT_TRUE(all_equal(t.host_copy(k), pattern(f, r))) << f << " " << r;
            auto bytes = t.fetch(k);
            ASSERT_TRUE(bytes) << bytes.error_message();
            EXPECT_TRUE(all_equal(*bytes, pattern(f, r))) << f << " " << r;
            EXPECT_TRUE(all_equal(t.fetch_prefill(k), pattern(f, r)));
        }
    EXPECT_EQ(t.bytes().fetched, 2 * 6 * kRegions);  // once for the read, once for the prefill
    EXPECT_EQ(t.bytes().recalled, 6 * kRegions);
}

TEST_F(DiskTiers, AccountsTheDiskInTheTotal) {
    KvTiers t = tiers(spilling(20));
    for (int i = 0; i < 10; i++) frame(t);
    t.account(0);
    const std::uint64_t bb = alloc_->block_bytes();
    // Every block is on one tier: the total is the stream's 160 blocks, the disk 6 frames - 20.
    EXPECT_EQ(t.bytes().device_series.back(), 4 * kRegions * bb);
    EXPECT_EQ(t.bytes().total_peak, 10 * kRegions * bb);
    EXPECT_EQ(t.bytes().host_peak, 20 * bb);
    EXPECT_EQ(t.bytes().disk_peak, (6 * kRegions - 20) * bb);
}

TEST_F(DiskTiers, PromotesASpilledBlockAFrameReferencesAgain) {
    KvTiers t = tiers(spilling(1));
    const std::vector<KvBlock> first = frame(t);
    for (int i = 1; i < 5; i++) frame(t);
    // Aged for frame 5: frame 0 demoted, all but its last copy (region 15) on disk.
    ASSERT_EQ(t.entry(block_key(first[0]))->tier, Tier::disk);
    const std::size_t on_disk = t.disk_blocks();
    frame(t, {first[0]});
    EXPECT_EQ(t.bytes().promoted, 1u);
    EXPECT_EQ(t.entry(block_key(first[0]))->tier, Tier::device);
    EXPECT_EQ(t.slot_tiers()[0], Tier::device);
    // Its disk slot was given back (frame 1's blocks went to disk meanwhile: 16 more, one fewer).
    EXPECT_EQ(t.disk_blocks(), on_disk + kRegions - 1);
    EXPECT_TRUE(t.host_copy(block_key(first[0])).empty());
}

TEST_F(DiskTiers, ReportsAMissingDirectoryAndAFullDisk) {
    auto missing = KvTiers::create({.resident_frames = 5, .host_blocks = 4, .disk_dir = dir_ + "/nowhere"},
                                   alloc_->block_bytes(), kRegions, kWindow);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error(), std::errc::no_such_file_or_directory);
    EXPECT_NE(missing.error_message().find(dir_ + "/nowhere"), std::string::npos) << missing.error_message();
    // A file size limit below the first chunk of slots while frame 4 ages (the emulated device's
    // own memory grows before): frame 0 leaves, 16 host copies of 4 allowed, the spill fails with
    // EFBIG and says where.
    KvTiers t = tiers(spilling(4));
    for (int i = 0; i < 4; i++) frame(t);
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    ::signal(SIGXFSZ, SIG_IGN);
    before_age_ = [&] {
        rlimit small = old;
        small.rlim_cur = alloc_->block_bytes();
        ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    };
    after_age_ = [&] { ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0); };
    frame(t);
    ASSERT_FALSE(aged_);
    EXPECT_EQ(aged_.error(), std::errc::file_too_large);
    EXPECT_NE(aged_.error_message().find("spill block"), std::string::npos) << aged_.error_message();
    EXPECT_NE(aged_.error_message().find(dir_), std::string::npos) << aged_.error_message();
    // Nothing was lost: the demoted block whose copy could not spill is still on the host, the
    // blocks the failed age() did not reach are still on the device.
    EXPECT_EQ(t.host_blocks(), 5u);
    EXPECT_EQ(t.disk_blocks(), 0u);
    EXPECT_EQ(t.device_blocks() + t.host_blocks(), 5 * kRegions);
    std::erase_if(pinned_, [&](const KvBlock& b) { return t.entry(block_key(b))->tier != Tier::device; });
}

TEST_F(Tiers, DropsColdBlocksAndRefusesToFetchThem) {
    KvTiers t = tiers({.resident_frames = 5, .drop = true, .host_blocks = 4});
    std::vector<std::vector<KvBlock>> frames;
    for (int i = 0; i < 8; i++) frames.push_back(frame(t));
    t.account(0);
    EXPECT_EQ(t.bytes().dropped, 4 * kRegions);
    EXPECT_EQ(t.count(Tier::dropped), 4 * kRegions);
    EXPECT_EQ(t.bytes().demoted, 0u);
    EXPECT_EQ(t.host_blocks() + t.disk_blocks(), 0u);  // no copy: host_blocks has nothing to limit
    EXPECT_EQ(t.bytes().total_peak, t.bytes().device_peak);
    const std::uint64_t gone = block_key(frames[0][3]);
    EXPECT_EQ(t.slot_tiers()[3], Tier::dropped);
    EXPECT_FALSE(st_->unpin(frames[0][3]));  // unpinned when dropped
    const auto f = t.fetch(gone);
    ASSERT_FALSE(f);
    EXPECT_EQ(f.error(), std::errc::no_message_available);
    EXPECT_NE(f.error_message().find("dropped"), std::string::npos);
    EXPECT_TRUE(t.fetch_prefill(gone).empty());
    EXPECT_TRUE(t.host_copy(gone).empty());
    EXPECT_EQ(t.bytes().fetched + t.bytes().recalled, 0u);
    EXPECT_EQ(t.fetch(99).error(), std::errc::no_such_file_or_directory);
}

TEST_F(Tiers, DemotesTheBlockAnEvictionRuleChoosesAndNoOther) {
    KvTiers t = tiers();
    const std::vector<KvBlock> first = frame(t);
    const std::uint64_t k = block_key(first[4]);
    EXPECT_TRUE(t.demote(*st_, k));
    std::erase_if(pinned_, [&](const KvBlock& b) { return block_key(b) == k; });
    EXPECT_EQ(t.entry(k)->tier, Tier::host);
    EXPECT_EQ(t.keys_on(Tier::device).size(), kRegions - 1);
    EXPECT_TRUE(all_equal(t.host_copy(k), pattern(0, 4)));
    const auto again = t.demote(*st_, k);
    ASSERT_FALSE(again);
    EXPECT_NE(again.error_message().find("not on the device"), std::string::npos);
}

TEST_F(Tiers, ColdIsTheRuleAgeApplies) {
    KvTiers t = tiers();
    const std::vector<KvBlock> first = frame(t);
    EXPECT_FALSE(t.cold(block_key(first[0]), 4));
    EXPECT_TRUE(t.cold(block_key(first[0]), 5));
    EXPECT_FALSE(t.cold(12345, 100));
    EXPECT_EQ(t.entry(block_key(first[0]))->last_ref, 0u);
    EXPECT_FALSE(t.entry(12345));
}

TEST(DiskBlockPool, GivesSlotsBackAndKeepsTheirAddresses) {
    char name[] = "/tmp/vrex-disk-pool-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    {
        EXPECT_FALSE(DiskBlockPool::create(name, 0));
        auto p = DiskBlockPool::create(name, 4096);
        ASSERT_TRUE(p) << p.error_message();
        std::vector<std::byte> b(4096);
        std::vector<std::uint32_t> slots;
        for (int i = 0; i < 70; i++) {
            std::fill(b.begin(), b.end(), static_cast<std::byte>(i));
            auto s = p->put(b);
            ASSERT_TRUE(s) << s.error_message();
            slots.push_back(*s);
        }
        const std::byte* first = p->view(slots[0]).data();
        EXPECT_EQ(p->slots(), 2 * DiskBlockPool::kSlotsPerChunk);
        EXPECT_EQ(p->view(slots[0]).data(), first);
        for (int i = 0; i < 70; i++) EXPECT_TRUE(all_equal(p->view(slots[i]), static_cast<std::byte>(i)));
        p->give(slots[5]);
        std::fill(b.begin(), b.end(), std::byte{200});
        auto s = p->put(b);
        ASSERT_TRUE(s);
        EXPECT_EQ(*s, slots[5]);  // a slot given back first
        EXPECT_TRUE(all_equal(p->view(*s), std::byte{200}));
        EXPECT_EQ(p->in_use(), 70u);
        EXPECT_FALSE(p->put(std::span<const std::byte>(b).first(10)));
        DiskBlockPool moved = std::move(*p);
        EXPECT_TRUE(all_equal(moved.view(slots[69]), std::byte{69}));
    }
    EXPECT_EQ(::rmdir(name), 0);  // nothing left in it
}

}  // namespace
}  // namespace vrex::lcp
