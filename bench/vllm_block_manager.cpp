// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "vllm_block_manager.hpp"

#include <stdexcept>

namespace vrex::bench {

VllmBlockManager::VllmBlockManager(const VllmConfig& config) : cfg_(config) {
    if (cfg_.block_size == 0) throw std::invalid_argument("vllm block manager: block_size must be > 0");
    if (cfg_.num_blocks) blocks_.reserve(cfg_.num_blocks);
}

std::uint32_t VllmBlockManager::add_sequence() {
    seqs_.emplace_back();
    return static_cast<std::uint32_t>(seqs_.size() - 1);
}

// splitmix64 finaliser over (parent, tokens): vLLM hashes the same tuple (with sha256 or Python's
// hash); any well-mixed 64-bit hash gives the same sharing decisions here.
std::uint64_t VllmBlockManager::block_hash(std::uint64_t parent, std::span<const std::uint64_t> tokens) {
    auto mix = [](std::uint64_t x) {
        x += 0x9e3779b97f4a7c15ull;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        return x ^ (x >> 31);
    };
    std::uint64_t h = mix(parent ^ 0x5bd1e995u);
    for (std::uint64_t t : tokens) h = mix(h ^ t);
    return h;
}

void VllmBlockManager::queue_remove(std::uint32_t b) {
    Block& k = blocks_[b];
    if (k.prev != kNone)
        blocks_[k.prev].next = k.next;
    else
        head_ = k.next;
    if (k.next != kNone)
        blocks_[k.next].prev = k.prev;
    else
        tail_ = k.prev;
    k.prev = k.next = kNone;
    free_count_--;
}

void VllmBlockManager::queue_push_tail(std::uint32_t b) {
    Block& k = blocks_[b];
    k.prev = tail_;
    k.next = kNone;
    if (tail_ != kNone)
        blocks_[tail_].next = b;
    else
        head_ = b;
    tail_ = b;
    free_count_++;
}

std::uint32_t VllmBlockManager::take_free() {
    std::uint32_t b;
    if (head_ != kNone) {
        b = head_;
        queue_remove(b);
        Block& k = blocks_[b];
        if (k.hashed) {  // eviction of a cached block: its content is gone
            auto it = cached_.find(k.hash);
            if (it != cached_.end() && it->second == b) cached_.erase(it);
            k.hashed = false;
        }
    } else {
        b = static_cast<std::uint32_t>(blocks_.size());
        blocks_.emplace_back();
    }
    blocks_[b].ref = 1;
    allocated_++;
    return b;
}

void VllmBlockManager::release(std::uint32_t b) {
    Block& k = blocks_[b];
    if (--k.ref == 0) {
        allocated_--;
        queue_push_tail(b);
    }
}

void VllmBlockManager::seal(Sequence& s, std::uint32_t b, std::uint64_t hash) {
    s.parent_hash = hash;
    if (!cfg_.prefix_caching) return;
    // vLLM caches a block under its hash once it is full; an equal block already cached keeps the
    // entry (no deduplication after the fact).
    if (cached_.emplace(hash, b).second) {
        blocks_[b].hashed = true;
        blocks_[b].hash = hash;
    }
}

std::uint64_t VllmBlockManager::needed_fresh(const Sequence& s, std::span<const std::uint64_t> tokens) const {
    const std::uint64_t per = cfg_.block_size;
    const std::uint64_t have = (s.tokens + per - 1) / per;
    const std::uint64_t need = (s.tokens + tokens.size() + per - 1) / per;
    return need - have;  // an upper bound: prefix hits may need fewer
}

bool VllmBlockManager::append(std::uint32_t seq, std::span<const std::uint64_t> tokens) {
    Sequence& s = seqs_.at(seq);
    if (cfg_.num_blocks && needed_fresh(s, tokens) > free_count_ + (cfg_.num_blocks - blocks_.size()))
        return false;
    const std::size_t per = cfg_.block_size;
    std::size_t i = 0;
    while (i < tokens.size()) {
        if (s.partial.empty() && cfg_.prefix_caching && tokens.size() - i >= per) {
            const auto full = tokens.subspan(i, per);
            const std::uint64_t h = block_hash(s.parent_hash, full);
            if (auto it = cached_.find(h); it != cached_.end()) {
                const std::uint32_t b = it->second;
                if (blocks_[b].ref == 0) {
                    queue_remove(b);
                    allocated_++;
                }
                blocks_[b].ref++;
                s.table.push_back(b);
                s.parent_hash = h;
                s.tokens += per;
                prefix_hits_++;
                i += per;
                continue;
            }
        }
        if (s.partial.empty()) s.table.push_back(take_free());
        s.partial.push_back(tokens[i++]);
        s.tokens++;
        if (s.partial.size() == per) {
            seal(s, s.table.back(), block_hash(s.parent_hash, s.partial));
            s.partial.clear();
        }
    }
    drop_out_of_window(s);
    return true;
}

void VllmBlockManager::drop_out_of_window(Sequence& s) {
    if (!cfg_.window_tokens) return;
    const std::uint64_t per = cfg_.block_size;
    const std::uint64_t start = s.tokens > cfg_.window_tokens ? s.tokens - cfg_.window_tokens : 0;
    while (s.window_first < s.table.size() && (s.window_first + 1) * per <= start) {
        release(s.table[s.window_first]);
        s.table[s.window_first++] = kNone;
    }
}

void VllmBlockManager::free_sequence(std::uint32_t seq) {
    Sequence& s = seqs_.at(seq);
    // vLLM frees in reverse order so that the tail of a sequence is evicted first.
    for (auto it = s.table.rbegin(); it != s.table.rend(); ++it)
        if (*it != kNone) release(*it);
    s = Sequence{};
}

std::uint32_t VllmBlockManager::lookup(std::uint32_t seq, std::uint64_t pos) const {
    const Sequence& s = seqs_.at(seq);
    if (pos >= s.tokens) return kNone;
    const std::uint64_t idx = pos / cfg_.block_size;
    return idx < s.window_first ? kNone : s.table[idx];
}

bool VllmBlockManager::check() const {
    std::vector<std::uint32_t> refs(blocks_.size(), 0);
    for (const Sequence& s : seqs_)
        for (std::uint32_t b : s.table)
            if (b != kNone) refs[b]++;
    std::uint64_t live = 0, zero = 0;
    for (std::size_t b = 0; b < blocks_.size(); b++) {
        if (refs[b] != blocks_[b].ref) return false;
        (blocks_[b].ref ? live : zero)++;
    }
    std::uint64_t queued = 0;
    for (std::uint32_t b = head_; b != kNone; b = blocks_[b].next, queued++)
        if (blocks_[b].ref != 0 || queued > blocks_.size()) return false;
    for (const auto& [h, b] : cached_)
        if (b >= blocks_.size() || !blocks_[b].hashed || blocks_[b].hash != h) return false;
    return live == allocated_ && zero == free_count_ && queued == free_count_;
}

}  // namespace vrex::bench
