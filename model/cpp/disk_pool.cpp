#include "vrex/lcp/disk_pool.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>
#include <utility>

namespace vrex::lcp {

namespace {

Error sys_error(int err, std::string what) {
    return {std::error_code(err, std::generic_category()), "lcp disk tier: " + std::move(what)};
}

}  // namespace

Result<DiskBlockPool> DiskBlockPool::create(std::string dir, std::size_t block_bytes) {
    if (block_bytes == 0) return Error{std::errc::invalid_argument, "lcp disk tier: a block needs bytes"};
    if (dir.empty()) {
        const char* tmp = std::getenv("TMPDIR");
        dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    }
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return sys_error(errno, "directory " + dir);
    if (!S_ISDIR(st.st_mode)) return sys_error(ENOTDIR, "directory " + dir);
    return DiskBlockPool(std::move(dir), block_bytes);
}

DiskBlockPool::~DiskBlockPool() {
    close();
}

DiskBlockPool::DiskBlockPool(DiskBlockPool&& o) noexcept
    : dir_(std::move(o.dir_)),
      block_(o.block_),
      used_(std::exchange(o.used_, 0)),
      fd_(std::exchange(o.fd_, -1)),
      chunks_(std::move(o.chunks_)),
      free_(std::move(o.free_)),
      next_(std::exchange(o.next_, 0)) {
    o.chunks_.clear();
}

DiskBlockPool& DiskBlockPool::operator=(DiskBlockPool&& o) noexcept {
    if (this != &o) {
        close();
        dir_ = std::move(o.dir_);
        block_ = o.block_;
        used_ = std::exchange(o.used_, 0);
        fd_ = std::exchange(o.fd_, -1);
        chunks_ = std::move(o.chunks_);
        o.chunks_.clear();
        free_ = std::move(o.free_);
        next_ = std::exchange(o.next_, 0);
    }
    return *this;
}

void DiskBlockPool::close() noexcept {
    for (std::byte* c : chunks_) ::munmap(c, kSlotsPerChunk * block_);
    chunks_.clear();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

// An unnamed file: O_TMPFILE where the file system has it, else a unique name unlinked at once.
Result<void> DiskBlockPool::open_file() {
    fd_ = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ >= 0) return {};
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
        return sys_error(errno, "create the spill file in " + dir_);
    std::string path = dir_ + "/vrex-kv-XXXXXX";
    fd_ = ::mkostemp(path.data(), O_CLOEXEC);
    if (fd_ < 0) return sys_error(errno, "create " + path);
    ::unlink(path.c_str());
    return {};
}

Result<void> DiskBlockPool::grow() {
    if (fd_ < 0)
        if (auto ok = open_file(); !ok) return ok;
    const std::size_t bytes = kSlotsPerChunk * block_;
    const auto off = static_cast<off_t>(chunks_.size() * bytes);
    // Reserved now, so a read of the mapping never meets a hole the disk cannot fill.
    if (const int err = ::posix_fallocate(fd_, off, static_cast<off_t>(bytes)); err != 0)
        return sys_error(err, "reserve " + std::to_string(bytes) + " bytes at offset " + std::to_string(off) +
                                  " of the spill file in " + dir_);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, off);
    if (p == MAP_FAILED) return sys_error(errno, "map the spill file in " + dir_);
    chunks_.push_back(static_cast<std::byte*>(p));
    return {};
}

Result<std::uint32_t> DiskBlockPool::put(std::span<const std::byte> bytes) {
    if (bytes.size() != block_)
        return Error{std::errc::invalid_argument, "lcp disk tier: " + std::to_string(bytes.size()) +
                                                      " bytes for a block of " + std::to_string(block_)};
    std::uint32_t slot = 0;
    if (!free_.empty()) {
        slot = free_.back();
    } else {
        if (next_ == slots())
            if (auto ok = grow(); !ok) return ok.error_info();
        slot = next_;
    }
    // Written with pwrite (not through the mapping): an I/O error is an errno here, not a signal.
    const auto* src = reinterpret_cast<const char*>(bytes.data());  // NOLINT: bytes as the syscall takes them
    std::size_t done = 0;
    while (done < block_) {
        const ssize_t n = ::pwrite(fd_, src + done, block_ - done, static_cast<off_t>(slot * block_ + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            return sys_error(n < 0 ? errno : EIO,
                             "write slot " + std::to_string(slot) + " of the spill file in " + dir_);
        done += static_cast<std::size_t>(n);
    }
    if (!free_.empty())
        free_.pop_back();
    else
        next_++;
    used_++;
    return slot;
}

std::span<const std::byte> DiskBlockPool::view(std::uint32_t slot) const {
    return {chunks_.at(slot / kSlotsPerChunk) + (slot % kSlotsPerChunk) * block_, block_};
}

void DiskBlockPool::give(std::uint32_t slot) {
    free_.push_back(slot);
    used_--;
}

}  // namespace vrex::lcp
