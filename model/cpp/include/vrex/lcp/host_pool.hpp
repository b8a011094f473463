// vrex::lcp::HostBlockPool: host memory for demoted KV blocks, as a driver keeps a pool for its DMA
// engine instead of allocating every copy: blocks are slots of 2 MiB chunks, a slot given back
// (its block promoted to the device again) is handed out before a new chunk is mapped. A chunk's
// pages are faulted in (the kernel clears them) by the take() that maps it, or -- prepare_ahead --
// by a thread of the pool that keeps the next chunk ready, standing in for a driver filling its
// DMA pool ahead; that thread's CPU time is reported (prepare_cpu_s()), never hidden. Every demoted
// byte needs memory the process never touched: the pool moves that cost, it cannot remove it
// (docs/model.md "Session 11: time against FLOPs on the C++ path"). A reservation moves it out of
// the stream: reserve_blocks slots are mapped and faulted in by the constructor, once, as a driver
// sets up its pinned DMA pool at open; takes beyond them grow the pool chunk by chunk as without
// one, and are counted (grown()). The setup's cost is reserve_cpu_s() / reserve_wall_s().
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace vrex::lcp {

class HostBlockPool {
  public:
    // std::invalid_argument for @block_bytes 0; std::bad_alloc when the reservation does not map.
    // @reserve_blocks: slots mapped and faulted in now (rounded up to whole chunks).
    explicit HostBlockPool(std::size_t block_bytes, bool prepare_ahead = false,
                           std::size_t reserve_blocks = 0);
    ~HostBlockPool();
    HostBlockPool(HostBlockPool&&) noexcept;
    HostBlockPool& operator=(HostBlockPool&&) noexcept;

    // A block of block_bytes() bytes (contents unspecified); std::bad_alloc when no chunk maps.
    std::span<std::byte> take();
    // Gives @block (from take(), not yet given back) back to the pool.
    void give(std::span<std::byte> block);

    std::size_t block_bytes() const noexcept { return block_; }
    std::size_t chunk_bytes() const noexcept { return chunk_; }
    std::size_t chunks() const noexcept { return chunks_.size(); }
    std::size_t in_use() const noexcept { return used_; }
    // Slots the constructor mapped and faulted in (>= the reserve_blocks asked for; 0 without).
    std::size_t reserved() const noexcept { return reserved_; }
    // Slots handed out for the first time beyond the reservation (the pool grew for them).
    std::size_t grown() const noexcept { return carved_ > reserved_ ? carved_ - reserved_ : 0; }
    // The reservation's thread CPU time and wall time in the constructor (0 without one).
    double reserve_cpu_s() const noexcept { return reserve_cpu_s_; }
    double reserve_wall_s() const noexcept { return reserve_wall_s_; }
    // CPU time the preparing thread has spent so far (0 without prepare_ahead).
    double prepare_cpu_s() const noexcept;

    struct Unmap {
        std::size_t bytes = 0;
        void operator()(std::byte* p) const noexcept;
    };
    using Chunk = std::unique_ptr<std::byte, Unmap>;

  private:
    struct Ahead;
    std::size_t block_ = 0, chunk_ = 0, per_chunk_ = 0, used_ = 0, reserved_ = 0;
    std::vector<Chunk> chunks_;
    std::vector<std::byte*> free_;  // blocks given back, handed out first
    std::size_t carved_ = 0;        // slots handed out for the first time, in chunk order
    double reserve_cpu_s_ = 0, reserve_wall_s_ = 0;
    std::unique_ptr<Ahead> ahead_;
};

}  // namespace vrex::lcp
