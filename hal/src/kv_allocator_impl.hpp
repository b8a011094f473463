// KvAllocator's private state (pimpl): kept out of vrex/hal.hpp so the public header carries no
// lock or container types (tests/hal/public_headers_test.sh checks it).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "block_table.hpp"
#include "segment_ops.hpp"
#include "vrex/hal.hpp"

namespace vrex {

struct VREX_LOCAL KvAllocator::Impl {
    struct Slab {
        std::uint32_t handle = 0;
        std::uint32_t bank = 0;
        std::span<std::byte> map;
        std::vector<std::uint32_t> free_slots;  // block indices, popped from the back
        // The slab's dma-buf, exported on the first Stream::export_dmabuf() of one of its blocks and
        // closed with the slab; every export hands out a dup of it (one buffer per slab).
        int dmabuf = -1;
        std::uint32_t segment_blocks = 0;  // held by segments (their placement packs them)
    };

    std::mutex mu;  // slabs, stats, blocks
    std::vector<Slab> slabs;
    Stats stats;
    std::unique_ptr<BlockTable> blocks;  // generations and references (block_table.hpp)
    SegmentRegistry segments;            // open segments, segment block ids (segment_ops.hpp)
};

}  // namespace vrex
