#include "vrex/lcp/copy_engine.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "thread_clock.hpp"

namespace vrex::lcp {

void CopyEngine::queue(std::span<std::byte> dst, std::span<const std::byte> src) {
    if (dst.size() != src.size())
        throw std::invalid_argument("vrex copy engine: " + std::to_string(src.size()) + " bytes into " +
                                    std::to_string(dst.size()));
    queue_.push_back({dst.data(), src.data(), src.size()});
}

void CopyEngine::run() {
    if (queue_.empty()) return;
    // One pair of clock reads per kick: a read costs ~1.5 us in this VM, as much as a block's copy.
    const double t0 = thread_cpu_s();
    for (const Copy& c : queue_) std::memcpy(c.dst, c.src, c.n);
    cpu_s_ += thread_cpu_s() - t0;
    kicks_++;
    copies_ += queue_.size();
    for (const Copy& c : queue_) bytes_ += c.n;
    queue_.clear();
}

}  // namespace vrex::lcp
