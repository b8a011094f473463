// Which live KV blocks the temporal window still needs, so they can be released the moment it
// does not.
//
// The window is the last `window_frames` steps (Z + 1, the context the same-window paged baseline
// keeps). A block is needed while some frame inside the window references it: the frame that
// computed it, or a later frame whose SHIE entry aliases it (Stream::reuse). The device's own rule
// (zombie release after Z cold frames) counts every *lookup* hit as a use too, so a block looked up
// by the next frame and rejected by the quality guard lives one frame longer than the window, and a
// similarity hit on an old block keeps it Z more frames. The ledger releases on references only,
// which is the baseline's rule: its tokens leave exactly when they fall out of the window.
//
// Blocks are tracked by the pipeline's step (the global clock: all streams advance one frame per
// step, so a step is a frame number of every stream). Only the owner stream may release a block
// (Stream::release), and only inside one of its frames; due() is asked by the owner.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "vrex/hal.hpp"

namespace vrex::pipeline {

class WindowLedger {
  public:
    explicit WindowLedger(std::uint32_t window_frames) : window_(window_frames) {}

    // @block was just allocated by stream @owner at @step.
    void allocated(const KvBlock& block, std::uint32_t owner, std::uint32_t step);
    // A frame at @step aliases @block_id (it must be tracked: a reuse of a block the ledger
    // released would be a bug, so it throws std::logic_error).
    void referenced(std::uint32_t block_id, std::uint32_t step);
    // Blocks of @owner that no frame of the window ending at @step references; they are forgotten
    // here, the caller releases them before the owner's end_frame.
    std::vector<KvBlock> take_due(std::uint32_t owner, std::uint32_t step);

    std::size_t tracked() const noexcept { return blocks_.size(); }
    std::uint32_t window_frames() const noexcept { return window_; }

  private:
    struct Entry {
        KvBlock block;
        std::uint32_t owner = 0;
        std::uint32_t last_ref = 0;  // newest step whose frame references the block
    };
    std::uint32_t window_;
    std::unordered_map<std::uint32_t, Entry> blocks_;  // by device block id
};

}  // namespace vrex::pipeline
