// vrex::lcp::KvTiers: the KV memory hierarchy of one stream -- device blocks, host memory, disk --
// the ONE copy of its rules: the C++ runner uses it directly, the Python path (model/vrex/
// hierarchy.py, the V-Rex of record and every anchors/ablations run) through the binding
// (model/binding/tiers.cpp), keeping only the torch views of the copies:
//
// - A cold block is DEMOTED instead of dropped: its bytes are copied to host memory (a slot of a
//   HostBlockPool) and its pin is dropped, so the device's zombie rule gives its memory back. Cold:
//   unreferenced for resident_frames frames (zombie: the device's aging rule), or computed that long
//   ago whether referenced or not (fifo: no zombie release tells the host a block went cold), or
//   unreferenced and unread for that long (use: zombie release by use -- a block the questions' ReSV
//   read selected or a recall installed from stays warm; touch()). Blocks leave the device in the
//   order they entered the hierarchy.
// - Beyond host_blocks host copies (0: no limit) the host copy referenced least recently (first seen
//   on a tie) is SPILLED to disk (a DiskBlockPool in disk_dir) and read back from there.
// - drop (the no_demotion control): a cold block is DROPPED, no copy kept; fetching it is refused.
// - A question that selects a demoted block stages it back (fetch(): a copy into the device staging
//   area, one question's read at a time); a recall installs one (fetch_prefill(): its device memory
//   when it is still there, else its host or disk copy). A demoted block a new frame references
//   again is re-pinned (promoted); demoted blocks the next prefill's window references (fifo) are
//   staged (stage_window()).
// - The moves' copies (demotions, staged reads) are a copy engine's (CopyEngine: a board's DMA,
//   emulated): a frame's demotions are queued and run in one kick before their blocks are unpinned,
//   a question's staged copies when its read ends (end_read()). copy_engine() reports its time.
// - Bytes per step: device = pinned blocks + blocks staged for this step's prefill and its largest
//   read + the selectors' metadata; total = device + host + disk. Peaks over the stream.
// No torch: the caller hands it block handles.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "vrex/hal.hpp"
#include "vrex/lcp/copy_engine.hpp"
#include "vrex/lcp/disk_pool.hpp"
#include "vrex/lcp/host_pool.hpp"

namespace vrex::lcp {

enum class Coldness { zombie, fifo, use };

struct TierOptions {
    std::uint32_t resident_frames = 5;  // >= the decoder's visual window
    Coldness coldness = Coldness::zombie;
    // A thread of the host pool keeps the next chunk of host memory mapped and faulted in, as a
    // driver fills its DMA pool ahead (HostBlockPool): the demoting step only copies. Its CPU time
    // is host_prepare_cpu_s(). Off by default: measured in the C++ runner (docs/model.md, session
    // 11), that thread spent more CPU (0.36-0.41 ms a frame) than the demoting step saved.
    bool host_ahead = false;
    bool drop = false;              // the no-demotion control: cold blocks are dropped, not copied
    std::uint32_t host_blocks = 0;  // host copies kept before the oldest spills to disk; 0: no limit
    std::string disk_dir{};         // where the spill file lives (empty: $TMPDIR, else /tmp)
    // Host slots mapped and faulted in by create(), once per stream, as a board's driver sets up its
    // pinned DMA pool at open: demotions into them only copy. Capped at what the host tier can hold
    // (host_blocks + 1: the copy that spills is made first); none with drop. Beyond it the pool grows
    // as without one (host_pool().grown()). 0: none, the pool grows from the first demotion.
    std::uint32_t host_reserve_blocks = 0;
};

// hierarchy.py's TIERS order (the codes slot_tiers() gives Python).
enum class Tier : std::uint8_t { device = 0, host = 1, disk = 2, dropped = 3 };

struct TierBytes {
    std::uint64_t device_peak = 0, host_peak = 0, disk_peak = 0, total_peak = 0;
    std::uint64_t demoted = 0;   // blocks demoted (device -> host)
    std::uint64_t spilled = 0;   // blocks host -> disk
    std::uint64_t dropped = 0;   // blocks dropped (TierOptions::drop)
    std::uint64_t fetched = 0;   // blocks staged back from host or disk (reads, recalls, the window)
    std::uint64_t promoted = 0;  // demoted blocks a new frame referenced again
    std::uint64_t recalled = 0;  // blocks a recall installed (whichever tier held them)
    std::vector<std::uint64_t> device_series;   // device bytes of every step
    std::vector<std::uint64_t> fetched_series;  // blocks staged back in every step
};

// What one entry of the hierarchy is: its tier and the frames its coldness reads.
struct TierEntry {
    Tier tier = Tier::device;
    std::uint32_t created = 0, last_ref = 0;
    std::int64_t last_read = -1;
};

class KvTiers {
  public:
    // EINVAL (with context) for a resident_frames below @window or a zero block size; the errno of
    // the disk directory (DiskBlockPool::create) when host_blocks limits the host tier.
    static Result<KvTiers> create(const TierOptions& options, std::uint64_t block_bytes,
                                  std::uint32_t regions, std::uint32_t window);

