// vrex::lcp::KvTiers: the KV memory hierarchy of one stream in the C++ runner -- device blocks and
// host memory -- as model/vrex/hierarchy.py's KvTiers runs it for the Python path (the V-Rex of
// record, anchors' vrex_hierarchy), with the same rules and the same byte accounting:
//
// - A cold block is DEMOTED instead of dropped: its bytes are copied to host memory (a slot of a
//   HostBlockPool) and its pin is dropped, so the device's zombie rule gives its memory back. Cold:
//   unreferenced for resident_frames frames (zombie: the device's aging rule), or computed that long
//   ago whether referenced or not (fifo: no zombie release tells the host a block went cold), or
//   unreferenced and unread for that long (use: zombie release by use -- a block the questions' ReSV
//   read selected or a recall installed from stays warm; touch()).
// - A question that selects a demoted block stages it back (fetch(): a copy into the device staging
//   area, one question's read at a time); a recall installs one (fetch_prefill(): its device memory
//   when it is still there, else its host copy). A demoted block a new frame references again is
//   re-pinned (promoted); with fifo, demoted blocks the next prefill's window references are staged.
// - Bytes per step: device = pinned blocks + blocks staged for this step's prefill and its largest
//   read + the selectors' metadata; total = device + host. Peaks over the stream.
//
// Not built here (the Python path has them): the disk tier below host memory (host_blocks) and
// dropping cold blocks (the no_demotion control). No torch: the runner hands it block handles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "vrex/hal.hpp"
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
};

// hierarchy.py's TIERS order (disk and dropped are not built here).
enum class Tier : std::uint8_t { device = 0, host = 1 };

struct TierBytes {
    std::uint64_t device_peak = 0, host_peak = 0, total_peak = 0;
    std::uint64_t demoted = 0;   // blocks demoted (device -> host)
    std::uint64_t fetched = 0;   // blocks staged back from host memory (reads, recalls, the window)
    std::uint64_t promoted = 0;  // demoted blocks a new frame referenced again
    std::uint64_t recalled = 0;  // blocks a recall installed (whichever tier held them)
    std::vector<std::uint64_t> device_series;   // device bytes of every step
    std::vector<std::uint64_t> fetched_series;  // blocks staged back in every step
};

class KvTiers {
  public:
    // EINVAL (with context) for a resident_frames below @window or a zero block size.
    static Result<KvTiers> create(const TierOptions& options, std::uint64_t block_bytes,
                                  std::uint32_t regions, std::uint32_t window);

    // Frame @frame's blocks in region order (it just ended; computed, installed or aliased). A block
    // seen first enters on the device; a demoted one is pinned again on @stream (promoted) and
    // appended to @repinned.
    Result<void> add_frame(Stream& stream, std::uint32_t frame, std::span<const KvBlock> blocks,
                           std::vector<KvBlock>& repinned);
    // After frame @next - 1 ended: every cold device block is copied to host memory and unpinned on
    // @stream; their keys are appended to @demoted.
    Result<void> age(Stream& stream, std::uint32_t next, std::vector<std::uint64_t>& demoted);
    // fifo: the demoted blocks the frames @next - window + 1 .. @next - 1 reference are staged for
    // the next prefill's window (zombie never demotes them).
    void stage_window(std::uint32_t next);

    bool known(std::uint64_t key) const { return entries_.count(key) != 0; }
    // The host copy of demoted block @key (empty when it is on the device or unknown).
    std::span<const std::byte> host_copy(std::uint64_t key) const {
        const auto it = entries_.find(key);
        return it == entries_.end() ? std::span<const std::byte>{}
                                    : std::span<const std::byte>(it->second.host);
    }
    // The bytes of block @key for a new frame's region (a recall): device memory, or its host copy
    // (staged for this step's prefill). Counts recalled. Empty for an unknown key.
    std::span<const std::byte> fetch_prefill(std::uint64_t key);
    // Frame @frame's read selected block @key or a recall installed from it: with Coldness::use
    // it stays warm for resident_frames more frames (hierarchy.KvTiers.touch). Unknown keys are
    // ignored.
    void touch(std::uint64_t key, std::uint32_t frame);
    // One question's read stages demoted block @key back (a copy into the staging area).
    void fetch(std::uint64_t key);
    // That question's read is over: its staging area is free again.
    void end_read();
    // Records this step's bytes (@meta_bytes: selector metadata on the device) into the peaks.
    void account(std::uint64_t meta_bytes);

    // Per slot (frame * regions + region) of the frames added so far, the tier of its block.
    std::span<const Tier> slot_tiers() const noexcept { return codes_; }
    std::uint64_t slot_key(std::size_t slot) const { return slot_keys_.at(slot); }
    std::size_t device_blocks() const noexcept { return device_.size(); }
    std::size_t host_blocks() const noexcept { return host_count_; }
    const TierBytes& bytes() const noexcept { return bytes_; }
    const TierOptions& options() const noexcept { return opts_; }
    // CPU time spent so far outside the caller's thread, preparing host memory (TierOptions::host_ahead).
    double host_prepare_cpu_s() const noexcept { return host_.prepare_cpu_s(); }

  private:
    struct Entry {
        KvBlock block;
        std::uint32_t created = 0, last_ref = 0;
        std::int64_t last_read = -1;  // last frame whose read selected it or recall installed from it
        Tier tier = Tier::device;
        std::span<std::byte> host;         // the host copy while demoted (a slot of host_)
        std::vector<std::uint32_t> slots;  // slots that reference it
    };
    KvTiers(const TierOptions& o, std::uint64_t block_bytes, std::uint32_t regions, std::uint32_t window)
        : opts_(o),
          block_bytes_(block_bytes),
          regions_(regions),
          window_(window),
          host_(block_bytes, o.host_ahead) {}
    void set_tier(Entry& e, Tier t);
    std::span<const std::byte> stage(Entry& e, std::unordered_set<std::uint64_t>& area, std::uint64_t key);

    TierOptions opts_;
    std::uint64_t block_bytes_ = 0;
    std::uint32_t regions_ = 0, window_ = 0;
    std::unordered_map<std::uint64_t, Entry> entries_;
    std::vector<std::uint64_t> device_;  // keys of the device-resident entries, in insertion order
    std::size_t host_count_ = 0;
    std::vector<Tier> codes_;
    std::vector<std::uint64_t> slot_keys_;
    std::unordered_set<std::uint64_t> staged_, window_staged_;  // this question's read, this step's prefill
    std::size_t stage_peak_ = 0;
    std::uint64_t fetched_before_ = 0;  // bytes_.fetched at the last account()
    std::vector<std::byte> staging_;    // where staged copies land (one block; the copy is the cost)
    TierBytes bytes_;
    HostBlockPool host_;  // where demoted copies live (a DMA engine's pinned pool, not one allocation each)
};

}  // namespace vrex::lcp
