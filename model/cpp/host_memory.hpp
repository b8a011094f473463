// Host memory for the host tier of recall (vrex/lcp/policy.hpp): a buffer the HAL can import.
#pragma once

#include <cstdint>

#include "vrex/result.hpp"

namespace vrex::lcp {

// An owned file descriptor.
class OwnedFd {
  public:
    explicit OwnedFd(int fd) noexcept : fd_(fd) {}
    OwnedFd(OwnedFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    OwnedFd& operator=(OwnedFd&&) = delete;
    OwnedFd(const OwnedFd&) = delete;
    OwnedFd& operator=(const OwnedFd&) = delete;
    ~OwnedFd();
    int get() const noexcept { return fd_; }

  private:
    int fd_;
};

// A dma-buf of at least @bytes of host memory (rounded up to whole pages): a memfd made a dma-buf
// by /dev/udmabuf where the kernel has it, else the memfd itself, which only the emulated backend
// accepts in its place (the kernel backend's import then fails with the reason).
Result<OwnedFd> host_tier_dmabuf(std::uint64_t bytes);

}  // namespace vrex::lcp
