#include "vrex/lcp/tiers.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <system_error>

#include "vrex/lcp/policy.hpp"

namespace vrex::lcp {

namespace {

Error bad(std::string what) {
    return {std::errc::invalid_argument, "lcp tiers: " + std::move(what)};
}

}  // namespace

Result<KvTiers> KvTiers::create(const TierOptions& o, std::uint64_t block_bytes, std::uint32_t regions,
                                std::uint32_t window) {
    if (block_bytes == 0 || regions == 0) return bad("a block needs bytes and a frame regions");
    // The prefill reads the window's frames from their blocks' rows every step: they must stay.
    if (o.resident_frames < window)
        return bad("resident_frames " + std::to_string(o.resident_frames) + " is below the visual window " +
                   std::to_string(window));
    return KvTiers(o, block_bytes, regions, window);
}

void KvTiers::set_tier(Entry& e, Tier t) {
    if (e.tier == Tier::host) host_count_--;
    if (t == Tier::host) host_count_++;
    e.tier = t;
    for (const std::uint32_t s : e.slots) codes_[s] = t;
}

Result<void> KvTiers::add_frame(Stream& stream, std::uint32_t frame, std::span<const KvBlock> blocks,
                                std::vector<KvBlock>& repinned) {
    if (blocks.size() != regions_)
        return bad(std::to_string(blocks.size()) + " blocks for a frame of " + std::to_string(regions_) +
                   " regions");
    for (std::uint32_t r = 0; r < regions_; r++) {
        const std::uint64_t key = block_key(blocks[r]);
        auto [it, fresh] = entries_.try_emplace(key);
        Entry& e = it->second;
        if (fresh) {
            e.block = blocks[r];
            e.created = frame;
            device_.push_back(key);
        } else if (e.tier == Tier::host) {
            // Reused while the device still holds it (its SHIE entry is live): pinned again, the
            // same bytes, the copy freed.
            if (auto ok = stream.pin(e.block); !ok)
                return ok.error_info().within("lcp tiers: promote block " + std::to_string(e.block.id));
            if (std::memcmp(e.block.view.data(), e.host.data(), block_bytes_) != 0)
                return Error{std::errc::io_error, "lcp tiers: block " + std::to_string(e.block.id) +
                                                      ": device bytes differ from its demoted copy"};
            host_.give(e.host);
            e.host = {};
            set_tier(e, Tier::device);
            device_.push_back(key);
            repinned.push_back(e.block);
            bytes_.promoted++;
        }
        e.last_ref = frame;
        e.slots.push_back(static_cast<std::uint32_t>(slot_keys_.size()));
        slot_keys_.push_back(key);
        codes_.push_back(e.tier);
    }
    return {};
}

Result<void> KvTiers::age(Stream& stream, std::uint32_t next, std::vector<std::uint64_t>& demoted) {
    std::vector<std::uint64_t> keep;
    keep.reserve(device_.size());
    for (const std::uint64_t key : device_) {
        Entry& e = entries_.at(key);
        std::int64_t ref = e.created;
        if (opts_.coldness == Coldness::zombie) ref = e.last_ref;
        if (opts_.coldness == Coldness::use) ref = std::max<std::int64_t>(e.last_ref, e.last_read);
        if (std::int64_t{next} - ref < std::int64_t{opts_.resident_frames}) {
            keep.push_back(key);
            continue;
        }
        if (e.block.view.size() != block_bytes_)
            return bad("demote block " + std::to_string(e.block.id) + ": " +
                       std::to_string(e.block.view.size()) + " bytes, not " + std::to_string(block_bytes_));
        e.host = host_.take();
        std::memcpy(e.host.data(), e.block.view.data(), block_bytes_);
        set_tier(e, Tier::host);
        bytes_.demoted++;
        if (auto ok = stream.unpin(e.block); !ok)
            return ok.error_info().within("lcp tiers: demote block " + std::to_string(e.block.id));
        demoted.push_back(key);
    }
    device_ = std::move(keep);
    return {};
}

std::span<const std::byte> KvTiers::stage(Entry& e, std::unordered_set<std::uint64_t>& area,
                                          std::uint64_t key) {
    if (area.insert(key).second) bytes_.fetched++;
    return e.host;
}

void KvTiers::stage_window(std::uint32_t next) {
    for (std::uint32_t f = next >= window_ ? next - window_ + 1 : 0; f < next; f++)
        for (std::uint32_t r = 0; r < regions_; r++) {
            const std::uint64_t key = slot_keys_[std::size_t{f} * regions_ + r];
            Entry& e = entries_.at(key);
            if (e.tier == Tier::host) {
                const auto bytes = stage(e, window_staged_, key);
                staging_.assign(bytes.begin(), bytes.end());
            }
        }
}

std::span<const std::byte> KvTiers::fetch_prefill(std::uint64_t key) {
    const auto it = entries_.find(key);
    if (it == entries_.end()) return {};
    bytes_.recalled++;
    Entry& e = it->second;
    if (e.tier == Tier::device) return e.block.view;
    // The caller copies these bytes into the new block: that copy is the fetch.
    return stage(e, window_staged_, key);
}

void KvTiers::touch(std::uint64_t key, std::uint32_t frame) {
    const auto it = entries_.find(key);
    if (it != entries_.end()) it->second.last_read = std::max<std::int64_t>(it->second.last_read, frame);
}

void KvTiers::fetch(std::uint64_t key) {
    Entry& e = entries_.at(key);
    if (e.tier == Tier::device) return;
    const auto bytes = stage(e, staged_, key);
    staging_.assign(bytes.begin(), bytes.end());
}

void KvTiers::end_read() {
    std::size_t n = 0;
    for (const std::uint64_t k : staged_) n += window_staged_.count(k) == 0;
    stage_peak_ = std::max(stage_peak_, n);
    staged_.clear();
}

void KvTiers::account(std::uint64_t meta_bytes) {
    end_read();
    const std::uint64_t dev =
        (device_.size() + window_staged_.size() + stage_peak_) * block_bytes_ + meta_bytes;
    const std::uint64_t host = host_count_ * block_bytes_;
    bytes_.device_peak = std::max(bytes_.device_peak, dev);
    bytes_.host_peak = std::max(bytes_.host_peak, host);
    bytes_.total_peak = std::max(bytes_.total_peak, dev + host);
    bytes_.device_series.push_back(dev);
    bytes_.fetched_series.push_back(bytes_.fetched - fetched_before_);
    fetched_before_ = bytes_.fetched;
    stage_peak_ = 0;
    window_staged_.clear();
}

}  // namespace vrex::lcp
