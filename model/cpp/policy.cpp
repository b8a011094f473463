#include "vrex/lcp/policy.hpp"

#include <algorithm>
#include <bit>
#include <string>
#include <system_error>

namespace vrex::lcp {

namespace {

std::uint64_t key_of(const KvBlock& b) {
    return block_key(b);
}

// The FCC fingerprint's bits 0..31 are motion against the previous frame (thermometer codes), the
// other 96 a SimHash of the frame's appearance (docs/hw/fcc.md). A view that comes back after a cut
// arrives with the cut's motion, so a recall compares appearance only.
std::uint32_t appearance_distance(const Fingerprint& a, const Fingerprint& b) {
    return static_cast<std::uint32_t>(std::popcount((a.w[0] ^ b.w[0]) >> 32) +
                                      std::popcount(a.w[1] ^ b.w[1]));
}

Error bad(std::string what) {
    return {std::errc::invalid_argument, "lcp policy: " + std::move(what)};
}

}  // namespace

Result<ReusePolicy> ReusePolicy::create(const ReuseOptions& o, std::uint32_t regions) {
    if (regions == 0) return bad("a frame needs at least one region");
    if (o.radius > 31) return bad("radius " + std::to_string(o.radius) + " is not in 0..31");
    if (o.guard_bits > kKeyHashBits)
        return bad("guard_bits " + std::to_string(o.guard_bits) + " is not in 0..32");
    if (o.recall_radius > kAppearanceBits)
        return bad("recall_radius " + std::to_string(o.recall_radius) + " is not in 0..96");
    if (o.recall_guard_bits > kKeyHashBits)
        return bad("recall_guard_bits " + std::to_string(o.recall_guard_bits) + " is not in 0..32");
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
        if (similar) queries_.push_back(Query::similar(r, fp, opts_.radius, Scope::stream, true));
    }
    return queries_;
}

Result<FrameChoice> ReusePolicy::choose(Stream& stream, const Fingerprint& fp,
                                        std::span<const std::uint32_t> key_hashes, std::uint32_t frame) {
    if (key_hashes.size() != regions_)
        return bad(std::to_string(key_hashes.size()) + " key hashes for " + std::to_string(regions_) +
                   " regions");
    auto got = stream.retrieve_batch(queries(fp));
    if (!got) return got.error_info().within("lcp policy: candidates of frame " + std::to_string(frame));
    return decide(*got, fp, key_hashes, frame);
}

Result<FrameChoice> ReusePolicy::decide(std::span<const Retrieval> got, const Fingerprint& fp,
                                        std::span<const std::uint32_t> key_hashes, std::uint32_t frame) {
    if (key_hashes.size() != regions_)
        return bad(std::to_string(key_hashes.size()) + " key hashes for " + std::to_string(regions_) +
                   " regions");
    const bool similar = opts_.similar && opts_.fcc;
    const std::size_t per = similar ? 2 : 1;
    last_fp_ = fp;
    std::fill(recalled_.begin(), recalled_.end(), std::nullopt);
    if (got.size() != std::size_t{regions_} * per)
        return bad(std::to_string(got.size()) + " retrievals for " + std::to_string(regions_ * per) +
                   " queries");
    FrameChoice out(regions_);
    for (std::uint32_t r = 0; r < regions_; r++) {
        const Retrieval& tmp = got[r * per];
        const Retrieval* cands[2] = {nullptr, nullptr};
        if (tmp.hit && (!opts_.fcc || fp.distance(tmp.fp) <= opts_.radius)) cands[0] = &tmp;
        if (similar) {
            const Retrieval& sim = got[r * per + 1];
            if (sim.hit && (cands[0] == nullptr || sim.block.id != tmp.block.id)) cands[1] = &sim;
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
        if (!out[r] && opts_.recall) {
            recalled_[r] = lookup(r, fp, key_hashes[r], frame);
            if (recalled_[r]) counters_.recalled++;
        }
    }
    return out;
}

std::optional<Recalled> ReusePolicy::lookup(std::uint32_t region, const Fingerprint& fp, std::uint32_t hash,
                                            std::uint32_t frame) const {
    // Past the age cap only: younger blocks are the device's candidates, which the guard has judged.
    std::optional<Recalled> best;
    for (const Indexed& e : index_[region]) {
        if (frame - e.frame <= opts_.max_age) continue;
        const auto hd = static_cast<std::uint32_t>(std::popcount(e.hash ^ hash));
        if (hd > opts_.recall_guard_bits) continue;
        const std::uint32_t fd = appearance_distance(fp, e.fp);
        if (fd > opts_.recall_radius) continue;
        // Closest hash, then closest fingerprint, then the newest (entries are in frame order).
        if (!best || hd < best->hash_distance || (hd == best->hash_distance && fd <= best->fp_distance))
            best = Recalled{static_cast<std::uint32_t>(e.key >> 32), static_cast<std::uint32_t>(e.key),
                            e.frame, hd, fd};
    }
    return best;
}

std::size_t ReusePolicy::index_size() const noexcept {
    std::size_t n = 0;
    for (const auto& v : index_) n += v.size();
    return n;
}

Result<void> ReusePolicy::installed(std::span<const KvBlock> blocks, std::span<const std::uint64_t> sources,
                                    std::uint32_t frame) {
    if (blocks.size() != sources.size())
        return bad(std::to_string(blocks.size()) + " installed blocks but " + std::to_string(sources.size()) +
                   " sources");
    for (std::size_t i = 0; i < blocks.size(); i++) {
        std::optional<std::uint32_t> hash;
        if (const auto it = born_.find(sources[i]); it != born_.end()) hash = it->second.hash;
        for (std::size_t r = 0; !hash && r < index_.size(); r++)
            for (const Indexed& e : index_[r])
                if (e.key == sources[i]) {
                    hash = e.hash;
                    break;
                }
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
    for (auto& v : index_)
        std::erase_if(
            v, [&](const Indexed& e) { return std::find(keys.begin(), keys.end(), e.key) != keys.end(); });
}

void ReusePolicy::forget_old(std::uint32_t frame) {
    // Entries past the age cap can never pass the guard again.
    if (opts_.max_age == 0 || born_.size() <= std::size_t{4} * regions_ * (opts_.max_age + 2)) return;
    std::erase_if(born_, [&](const auto& kv) { return frame - kv.second.frame > opts_.max_age; });
}

Result<void> ReusePolicy::computed(std::span<const KvBlock> blocks, std::span<const std::uint32_t> key_hashes,
                                   std::uint32_t frame) {
    if (blocks.size() != key_hashes.size())
        return bad(std::to_string(blocks.size()) + " computed blocks but " +
                   std::to_string(key_hashes.size()) + " key hashes");
    for (std::size_t i = 0; i < blocks.size(); i++) {
        born_[key_of(blocks[i])] = Born{key_hashes[i], frame};
        if (opts_.recall) {
            const std::uint32_t r = blocks[i].region;
            if (r >= regions_) return bad("computed block of region " + std::to_string(r));
            index_[r].push_back(Indexed{key_of(blocks[i]), last_fp_, key_hashes[i], frame});
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
