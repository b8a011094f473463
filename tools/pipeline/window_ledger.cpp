#include "window_ledger.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace vrex::pipeline {

void WindowLedger::allocated(const KvBlock& block, std::uint32_t owner, std::uint32_t step) {
    // A device id comes back only after its release, which take_due() already forgot.
    if (!blocks_.emplace(block.id, Entry{block, owner, step}).second)
        throw std::logic_error("window ledger: block " + std::to_string(block.id) + " allocated twice");
}

void WindowLedger::referenced(std::uint32_t block_id, std::uint32_t step) {
    const auto it = blocks_.find(block_id);
    if (it == blocks_.end())
        throw std::logic_error("window ledger: reuse of untracked block " + std::to_string(block_id));
    it->second.last_ref = std::max(it->second.last_ref, step);
}

std::vector<KvBlock> WindowLedger::take_due(std::uint32_t owner, std::uint32_t step) {
    std::vector<KvBlock> due;
    // After the frame of @step the window holds steps step - window + 1 .. step.
    if (step + 1 < window_) return due;
    const std::uint32_t oldest = step + 1 - window_;
    for (auto it = blocks_.begin(); it != blocks_.end();) {
        if (it->second.owner == owner && it->second.last_ref < oldest) {
            due.push_back(it->second.block);
            it = blocks_.erase(it);
        } else {
            ++it;
        }
    }
    return due;
}

}  // namespace vrex::pipeline
