#include "paged_baseline.hpp"

#include <stdexcept>

namespace vrex::pipeline {

PagedKvBaseline::PagedKvBaseline(const PagedBaselineConfig& config) : cfg_(config) {
    if (cfg_.tokens_per_block == 0 || cfg_.bytes_per_token == 0)
        throw std::invalid_argument("paged baseline: tokens_per_block and bytes_per_token must be > 0");
}

std::uint32_t PagedKvBaseline::add_sequence() {
    seqs_.emplace_back();
    return static_cast<std::uint32_t>(seqs_.size() - 1);
}

std::uint32_t PagedKvBaseline::take_block() {
    allocated_++;
    if (!free_.empty()) {
        const std::uint32_t id = free_.back();
        free_.pop_back();
        return id;
    }
    return static_cast<std::uint32_t>(pool_++);
}

bool PagedKvBaseline::append(std::uint32_t seq, std::uint64_t tokens) {
    Sequence& s = seqs_.at(seq);
    const std::uint64_t per = cfg_.tokens_per_block;
    const std::uint64_t have = (s.tokens + per - 1) / per;           // logical blocks so far
    const std::uint64_t need = (s.tokens + tokens + per - 1) / per;  // after the append
    const std::uint64_t fresh = need - have;
    if (cfg_.capacity_blocks && fresh > free_.size() + (cfg_.capacity_blocks - pool_)) return false;
    for (std::uint64_t i = 0; i < fresh; i++) s.table.push_back(take_block());
    s.tokens += tokens;
    drop_out_of_window(s);
    return true;
}

void PagedKvBaseline::drop_out_of_window(Sequence& s) {
    if (!cfg_.window_tokens) return;
    const std::uint64_t per = cfg_.tokens_per_block;
    // A block can go once its last token is older than the window's first token.
    const std::uint64_t window_start = s.tokens > cfg_.window_tokens ? s.tokens - cfg_.window_tokens : 0;
    while (!s.table.empty() && (s.first_block + 1) * per <= window_start) {
        free_.push_back(s.table.front());
        s.table.pop_front();
        s.first_block++;
        allocated_--;
    }
}

void PagedKvBaseline::free_sequence(std::uint32_t seq) {
    Sequence& s = seqs_.at(seq);
    for (std::uint32_t id : s.table) free_.push_back(id);
    allocated_ -= s.table.size();
    s.table.clear();
    s.tokens = 0;
    s.first_block = 0;
}

std::vector<std::uint32_t> PagedKvBaseline::block_table(std::uint32_t seq) const {
    const Sequence& s = seqs_.at(seq);
    return {s.table.begin(), s.table.end()};
}

}  // namespace vrex::pipeline
