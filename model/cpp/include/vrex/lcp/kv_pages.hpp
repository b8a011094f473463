// vrex::lcp::KvPageTable: where each (frame, region) block of a stream can be read now, for the
// native decoder's paged reads (native_decoder.hpp, KvPages): the block's device memory while it is
// on the device, the host or disk copy of a demoted block a read staged, else nothing -- never the
// device memory of a block the hierarchy has given back (the device may have freed or reused it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "vrex/lcp/tiers.hpp"

namespace vrex::lcp {

class KvPageTable {
  public:
    explicit KvPageTable(std::uint32_t regions) : regions_(regions) {}

    // Frame frames()'s blocks in region order: their device memory (a reused region's is its
    // source's). std::invalid_argument for a count other than regions.
    void add_frame(std::span<const float* const> device);
    // After the hierarchy moved blocks (KvTiers::add_frame, age, demote): a slot whose block is off
    // the device (KvTiers::slot_tiers) forgets its pointer, one back on it (promoted) reads its
    // device memory again. Staged copies are forgotten too: they were this step's.
    void sync(const KvTiers& tiers);
    // Slot @slot (frame * regions + region) for this step's read: its pointer when it has one, else
    // its block's host or disk copy (KvTiers::host_copy: the bytes fetch() and stage_window() stage),
    // valid until the hierarchy moves the block again, which only happens before the next sync().
    // False when there are none (dropped): the slot stays unreadable.
    bool stage(std::size_t slot, const KvTiers& tiers);

    // Per slot, the memory to read or nullptr (KvPages::blocks).
    std::span<const float* const> readable() const noexcept { return readable_; }
    std::uint32_t frames() const noexcept { return static_cast<std::uint32_t>(device_.size() / regions_); }

  private:
    std::uint32_t regions_;
    std::vector<const float*> device_;    // per slot, its block's device memory
    std::vector<const float*> readable_;  // per slot, what may be read now
};

}  // namespace vrex::lcp
