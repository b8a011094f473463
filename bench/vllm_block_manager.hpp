// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// A minimal, faithful C++ model of vLLM's KV-cache block manager, the baseline vrex_bench_alloc
// measures the HAL's KvAllocator against.
//
// What it models (vLLM v1 KVCacheManager + BlockPool, the v0 BlockSpaceManager behaves the same for
// these points):
//   - a pool of fixed-size physical blocks of block_size tokens (vLLM default 16);
//   - a free block queue in eviction order: blocks are taken from the head, freed blocks go to the
//     tail (vLLM's FreeKVCacheBlockQueue, a doubly linked list so that a cached block can be taken
//     out of the middle on a prefix hit);
//   - one block table per sequence: logical block i -> physical block id, append-only growth (a new
//     block when the last one is full), everything returned when the sequence is freed;
//   - ref counts: a physical block can sit in several block tables (shared prefixes); it returns to
//     the free queue when its count drops to 0;
//   - prefix caching: a full block is named by the hash of (parent block's hash, its token ids), so
//     equal content only matches with an equal prefix; a full block appended whose hash is cached is
//     shared (ref count + 1, taken out of the free queue if it sat there) instead of allocated; freed
//     blocks keep their hash until they are reused (evicted) from the head of the free queue;
//   - optional sliding window (window_tokens > 0): blocks whose tokens all fell out of the window are
//     dropped from the table (vLLM's sliding-window manager frees them);
//   - optional fixed pool (num_blocks > 0, vLLM's num_gpu_blocks): append() fails when it would need
//     more blocks than the pool holds, where vLLM would preempt.
// What it leaves out: the scheduler, preemption/swap, LoRA/multimodal extra keys in the hash (the
// token ids passed in already name the content), and the GPU tensors themselves (only ids are managed).
//
// tools/pipeline/paged_baseline.hpp is the pipeline's simpler model (no ref counts, no prefix hashing);
// with prefix caching off and distinct tokens both keep exactly the same number of blocks, which
// vrex_bench_alloc checks on every step of the trace.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace vrex::bench {

struct VllmConfig {
    std::uint32_t block_size = 16;      // tokens per block
    std::uint64_t bytes_per_token = 0;  // K + V over all layers and KV heads (for byte figures)
    std::uint64_t num_blocks = 0;       // 0: the pool grows on demand (its high-water mark is reported)
    std::uint64_t window_tokens = 0;    // 0: append-only
    bool prefix_caching = true;
};

class VllmBlockManager {
  public:
    static constexpr std::uint32_t kNone = 0xffffffffu;

    explicit VllmBlockManager(const VllmConfig& config);

    std::uint32_t add_sequence();
    // Appends the tokens (their ids name their content) to @seq. False, nothing changed, when a fixed
    // pool cannot supply the blocks.
    bool append(std::uint32_t seq, std::span<const std::uint64_t> tokens);
    // Releases every block of @seq (ref count - 1); the sequence stays, empty.
    void free_sequence(std::uint32_t seq);
    // Physical block holding token @pos of @seq, kNone if out of range or out of the window.
    std::uint32_t lookup(std::uint32_t seq, std::uint64_t pos) const;

    // Blocks with ref count > 0 (what the sequences hold).
    std::uint64_t allocated_blocks() const noexcept { return allocated_; }
    std::uint64_t resident_bytes() const noexcept { return allocated_ * block_bytes(); }
    // High-water mark of physical blocks ever needed: the pool a real engine must reserve.
    std::uint64_t pool_blocks() const noexcept { return blocks_.size(); }
    std::uint64_t pool_bytes() const noexcept { return pool_blocks() * block_bytes(); }
    std::uint64_t free_blocks() const noexcept { return free_count_; }
    std::uint64_t prefix_hits() const noexcept { return prefix_hits_; }
    std::uint64_t block_bytes() const noexcept { return cfg_.bytes_per_token * cfg_.block_size; }
    std::uint32_t ref_count(std::uint32_t block) const { return blocks_.at(block).ref; }
    // Consistency of every invariant (ref counts = table references, free queue = blocks with ref 0,
    // hash map entries point at blocks carrying that hash); for tests.
    bool check() const;

  private:
    struct Block {
        std::uint32_t ref = 0;
        std::uint32_t prev = kNone;  // free queue links (valid when ref == 0)
        std::uint32_t next = kNone;
        bool hashed = false;
        std::uint64_t hash = 0;
    };
    struct Sequence {
        std::vector<std::uint32_t> table;  // logical -> physical; kNone once out of the window
        std::uint64_t tokens = 0;
        std::uint64_t window_first = 0;      // first logical block still held
        std::uint64_t parent_hash = 0;       // hash of the last full block
        std::vector<std::uint64_t> partial;  // token ids of the last, partial block
    };

    std::uint32_t take_free();  // head of the free queue (evicting its hash) or a fresh block
    void queue_remove(std::uint32_t b);
    void queue_push_tail(std::uint32_t b);
    void release(std::uint32_t b);
    void seal(Sequence& s, std::uint32_t b, std::uint64_t hash);
    void drop_out_of_window(Sequence& s);
    std::uint64_t needed_fresh(const Sequence& s, std::span<const std::uint64_t> tokens) const;
    static std::uint64_t block_hash(std::uint64_t parent, std::span<const std::uint64_t> tokens);

    VllmConfig cfg_;
    std::vector<Block> blocks_;
    std::vector<Sequence> seqs_;
    std::unordered_map<std::uint64_t, std::uint32_t> cached_;  // block hash -> physical block
    std::uint32_t head_ = kNone, tail_ = kNone;
    std::uint64_t free_count_ = 0;
    std::uint64_t allocated_ = 0;
    std::uint64_t prefix_hits_ = 0;
};

}  // namespace vrex::bench
