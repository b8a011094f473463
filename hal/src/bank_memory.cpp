#include "bank_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>

namespace vrex {

namespace {

// A board's device memory is there before a BO is handed out (vrex.ko's banks are one carveout,
// backed from probe on): the emulation backs a BO's pages when it creates the BO. Left to fault in
// on first write, every freshly written KV block paid a page fault per page -- several microseconds
// each in a VM -- and the run that writes the most new blocks (exact's full cache) paid the most.
// The pages are allocated (MADV_POPULATE_WRITE; from 5.14) and then written once through the
// mapping: under a hypervisor that shadows the guest's page tables the first access through a new
// mapping still traps after the guest populated it (measured here: 22 us per 16 KiB populated, 0.5
// once touched). 0, or the errno that left the BO without memory.
int back_pages(std::byte* at, std::uint64_t size)
{
#ifdef MADV_POPULATE_WRITE
    if (madvise(at, size, MADV_POPULATE_WRITE) != 0 && errno != EINVAL)
        return errno;  // ENOMEM, EFAULT, EINTR: no memory for it (EINVAL: a kernel before 5.14)
#endif
    const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    for (std::uint64_t off = 0; off < size; off += page)
        *static_cast<volatile std::byte*>(at + off) = std::byte{0};  // a new memfd reads as zeros
    return 0;
}

}  // namespace

BankMemory::BankMemory(std::uint32_t nbanks, std::uint64_t bank_size, std::uint64_t tail_bytes)
    : bank_size_(bank_size), free_(nbanks), used_(nbanks, 0)
{
    banks_size_ = std::uint64_t{nbanks} * bank_size;
    size_ = banks_size_ + tail_bytes;
    // Address space only: unbacked until a BO's memfd is mapped over its range.
    void* p = mmap(nullptr, size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        size_ = 0;
        return;
    }
    base_ = static_cast<std::byte*>(p);
    if (tail_bytes && mmap(base_ + banks_size_, tail_bytes, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
        munmap(base_, size_);
        base_ = nullptr;
        size_ = 0;
        return;
    }
    for (std::uint32_t b = 0; b < nbanks; b++)
        free_[b].emplace(0, bank_size);
}

BankMemory::~BankMemory()
{
    if (base_)
        munmap(base_, size_);
}

Result<BankMemory::Extent> BankMemory::allocate(std::uint64_t size, std::uint64_t bank_mask)
{
    for (std::uint32_t b = 0; b < free_.size(); b++) {
        if (!(bank_mask & (std::uint64_t{1} << b)))
            continue;
        for (auto it = free_[b].begin(); it != free_[b].end(); ++it) {
            if (it->second < size)
                continue;
            const std::uint64_t off = it->first;
            const std::uint64_t rest = it->second - size;
            free_[b].erase(it);
            if (rest)
                free_[b].emplace(off + size, rest);

            Extent e{std::uint64_t{b} * bank_size_ + off, size, b, -1};
            e.memfd = memfd_create("vrex-bo", MFD_CLOEXEC);
            void* at = base_ + e.addr;
            if (e.memfd < 0 || ftruncate(e.memfd, static_cast<off_t>(size)) != 0 ||
                mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, e.memfd, 0) == MAP_FAILED) {
                const int err = errno;
                if (e.memfd >= 0)
                    close(e.memfd);
                e.memfd = -1;
                release(e);
                return std::error_code(err, std::generic_category());
            }
            used_[b] += size;
            if (const int err = back_pages(static_cast<std::byte*>(at), size)) {
                release(e);  // the range back to reserved address space, the memfd closed
                return std::error_code(err, std::generic_category());
            }
            return e;
        }
    }
    return std::make_error_code(std::errc::no_space_on_device);
}

void BankMemory::release(const Extent& e)
{
    if (e.memfd >= 0) {
        // Back to reserved address space; the memfd's pages live on in exported fds until closed.
        // Replacing a mapping inside our own reservation only fails for ENOMEM; the memfd mapping then
        // simply stays until the range is mapped again, which is harmless.
        (void)mmap(base_ + e.addr, e.size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        close(e.memfd);
        used_[e.bank] -= e.size;
    }
    auto& fl = free_[e.bank];
    std::uint64_t off = e.addr - std::uint64_t{e.bank} * bank_size_;
    std::uint64_t len = e.size;
    auto next = fl.lower_bound(off);
    if (next != fl.end() && off + len == next->first) {
        len += next->second;
        next = fl.erase(next);
    }
    if (next != fl.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == off) {
            prev->second += len;
            return;
        }
    }
    fl.emplace(off, len);
}

}  // namespace vrex
