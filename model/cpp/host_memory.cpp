#include "host_memory.hpp"

#include <fcntl.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace vrex::lcp {

OwnedFd::~OwnedFd() {
    if (fd_ >= 0) ::close(fd_);
}

namespace {
Error sys(const std::string& what) {
    return Error{std::error_code(errno, std::generic_category()), "host tier: " + what};
}
}  // namespace

Result<OwnedFd> host_tier_dmabuf(std::uint64_t bytes) {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t size = (bytes + page - 1) / page * page;
    OwnedFd mem(::memfd_create("vrex-host-tier", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (mem.get() < 0) return sys("memfd_create");
    if (::ftruncate(mem.get(), static_cast<off_t>(size)))
        return sys("size the memfd to " + std::to_string(size));
    OwnedFd dev(::open("/dev/udmabuf", O_RDWR | O_CLOEXEC));
    if (dev.get() < 0) return mem;  // no udmabuf: the memfd stands in (emulated backend only)
    if (::fcntl(mem.get(), F_ADD_SEALS, F_SEAL_SHRINK)) return sys("seal the memfd against shrinking");
    udmabuf_create c{};
    c.memfd = static_cast<__u32>(mem.get());
    c.size = size;
    OwnedFd buf(::ioctl(dev.get(), UDMABUF_CREATE, &c));
    if (buf.get() < 0) return sys("/dev/udmabuf: make the memfd a dma-buf");
    return buf;
}

}  // namespace vrex::lcp
