// vrex::lcp: the LCP layer's decisions over libvrex-hal, once, for every engine that drives them
// (the Python layer model/vrex/lcp.py through the _vrexhal binding, the C++ runner vrex-model-run).
//
// Per frame, the engine hashes the frame's layer-0 keys per region (its own math), then:
//   auto choice = policy.choose(stream, info.fp, hashes, t);  // which regions alias an earlier block
//   auto frame  = vrex::lcp::apply_choice(stream, choice);          // alias those, allocate + pin the rest
//   ... the engine computes the fresh regions' KV into frame->blocks ...
//   policy.computed(fresh blocks, their hashes, t);          // what the guard compares against later
//   stream.end_frame();                                       // publishes the frame's new blocks
//
// The decision: candidates from the HAL (the temporal entry at offset -1, kept only when its
// fingerprint is within @radius of the frame's unless fcc is off; the similarity lookup within
// @radius, past frames only), all regions in ONE retrieve_batch; the first candidate that passes
// the guard wins. The guard: the block was computed by this policy (a block it never saw is never
// trusted), at most max_age frames ago, and the hash of the keys it holds is within guard_bits of
// this frame's. docs/model.md "The policy".
//
// The motion gate (options.motion_gate, needs fcc): the FCC reports per SHIE region how far its
// content moved since the previous frame (FrameInfo::region_motion, 1/16 grid px). A region whose
// motion exceeds the gate takes no device candidate, temporal or similarity: a region that moved
// does not hold what the same region of the last frames held, and at the age cap the similarity
// lookup names the same blocks as the temporal one (refusing the temporal candidate alone would let
// the similarity lookup hand back the same block). Recall (past the age cap, by appearance) is not
// gated. The guard still confirms what the gate lets through. docs/model.md "Session 11".
//
// Recall (options.recall): the device's SHIE retires a block's entry once the block goes cold (zombie
// release) and the age cap refuses older candidates, so the device's candidates never reach past the
// last frames. Recall reaches further through the SHIE's host tier: the engine demotes a cold block
// with demote(), which copies its bytes into the next slot of the policy's host-tier pool (host
// memory the HAL imported: attach_host_tier()) and indexes the copy in the SHIE (the HAL's
// index_host_tier) under the fingerprint of the frame that computed it, its region and frame. The
// pool has a fixed number of slots, used in turn: reusing a slot retires its old entry first, so the
// tier bounds itself. Per region, choose() asks one more similarity lookup for past frames within
// recall_radius: a view that comes back after a cut arrives with the cut's motion bits, so host-tier
// entries are indexed, and recall lookups ask, with the fingerprint's 32 motion bits cleared (the
// SHIE compares the 96 appearance bits). The recall lookup asks the host tier only for up to
// recall_candidates entries, nearest first, and walks them: the first older than max_age whose key
// hash is within recall_guard_bits of this frame's is recalled (what the lookup found younger is
// the device candidates' to judge), so a nearer entry the rules refuse no longer hides a farther one
// they accept. The device candidates' similarity lookup asks the device tier only (tiered; off:
// both lookups take every tier and recall sees the nearest entry only, session 10's behaviour with
// recall_candidates 1). recalled() names the block it is the copy of; the engine fetches the bytes
// back into a new block (the region is not computed) and calls installed(). forget() drops blocks
// whose bytes are gone. Recall needs the FCC (fcc): it is a similarity lookup. On a hardware 1.0
// device (no tiers, no candidates, no region motion) the lookups are session 10's: fit_device().
//
// A long stream's cache keeps every frame readable: apply_choice() pins every block it allocates, so the
// device's zombie rule retires only the block's SHIE entry (it stops being a candidate), never its
// memory; unpin_all() lets the device free them when the engine closes the stream. A Stream is
// used by one thread at a time (libvrex-hal's rule), and so is a ReusePolicy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "vrex/hal.hpp"
#include "vrex/imported_memory.hpp"

