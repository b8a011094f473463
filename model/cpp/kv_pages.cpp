#include "vrex/lcp/kv_pages.hpp"

#include <stdexcept>
#include <string>

namespace vrex::lcp {

void KvPageTable::add_frame(std::span<const float* const> device) {
    if (device.size() != regions_)
        throw std::invalid_argument("vrex page table: " + std::to_string(device.size()) +
                                    " blocks for a frame of " + std::to_string(regions_) + " regions");
    device_.insert(device_.end(), device.begin(), device.end());
    readable_.insert(readable_.end(), device.begin(), device.end());
}

void KvPageTable::sync(const KvTiers& tiers) {
    const auto codes = tiers.slot_tiers();
    for (std::size_t s = 0; s < readable_.size() && s < codes.size(); s++)
        readable_[s] = codes[s] == Tier::device ? device_[s] : nullptr;
}

bool KvPageTable::stage(std::size_t slot, const KvTiers& tiers) {
    if (readable_.at(slot)) return true;
    const auto copy = tiers.host_copy(tiers.slot_key(slot));
    // The block layout is fp32 (Geometry::hal()); a copy is a whole block, aligned as the pool's slots.
    readable_[slot] = copy.empty() ? nullptr : reinterpret_cast<const float*>(copy.data());  // NOLINT
    return readable_[slot] != nullptr;
}

}  // namespace vrex::lcp
