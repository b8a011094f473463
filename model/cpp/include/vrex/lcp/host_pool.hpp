// vrex::lcp::HostBlockPool: host memory for demoted KV blocks, as a driver keeps a pinned pool for
// its DMA engine instead of allocating every copy. Blocks come from 2 MiB chunks that ask for
// transparent huge pages: a demotion's copy then lands in memory one fault (and one 2 MiB clear)
// made ready for 128 blocks of 16 KiB, where a fresh 16 KiB allocation faulted in four 4 KiB pages
// inside the step that demoted it (docs/model.md "Session 11: time against FLOPs on the C++ path").
// A freed block (promoted back to the device) is handed out again before a new chunk is mapped.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace vrex::lcp {

class HostBlockPool {
  public:
    // std::invalid_argument for @block_bytes 0.
    explicit HostBlockPool(std::size_t block_bytes);

    // A block of block_bytes() bytes (contents unspecified); std::bad_alloc when no chunk maps.
    std::span<std::byte> take();
    // Gives @block (from take(), not yet given back) back to the pool.
    void give(std::span<std::byte> block);

    std::size_t block_bytes() const noexcept { return block_; }
    std::size_t chunk_bytes() const noexcept { return chunk_; }
    std::size_t chunks() const noexcept { return chunks_.size(); }
    std::size_t in_use() const noexcept { return used_; }

  private:
    struct Unmap {
        std::size_t bytes = 0;
        void operator()(std::byte* p) const noexcept;
    };
    std::size_t block_ = 0, chunk_ = 0, per_chunk_ = 0, used_ = 0;
    std::vector<std::unique_ptr<std::byte, Unmap>> chunks_;
    std::vector<std::byte*> free_;  // blocks given back, handed out first
    std::size_t next_ = 0;          // blocks of the newest chunk handed out so far
};

}  // namespace vrex::lcp
