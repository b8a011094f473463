// vrex::lcp::ReusePolicy on the emulated device: the decisions the Python layer and the C++ runner
// both take from it (candidates, guard, age cap, fingerprint filter, alias and pin).
#include "vrex/lcp/policy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "emulated_stream.hpp"

namespace vrex::lcp {
namespace {

constexpr std::uint32_t kRegions = 16;

class Policy : public EmulatedStream {
  protected:
    // Begins a frame of noise seeded by @scene (the same scene: the same luma); returns its fingerprint.
    Fingerprint begin(std::uint8_t scene) {
        std::mt19937 rng(scene);
        for (auto& p : luma_) p = static_cast<std::uint8_t>(rng());
        LumaView v;
        v.data = luma_.data();
        v.width = 128;
        v.height = 96;
        v.stride = 128;
        auto fi = st_->begin_frame(v);
        EXPECT_TRUE(fi) << fi.error_message();
        return fi ? fi->fp : Fingerprint{};
    }

    // With a host tier: the engine demotes the blocks computed max_age + 1 frames ago (from now on
    // only recall reaches them), within the frame just begun.
    void demote_due(ReusePolicy& p) {
        const std::uint32_t age = p.options().max_age + 1;
        if (!p.host_slots() || t_ < age || t_ - age >= by_frame_.size()) return;
        for (const KvBlock& b : by_frame_[t_ - age]) {
            if (!p.recallable(block_key(b))) continue;  // another policy's (tests that run two)
            auto h = p.demote(*st_, block_key(b), b.view);
            EXPECT_TRUE(h) << h.error_message();
        }
    }

    // One frame under @p: choose, apply, record the fresh blocks; returns the regions reused.
    std::vector<bool> frame(ReusePolicy& p, std::uint8_t scene,
                            const std::array<std::uint32_t, kRegions>& h) {
        const Fingerprint fp = begin(scene);
        demote_due(p);
        auto choice = p.choose(*st_, fp, h, t_);
        EXPECT_TRUE(choice) << choice.error_message();
        auto f = apply_choice(*st_, *choice);
        EXPECT_TRUE(f) << f.error_message();
        std::vector<std::uint32_t> fh;
        for (std::uint32_t r : f->fresh) fh.push_back(h[r]);
        EXPECT_TRUE(p.computed(f->fresh_blocks, fh, t_));
        for (const KvBlock& b : f->fresh_blocks) pinned_.push_back(b);
        by_frame_.push_back(f->fresh_blocks);
        EXPECT_TRUE(st_->end_frame());
        t_++;
        std::vector<bool> reused(kRegions);
        for (std::uint32_t r = 0; r < kRegions; r++) reused[r] = (*choice)[r].has_value();
        return reused;
    }

    static std::size_t count(const std::vector<bool>& v) {
        return static_cast<std::size_t>(std::count(v.begin(), v.end(), true));
    }

    void TearDown() override {
        if (st_) {
            EXPECT_TRUE(unpin_all(*st_, pinned_));
        }
    }