namespace vrex::lcp {

inline constexpr std::uint32_t kKeyHashBits = 32;
inline constexpr std::uint32_t kAppearanceBits = 96;  // of the FCC fingerprint (bits 32..127)

// The ledger key of a block handle: (id << 32) | generation.
inline std::uint64_t block_key(const KvBlock& b) noexcept {
    return (std::uint64_t{b.id} << 32) | b.generation;
}

struct ReuseOptions {
    bool fcc = true;                  // filter the temporal candidate by the fingerprint radius
    std::uint32_t radius = 20;        // fingerprint Hamming radius, 0..31
    std::uint32_t guard_bits = 1;     // max Hamming distance of the key hashes, 0..32
    std::uint32_t max_age = 2;        // frames after its computation a block may be reused (0: no cap)
    bool similar = true;              // also ask the similarity lookup (needs fcc)
    bool recall = false;              // also recall demoted blocks through the SHIE (see above; needs fcc)
    std::uint32_t recall_radius = 8;  // appearance-bit Hamming radius of a recall, 0..31 (the SHIE's)
    std::uint32_t recall_guard_bits = 0;  // max key-hash distance of a recall, 0..32
    // A region whose FCC region motion exceeds this (1/16 grid px, 0..255) takes no device
    // candidate; nullopt: off. Needs fcc (off with it) and the frame's motion in choose()/decide().
    std::optional<std::uint32_t> motion_gate = std::nullopt;
    std::uint32_t recall_candidates = 8;  // host-tier entries a recall walks, nearest first, 1..8
    bool tiered = true;  // similarity lookups by tier (device candidates: device; recall: host tier)
};

// A block the engine should fetch back for a region (it is past the device's candidates: demoted to
// host memory; the SHIE found its host-tier copy).
struct Recalled {
    std::uint32_t id = 0;  // the handle it was computed under (a key of the engine's own tiers)
    std::uint32_t generation = 0;
    std::uint32_t frame = 0;          // frame that computed it
    std::uint32_t hash_distance = 0;  // to this frame's key hash
    std::uint32_t fp_distance = 0;    // of its frame's fingerprint to this frame's
};

// Per region: the earlier block the frame aliases, or nullopt (the region is computed).
using FrameChoice = std::vector<std::optional<KvBlock>>;

// Why choose() kept or refused candidates, summed over the policy's life.
struct ReuseCounters {
    std::uint64_t candidates = 0;  // candidates the lookups returned (after the fingerprint filter)
    std::uint64_t unknown = 0;     // refused: a block this policy did not see computed
    std::uint64_t too_old = 0;     // refused: older than max_age
    std::uint64_t hash_far = 0;    // refused: key hashes farther than guard_bits
    std::uint64_t gated = 0;       // regions whose candidates the motion gate refused (not counted above)
    std::uint64_t reused = 0;      // regions that alias a block
    std::uint64_t recalled = 0;    // regions recalled through the SHIE's host tier (recall)
    std::uint64_t recalled_past_nearest = 0;  // of those, found past the recall lookup's nearest entry
    std::uint64_t installed = 0;              // blocks the engine filled from another block (installed())
    std::uint64_t hw_1_0_frames = 0;          // frames decided as a hardware 1.0 device allows (fit_device())
};

class ReusePolicy {
  public:
    // EINVAL (with context) for options out of range or no regions.
    static Result<ReusePolicy> create(const ReuseOptions& options, std::uint32_t regions);

