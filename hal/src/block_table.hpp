// The HAL's policy layer over the device's blocks: generations and references. The device (lib/)
// owns SHIE entries and block ids and releases a block when its owner stream removes it, ages it out
// or closes; it knows nothing of other streams reading the block's memory. This table decides when
// the memory may go back to the allocator: when nothing references it any more.
//
// References of one record: the owner's (while the device holds the block), one per stream holding
// it for the current frame (a retrieval or reuse of another stream's block), and one per pin.
// Guarded by KvAllocator::mu_.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace vrex {

struct BlockRec {
    std::uint32_t id = 0;
    std::uint32_t gen = 0;
    std::uint32_t handle = 0;
    std::uint64_t offset = 0;
    std::uint32_t bank = 0;
    std::uint32_t owner = 0;  // device stream id of the owner
    bool device_live = true;  // the device still holds the block (its SHIE entries may hit)
    std::uint32_t holds = 0;  // streams other than the owner referencing it for their frame
    std::uint32_t pins = 0;
    std::uint32_t foreign_pins = 0;  // of @pins, those of streams other than the owner
    std::uint64_t last_use = 0;      // allocator-wide tick of the last allocate/hit/reuse (LRU)
    std::uint32_t use_frame = 0;     // owner's frame of the last use by the owner
    std::uint32_t first_token = 0;   // position metadata (Stream::set_positions)
    std::uint32_t token_count = 0;
    // A segment block (segment_ops.hpp): the segment's reference instead of the device's. Never
    // device_live, so neither aging nor lru_victim() nor the owner's stream_destroy touches it.
    bool segment = false;
    bool imported = false;  // in engine-owned memory (Stream::index_imported): never freed by vrex

    std::uint32_t refs() const noexcept { return (device_live || segment ? 1u : 0u) + holds + pins; }
    // Writable only for the owner while the device (or its segment) holds it and no other stream
    // references it.
    bool writable_by(std::uint32_t stream) const noexcept {
        return stream == owner && (device_live || segment) && !holds && !foreign_pins;
    }
};

class BlockTable {
  public:
    static std::uint64_t key(std::uint32_t id, std::uint32_t gen) noexcept {
        return (std::uint64_t{gen} << 32) | id;
    }

    // A new incarnation of device block @id.
    BlockRec& add(std::uint32_t id, std::uint32_t handle, std::uint64_t offset, std::uint32_t bank,
                  std::uint32_t owner) {
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
        r.last_use = ++tick_;
        return recs_[key(id, g)] = r;
    }

    BlockRec* find(std::uint32_t id, std::uint32_t gen) {
        auto it = recs_.find(key(id, gen));
        return it == recs_.end() ? nullptr : &it->second;
    }
    BlockRec* find(std::uint64_t k) {
        auto it = recs_.find(k);
        return it == recs_.end() ? nullptr : &it->second;
    }

    // The incarnation of @id the device currently holds.
    BlockRec* live(std::uint32_t id) {
        auto g = gen_.find(id);
        if (g == gen_.end()) return nullptr;
        BlockRec* r = find(id, g->second);
        return r && r->device_live ? r : nullptr;
    }

    void touch(BlockRec& r, std::uint32_t stream, std::uint32_t frame) {
        r.last_use = ++tick_;
        if (stream == r.owner) r.use_frame = frame;
    }

    void erase(const BlockRec& r) { recs_.erase(key(r.id, r.gen)); }

    // LRU victim for pressure eviction among @stream's device-held blocks that only the owner
    // references and that were not used in @frame.
    std::optional<std::uint32_t> lru_victim(std::uint32_t stream, std::uint32_t frame) const {
        const BlockRec* best = nullptr;
        for (const auto& [k, r] : recs_)
            // Imported blocks free no vrex memory: evicting them would only drop the engine's index.
            if (r.owner == stream && r.device_live && !r.holds && !r.pins && r.use_frame != frame && !r.imported &&
                (!best || r.last_use < best->last_use))
                best = &r;
        return best ? std::optional<std::uint32_t>(best->id) : std::nullopt;
    }

    std::uint32_t owned_live(std::uint32_t stream) const {
        std::uint32_t n = 0;
        for (const auto& [k, r] : recs_) n += r.owner == stream && r.device_live;
        return n;
    }

    template <class F>
    void for_each(F&& f) {
        for (auto& [k, r] : recs_) f(r);
    }

    std::size_t size() const noexcept { return recs_.size(); }

  private:
    std::unordered_map<std::uint64_t, BlockRec> recs_;
    std::unordered_map<std::uint32_t, std::uint32_t> gen_;  // device id -> newest generation
    std::uint64_t tick_ = 0;
};

}  // namespace vrex
