#include "vrex/lcp/tiers.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <system_error>

#include "vrex/lcp/policy.hpp"

namespace vrex::lcp {

namespace {

Error bad(std::string what) {
    return {std::errc::invalid_argument, "lcp tiers: " + std::move(what)};
}

std::string name(std::uint64_t key) {
    return "block " + std::to_string(key >> 32) + "." + std::to_string(key & 0xFFFFFFFFU);
}

}  // namespace

Result<KvTiers> KvTiers::create(const TierOptions& o, std::uint64_t block_bytes, std::uint32_t regions,
                                std::uint32_t window) {
    if (block_bytes == 0 || regions == 0) return bad("a block needs bytes and a frame regions");
    // The prefill reads the window's frames from their blocks' rows every step: they must stay.
    if (o.resident_frames < window)
        return bad("resident_frames " + std::to_string(o.resident_frames) + " is below the visual window " +
                   std::to_string(window));
    std::optional<DiskBlockPool> disk;
    if (o.host_blocks != 0 && !o.drop) {
        auto d = DiskBlockPool::create(o.disk_dir, block_bytes);
        if (!d) return d.error_info().within("lcp tiers");
        disk.emplace(std::move(*d));
    }
    try {
        return KvTiers(o, block_bytes, regions, window, std::move(disk));
    } catch (const std::bad_alloc&) {
        return Error{std::errc::not_enough_memory,
                     "lcp tiers: reserve " + std::to_string(host_reservation(o)) + " host blocks of " +
                         std::to_string(block_bytes) + " bytes"};
    }
}

std::size_t KvTiers::host_reservation(const TierOptions& o) {
    if (o.drop) return 0;
    if (o.host_blocks != 0)
        return std::min<std::size_t>(o.host_reserve_blocks, std::size_t{o.host_blocks} + 1);
    return o.host_reserve_blocks;
}

void KvTiers::set_tier(Entry& e, Tier t) {
    counts_[static_cast<std::size_t>(e.tier)]--;
    counts_[static_cast<std::size_t>(t)]++;
    e.tier = t;
    for (const std::uint32_t s : e.slots) codes_[s] = t;
}

std::optional<TierEntry> KvTiers::entry(std::uint64_t key) const {
    const auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    const Entry& e = it->second;
    return TierEntry{e.tier, e.created, e.last_ref, e.last_read};
}

std::span<const std::uint32_t> KvTiers::slots(std::uint64_t key) const {
    const auto it = entries_.find(key);
    return it == entries_.end() ? std::span<const std::uint32_t>{}
                                : std::span<const std::uint32_t>(it->second.slots);
}

std::vector<std::uint64_t> KvTiers::keys_on(Tier t) const {
    if (t == Tier::device) {
        std::vector<std::uint64_t> out;
        out.reserve(device_.size());
        for (const Resident& d : device_) out.push_back(d.key);
        return out;
    }
    std::vector<std::pair<std::uint64_t, std::uint64_t>> seq_key;
    for (const auto& [key, e] : entries_)
        if (e.tier == t) seq_key.emplace_back(e.seq, key);
    std::sort(seq_key.begin(), seq_key.end());
    std::vector<std::uint64_t> out;
    out.reserve(seq_key.size());
    for (const auto& sk : seq_key) out.push_back(sk.second);
    return out;
}

std::span<const std::byte> KvTiers::copy_of(const Entry& e) const {
    if (e.tier == Tier::host) return e.host;
    if (e.tier == Tier::disk) return disk_->view(e.disk_slot);
    return {};
}

std::span<const std::byte> KvTiers::host_copy(std::uint64_t key) const {
    const auto it = entries_.find(key);
    return it == entries_.end() ? std::span<const std::byte>{} : copy_of(it->second);
}

void KvTiers::free_copy(Entry& e) {
    if (e.tier == Tier::host) {
        if (limited()) spill_order_.erase({e.last_ref, e.seq, block_key(e.block)});
        host_.give(e.host);
        e.host = {};
    } else if (e.tier == Tier::disk) {
        disk_->give(e.disk_slot);
    }
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
            e.seq = entries_.size() - 1;
            e.created = frame;
            counts_[static_cast<std::size_t>(Tier::device)]++;
            device_.push_back({key, &e});
        } else if (e.tier != Tier::device) {
            // Reused while the device still holds it (its SHIE entry is live): pinned again, the
            // same bytes (a dropped block has no copy to compare), the copy freed.
            if (auto ok = stream.pin(e.block); !ok)
                return ok.error_info().within("lcp tiers: promote " + name(key));
            if (e.tier != Tier::dropped &&
                std::memcmp(e.block.view.data(), copy_of(e).data(), block_bytes_) != 0)
                return Error{std::errc::io_error,
                             "lcp tiers: " + name(key) + ": device bytes differ from its demoted copy"};
            free_copy(e);
            set_tier(e, Tier::device);
            // Back in entry order: the order blocks leave the device does not depend on promotions.
            const auto pos =
                std::lower_bound(device_.begin(), device_.end(), e.seq,
                                 [](const Resident& d, std::uint64_t seq) { return d.e->seq < seq; });
            device_.insert(pos, {key, &e});
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

bool KvTiers::is_cold(const Entry& e, std::uint32_t next) const {
    std::int64_t ref = e.created;
    if (opts_.coldness == Coldness::zombie) ref = e.last_ref;
    if (opts_.coldness == Coldness::use) ref = std::max<std::int64_t>(e.last_ref, e.last_read);
    return std::int64_t{next} - ref >= std::int64_t{opts_.resident_frames};
}

bool KvTiers::cold(std::uint64_t key, std::uint32_t next) const {
    const auto it = entries_.find(key);
    return it != entries_.end() && is_cold(it->second, next);
}

// Blocks @out (on the device, their sizes checked) leave it in order: each one's copy is queued into
// a slot of the host pool and the copy engine runs once for them all (a board's DMA of the frame's
// demotions into its pinned pool), then each is unpinned; with drop nothing is copied. With a host
// limit each block goes alone, copy then spill, so the pool holds what session 12's order held. The
// keys that left are appended to @left (when given). On an error the blocks not yet finished stay on
// the device, their queued copies given back.
Result<void> KvTiers::leave(Stream& stream, std::span<const Resident> out, std::vector<std::uint64_t>* left,
                            std::vector<std::uint64_t>* spilled) {
    const std::size_t step = limited() ? 1 : out.size();
    for (std::size_t i = 0; i < out.size(); i += step) {
        const auto batch = out.subspan(i, std::min(step, out.size() - i));
        if (!opts_.drop)
            for (const Resident& d : batch) {
                d.e->host = host_.take();
                dma_.queue(d.e->host, d.e->block.view);
            }
        dma_.run();
        for (std::size_t j = 0; j < batch.size(); j++) {
            if (auto ok = finish_leave(stream, batch[j], spilled); !ok) {
                for (const Resident& d : batch.subspan(j + 1)) {
                    host_.give(d.e->host);
                    d.e->host = {};
                }
                return ok;
            }
            if (left != nullptr) left->push_back(batch[j].key);
        }
    }
    return {};
}

// Block @d's copy is made (or it is dropped): its tier changes, its pin goes, the host limit holds.
Result<void> KvTiers::finish_leave(Stream& stream, const Resident& d, std::vector<std::uint64_t>* spilled) {
    Entry& e = *d.e;
    if (opts_.drop) {
        set_tier(e, Tier::dropped);
        bytes_.dropped++;
    } else {
        set_tier(e, Tier::host);
        if (limited()) spill_order_.emplace(e.last_ref, e.seq, d.key);
        bytes_.demoted++;
    }
    if (auto ok = stream.unpin(e.block); !ok)
        return ok.error_info().within("lcp tiers: demote " + name(d.key));
    if (limited() && host_.in_use() > opts_.host_blocks) return spill(spilled);
    return {};
}

// The host tier over its limit: the copy referenced least recently (first seen on a tie) goes to disk.
Result<void> KvTiers::spill(std::vector<std::uint64_t>* spilled) {
    const auto first = spill_order_.begin();
    const std::uint64_t key = std::get<2>(*first);
    Entry& e = entries_.at(key);
    auto slot = disk_->put(e.host);
    if (!slot) return slot.error_info().within("lcp tiers: spill " + name(key));
    spill_order_.erase(first);
    host_.give(e.host);
    e.host = {};
    e.disk_slot = *slot;
    set_tier(e, Tier::disk);
    bytes_.spilled++;
    if (spilled != nullptr) spilled->push_back(key);
    return {};
}

Result<void> KvTiers::age(Stream& stream, std::uint32_t next, std::vector<std::uint64_t>& left,
                          std::vector<std::uint64_t>* spilled) {
    leaving_.clear();
    Result<void> size_error;
    for (const Resident& d : device_) {
        if (!is_cold(*d.e, next)) continue;
        if (auto ok = sized(d); !ok) {  // it and the blocks after it stay where they are
            size_error = std::move(ok);
            break;
        }
        leaving_.push_back(d);
    }
    auto ok = leave(stream, leaving_, &left, spilled);
    // The hierarchy stays consistent whatever failed: the device keeps exactly its blocks, in order.
    std::erase_if(device_, [](const Resident& d) { return d.e->tier != Tier::device; });
    if (!ok) return ok;
    return size_error;
}

Result<void> KvTiers::demote(Stream& stream, std::uint64_t key, std::vector<std::uint64_t>* spilled) {
    const auto it = entries_.find(key);
    if (it == entries_.end() || it->second.tier != Tier::device)
        return bad("demote " + name(key) + ": not on the device");
    const Resident d{key, &it->second};
    if (auto ok = sized(d); !ok) return ok;
    auto ok = leave(stream, std::span(&d, 1), nullptr, spilled);
    std::erase_if(device_, [](const Resident& r) { return r.e->tier != Tier::device; });
    return ok;
}

Result<void> KvTiers::sized(const Resident& d) const {
    if (d.e->block.view.size() == block_bytes_) return {};
    return bad("demote " + name(d.key) + ": " + std::to_string(d.e->block.view.size()) + " bytes, not " +
               std::to_string(block_bytes_));
}

std::span<const std::byte> KvTiers::stage(Entry& e, std::unordered_set<std::uint64_t>& area,
                                          std::uint64_t key) {
    if (area.insert(key).second) bytes_.fetched++;
    return copy_of(e);
}

void KvTiers::stage_window(std::uint32_t next) {
    for (std::uint32_t f = next >= window_ ? next - window_ + 1 : 0; f < next; f++)
        for (std::uint32_t r = 0; r < regions_; r++) {
            const std::uint64_t key = slot_keys_.at(std::size_t{f} * regions_ + r);
            Entry& e = entries_.at(key);
            if (e.tier == Tier::host || e.tier == Tier::disk)
                dma_.queue(staging_, stage(e, window_staged_, key));
        }
}

std::span<const std::byte> KvTiers::fetch_prefill(std::uint64_t key) {
    const auto it = entries_.find(key);
    if (it == entries_.end() || it->second.tier == Tier::dropped) return {};
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

Result<std::span<const std::byte>> KvTiers::fetch(std::uint64_t key) {
    const auto it = entries_.find(key);
    if (it == entries_.end())
        return Error{std::errc::no_such_file_or_directory, "lcp tiers: fetch " + name(key) + ": unknown"};
    Entry& e = it->second;
    if (e.tier == Tier::device) return std::span<const std::byte>(e.block.view);
    if (e.tier == Tier::dropped)
        return Error{std::errc::no_message_available,
                     "lcp tiers: fetch " + name(key) + ": dropped, nothing to fetch"};
    const auto bytes = stage(e, staged_, key);
    dma_.queue(staging_, bytes);  // run when the read ends: its copies in one kick
    return bytes;
}

void KvTiers::end_read() {
    dma_.run();
    std::size_t n = 0;
    for (const std::uint64_t k : staged_) n += window_staged_.count(k) == 0;
    stage_peak_ = std::max(stage_peak_, n);
    staged_.clear();
}

void KvTiers::account(std::uint64_t meta_bytes) {
    end_read();
    const std::uint64_t dev =
        (device_.size() + window_staged_.size() + stage_peak_) * block_bytes_ + meta_bytes;
    const std::uint64_t host = host_blocks() * block_bytes_;
    const std::uint64_t disk = disk_blocks() * block_bytes_;
    bytes_.device_peak = std::max(bytes_.device_peak, dev);
    bytes_.host_peak = std::max(bytes_.host_peak, host);
    bytes_.disk_peak = std::max(bytes_.disk_peak, disk);
    bytes_.total_peak = std::max(bytes_.total_peak, dev + host + disk);
    bytes_.device_series.push_back(dev);
    bytes_.fetched_series.push_back(bytes_.fetched - fetched_before_);
    fetched_before_ = bytes_.fetched;
    stage_peak_ = 0;
    window_staged_.clear();
}

}  // namespace vrex::lcp
