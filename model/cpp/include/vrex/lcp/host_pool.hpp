// vrex::lcp::HostBlockPool: host memory for demoted KV blocks, as a driver keeps a pool for its DMA
// engine instead of allocating every copy: blocks are slots of 2 MiB chunks, a slot given back
// (its block promoted to the device again) is handed out before a new chunk is mapped. A chunk's
// pages are faulted in (the kernel clears them) by the take() that maps it, or -- prepare_ahead --
// by a thread of the pool that keeps the next chunk ready, standing in for a driver filling its
// DMA pool ahead; that thread's CPU time is reported (prepare_cpu_s()), never hidden. Every demoted
// byte needs memory the process never touched: the pool moves that cost, it cannot remove it
// (docs/model.md "Session 11: time against FLOPs on the C++ path").
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace vrex::lcp {

class HostBlockPool {
  public:
    // std::invalid_argument for @block_bytes 0.
    explicit HostBlockPool(std::size_t block_bytes, bool prepare_ahead = false);
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
    // CPU time the preparing thread has spent so far (0 without prepare_ahead).
    double prepare_cpu_s() const noexcept;

    struct Unmap {
        std::size_t bytes = 0;
        void operator()(std::byte* p) const noexcept;
    };
    using Chunk = std::unique_ptr<std::byte, Unmap>;

  private:
    struct Ahead;
    std::size_t block_ = 0, chunk_ = 0, per_chunk_ = 0, used_ = 0;
    std::vector<Chunk> chunks_;
    std::vector<std::byte*> free_;  // blocks given back, handed out first
    std::size_t next_ = 0;          // blocks of the newest chunk handed out so far
    std::unique_ptr<Ahead> ahead_;
};

}  // namespace vrex::lcp
