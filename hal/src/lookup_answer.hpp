#pragma once

// A lookup item (uAPI 1.6) carries its nearest answer twice over: in the fields every caller
// knows and, when it asked for candidates, as candidates[0]. These two convert between those
// forms, so the emulation that fills an item and the stream that reads one agree field by field.

#include <drm/vrex_accel.h>

namespace vrex {

// The nearest answer of @it in the candidate form.
inline drm_vrex_shie_candidate nearest_of(const drm_vrex_shie_lookup_item& it) {
    drm_vrex_shie_candidate c{};
    c.block = it.block;
    c.frame = it.frame;
    c.stream = it.stream;
    c.handle = it.handle;
    c.offset = it.offset;
    c.length = it.length;
    c.found_fp[0] = it.found_fp[0];
    c.found_fp[1] = it.found_fp[1];
    c.block_gen = it.block_gen;
    c.hit_flags = it.hit_flags;
    c.distance = it.distance;
    return c;
}

// Writes @c as @it's nearest answer. The item's own flags know HIT and APPROX only (a pre-1.6
// caller's); the host-tier bit is reported in the candidates.
inline void set_nearest(drm_vrex_shie_lookup_item& it, const drm_vrex_shie_candidate& c) {
    it.block = c.block;
    it.frame = c.frame;
    it.stream = c.stream;
    it.handle = c.handle;
    it.offset = c.offset;
    it.length = c.length;
    it.found_fp[0] = c.found_fp[0];
    it.found_fp[1] = c.found_fp[1];
    it.block_gen = c.block_gen;
    it.hit_flags = c.hit_flags & (DRM_VREX_HIT | DRM_VREX_HIT_APPROX);
    it.distance = c.distance;
}

}  // namespace vrex
