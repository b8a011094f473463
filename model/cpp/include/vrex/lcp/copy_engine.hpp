// vrex::lcp::CopyEngine: a board's DMA engine, emulated. On a board the memory hierarchy's moves --
// a demotion into the pinned host pool, a staged read back to the device, a block installed from
// another's bytes -- are descriptors a copy engine runs while the cores do other work; here the
// same bytes are copied on the calling thread. The engine's thread CPU time is therefore emulated
// hardware, reported beside the ReSV unit's (the C++ runner's engine parts dma_read / dma_move),
// never folded into the engine's figures nor left out of the step's.
//
//   CopyEngine dma;
//   dma.queue(dst, src);  // as many as the caller batches (one kick: one pair of clock reads)
//   dma.run();            // every queued copy, in order; dst holds src's bytes afterwards
//
// A queued source must stay valid and unchanged until run(): the caller runs the queue before it
// releases or reuses either side. Not thread-safe (one stream's engine, like its Stream).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace vrex::lcp {

class CopyEngine {
  public:
    // std::invalid_argument when @dst and @src differ in size.
    void queue(std::span<std::byte> dst, std::span<const std::byte> src);
    // Runs the queue (nothing, and no clock read, when it is empty).
    void run();

    bool idle() const noexcept { return queue_.empty(); }
    // Totals since construction: thread CPU time of run(), the runs that copied (kicks), the copies
    // and bytes they made.
    double cpu_s() const noexcept { return cpu_s_; }
    std::uint64_t kicks() const noexcept { return kicks_; }
    std::uint64_t copies() const noexcept { return copies_; }
    std::uint64_t bytes() const noexcept { return bytes_; }

  private:
    struct Copy {
        std::byte* dst;
        const std::byte* src;
        std::size_t n;
    };
    std::vector<Copy> queue_;
    double cpu_s_ = 0;
    std::uint64_t kicks_ = 0, copies_ = 0, bytes_ = 0;
};

}  // namespace vrex::lcp
