// Segments: KV memory for the tokens that are not visual (the text prompt, generated tokens), as an
// append-only token sequence in fixed-size blocks (docs/hal.md "Segments").
//
// A frame block is keyed by (frame, region) and found again by fingerprint; a prompt or a generated
// token has no frame. A Segment holds positions first_position .. first_position + tokens() - 1 in
// blocks of tokens_per_block tokens each, in order: block k holds the positions
// first_position + k * T .. + T - 1 in its token slots 0 .. T - 1 (KvBlock::first_token,
// token_count say which). Its blocks are ordinary KV blocks of the allocator (same slabs, the same
// ModelGeometry layout, generation-tagged handles, dma-buf export through Stream::export_dmabuf)
// that are
//   - not indexed (no SHIE entry: no retrieval returns them, reuse() refuses them),
//   - never zombie-aged and never evicted under memory pressure: an engine cannot recompute a
//     prompt it no longer has, so only truncate()/close() (or the stream's destruction) free them,
//   - placed outside the stream's current bank group (docs/hal.md "Segments": placement).
//
// Threading: a Segment is used on the thread that uses its stream. Destroying the stream closes
// its segments (their blocks are released; later calls fail with errc::stale_handle).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "vrex/export.h"
#include "vrex/hal.hpp"
#include "vrex/result.hpp"

namespace vrex {

enum class SegmentKind : std::uint32_t {
    prompt = 1,     // the text prompt (query) of a sequence
    generated = 2,  // tokens the model generated (truncate() rejects speculative ones)
};

// Segment blocks have ids of their own, apart from the device's block ids: bit 31 is set.
inline constexpr std::uint32_t kSegmentBlockIdBit = 0x8000'0000u;
inline constexpr bool is_segment_block(const KvBlock& b) noexcept {
    return (b.id & kSegmentBlockIdBit) != 0;
}

class VREX_API Segment {
  public:
    Segment(Segment&&) noexcept;
    Segment& operator=(Segment&&) noexcept;  // closes the segment assigned over
    Segment(const Segment&) = delete;
    Segment& operator=(const Segment&) = delete;
    ~Segment();  // close()

    SegmentKind kind() const noexcept;
    std::uint32_t first_position() const noexcept;
    std::uint32_t tokens() const noexcept;        // positions held (0 once closed)
    std::uint32_t end_position() const noexcept;  // first_position() + tokens()
    bool is_open() const noexcept;
    std::uint32_t stream_id() const noexcept;  // device id of the stream it was opened on
    std::uint32_t tokens_per_block() const noexcept;
    // Blocks an append(@n_tokens) would return now (the partial last block plus new ones).
    std::uint64_t blocks_touched(std::uint32_t n_tokens) const noexcept;

    // Room for @n_tokens more positions: the last partial block is filled first, then new blocks
    // are taken. Returns the blocks that now hold the new tokens, in position order (the partial
    // block first, with its token_count updated). All or nothing: ENOSPC (no slot, no device memory
    // for a slab) leaves the segment and the allocator as they were. EINVAL when the positions would
    // pass 2^32 - 1. n_tokens 0 returns no block.
    Result<std::vector<KvBlock>> append(std::uint32_t n_tokens);

    // Keeps the positions before @position (first_position() <= @position <= end_position(), else
    // ERANGE): whole blocks beyond it are released (their handles become stale; the memory returns
    // unless a pin holds it), the block holding @position - 1 keeps its first tokens. Returns the
    // released blocks (ReleaseReason::removed). truncate(first_position()) empties the segment.
    Result<std::vector<ReleasedBlock>> truncate(std::uint32_t position);

    // The blocks, in position order.
    Result<std::vector<KvBlock>> blocks() const;

    // Releases every block; later calls fail with errc::stale_handle. Closing twice is a no-op.
    void close() noexcept;

    struct Impl;
    explicit Segment(std::unique_ptr<Impl> impl);

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace vrex