    std::vector<KvBlock> pinned_;
    std::vector<std::vector<KvBlock>> by_frame_;  // blocks computed per frame
    std::uint32_t t_ = 0;
};

std::array<std::uint32_t, kRegions> hashes(std::uint32_t v) {
    std::array<std::uint32_t, kRegions> h{};
    h.fill(v);
    return h;
}

TEST_F(Policy, RefusesOptionsOutOfRange) {
    EXPECT_EQ(ReusePolicy::create({.radius = 32}, kRegions).error(), std::errc::invalid_argument);
    EXPECT_EQ(ReusePolicy::create({.guard_bits = 33}, kRegions).error(), std::errc::invalid_argument);
    EXPECT_EQ(ReusePolicy::create({}, 0).error(), std::errc::invalid_argument);
    auto p = ReusePolicy::create({}, kRegions);
    ASSERT_TRUE(p);
    begin(10);
    const std::array<std::uint32_t, 3> few{};
    EXPECT_EQ(p->choose(*st_, Fingerprint{}, few, 0).error(), std::errc::invalid_argument);
    EXPECT_TRUE(st_->end_frame());
}

TEST_F(Policy, ReusesAStaticFrameAndAliasesItsBlocks) {
    auto p = ReusePolicy::create({}, kRegions);
    ASSERT_TRUE(p);
    EXPECT_EQ(count(frame(*p, 50, hashes(7))), 0u);  // nothing to reuse yet
    EXPECT_EQ(p->ledger_size(), kRegions);
    EXPECT_EQ(count(frame(*p, 50, hashes(7))), kRegions);
    EXPECT_EQ(pinned_.size(), kRegions);  // no block allocated for the reused frame
    EXPECT_EQ(p->counters().reused, kRegions);
}

TEST_F(Policy, GuardRefusesHashesFartherThanGuardBits) {
    auto p = ReusePolicy::create({.guard_bits = 1}, kRegions);
    ASSERT_TRUE(p);
    frame(*p, 50, hashes(0));
    auto h = hashes(0b1);  // 1 bit away: passes
    h[3] = 0b11;           // 2 bits away: refused
    const auto reused = frame(*p, 50, h);
    EXPECT_EQ(count(reused), kRegions - 1);
    EXPECT_FALSE(reused[3]);
    EXPECT_GE(p->counters().hash_far, 1u);
}

TEST_F(Policy, AgeCapForcesRecompute) {
    auto p = ReusePolicy::create({.max_age = 2}, kRegions);
    ASSERT_TRUE(p);
    frame(*p, 50, hashes(0));                         // frame 0 computes all
    EXPECT_EQ(count(frame(*p, 50, hashes(0))), 16u);  // 1: age 1
    EXPECT_EQ(count(frame(*p, 50, hashes(0))), 16u);  // 2: age 2
    EXPECT_EQ(count(frame(*p, 50, hashes(0))), 0u);   // 3: age 3 > 2, every region recomputed
    EXPECT_GE(p->counters().too_old, 1u);
}

TEST_F(Policy, FingerprintFilterDropsTheTemporalCandidateOfAChangedFrame) {
    auto near = ReusePolicy::create({.radius = 20}, kRegions);
    ASSERT_TRUE(near);
    frame(*near, 0, hashes(0));
    // Another scene: its fingerprint is far from frame 0's, so neither lookup offers a candidate
    // although the key hashes would pass the guard.
    EXPECT_EQ(count(frame(*near, 255, hashes(0))), 0u);
    auto blind = ReusePolicy::create({.fcc = false}, kRegions);  // the temporal entry whatever the FCC says
    ASSERT_TRUE(blind);
    frame(*blind, 0, hashes(0));
    EXPECT_EQ(count(frame(*blind, 255, hashes(0))), kRegions);
}

// The motion gate on the device's region motion (FrameInfo::region_motion): the same noise twice,
// but the second time region 5 (grid x 32..63, y 24..47) moved 2 px right. The key hashes pass the
// guard everywhere and radius 31 lets every temporal candidate through, so only the gate refuses.
class MotionGate : public Policy {
  protected:
    // Frames 0 and 1 under @o; returns frame 1's regions reused (and its region motion in motion_).
    std::vector<bool> run(const ReuseOptions& o, bool pass_motion = true) {
        auto p = ReusePolicy::create(o, kRegions);
        EXPECT_TRUE(p) << p.error_message();
        std::mt19937 rng(77);
        std::vector<std::uint8_t> base(128 * 96);
        for (auto& v : base) v = static_cast<std::uint8_t>(rng());
        std::vector<std::uint8_t> moved = base;
        for (std::uint32_t y = 24; y < 48; y++)
            for (std::uint32_t x = 32; x < 64; x++) moved[y * 128 + x] = base[y * 128 + x - 2];
        std::vector<bool> reused(kRegions);
        for (std::uint32_t t = 0; t < 2; t++) {
            auto fi = st_->begin_frame(LumaView{t ? moved.data() : base.data(), 128, 96, 128});
            EXPECT_TRUE(fi) << fi.error_message();
            motion_ = fi->region_motion;
            auto choice = p->choose(
                *st_, fi->fp, hashes(0), t_,
                pass_motion ? std::span<const std::uint8_t>(motion_) : std::span<const std::uint8_t>{});
            if (!choice) {
                error_ = choice.error_info();
                EXPECT_TRUE(st_->end_frame());
                t_++;
                return {};
            }
            auto f = apply_choice(*st_, *choice);
            EXPECT_TRUE(f) << f.error_message();
            std::vector<std::uint32_t> fh(f->fresh.size(), 0);
            EXPECT_TRUE(p->computed(f->fresh_blocks, fh, t_));
            for (const KvBlock& b : f->fresh_blocks) pinned_.push_back(b);
            EXPECT_TRUE(st_->end_frame());
            t_++;
            for (std::uint32_t r = 0; r < kRegions; r++) reused[r] = (*choice)[r].has_value();
        }
        gated_ = p->counters().gated;
        return reused;
    }
    std::array<std::uint8_t, kRegions> motion_{};
    std::uint64_t gated_ = 0;
    Error error_;
};

TEST_F(MotionGate, RefusesTheRegionThatMovedAndOnlyThatOne) {
    const auto gated = run({.radius = 31, .guard_bits = 0, .motion_gate = 0});
    ASSERT_EQ(gated.size(), kRegions);
    for (std::uint32_t r = 0; r < kRegions; r++) EXPECT_EQ(motion_[r] > 0, r == 5) << "region " << r;
    // Refusing the temporal candidate alone would let the similarity lookup hand back the very
    // same block (frame 0's region 5): the gate refuses the region's device candidates.
    for (std::uint32_t r = 0; r < kRegions; r++) EXPECT_EQ(gated[r], r != 5) << "region " << r;
    EXPECT_EQ(gated_, 1u);
}

TEST_F(MotionGate, AboveTheMotionOrWithoutTheFccNothingIsGated) {
    EXPECT_EQ(count(run({.radius = 31, .guard_bits = 0, .motion_gate = 90})), kRegions);
    EXPECT_EQ(gated_, 0u);
    EXPECT_EQ(count(run({.fcc = false, .guard_bits = 0, .motion_gate = 0})), kRegions);
    EXPECT_EQ(count(run({.radius = 31, .guard_bits = 0})), kRegions) << "no gate";
    // Off, the region motion is not needed.
    EXPECT_EQ(count(run({.radius = 31, .guard_bits = 0}, false)), kRegions);
}

TEST_F(MotionGate, NeedsTheFramesMotionAndAGateInRange) {
    EXPECT_TRUE(run({.radius = 31, .motion_gate = 0}, false).empty());
    EXPECT_EQ(error_.code(), std::errc::invalid_argument);
    EXPECT_NE(error_.message().find("region motion"), std::string::npos) << error_.message();
    EXPECT_EQ(ReusePolicy::create({.motion_gate = 256}, kRegions).error(), std::errc::invalid_argument);
    EXPECT_TRUE(ReusePolicy::create({.motion_gate = 255}, kRegions));
}

TEST_F(Policy, NeverTrustsABlockItDidNotSeeComputed) {
    auto a = ReusePolicy::create({}, kRegions);
    auto b = ReusePolicy::create({}, kRegions);
    ASSERT_TRUE(a && b);
    frame(*a, 50, hashes(0));
    EXPECT_EQ(count(frame(*b, 50, hashes(0))), 0u);
    EXPECT_EQ(b->counters().unknown, b->counters().candidates);
}

// A scene that comes back after a cut, past the age cap: the device offers nothing (the temporal
// entry is the other scene's, the SHIE's old entries are out of the age cap); the SHIE finds the
// demoted copy in its host tier.
TEST_F(Policy, RecallFindsABlockPastTheAgeCapWhenTheViewComesBack) {
    ReuseOptions o{.max_age = 2, .recall = true, .recall_radius = 8, .recall_guard_bits = 0};
    auto p = ReusePolicy::create(o, kRegions);
    ASSERT_TRUE(p);
    ASSERT_TRUE(p->attach_host_tier(*alloc_, 4 * kRegions));
    frame(*p, 50, hashes(7));                               // frame 0: scene A computed (demoted at 3)
    for (int i = 0; i < 4; i++) frame(*p, 200, hashes(9));  // frames 1-4: scene B
    const std::vector<KvBlock> scene_a(pinned_.begin(), pinned_.begin() + kRegions);
    // Frame 4 already recalled frame 1 (scene B past the age cap; the helper computed it anyway).
    EXPECT_EQ(p->counters().recalled, kRegions);
    auto h = hashes(7);
    h[5] = 6;  // one region's keys changed meanwhile: its hash is 1 bit away, refused at 0 bits
    const Fingerprint fp = begin(50);
    demote_due(*p);
    auto choice = p->choose(*st_, fp, h, t_);
    ASSERT_TRUE(choice) << choice.error_message();
    const auto& rec = p->recalled();
    for (std::uint32_t r = 0; r < kRegions; r++) {
        EXPECT_FALSE((*choice)[r].has_value()) << r;  // nothing on the device passes
        if (r == 5) {
            EXPECT_FALSE(rec[r].has_value());
            continue;
        }
        ASSERT_TRUE(rec[r].has_value()) << r;
        EXPECT_EQ(rec[r]->id, scene_a[r].id);
        EXPECT_EQ(rec[r]->generation, scene_a[r].generation);
        EXPECT_EQ(rec[r]->frame, 0u);
        EXPECT_EQ(rec[r]->hash_distance, 0u);
    }
    EXPECT_EQ(p->counters().recalled, 2 * kRegions - 1);
    // The engine fills new blocks from the recalled ones: they are candidates for the next frame.
    auto f = apply_choice(*st_, *choice);
    ASSERT_TRUE(f) << f.error_message();
    std::vector<KvBlock> inst;
    std::vector<std::uint64_t> src;
    std::vector<KvBlock> comp;
    std::vector<std::uint32_t> ch;
    for (std::size_t i = 0; i < f->fresh.size(); i++) {
        const std::uint32_t r = f->fresh[i];
        if (rec[r]) {
            inst.push_back(f->fresh_blocks[i]);
            src.push_back((std::uint64_t{rec[r]->id} << 32) | rec[r]->generation);
        } else {
            comp.push_back(f->fresh_blocks[i]);
            ch.push_back(h[r]);
        }
        pinned_.push_back(f->fresh_blocks[i]);
    }
    ASSERT_TRUE(p->installed(inst, src, t_));
    ASSERT_TRUE(p->computed(comp, ch, t_));
    EXPECT_TRUE(st_->end_frame());
    t_++;
    EXPECT_EQ(count(frame(*p, 50, h)), kRegions);  // aliases the installed and computed blocks
    EXPECT_EQ(p->installed(inst, std::vector<std::uint64_t>(inst.size(), 0), t_).error(),
              std::errc::no_such_file_or_directory);
}

// Issue 22 item 1: the view came back twice, so the host tier holds two copies per region at the
// same appearance; the nearer (the more recent frame) holds keys the recall guard refuses. The
// recall walks the host tier's candidates to the older copy, whose keys match; a recall that sees
// the nearest entry only (recall_candidates 1) recalls nothing.
TEST_F(Policy, RecallWalksTheCandidatesPastARefusedNearestEntry) {
    for (const std::uint32_t candidates : {8u, 1u}) {
        SCOPED_TRACE(candidates);
        ReuseOptions o{.max_age = 2,
                       .recall = true,
                       .recall_radius = 8,
                       .recall_guard_bits = 0,
                       .recall_candidates = candidates};
        auto p = ReusePolicy::create(o, kRegions);
        ASSERT_TRUE(p);
        ASSERT_TRUE(p->attach_host_tier(*alloc_, 4 * kRegions));
        frame(*p, 50, hashes(7));     // scene A, keys 7 (demoted at the third frame from now)
        frame(*p, 50, hashes(0xf0));  // scene A again, other keys: the guard refuses the first frame's
        EXPECT_EQ(p->counters().reused, 0u);
        for (int i = 0; i < 4; i++) frame(*p, 200, hashes(9));  // scene B: both A frames demoted
        const std::vector<KvBlock> first = by_frame_.at(0);     // scene A's first frame, keys 7
        const std::uint64_t before = p->counters().recalled;
        const std::uint64_t past_before = p->counters().recalled_past_nearest;
        const Fingerprint fp = begin(50);
        demote_due(*p);
        auto choice = p->choose(*st_, fp, hashes(7), t_);
        ASSERT_TRUE(choice) << choice.error_message();
        const auto& rec = p->recalled();
        for (std::uint32_t r = 0; r < kRegions; r++) {
            EXPECT_FALSE((*choice)[r].has_value()) << r;
            if (candidates == 1) {
                EXPECT_FALSE(rec[r].has_value()) << r << ": the nearest copy's keys are refused";
                continue;
            }
            ASSERT_TRUE(rec[r].has_value()) << r;
            EXPECT_EQ(rec[r]->id, first[r].id) << r;
            EXPECT_EQ(rec[r]->generation, first[r].generation) << r;
            EXPECT_EQ(rec[r]->frame, t_ - 6) << r;
            EXPECT_EQ(rec[r]->hash_distance, 0u) << r;
        }
        const std::uint64_t want = candidates == 1 ? 0u : kRegions;
        EXPECT_EQ(p->counters().recalled - before, want);
        EXPECT_EQ(p->counters().recalled_past_nearest - past_before, want);
        EXPECT_TRUE(st_->end_frame());
        t_++;
        EXPECT_TRUE(unpin_all(*st_, pinned_));
        pinned_.clear();
        by_frame_.clear();
        t_ = 0;
        st_.reset();
        auto s = alloc_->create_stream();
        ASSERT_TRUE(s) << s.error_message();
        st_ = std::move(*s);
    }
}

// The device candidates' similarity lookup asks the device tier: a host-tier entry nearer than any
// device entry is not a candidate there (session 10's lookup over every tier returned it, and the
// guard refused it as a block it never saw computed).
TEST_F(Policy, TheDeviceCandidatesLookupNeverReturnsHostTierEntries) {
    for (const bool tiered : {true, false}) {
        SCOPED_TRACE(tiered);
        ReuseOptions o{.radius = 31, .max_age = 2, .recall = true, .recall_radius = 31, .tiered = tiered};
        auto p = ReusePolicy::create(o, kRegions);
        ASSERT_TRUE(p);
        const std::span<const Query> q = p->queries(Fingerprint{});
        ASSERT_EQ(q.size(), 3u * kRegions);
        for (std::uint32_t r = 0; r < kRegions; r++) {
            EXPECT_EQ(q[3 * r + 1].tier, tiered ? Tier::device : Tier::any) << r;
            EXPECT_EQ(q[3 * r + 2].tier, tiered ? Tier::host : Tier::any) << r;
            EXPECT_EQ(q[3 * r + 2].candidates, 8u) << r;
        }
    }
    // On the device: a host-tier copy indexed under this very fingerprint is the nearest entry, the
    // device tier's query skips it.
    auto p = ReusePolicy::create({.radius = 31, .max_age = 2, .recall = true}, kRegions);
    ASSERT_TRUE(p);
    ASSERT_TRUE(p->attach_host_tier(*alloc_, 4 * kRegions));
    frame(*p, 50, hashes(7));
    for (int i = 0; i < 3; i++) frame(*p, 200, hashes(9));
    const Fingerprint fp = begin(50);
    demote_due(*p);
    std::vector<Query> qs(p->queries(fp).begin(), p->queries(fp).end());
    auto got = st_->retrieve_batch(qs);
    ASSERT_TRUE(got) << got.error_message();
    for (std::uint32_t r = 0; r < kRegions; r++) {
        const Retrieval& host = (*got)[3 * r + 2];
        ASSERT_TRUE(host.hit) << r;
        EXPECT_TRUE(host.host_tier) << r;
        for (const Retrieval& c : host.candidates) EXPECT_TRUE(c.host_tier) << r;
        // The recall's own query (appearance bits, the host-tier copy at distance 0) over each tier.
        for (const Tier t : {Tier::device, Tier::any}) {
            Query q = qs[3 * r + 2];
            q.in_tier(t).nearest(8);
            auto one = st_->retrieve_batch(std::span(&q, 1));
            ASSERT_TRUE(one) << one.error_message();
            bool saw_host = false;
            for (const Retrieval& c : one->front().candidates) saw_host |= c.host_tier;
            EXPECT_EQ(saw_host, t == Tier::any) << r;
            if (t == Tier::any) {
                ASSERT_FALSE(one->front().candidates.empty()) << r;
                EXPECT_TRUE(one->front().candidates.front().host_tier) << r << ": the copy is the nearest";
            }
        }
    }
    EXPECT_TRUE(st_->end_frame());
}

TEST_F(Policy, ForgottenBlocksAreNotRecalled) {
    auto p = ReusePolicy::create({.max_age = 1, .recall = true}, kRegions);
    ASSERT_TRUE(p);
    ASSERT_TRUE(p->attach_host_tier(*alloc_, 4 * kRegions));
    frame(*p, 50, hashes(7));
    frame(*p, 200, hashes(9));
    frame(*p, 200, hashes(9));
    std::vector<std::uint64_t> gone;
    for (std::uint32_t r = 0; r < kRegions; r++) gone.push_back(block_key(pinned_[r]));
    p->forget(gone);
    EXPECT_EQ(p->index_size(), kRegions);  // scene B's first frame (the second reused it)
    const Fingerprint fp = begin(50);
    ASSERT_TRUE(p->choose(*st_, fp, hashes(7), t_));
    for (const auto& r : p->recalled()) EXPECT_FALSE(r.has_value());
    EXPECT_TRUE(st_->end_frame());
}

// Recall is the SHIE's: without host-tier entries a view that comes back after the device's zombie
// rule retired its blocks' entries is not found (the policy keeps no index of its own).
TEST_F(Policy, WithoutAHostTierNothingPastZombieReleaseIsRecalled) {
    ReuseOptions o{.max_age = 2, .recall = true, .recall_radius = 8, .recall_guard_bits = 0};
    const std::uint32_t zombie = alloc_->device().info().zombie_frames;
    auto with = ReusePolicy::create(o, kRegions);
    ASSERT_TRUE(with);
    ASSERT_TRUE(with->attach_host_tier(*alloc_, (zombie + 5) * kRegions));  // room for every frame
    auto without = ReusePolicy::create(o, kRegions);
    ASSERT_TRUE(without);
    for (ReusePolicy* p : {&*without, &*with}) {
        // Scene A once, then scene B (its key hashes change every frame by >= 4 bits: every frame
        // computed) past the zombie rule; then A again.
        frame(*p, 50, hashes(7));
        for (std::uint32_t i = 0; i < zombie + 3; i++) frame(*p, 200, hashes(0x0101'0101u * (i + 1)));
        const std::uint64_t before = p->counters().recalled;
        frame(*p, 50, hashes(7));
        const std::uint64_t got = p->counters().recalled - before;
        if (p == &*with)
            EXPECT_EQ(got, kRegions);
        else
            EXPECT_EQ(got, 0u);
    }
}

// The host tier holds host_slots() blocks: each demotion takes the next slot in turn, the block it
// held before is forgotten and its entry retired, so the oldest demoted view is no longer recalled
// (RecallFindsABlockPastTheAgeCapWhenTheViewComesBack recalls the same view with room for it).
TEST_F(Policy, TheHostTierIsBoundedByItsSlots) {
    ReuseOptions o{.max_age = 1, .recall = true, .recall_radius = 8, .recall_guard_bits = 0};
    auto p = ReusePolicy::create(o, kRegions);
    ASSERT_TRUE(p);
    ASSERT_TRUE(p->attach_host_tier(*alloc_, kRegions));  // one frame's blocks
    EXPECT_EQ(p->host_slots(), kRegions);
    frame(*p, 50, hashes(7));   // 0: scene A, demoted at 2
    frame(*p, 120, hashes(8));  // 1: scene B, demoted at 3 into A's slots
    frame(*p, 120, hashes(8));  // 2: B again (reuses 1: nothing computed)
    EXPECT_EQ(p->hosted(), kRegions);
    EXPECT_EQ(p->index_size(), 2 * kRegions);
    const std::uint64_t before = p->counters().recalled;
    frame(*p, 50, hashes(7));  // 3: A comes back; B's demotion took its slots first
    EXPECT_EQ(p->counters().recalled - before, 0u);
    EXPECT_EQ(p->hosted(), kRegions);
    EXPECT_EQ(p->index_size(), 2 * kRegions) << "B's copies and A's new blocks: A's first ones are forgotten";
}

TEST_F(Policy, HostTierErrorsSayWhy) {
    auto off = ReusePolicy::create({}, kRegions);
    ASSERT_TRUE(off);
    EXPECT_EQ(off->attach_host_tier(*alloc_, 4).error(), std::errc::invalid_argument);
    auto blind = ReusePolicy::create({.fcc = false, .recall = true}, kRegions);
    ASSERT_TRUE(blind);
    auto e = blind->attach_host_tier(*alloc_, 4);
    EXPECT_EQ(e.error(), std::errc::invalid_argument);
    EXPECT_NE(e.error_message().find("recall needs fcc"), std::string::npos) << e.error_message();
    auto p = ReusePolicy::create({.recall = true}, kRegions);
    ASSERT_TRUE(p);
    begin(10);
    std::vector<std::byte> bytes(alloc_->block_bytes());
    EXPECT_EQ(p->demote(*st_, 1, bytes).error(), std::errc::invalid_argument);  // no tier
    EXPECT_EQ(p->attach_host_tier(*alloc_, 0).error(), std::errc::invalid_argument);
    ASSERT_TRUE(p->attach_host_tier(*alloc_, 4));
    EXPECT_EQ(p->attach_host_tier(*alloc_, 4).error(), std::errc::invalid_argument);
    EXPECT_EQ(p->demote(*st_, 1, bytes).error(), std::errc::no_such_file_or_directory);
    auto f = apply_choice(*st_, FrameChoice(kRegions));
    ASSERT_TRUE(f) << f.error_message();
    for (const KvBlock& b : f->fresh_blocks) pinned_.push_back(b);
    ASSERT_TRUE(p->computed(f->fresh_blocks, hashes(3), 0));
    const std::vector<std::byte> short_bytes(16);
    auto shortd = p->demote(*st_, block_key(f->fresh_blocks[0]), short_bytes);
    EXPECT_EQ(shortd.error(), std::errc::invalid_argument);
    EXPECT_NE(shortd.error_message().find("16 bytes for a"), std::string::npos) << shortd.error_message();
    auto ok = p->demote(*st_, block_key(f->fresh_blocks[0]), f->fresh_blocks[0].view);
    ASSERT_TRUE(ok) << ok.error_message();
    EXPECT_EQ(ok->bank, kNoBank);
    EXPECT_EQ(std::memcmp(ok->view.data(), f->fresh_blocks[0].view.data(), ok->view.size()), 0);
    EXPECT_TRUE(st_->end_frame());
}

TEST_F(Policy, RefusesRecallOptionsOutOfRange) {
    EXPECT_EQ(ReusePolicy::create({.recall = true, .recall_radius = 32}, kRegions).error(),
              std::errc::invalid_argument);
    EXPECT_EQ(ReusePolicy::create({.recall = true, .recall_candidates = 0}, kRegions).error(),
              std::errc::invalid_argument);
    EXPECT_EQ(ReusePolicy::create({.recall = true, .recall_candidates = 9}, kRegions).error(),
              std::errc::invalid_argument);
    EXPECT_EQ(ReusePolicy::create({.recall = true, .recall_guard_bits = 33}, kRegions).error(),
              std::errc::invalid_argument);
}

// On a hardware 1.0 device (the emulation with VREX_EMU_HW_VERSION=1.0): the policy's tiered,
// multi-candidate queries are refused (EOPNOTSUPP, nothing ran), so the policy asks every tier and
// the nearest only, leaves the motion gate off (the device reports no region motion: 255 everywhere)
// and counts the frames it decided so; a stream runs and reuses as on 1.1 with tiers off.
class Hw10Policy : public Policy {
  protected:
    void SetUp() override {
        const char* old = std::getenv("VREX_EMU_HW_VERSION");
        const std::string saved = old ? old : "";
        setenv("VREX_EMU_HW_VERSION", "1.0", 1);
        Policy::SetUp();
        if (old)
            setenv("VREX_EMU_HW_VERSION", saved.c_str(), 1);
        else
            unsetenv("VREX_EMU_HW_VERSION");
    }
};

TEST_F(Hw10Policy, FallsBackToUntieredNearestOnlyLookupsAndCountsTheFrames) {
    ASSERT_EQ(alloc_->device().info().hw_version, kHwVersion1_0);
    const ReuseOptions o{.guard_bits = 0, .recall = true, .motion_gate = 0, .recall_candidates = 8};
    auto p = ReusePolicy::create(o, kRegions);
    ASSERT_TRUE(p);
    // What the policy asks on 1.1 fails on this device, naming the revision.
    const Fingerprint fp0 = begin(50);
    auto raw = st_->retrieve_batch(p->queries(fp0));
    ASSERT_FALSE(raw);
    EXPECT_EQ(raw.error(), std::errc::operation_not_supported);
    EXPECT_NE(raw.error_message().find("hardware 1.0"), std::string::npos) << raw.error_message();
    EXPECT_TRUE(st_->end_frame());
    t_++;
    EXPECT_FALSE(p->fitted_to_hw_1_0());
    // choose() fits itself and the stream runs: frame 1 computes, frames 2 and 3 reuse everything
    // (same scene and key hashes) although the region motion reads 255 and the gate is 0.
    EXPECT_EQ(count(frame(*p, 50, hashes(0))), 0u);
    EXPECT_TRUE(p->fitted_to_hw_1_0());
    EXPECT_EQ(count(frame(*p, 50, hashes(0))), kRegions);
    EXPECT_EQ(st_->frame().region_motion[0], kRegionMotionUnknown);
    EXPECT_EQ(count(frame(*p, 50, hashes(0))), kRegions);
    EXPECT_EQ(p->counters().hw_1_0_frames, 3u);
    EXPECT_EQ(p->counters().gated, 0u);
    EXPECT_EQ(p->counters().reused, 2u * kRegions);
    for (const Query& q : p->queries(fp0)) {
        EXPECT_EQ(q.tier, Tier::any);
        EXPECT_EQ(q.candidates, 0u);
    }
}

TEST_F(Hw10Policy, FitDeviceFromTheDeviceInfo) {
    auto p = ReusePolicy::create({.recall = true, .recall_candidates = 4}, kRegions);
    ASSERT_TRUE(p);
    const Fingerprint fp{};
    const auto asks = [&] {
        std::uint32_t tiered = 0, candidates = 0;
        for (const Query& q : p->queries(fp)) {
            tiered += q.tier != Tier::any;
            candidates += q.candidates;
        }
        return std::pair{tiered, candidates};
    };
    EXPECT_EQ(asks(), std::pair(2 * kRegions, 4 * kRegions)) << "as for 1.1: device + host tier, 4 recalls";
    p->fit_device(alloc_->device().info());
    EXPECT_TRUE(p->fitted_to_hw_1_0());
    EXPECT_EQ(asks(), std::pair(0u, 0u));
    DeviceInfo v11;
    v11.hw_version = kHwVersion1_1;
    p->fit_device(v11);
    EXPECT_FALSE(p->fitted_to_hw_1_0());
    EXPECT_EQ(asks(), std::pair(2 * kRegions, 4 * kRegions));
    // Decided through queries()/decide() after fit_device(): counted too.
    p->fit_device(alloc_->device().info());
    const Fingerprint f = begin(9);
    auto got = st_->retrieve_batch(p->queries(f));
    ASSERT_TRUE(got) << got.error_message();
    const std::array<std::uint8_t, kRegions> unknown = [] {
        std::array<std::uint8_t, kRegions> a{};
        a.fill(kRegionMotionUnknown);
        return a;
    }();
    EXPECT_TRUE(p->decide(*got, f, hashes(0), 0, unknown));
    EXPECT_EQ(p->counters().hw_1_0_frames, 1u);
    EXPECT_TRUE(st_->end_frame());
}

}  // namespace
}  // namespace vrex::lcp