    // Frame @frame's blocks in region order (it just ended; computed, installed or aliased). A block
    // seen first enters on the device; a demoted one is pinned again on @stream (promoted) and
    // appended to @repinned. EIO when a promoted block's device bytes differ from its copy.
    Result<void> add_frame(Stream& stream, std::uint32_t frame, std::span<const KvBlock> blocks,
                           std::vector<KvBlock>& repinned);
    // After frame @next - 1 ended: every cold device block is demoted (or dropped) and unpinned on
    // @stream, in the order the blocks entered; their keys are appended to @left. The keys of the
    // host copies that went to disk meanwhile are appended to @spilled (when given).
    Result<void> age(Stream& stream, std::uint32_t next, std::vector<std::uint64_t>& left,
                     std::vector<std::uint64_t>* spilled = nullptr);
    // Device block @key leaves the device now (an eviction rule's choice): demoted, or dropped with
    // TierOptions::drop. EINVAL for a key not on the device.
    Result<void> demote(Stream& stream, std::uint64_t key, std::vector<std::uint64_t>* spilled = nullptr);
    // The demoted blocks the frames @next - window + 1 .. @next - 1 reference are staged for the
    // next prefill's window (fifo demotes such blocks; zombie and use never do).
    void stage_window(std::uint32_t next);

    bool known(std::uint64_t key) const { return entries_.count(key) != 0; }
    std::optional<TierEntry> entry(std::uint64_t key) const;
    // Whether block @key is cold after frame @next - 1 (the rule age() applies). False when unknown.
    bool cold(std::uint64_t key, std::uint32_t next) const;
    // The slots (frame * regions + region) that reference block @key, in order (empty: unknown).
    std::span<const std::uint32_t> slots(std::uint64_t key) const;
    // The keys of the blocks on tier @t, in the order they entered the hierarchy.
    std::vector<std::uint64_t> keys_on(Tier t) const;
    // The host or disk copy of demoted block @key (empty on the device, dropped or unknown). Valid
    // until the block moves again (promotion, spill).
    std::span<const std::byte> host_copy(std::uint64_t key) const;
    // The bytes of block @key for a new frame's region (a recall): device memory, or its host or
    // disk copy (staged for this step's prefill). Counts recalled. Empty for an unknown or dropped
    // key (nothing counted).
    std::span<const std::byte> fetch_prefill(std::uint64_t key);
    // Frame @frame's read selected block @key or a recall installed from it: with Coldness::use
    // it stays warm for resident_frames more frames. Unknown keys are ignored.
    void touch(std::uint64_t key, std::uint32_t frame);
    // One question's read stages demoted block @key back (a copy into the staging area) and returns
    // its bytes (device memory for a block on the device: nothing staged). ENOENT for an unknown
    // key, ENODATA for a dropped one: nothing to fetch.
    Result<std::span<const std::byte>> fetch(std::uint64_t key);
    // That question's read is over: its staging area is free again.
    void end_read();
    // Records this step's bytes (@meta_bytes: selector metadata on the device) into the peaks.
    void account(std::uint64_t meta_bytes);

