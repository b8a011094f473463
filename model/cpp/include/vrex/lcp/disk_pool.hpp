// vrex::lcp::DiskBlockPool: the disk tier below host memory of the KV hierarchy (KvTiers): demoted
// blocks beyond TierOptions::host_blocks are written to slots of one unnamed file in a directory the
// caller names (O_TMPFILE, else a unique name removed at once: nothing is left behind, not even
// after a crash) and read back through a shared mapping of it. The file grows by chunks of slots,
// each mapped once, so a slot's bytes stay at one address for the pool's life (the Python path's
// zero-copy views of spilled blocks rely on it). Space is reserved (posix_fallocate) before a chunk
// is used: a full disk fails the spill with ENOSPC, never a SIGBUS on a later read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vrex/result.hpp"

namespace vrex::lcp {

class DiskBlockPool {
  public:
    // A pool for blocks of @block_bytes in directory @dir (empty: $TMPDIR, else /tmp). The file is
    // made by the first put(); EINVAL for a zero block size, the errno of stat() when @dir is not a
    // directory one can reach.
    static Result<DiskBlockPool> create(std::string dir, std::size_t block_bytes);
    ~DiskBlockPool();
    DiskBlockPool(DiskBlockPool&&) noexcept;
    DiskBlockPool& operator=(DiskBlockPool&&) noexcept;
    DiskBlockPool(const DiskBlockPool&) = delete;
    DiskBlockPool& operator=(const DiskBlockPool&) = delete;

    // Writes @bytes (block_bytes() of them) to a free slot (one given back first, else the next
    // one, growing the file) and returns it; the errno of the file call (ENOSPC, EFBIG, EIO...)
    // with the directory and slot as context.
    Result<std::uint32_t> put(std::span<const std::byte> bytes);
    // The bytes of slot @slot (from put(), not given back), read through the mapping.
    std::span<const std::byte> view(std::uint32_t slot) const;
    // Slot @slot is free again.
    void give(std::uint32_t slot);

    std::size_t block_bytes() const noexcept { return block_; }
    std::size_t in_use() const noexcept { return used_; }
    std::size_t slots() const noexcept { return chunks_.size() * kSlotsPerChunk; }
    const std::string& dir() const noexcept { return dir_; }

    static constexpr std::size_t kSlotsPerChunk = 64;

  private:
    DiskBlockPool(std::string dir, std::size_t block_bytes) : dir_(std::move(dir)), block_(block_bytes) {}
    Result<void> open_file();
    Result<void> grow();
    void close() noexcept;

    std::string dir_;
    std::size_t block_ = 0, used_ = 0;
    int fd_ = -1;
    std::vector<std::byte*> chunks_;  // each kSlotsPerChunk * block_ bytes, mapped shared
    std::vector<std::uint32_t> free_;
    std::uint32_t next_ = 0;  // slots handed out at least once
};

}  // namespace vrex::lcp
