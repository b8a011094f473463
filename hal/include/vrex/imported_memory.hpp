// Engine-owned KV memory: an inference engine keeps its KV cache in its own buffer (a GPU/NPU buffer
// it exports as a dma-buf) and lets vrex index blocks that live there instead of copying them into
// vrex memory (docs/hal.md "Imported memory").
//
//   auto mem = allocator->import_memory(dmabuf_fd);       // PRIME import; the fd stays the engine's
//   auto blk = stream->index_imported(**mem, offset, region);  // a KvBlock at (memory, offset)
//
// The engine owns the memory: vrex never frees, reuses or writes it. A block indexed there behaves
// like a vrex block (generation-tagged handle, views, sharing, pins, retrieval, release reports),
// except that its release never frees memory (ReleasedBlock::memory_freed is false) and it is in
// no bank (KvBlock::bank == kNoBank). The import stays alive (GEM handle, the HAL's
// mapping) while the ImportedMemory object or any block indexed into it does, so views stay valid
// by the same rules as for vrex blocks whichever goes first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "vrex/export.h"
#include "vrex/hal.hpp"

namespace vrex {

// KvBlock::bank of a block in engine-owned memory: it is in no bank of the device.
inline constexpr std::uint32_t kNoBank = 0xffff'ffffu;

class VREX_API ImportedMemory {
  public:
    ~ImportedMemory();
    ImportedMemory(const ImportedMemory&) = delete;
    ImportedMemory& operator=(const ImportedMemory&) = delete;

    // GEM handle of the import on the allocator's device (KvBlock::handle of its blocks).
    std::uint32_t handle() const noexcept { return handle_; }
    // Bytes of the engine's buffer.
    std::uint64_t size() const noexcept { return size_; }
    // The HAL's read/write mapping of the buffer (the same memory as the engine's own mapping).
    std::span<std::byte> host_view() const noexcept { return map_; }
    // Blocks indexed into the buffer that the HAL still tracks (live or referenced).
    std::uint32_t blocks() const;

    class Key {
        friend class KvAllocator;
        Key() = default;
    };
    ImportedMemory(Key, std::shared_ptr<KvAllocator> alloc, std::uint32_t handle, std::uint64_t size,
                   std::span<std::byte> map);

  private:
    friend class Stream;
    friend struct Stream::Impl;
    std::shared_ptr<KvAllocator> alloc_;
    std::uint32_t handle_;
    std::uint64_t size_;
    std::span<std::byte> map_;
};

}  // namespace vrex
