// The HAL's policy layer over the device's blocks: incarnations, publication and references. The
// device (lib/) owns SHIE entries and block ids and releases a block when its owner stream removes
// it, ages it out or closes; it knows nothing of other streams reading the block's memory. This
// table decides when the memory may go back to the allocator: when nothing references it any more.
//
// Identity (docs/hal.md "Concurrency and publication"): the device recycles block ids and stream
// ids, so neither names anything for long. A record is one incarnation: (id, generation), owned by
// one Stream incarnation (owner_token, never reused), born at a table-wide sequence number. What
// the device reports (a lookup hit, a release record) is matched to a record by id AND the memory
// it points at AND, for hits, a birth before the lookup started, so a recycled id is never taken
// for its predecessor. Devices of uAPI 1.3 also name the incarnation itself (block_gen, never
// reused) and the BO (bo_gen): a report carrying them is matched by them, and an ALIAS insert
// (Stream::reuse) names the block_gen so the device refuses a successor.
//
// References of one record: the owner's (while the device holds the block), one per stream holding
// it for the current frame (a retrieval or reuse of another stream's block), and one per pin.
// Guarded by KvAllocator::Impl::mu.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vrex {

struct BlockRec {
    std::uint32_t id = 0;
    std::uint32_t gen = 0;
    std::uint32_t handle = 0;
    std::uint64_t offset = 0;
    std::uint32_t bank = 0;
    std::uint32_t owner = 0;        // device stream id of the owner (messages; recycled by the device)
    std::uint64_t owner_token = 0;  // the owner Stream's incarnation (never reused)
    std::uint64_t born = 0;         // table-wide sequence number of the record's creation
    bool device_live = true;        // the device still holds the block (its SHIE entries may hit)
    // The owner committed the block's KV (Stream::publish): from then on it is read-only for every
    // stream and visible to the others; before, only its owner sees it.
    bool published = false;
    std::uint32_t holds = 0;  // streams other than the owner referencing it for their frame
    std::uint32_t pins = 0;
    std::uint32_t foreign_pins = 0;  // of @pins, those of streams other than the owner
    std::uint64_t last_use = 0;      // table-wide tick of the last allocate/hit/reuse (LRU)
    std::uint32_t use_frame = 0;     // owner's frame of the last use by the owner
    std::uint32_t first_token = 0;   // position metadata (Stream::set_positions)
    std::uint32_t token_count = 0;
    // A segment block (segment_ops.hpp): the segment's reference instead of the device's. Never
    // device_live, so neither aging nor lru_victim() nor the owner's stream_destroy touches it.
    bool segment = false;
    bool imported = false;  // in engine-owned memory (Stream::index_imported): never freed by vrex
    // The device's names for this incarnation (uAPI 1.3 block_gen, 1.2 bo_gen): 0 when the device
    // did not report them (an older vrex.ko).
    std::uint64_t device_gen = 0;
    std::uint64_t bo_gen = 0;

    std::uint32_t refs() const noexcept { return (device_live || segment ? 1u : 0u) + holds + pins; }
    // Writable only for the owner while the device (or its segment) holds it, it is not published
    // and no other stream references it.
    bool writable_by(std::uint64_t token) const noexcept {
        return token == owner_token && (device_live || segment) && !published && !holds && !foreign_pins;
    }
    // Other streams see a frame block only once its owner published it. Segment blocks have no SHIE
    // entry (no lookup finds them) and follow the segment's own contract (pin and export by others).
    bool visible_to(std::uint64_t token) const noexcept {
        return token == owner_token || published || segment;
    }
};

class BlockTable {
  public:
    static std::uint64_t key(std::uint32_t id, std::uint32_t gen) noexcept {
        return (std::uint64_t{gen} << 32) | id;
    }

    // A new incarnation of block @id (device id, or a segment id when @segment).
    BlockRec& add(std::uint32_t id, std::uint32_t handle, std::uint64_t offset, std::uint32_t bank,
                  std::uint32_t owner, std::uint64_t owner_token, bool segment = false) {
        std::uint32_t& g = gen_[id];
        if (++g == 0)  // generation 0 is never valid
            g = 1;
        BlockRec r;
        r.id = id;
        r.gen = g;
        r.handle = handle;
        r.offset = offset;
        r.bank = bank;
        r.owner = owner;
        r.owner_token = owner_token;
        r.born = ++births_;
        r.last_use = ++tick_;
        r.device_live = !segment;
        r.segment = segment;
        BlockRec& out = recs_[key(id, g)] = r;
        by_id_[id].push_back(g);
        slots_[slot_key(handle, offset)]++;
        if (out.device_live) lru_[owner_token].emplace(out.last_use, key(id, g));
        return out;
    }

    BlockRec* find(std::uint32_t id, std::uint32_t gen) { return find(key(id, gen)); }
    BlockRec* find(std::uint64_t k) {
        auto it = recs_.find(k);
        return it == recs_.end() ? nullptr : &it->second;
    }