    // The decision for the frame @frame that @stream has begun (begin_frame gave @fp).
    // @key_hashes: per region, the hash of the frame's layer-0 keys. One retrieve_batch.
    // @region_motion: the frame's FrameInfo::region_motion, one per region; needed with a motion
    // gate (EINVAL without it, or with a length other than the regions'), ignored otherwise.
    Result<FrameChoice> choose(Stream& stream, const Fingerprint& fp,
                               std::span<const std::uint32_t> key_hashes, std::uint32_t frame,
                               std::span<const std::uint8_t> region_motion = {});
    // choose() in its two halves, for an engine that times the HAL's lookup batch apart from the
    // decision (the C++ runner's per-stage clock): the frame's queries, then the decision on the
    // retrieve_batch() of exactly those queries. choose() == decide(queries(fp), retrieve_batch).
    std::span<const Query> queries(const Fingerprint& fp);
    Result<FrameChoice> decide(std::span<const Retrieval> got, const Fingerprint& fp,
                               std::span<const std::uint32_t> key_hashes, std::uint32_t frame,
                               std::span<const std::uint8_t> region_motion = {});

    // The device the queries go to. Hardware 1.0 (DeviceInfo::hw_version < kHwVersion1_1) has no
    // lookups by tier or with candidates and reports no region motion: the policy then asks every
    // tier and the nearest entry only (tiered off, recall_candidates 1: session 10's lookups) and
    // the motion gate is off, and counts each frame it decides so in hw_1_0_frames. choose() fits
    // itself when the device refuses its first batch for that (EOPNOTSUPP: nothing ran) and asks
    // again; an engine that calls queries()/decide() itself calls this once with the device's info.
    void fit_device(const DeviceInfo& info) noexcept { hw_1_0_ = info.hw_version < kHwVersion1_1; }
    bool fitted_to_hw_1_0() const noexcept { return hw_1_0_; }

    // @blocks[i] was computed in @frame from keys hashing to @key_hashes[i]. EINVAL when the
    // spans differ in length.
    Result<void> computed(std::span<const KvBlock> blocks, std::span<const std::uint32_t> key_hashes,
                          std::uint32_t frame);

    // Per region, the block to fetch back for the frame choose() decided last (recall on; a region
    // choose() gave a candidate to has none).
    const std::vector<std::optional<Recalled>>& recalled() const noexcept { return recalled_; }

    // The engine filled @blocks (of frame @frame) from the blocks keyed @sources ((id << 32) |
    // generation: a candidate choose() gave, or a recalled() entry) instead of computing them: they
    // hold the source's KV, so the guard compares against the source's key hash; their age counts
    // from @frame. They are not indexed for recall (the source is). ENOENT for a source the policy
    // does not know, EINVAL when the spans differ in length.
    Result<void> installed(std::span<const KvBlock> blocks, std::span<const std::uint64_t> sources,
                           std::uint32_t frame);

    // The bytes of the blocks keyed @keys are gone (dropped, not demoted): never recall them.
    void forget(std::span<const std::uint64_t> keys);

    // The host tier of recall: a pool of @slots blocks of host memory (a memfd, turned into a dma-buf
    // by /dev/udmabuf where there is one) imported by @alloc. EINVAL when recall is off, @slots is 0
    // or a tier is attached already; the HAL's errors (with context) otherwise.
    Result<void> attach_host_tier(KvAllocator& alloc, std::uint32_t slots);
    // Block @source (a key of computed(): (id << 32) | generation) was demoted: @bytes (its
    // block_bytes()) go to the next slot of the host tier, indexed in the SHIE for @stream's open
    // frame. The slot's previous block is forgotten (its entry retired by the HAL). Returns the
    // host-tier block. EINVAL without a tier or for a size mismatch, ENOENT for a block the policy
    // did not see computed (or forgot), the HAL's errors with context.
    Result<KvBlock> demote(Stream& stream, std::uint64_t source, std::span<const std::byte> bytes);
    // Whether demote() knows @source (computed under this policy, not forgotten).
    bool recallable(std::uint64_t source) const noexcept { return recallable_.contains(source); }
    std::uint32_t host_slots() const noexcept { return static_cast<std::uint32_t>(slots_.size()); }
    std::size_t hosted() const noexcept { return hosted_.size(); }

