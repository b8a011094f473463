// KvAllocator's private state (pimpl): kept out of vrex/hal.hpp so the public header carries no
// lock or container types (tests/hal/public_headers_test.sh checks it).
#pragma once

#include <unistd.h>

#include <memory>
#include <mutex>
#include <vector>

#include "backend.hpp"
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
        bool fixed = false;                // the fixed pool: never destroyed before the allocator
    };

    // Engine-owned memory (KvAllocator::import_memory): one record per GEM handle, holding one
    // Backend import reference, alive while an ImportedMemory object or a block record uses it.
    struct Import {
        std::uint32_t handle = 0;
        std::uint64_t size = 0;
        std::span<std::byte> map;  // Backend::bo_map() of the import
        int dmabuf = -1;           // dup of the engine's fd: Stream::export_dmabuf() of its blocks
        std::uint32_t users = 0;   // ImportedMemory objects
        std::uint32_t blocks = 0;  // BlockRecs pointing into it
    };

    Slab* find_slab(std::uint32_t handle) {
        for (Slab& sl : slabs)
            if (sl.handle == handle) return &sl;
        return nullptr;
    }

    Import* find_import(std::uint32_t handle) {
        for (Import& i : imports)
            if (i.handle == handle) return &i;
        return nullptr;
    }

    // The import of @handle goes (dma-buf dup closed, Backend reference dropped) once neither an
    // ImportedMemory object nor a block record uses it. Callers hold mu.
    void drop_import_if_unused_locked(Backend& be, std::uint32_t handle) {
        for (auto it = imports.begin(); it != imports.end(); ++it) {
            if (it->handle != handle) continue;
            if (it->users || it->blocks) return;
            if (it->dmabuf >= 0) ::close(it->dmabuf);
            // The device released every block pointing into it, so the backend has no reason to
            // refuse; should it anyway (device lost), the handle goes with the Backend.
            (void)be.bo_destroy(handle);
            imports.erase(it);
            return;
        }
    }

    std::mutex mu;                        // slabs, stats, blocks, imports, next_stream_token
    std::uint64_t next_stream_token = 0;  // Stream incarnations (BlockRec::owner_token)
    std::vector<Slab> slabs;
    // AllocatorOptions::fixed_pool_blocks > 0: slabs holds exactly the pool and never grows.
    bool fixed_pool = false;
    std::vector<Import> imports;
    Stats stats;
    std::unique_ptr<BlockTable> blocks;  // generations and references (block_table.hpp)
    SegmentRegistry segments;            // open segments, segment block ids (segment_ops.hpp)
};

}  // namespace vrex