    // Per slot (frame * regions + region) of the frames added so far, the tier of its block.
    std::span<const Tier> slot_tiers() const noexcept { return codes_; }
    std::uint64_t slot_key(std::size_t slot) const { return slot_keys_.at(slot); }
    // Blocks on tier @t now.
    std::size_t count(Tier t) const noexcept { return counts_[static_cast<std::size_t>(t)]; }
    std::size_t device_blocks() const noexcept { return count(Tier::device); }
    std::size_t host_blocks() const noexcept { return count(Tier::host); }
    std::size_t disk_blocks() const noexcept { return count(Tier::disk); }
    const TierBytes& bytes() const noexcept { return bytes_; }
    const TierOptions& options() const noexcept { return opts_; }
    std::uint64_t block_bytes() const noexcept { return block_bytes_; }
    // CPU time spent so far outside the caller's thread, preparing host memory (TierOptions::host_ahead).
    double host_prepare_cpu_s() const noexcept { return host_.prepare_cpu_s(); }
    // The host tier's pool: its reservation (reserved(), its setup cost) and growth (grown()).
    const HostBlockPool& host_pool() const noexcept { return host_; }
    // The emulated DMA of the moves: its thread CPU time is emulated hardware, not the engine's.
    const CopyEngine& copy_engine() const noexcept { return dma_; }

  private:
    struct Entry {
        KvBlock block;
        std::uint64_t seq = 0;  // order of entry (ties of the spill order, demotion order)
        std::uint32_t created = 0, last_ref = 0;
        std::int64_t last_read = -1;  // last frame whose read selected it or recall installed from it
        Tier tier = Tier::device;
        std::span<std::byte> host;         // the host copy while on the host tier (a slot of host_)
        std::uint32_t disk_slot = 0;       // its slot of disk_ while on the disk tier
        std::vector<std::uint32_t> slots;  // slots that reference it
    };
    // A device-resident entry: its key and where it lives (entries_ is node-based: the pointer
    // stays valid until the entry is erased, which nothing does), so the per-frame scans of the
    // device blocks make no hash lookups.
    struct Resident {
        std::uint64_t key = 0;
        Entry* e = nullptr;
    };
    KvTiers(const TierOptions& o, std::uint64_t block_bytes, std::uint32_t regions, std::uint32_t window,
            std::optional<DiskBlockPool> disk)
        : opts_(o),
          block_bytes_(block_bytes),
          regions_(regions),
          window_(window),
          staging_(block_bytes),
          host_(block_bytes, o.host_ahead, host_reservation(o)),
          disk_(std::move(disk)) {}
    static std::size_t host_reservation(const TierOptions& o);
    void set_tier(Entry& e, Tier t);
    bool is_cold(const Entry& e, std::uint32_t next) const;
    // Only a host limit needs the spill order (and its set's node per demotion).
    bool limited() const noexcept { return opts_.host_blocks != 0 && !opts_.drop; }
    Result<void> leave(Stream& stream, std::span<const Resident> out, std::vector<std::uint64_t>* left,
                       std::vector<std::uint64_t>* spilled);
    Result<void> sized(const Resident& d) const;  // EINVAL unless its view is block_bytes() long
    Result<void> finish_leave(Stream& stream, const Resident& d, std::vector<std::uint64_t>* spilled);
    Result<void> spill(std::vector<std::uint64_t>* spilled);
    void free_copy(Entry& e);
    std::span<const std::byte> copy_of(const Entry& e) const;
    std::span<const std::byte> stage(Entry& e, std::unordered_set<std::uint64_t>& area, std::uint64_t key);

    TierOptions opts_;
    std::uint64_t block_bytes_ = 0;
    std::uint32_t regions_ = 0, window_ = 0;
    std::unordered_map<std::uint64_t, Entry> entries_;
    std::vector<Resident> device_;   // the device-resident entries, in entry order (seq)
    std::vector<Resident> leaving_;  // age()'s cold blocks (kept: no allocation per frame)
    // The host copies in spill order: least recently referenced first, then first seen. A block's
    // last_ref does not change while it is off the device (a reference promotes it).
    std::set<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>> spill_order_;  // (last_ref, seq, key)
    std::array<std::size_t, 4> counts_{};                                            // blocks per Tier
    std::vector<Tier> codes_;
    std::vector<std::uint64_t> slot_keys_;
    std::unordered_set<std::uint64_t> staged_, window_staged_;  // this question's read, this step's prefill
    std::size_t stage_peak_ = 0;
    std::uint64_t fetched_before_ = 0;  // bytes_.fetched at the last account()
    TierBytes bytes_;
    std::vector<std::byte> staging_;  // where staged copies land (one block; the copy is the cost)
    CopyEngine dma_;
    HostBlockPool host_;  // where demoted copies live (a DMA engine's pinned pool, not one allocation each)
    std::optional<DiskBlockPool> disk_;  // below host memory when host_blocks limits it
};

}  // namespace vrex::lcp