    const ReuseOptions& options() const noexcept { return opts_; }
    const ReuseCounters& counters() const noexcept { return counters_; }
    std::uint32_t regions() const noexcept { return regions_; }
    std::size_t ledger_size() const noexcept { return born_.size(); }
    // Blocks recall may still name: computed ones not forgotten (host-tier slot reused, or dropped).
    std::size_t index_size() const noexcept { return recallable_.size(); }

  private:
    struct Born {
        std::uint32_t hash = 0;
        std::uint32_t frame = 0;
    };
    ReusePolicy(const ReuseOptions& options, std::uint32_t regions)
        : opts_(options), regions_(regions), recalled_(regions) {}
    bool recall_on() const noexcept { return opts_.recall && opts_.fcc; }
    bool gate_on() const noexcept { return opts_.motion_gate.has_value() && opts_.fcc && !hw_1_0_; }
    bool tiered_on() const noexcept { return opts_.tiered && !hw_1_0_; }
    // Whether queries() asks what only hardware 1.1 answers (a tier, more than one candidate).
    bool asks_hw_1_1() const noexcept {
        const bool similar = opts_.similar && opts_.fcc;
        return tiered_on() ? similar || recall_on() : recall_on() && recall_candidates() > 1;
    }
    std::uint32_t recall_candidates() const noexcept { return hw_1_0_ ? 1 : opts_.recall_candidates; }
    bool guard(const KvBlock& block, std::uint32_t hash, std::uint32_t frame);
    void forget_old(std::uint32_t frame);
    std::optional<Recalled> recall(const Retrieval& got, std::uint32_t hash, std::uint32_t frame);
    std::optional<Recalled> recall_one(const Retrieval& got, std::uint32_t hash, std::uint32_t frame) const;
    struct Computed {  // what recall needs of a block computed under this policy
        std::uint32_t hash = 0;
        std::uint32_t frame = 0;
        std::uint32_t region = 0;
        Fingerprint fp;  // of its frame, motion bits cleared
    };
    struct Slot {
        bool used = false;
        std::uint64_t source = 0;  // the block it holds a copy of
        std::uint64_t host = 0;    // the host-tier block's key
    };

    ReuseOptions opts_;
    std::uint32_t regions_ = 0;
    bool hw_1_0_ = false;                           // fit_device(): the device is hardware 1.0
    std::unordered_map<std::uint64_t, Born> born_;  // (id << 32 | generation) -> when and what it holds
    std::vector<Query> queries_;                    // reused per frame
    std::unordered_map<std::uint64_t, Computed> recallable_;   // recall: computed, not forgotten
    std::unordered_map<std::uint64_t, std::uint64_t> hosted_;  // host-tier block -> its source
    std::shared_ptr<ImportedMemory> host_mem_;                 // the host tier's pool
    std::vector<Slot> slots_;
    std::uint64_t slot_bytes_ = 0;
    std::uint32_t next_slot_ = 0;
    std::vector<std::optional<Recalled>> recalled_;
    Fingerprint last_fp_;  // of the frame choose() decided last
    ReuseCounters counters_;
};

// A frame's blocks once the choice is applied: one per region, and which regions are fresh.
struct FrameBlocks {
    std::vector<KvBlock> blocks;        // per region
    std::vector<std::uint32_t> fresh;   // regions allocated (to compute), ascending
    std::vector<KvBlock> fresh_blocks;  // their blocks, in the same order
};

// Applies @choice to the open frame of @stream: reuse() of every chosen block, one allocate_batch
// for the other regions, each of them pinned. All HAL errors carry the region they were for.
Result<FrameBlocks> apply_choice(Stream& stream, std::span<const std::optional<KvBlock>> choice);

// Unpins @blocks (pinned by apply_choice()): the device frees them at its next aging pass or the stream's
// end. Stops at the first failure.
Result<void> unpin_all(Stream& stream, std::span<const KvBlock> blocks);

}  // namespace vrex::lcp
