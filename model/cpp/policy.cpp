#include "vrex/lcp/policy.hpp"

#include <algorithm>
#include <bit>
#include <string>
#include <system_error>

#include "host_memory.hpp"

namespace vrex::lcp {

namespace {

std::uint64_t key_of(const KvBlock& b) {
    return block_key(b);
}

// The FCC fingerprint's bits 0..31 are motion against the previous frame (thermometer codes), the
// other 96 a SimHash of the frame's appearance (docs/hw/fcc.md). A view that comes back after a cut
// arrives with the cut's motion, so host-tier entries and recall lookups carry appearance only.
Fingerprint appearance(const Fingerprint& fp) {
    Fingerprint a = fp;
    a.w[0] &= ~std::uint64_t{0xffff'ffff};
    return a;
}

// Without a host tier, recall reaches only blocks the device still indexes: no cold block outlives
// the device's longest zombie rule (255 frames, lib/vrex_model.h) by much, so older records go.
constexpr std::uint32_t kDeviceReach = 256;

Error bad(std::string what) {
    return {std::errc::invalid_argument, "lcp policy: " + std::move(what)};
}

}  // namespace

Result<ReusePolicy> ReusePolicy::create(const ReuseOptions& o, std::uint32_t regions) {
    if (regions == 0) return bad("a frame needs at least one region");
    if (o.radius > 31) return bad("radius " + std::to_string(o.radius) + " is not in 0..31");
    if (o.guard_bits > kKeyHashBits)
        return bad("guard_bits " + std::to_string(o.guard_bits) + " is not in 0..32");
    if (o.recall_radius > 31)
        return bad("recall_radius " + std::to_string(o.recall_radius) +
                   " is not in 0..31 (a recall is a SHIE similarity lookup)");
    if (o.recall_guard_bits > kKeyHashBits)
        return bad("recall_guard_bits " + std::to_string(o.recall_guard_bits) + " is not in 0..32");
    if (o.motion_gate && *o.motion_gate > 255)
        return bad("motion_gate " + std::to_string(*o.motion_gate) + " is not in 0..255 (1/16 grid px)");
    if (o.recall_candidates == 0 || o.recall_candidates > kMaxCandidates)
        return bad("recall_candidates " + std::to_string(o.recall_candidates) + " is not in 1.." +
                   std::to_string(kMaxCandidates) + " (the SHIE's cap)");
    return ReusePolicy(o, regions);
}

bool ReusePolicy::guard(const KvBlock& block, std::uint32_t hash, std::uint32_t frame) {
    const auto it = born_.find(key_of(block));
    if (it == born_.end()) {  // not computed under this policy: what it holds is unknown
        counters_.unknown++;
        return false;
    }
    if (opts_.max_age != 0 && frame - it->second.frame > opts_.max_age) {
        counters_.too_old++;
        return false;
    }
    // The hash is of what the block holds (taken when it was computed), so drift cannot accumulate
    // over a chain of reuses.
    if (static_cast<std::uint32_t>(std::popcount(it->second.hash ^ hash)) > opts_.guard_bits) {
        counters_.hash_far++;
        return false;
    }
    return true;
}

std::span<const Query> ReusePolicy::queries(const Fingerprint& fp) {
    const bool similar = opts_.similar && opts_.fcc;
    queries_.clear();
    for (std::uint32_t r = 0; r < regions_; r++) {
        queries_.push_back(Query::temporal(r, -1));
        if (similar)
            queries_.push_back(Query::similar(r, fp, opts_.radius, Scope::stream, true)
                                   .in_tier(tiered_on() ? Tier::device : Tier::any));
        // The recall walks its candidates in recall(); one candidate is the nearest-only lookup.
        if (recall_on())
            queries_.push_back(Query::similar(r, appearance(fp), opts_.recall_radius, Scope::stream, true)
                                   .in_tier(tiered_on() ? Tier::host : Tier::any)
                                   .nearest(recall_candidates() > 1 ? recall_candidates() : 0));
    }
    return queries_;
}

Result<FrameChoice> ReusePolicy::choose(Stream& stream, const Fingerprint& fp,
                                        std::span<const std::uint32_t> key_hashes, std::uint32_t frame,
                                        std::span<const std::uint8_t> region_motion) {
    if (key_hashes.size() != regions_)
        return bad(std::to_string(key_hashes.size()) + " key hashes for " + std::to_string(regions_) +
                   " regions");
    auto got = stream.retrieve_batch(queries(fp));
    if (!got && got.error() == std::errc::operation_not_supported && asks_hw_1_1()) {
        // A hardware 1.0 device refused the batch whole (the HAL's contract: nothing ran). Ask as
        // 1.0 allows from now on, rather than failing every frame.
        hw_1_0_ = true;
        got = stream.retrieve_batch(queries(fp));
    }
    if (!got) return got.error_info().within("lcp policy: candidates of frame " + std::to_string(frame));
    return decide(*got, fp, key_hashes, frame, region_motion);
}

Result<FrameChoice> ReusePolicy::decide(std::span<const Retrieval> got, const Fingerprint& fp,
                                        std::span<const std::uint32_t> key_hashes, std::uint32_t frame,
                                        std::span<const std::uint8_t> region_motion) {
    if (key_hashes.size() != regions_)
        return bad(std::to_string(key_hashes.size()) + " key hashes for " + std::to_string(regions_) +
                   " regions");
    const bool gate = gate_on();
    if (gate && region_motion.size() != regions_)
        return bad("the motion gate needs the frame's region motion (FrameInfo::region_motion): " +
                   std::to_string(region_motion.size()) + " values for " + std::to_string(regions_) +
                   " regions");
    const bool similar = opts_.similar && opts_.fcc;
    const std::size_t per = 1 + (similar ? 1 : 0) + (recall_on() ? 1 : 0);
    last_fp_ = fp;
    std::fill(recalled_.begin(), recalled_.end(), std::nullopt);
    if (got.size() != std::size_t{regions_} * per)
        return bad(std::to_string(got.size()) + " retrievals for " + std::to_string(regions_ * per) +
                   " queries");
    if (hw_1_0_) counters_.hw_1_0_frames++;
    FrameChoice out(regions_);
    for (std::uint32_t r = 0; r < regions_; r++) {
        const Retrieval& tmp = got[r * per];
        const Retrieval* cands[2] = {nullptr, nullptr};
        if (tmp.hit && (!opts_.fcc || fp.distance(tmp.fp) <= opts_.radius)) cands[0] = &tmp;
        if (similar) {
            const Retrieval& sim = got[r * per + 1];
            if (sim.hit && (cands[0] == nullptr || sim.block.id != tmp.block.id)) cands[1] = &sim;
        }
        if (gate && region_motion[r] > *opts_.motion_gate && (cands[0] != nullptr || cands[1] != nullptr)) {
            counters_.gated++;
            cands[0] = cands[1] = nullptr;
        }
        for (const Retrieval* c : cands) {
            if (c == nullptr) continue;
            counters_.candidates++;
            if (guard(c->block, key_hashes[r], frame)) {
                out[r] = c->block;
                counters_.reused++;
                break;
            }
        }
        if (!out[r] && recall_on()) {
            recalled_[r] = recall(got[r * per + per - 1], key_hashes[r], frame);
            if (recalled_[r]) counters_.recalled++;
        }
    }
    return out;
}

std::optional<Recalled> ReusePolicy::recall(const Retrieval& got, std::uint32_t hash, std::uint32_t frame) {
    if (got.candidates.empty()) return recall_one(got, hash, frame);
    // Nearest first: the first entry the age rule and the recall guard accept.
    for (std::size_t i = 0; i < got.candidates.size(); i++) {
        if (auto r = recall_one(got.candidates[i], hash, frame)) {
            if (i) counters_.recalled_past_nearest++;
            return r;
        }
    }
    return std::nullopt;
}

std::optional<Recalled> ReusePolicy::recall_one(const Retrieval& got, std::uint32_t hash,
                                                std::uint32_t frame) const {
    if (!got.hit) return std::nullopt;
    std::uint64_t source = block_key(got.block);
    if (const auto h = hosted_.find(source); h != hosted_.end()) source = h->second;
    const auto it = recallable_.find(source);
    if (it == recallable_.end()) return std::nullopt;  // forgotten, or never computed here
    const Computed& c = it->second;
    // Past the age cap only: younger blocks are the device's candidates, which the guard has judged.
    if (frame - c.frame <= opts_.max_age) return std::nullopt;
    const auto hd = static_cast<std::uint32_t>(std::popcount(c.hash ^ hash));
    if (hd > opts_.recall_guard_bits) return std::nullopt;
    return Recalled{static_cast<std::uint32_t>(source >> 32), static_cast<std::uint32_t>(source), c.frame, hd,
                    got.distance};
}

Result<void> ReusePolicy::installed(std::span<const KvBlock> blocks, std::span<const std::uint64_t> sources,
                                    std::uint32_t frame) {
    if (blocks.size() != sources.size())
        return bad(std::to_string(blocks.size()) + " installed blocks but " + std::to_string(sources.size()) +
                   " sources");
    for (std::size_t i = 0; i < blocks.size(); i++) {
        std::optional<std::uint32_t> hash;
        if (const auto it = born_.find(sources[i]); it != born_.end())
            hash = it->second.hash;
        else if (const auto rc = recallable_.find(sources[i]); rc != recallable_.end())
            hash = rc->second.hash;
        if (!hash)
            return Error{std::errc::no_such_file_or_directory,
                         "lcp policy: installed from block " + std::to_string(sources[i] >> 32) + "/" +
                             std::to_string(sources[i] & 0xffffffffu) + ", which it never saw computed"};
        born_[key_of(blocks[i])] = Born{*hash, frame};
        counters_.installed++;
    }
    return {};
}

void ReusePolicy::forget(std::span<const std::uint64_t> keys) {
    // A host-tier copy of a forgotten block may still be found until its slot is reused: recall()
    // then knows no source for it.
    for (std::uint64_t k : keys) recallable_.erase(k);
}

void ReusePolicy::forget_old(std::uint32_t frame) {
    if (!host_mem_ && frame > opts_.max_age + kDeviceReach)
        std::erase_if(recallable_,
                      [&](const auto& kv) { return frame - kv.second.frame > opts_.max_age + kDeviceReach; });
    // Entries past the age cap can never pass the guard again.
    if (opts_.max_age == 0 || born_.size() <= std::size_t{4} * regions_ * (opts_.max_age + 2)) return;
    std::erase_if(born_, [&](const auto& kv) { return frame - kv.second.frame > opts_.max_age; });
}

Result<void> ReusePolicy::attach_host_tier(KvAllocator& alloc, std::uint32_t slots) {
    if (!recall_on()) return bad("a host tier serves recall, which is off (recall needs fcc)");
    if (slots == 0) return bad("a host tier needs at least one slot");
    if (host_mem_) return bad("a host tier is attached already");
    const std::uint64_t bytes = alloc.block_bytes();
    auto fd = host_tier_dmabuf(std::uint64_t{slots} * bytes);
    if (!fd) return fd.error_info().within("lcp policy: host tier of " + std::to_string(slots) + " blocks");
    auto mem = alloc.import_memory(fd->get());
    if (!mem) return mem.error_info().within("lcp policy: import the host tier");
    host_mem_ = std::move(*mem);
    slot_bytes_ = bytes;
    slots_.assign(slots, Slot{});
    next_slot_ = 0;
    return {};
}

Result<KvBlock> ReusePolicy::demote(Stream& stream, std::uint64_t source, std::span<const std::byte> bytes) {
    const auto name = [&] {
        return "block " + std::to_string(source >> 32) + "/" + std::to_string(source & 0xffff'ffffu);
    };
    if (!host_mem_) return bad("demote " + name() + ": no host tier (attach_host_tier)");
    const auto it = recallable_.find(source);
    if (it == recallable_.end())
        return Error{std::errc::no_such_file_or_directory,
                     "lcp policy: demote " + name() + ", which it did not see computed (or forgot)"};
    const std::uint64_t block_bytes = slot_bytes_;
    const std::uint32_t slot = next_slot_;
    const std::uint64_t offset = std::uint64_t{slot} * block_bytes;
    if (bytes.size() != block_bytes || offset + block_bytes > host_mem_->host_view().size())
        return bad("demote " + name() + ": " + std::to_string(bytes.size()) + " bytes for a " +
                   std::to_string(block_bytes) + "-byte slot");
    // The slot's previous block: forgotten here, its entry retired by index_host_tier before the
    // new one goes in (no lookup runs in between: a policy and its stream are used by one thread).
    Slot& s = slots_[slot];
    if (s.used) {
        hosted_.erase(s.host);
        recallable_.erase(s.source);
        s.used = false;
    }
    const Computed c = it->second;
    std::span<std::byte> dst = host_mem_->host_view().subspan(offset, block_bytes);
    std::copy(bytes.begin(), bytes.end(), dst.begin());
    auto host = stream.index_host_tier(*host_mem_, offset, c.region, c.frame, c.fp);
    if (!host)
        return host.error_info().within("lcp policy: demote " + name() + " to host-tier slot " +
                                        std::to_string(slot));
    s = Slot{true, source, block_key(*host)};
    hosted_[s.host] = source;
    next_slot_ = (slot + 1) % static_cast<std::uint32_t>(slots_.size());
    return host;
}

Result<void> ReusePolicy::computed(std::span<const KvBlock> blocks, std::span<const std::uint32_t> key_hashes,
                                   std::uint32_t frame) {
    if (blocks.size() != key_hashes.size())
        return bad(std::to_string(blocks.size()) + " computed blocks but " +
                   std::to_string(key_hashes.size()) + " key hashes");
    for (std::size_t i = 0; i < blocks.size(); i++) {
        born_[key_of(blocks[i])] = Born{key_hashes[i], frame};
        if (recall_on()) {
            const std::uint32_t r = blocks[i].region;
            if (r >= regions_) return bad("computed block of region " + std::to_string(r));
            recallable_[key_of(blocks[i])] = Computed{key_hashes[i], frame, r, appearance(last_fp_)};
        }
    }
    forget_old(frame);
    return {};
}

Result<FrameBlocks> apply_choice(Stream& stream, std::span<const std::optional<KvBlock>> choice) {
    FrameBlocks f;
    f.blocks.resize(choice.size());
    for (std::uint32_t r = 0; r < choice.size(); r++) {
        if (!choice[r]) {
            f.fresh.push_back(r);
            continue;
        }
        if (auto ok = stream.reuse(r, *choice[r]); !ok)
            return ok.error_info().within("lcp: alias region " + std::to_string(r));
        f.blocks[r] = *choice[r];
    }
    if (!f.fresh.empty()) {
        auto got = stream.allocate_batch(f.fresh);
        if (!got)
            return got.error_info().within("lcp: allocate " + std::to_string(f.fresh.size()) + " regions");
        f.fresh_blocks = std::move(*got);
    }
    for (std::size_t i = 0; i < f.fresh.size(); i++) {
        const KvBlock& b = f.fresh_blocks[i];
        if (auto ok = stream.pin(b); !ok)
            return ok.error_info().within("lcp: pin the block of region " + std::to_string(f.fresh[i]));
        f.blocks[f.fresh[i]] = b;
    }
    return f;
}

Result<void> unpin_all(Stream& stream, std::span<const KvBlock> blocks) {
    for (const KvBlock& b : blocks)
        if (auto ok = stream.unpin(b); !ok) return ok.error_info().within("lcp: unpin at close");
    return {};
}

}  // namespace vrex::lcp
