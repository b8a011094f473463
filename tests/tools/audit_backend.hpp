// A Backend decorator for tests: forwards every call to a real backend and audits the KV block
// lifecycle it sees — which block ids are live (made by a plain insert), which were released by a
// retire — and counts lookups that return a released block (the hardware promises none). It also
// checks the temporal window: with window_frames set, a block released at the end of frame F must
// not be referenced (made or aliased) by any frame F - window_frames + 1 .. F of any stream.
// Frames are counted per stream from frame_submit; the pipeline advances all streams together.
#pragma once

#include <map>
#include <set>

#include "forwarding_backend.hpp"

namespace vrex::test {

class AuditBackend final : public ForwardingBackend {
  public:
    using ForwardingBackend::ForwardingBackend;

    std::uint64_t lookup_hits = 0;
    std::uint64_t hits_on_released = 0;  // must stay 0
    std::uint64_t hits_on_unknown = 0;   // a block this file never made: must stay 0
    std::uint64_t releases = 0;
    std::set<std::uint32_t> live;
    std::set<std::uint32_t> released;
    std::uint32_t window_frames = 0;                 // 0: no window check
    std::uint64_t released_in_window = 0;            // must stay 0
    std::map<std::uint32_t, std::int64_t> frame;     // stream -> current frame number
    std::map<std::uint32_t, std::int64_t> last_ref;  // live block -> newest referencing frame

    std::error_code frame_submit(drm_vrex_frame_submit& a) override {
        const std::error_code ec = in_->frame_submit(a);
        if (!ec) frame[a.stream] = a.frame;
        return ec;
    }

    std::error_code shie_insert(std::uint32_t stream, std::span<drm_vrex_shie_insert_item> items) override {
        const std::error_code ec = in_->shie_insert(stream, items);
        if (ec) return ec;
        for (const auto& it : items) {
            if (it.result) continue;
            std::int64_t& ref = last_ref[it.block];
            ref = std::max(ref, frame[stream] + it.frame_offset);
            if (it.flags & DRM_VREX_INSERT_ALIAS) continue;
            live.insert(it.block);
            released.erase(it.block);  // a block id is reused only after its release was seen
        }
        return ec;
    }

    std::error_code shie_lookup(std::uint32_t stream, std::span<drm_vrex_shie_lookup_item> items) override {
        const std::error_code ec = in_->shie_lookup(stream, items);
        if (ec) return ec;
        for (const auto& it : items) {
            if (!(it.hit_flags & DRM_VREX_HIT)) continue;
            lookup_hits++;
            hits_on_released += released.count(it.block);
            hits_on_unknown += !live.count(it.block);
        }
        return ec;
    }

    std::error_code shie_retire(std::uint32_t stream, std::span<const std::uint32_t> remove,
                                std::span<drm_vrex_released_block> out, std::uint32_t& count) override {
        const std::error_code ec = in_->shie_retire(stream, remove, out, count);
        if (ec) return ec;
        for (std::uint32_t i = 0; i < count; i++) {
            if (window_frames && frame[stream] - last_ref[out[i].block] < window_frames) released_in_window++;
            last_ref.erase(out[i].block);
            live.erase(out[i].block);
            released.insert(out[i].block);
            releases++;
        }
        return ec;
    }
};

}  // namespace vrex::test