    // The record the device means by block @id at (@handle, @offset): an incarnation the device
    // holds. A recycled id sits elsewhere while its predecessor's slot is still accounted for, so
    // the memory tells the incarnations apart. A report that names the device's generations
    // (@device_gen, @bo_gen non-zero) is matched by them instead: the block_gen is the incarnation
    // itself (the handle may read 0 once it no longer names the BO), and a report with another BO
    // generation than the record's is stale, never this block's.
    BlockRec* on_device(std::uint32_t id, std::uint32_t handle, std::uint64_t offset,
                        std::uint64_t device_gen = 0, std::uint64_t bo_gen = 0) {
        auto g = by_id_.find(id);
        if (g == by_id_.end()) return nullptr;
        for (std::uint32_t gen : g->second) {
            BlockRec* r = find(id, gen);
            if (!r || !r->device_live) continue;
            if (bo_gen && r->bo_gen && bo_gen != r->bo_gen) continue;
            if (device_gen && r->device_gen) {
                if (device_gen == r->device_gen) return r;
                continue;
            }
            if (r->handle == handle && r->offset == offset) return r;
        }
        return nullptr;
    }

    // Birth sequence number of the newest record: a lookup that starts after reading it can only
    // have found records born at or before it, or incarnations the table does not know yet.
    std::uint64_t births() const noexcept { return births_; }

    void touch(BlockRec& r, std::uint64_t token, std::uint32_t frame) {
        if (r.device_live) {
            auto& lru = lru_[r.owner_token];
            lru.erase({r.last_use, key(r.id, r.gen)});
            r.last_use = ++tick_;
            lru.emplace(r.last_use, key(r.id, r.gen));
        } else {
            r.last_use = ++tick_;
        }
        if (token == r.owner_token) r.use_frame = frame;
    }

    // The device no longer holds @r (released, or its stream closed).
    void set_dead(BlockRec& r) {
        if (!r.device_live) return;
        r.device_live = false;
        drop_lru(r);
    }

    void erase(const BlockRec& r) {
        const std::uint64_t k = key(r.id, r.gen);
        if (r.device_live) drop_lru(r);
        if (auto g = by_id_.find(r.id); g != by_id_.end()) {
            std::erase(g->second, r.gen);
            if (g->second.empty()) by_id_.erase(g);
        }
        if (auto s = slots_.find(slot_key(r.handle, r.offset)); s != slots_.end() && --s->second == 0)
            slots_.erase(s);
        recs_.erase(k);
    }

    // Does a record sit at (@handle, @offset)?
    bool slot_taken(std::uint32_t handle, std::uint64_t offset) const {
        return slots_.contains(slot_key(handle, offset));
    }

    // LRU victim for pressure eviction among the device-held blocks of the stream incarnation
    // @token that only the owner references and that were not used in @frame: the oldest eligible
    // one of the stream's own use-ordered set (never a scan of other streams' records).
    std::optional<std::uint32_t> lru_victim(std::uint64_t token, std::uint32_t frame) const {
        auto l = lru_.find(token);
        if (l == lru_.end()) return std::nullopt;
        for (const auto& [use, k] : l->second) {
            const BlockRec& r = recs_.at(k);
            // Imported blocks free no vrex memory: evicting them would only drop the engine's index.
            if (!r.holds && !r.pins && r.use_frame != frame && !r.imported) return r.id;
        }
        return std::nullopt;
    }

    // Device-held blocks of the stream incarnation @token.
    std::uint32_t owned_live(std::uint64_t token) const {
        auto l = lru_.find(token);
        return l == lru_.end() ? 0u : static_cast<std::uint32_t>(l->second.size());
    }
    std::vector<std::uint64_t> owned_live_keys(std::uint64_t token) const {
        std::vector<std::uint64_t> out;
        if (auto l = lru_.find(token); l != lru_.end())
            for (const auto& [use, k] : l->second) out.push_back(k);
        return out;
    }

    std::size_t size() const noexcept { return recs_.size(); }

  private:
    static std::pair<std::uint32_t, std::uint64_t> slot_key(std::uint32_t handle, std::uint64_t offset) {
        return {handle, offset};
    }
    struct SlotHash {
        std::size_t operator()(const std::pair<std::uint32_t, std::uint64_t>& s) const noexcept {
            return std::hash<std::uint64_t>{}(s.second * 0x9e3779b97f4a7c15ull ^ s.first);
        }
    };
    void drop_lru(const BlockRec& r) {
        auto l = lru_.find(r.owner_token);
        if (l == lru_.end()) return;
        l->second.erase({r.last_use, key(r.id, r.gen)});
        if (l->second.empty()) lru_.erase(l);
    }

    std::unordered_map<std::uint64_t, BlockRec> recs_;
    std::unordered_map<std::uint32_t, std::uint32_t> gen_;                 // id -> newest generation
    std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> by_id_;  // id -> generations present
    std::unordered_map<std::pair<std::uint32_t, std::uint64_t>, std::uint32_t, SlotHash> slots_;
    // Device-held records per owner incarnation, by last use (pressure eviction, owned_live).
    std::unordered_map<std::uint64_t, std::set<std::pair<std::uint64_t, std::uint64_t>>> lru_;
    std::uint64_t tick_ = 0;
    std::uint64_t births_ = 0;
};

}  // namespace vrex
