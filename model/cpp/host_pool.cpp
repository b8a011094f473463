#include "vrex/lcp/host_pool.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <new>
#include <stdexcept>

namespace vrex::lcp {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}

void HostBlockPool::Unmap::operator()(std::byte* p) const noexcept {
    ::munmap(p, bytes);
}

HostBlockPool::HostBlockPool(std::size_t block_bytes) : block_(block_bytes) {
    if (block_bytes == 0) throw std::invalid_argument("vrex host block pool: a block needs bytes");
    // Whole huge pages, at least one block.
    chunk_ = (block_bytes + kHugePage - 1) / kHugePage * kHugePage;
    per_chunk_ = chunk_ / block_bytes;
}

std::span<std::byte> HostBlockPool::take() {
    if (!free_.empty()) {
        std::byte* p = free_.back();
        free_.pop_back();
        used_++;
        return {p, block_};
    }
    if (chunks_.empty() || next_ == per_chunk_) {
        // Map twice the chunk and keep its 2 MiB-aligned middle: THP needs aligned 2 MiB ranges.
        const std::size_t span = chunk_ + kHugePage;
        void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) throw std::bad_alloc();
        auto* base = static_cast<std::byte*>(raw);
        const auto addr = reinterpret_cast<std::uintptr_t>(base);
        const std::size_t head = (kHugePage - addr % kHugePage) % kHugePage;
        if (head) ::munmap(base, head);
        if (kHugePage - head) ::munmap(base + head + chunk_, kHugePage - head);
        (void)::madvise(base + head, chunk_, MADV_HUGEPAGE);  // advice only: 4 KiB pages work too
        chunks_.emplace_back(base + head, Unmap{chunk_});
        next_ = 0;
    }
    std::byte* p = chunks_.back().get() + next_ * block_;
    next_++;
    used_++;
    return {p, block_};
}

void HostBlockPool::give(std::span<std::byte> block) {
    if (block.empty()) return;
    free_.push_back(block.data());
    used_--;
}

}  // namespace vrex::lcp
