// A vLLM-style paged KV-cache allocator, as the baseline V-Rex is measured against.
//
// What it models (vLLM's block manager, v0 "BlockSpaceManager" / v1 "KVCacheManager" without prefix
// caching): device KV memory is a pool of fixed-size physical blocks of tokens_per_block tokens;
// each sequence (here: one video stream) has a block table mapping its logical blocks, in order, to
// physical block ids; tokens are only ever appended, a new physical block is taken from a LIFO free
// list when the last block is full, and blocks return to the free list only when the sequence is
// freed. Nothing is deduplicated and nothing is shared between frames: every region of every frame
// costs its own KV. Optional knobs:
//   - window_tokens > 0: sliding-window attention (vLLM frees blocks that fell out of the window):
//     whole blocks older than the last window_tokens tokens go back to the free list. This is the
//     fair "same temporal context" comparison; 0 (default) is the append-only baseline.
//   - capacity_blocks > 0: a fixed pool (vLLM's num_gpu_blocks); append() then fails instead of
//     growing the pool, which is where vLLM would preempt a sequence.
// Accounting: resident_bytes() = blocks held in block tables x block_bytes(); pool_blocks() is the
// high-water mark of physical blocks ever taken (the memory a real engine would have reserved).
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace vrex::pipeline {

struct PagedBaselineConfig {
    std::uint32_t tokens_per_block = 16;  // vLLM's default block size
    std::uint64_t bytes_per_token = 0;    // K + V over all layers and KV heads
    std::uint64_t window_tokens = 0;      // 0: append-only
    std::uint64_t capacity_blocks = 0;    // 0: the pool grows on demand
};

class PagedKvBaseline {
  public:
    explicit PagedKvBaseline(const PagedBaselineConfig& config);

    // A new, empty sequence; returns its id (0, 1, ...).
    std::uint32_t add_sequence();
    // Appends @tokens tokens to @seq. False (nothing changed) when a fixed pool has too few free
    // blocks.
    bool append(std::uint32_t seq, std::uint64_t tokens);
    // Returns every block of @seq to the free list (the sequence stays, empty).
    void free_sequence(std::uint32_t seq);

    std::uint64_t block_bytes() const noexcept { return cfg_.bytes_per_token * cfg_.tokens_per_block; }
    std::uint64_t allocated_blocks() const noexcept { return allocated_; }
    std::uint64_t resident_bytes() const noexcept { return allocated_ * block_bytes(); }
    std::uint64_t pool_blocks() const noexcept { return pool_; }
    std::uint64_t free_blocks() const noexcept { return free_.size(); }
    std::uint64_t tokens(std::uint32_t seq) const { return seqs_.at(seq).tokens; }
    // Physical block ids of @seq's logical blocks still held, oldest first.
    std::vector<std::uint32_t> block_table(std::uint32_t seq) const;
    const PagedBaselineConfig& config() const noexcept { return cfg_; }

  private:
    struct Sequence {
        std::deque<std::uint32_t> table;  // physical ids of the held logical blocks, in order
        std::uint64_t tokens = 0;         // tokens appended over the sequence's life
        std::uint64_t first_block = 0;    // logical index of table.front() (window mode)
    };
    std::uint32_t take_block();
    void drop_out_of_window(Sequence& s);

    PagedBaselineConfig cfg_;
    std::vector<Sequence> seqs_;
    std::vector<std::uint32_t> free_;  // LIFO, like vLLM's free block list
    std::uint64_t allocated_ = 0;
    std::uint64_t pool_ = 0;
};

}  // namespace vrex::pipeline
