// Region reuse policy with a quality guard. For each region of a new frame the pipeline looks up a
// similar entry (nearest fingerprint within the radius, past frames only) and the temporal entry of
// the previous frame. A candidate block is reused (the new frame's SHIE entry aliases it, no new KV)
// only if the luma its KV was computed from is close to the current region — PSNR on the working
// luma >= the guard — and it is not older than max_reuse_age steps (stale KV gets recomputed, which
// also bounds the alias entries a long-lived block accumulates in the SHIE).
//
// Which passing candidate wins: with prefer_chain (the default) the temporal one, i.e. the block the
// same region of the previous frame already uses, so a region that stays static keeps ONE block for
// as long as the guard holds (the PSNR is always against the luma the KV was computed from, so the
// guard measures the drift accumulated since then, not frame-to-frame change). Taking the similarity
// hit instead whenever its PSNR is higher (prefer_chain = false) makes a static region alternate
// between blocks, and every block a frame of the window references stays resident.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "kv_payload.hpp"
#include "luma.hpp"
#include "vrex/hal.hpp"

namespace vrex::pipeline {

struct ReusePolicy {
    double psnr_guard_db = 30.0;
    // Steps since the block's KV was computed. The guard already bounds the drift (its PSNR is
    // against the luma the KV was computed from); the age is a second limit, lowered by the
    // pipeline so the alias entries of long-lived blocks cannot fill the SHIE.
    std::uint32_t max_reuse_age = 200;
    bool prefer_chain = true;  // a passing temporal candidate beats a better similar one
};

struct ReuseDecision {
    enum class Outcome { reuse, no_candidate, guard_rejected, too_old } outcome = Outcome::no_candidate;
    KvBlock block;      // reuse: the block to alias
    double psnr = 0.0;  // reuse / guard_rejected: best PSNR seen
    // reuse: found only by the similarity lookup (a block the temporal lookup offered too counts
    // as temporal: the similarity lookup added nothing there)
    bool from_similar = false;
    bool approximate = false;  // from_similar at distance > 0
    std::uint32_t distance = 0;
    PayloadHeader origin;  // reuse: where the block's KV came from
};

// @similar and @temporal are the lookups for @region (either may be a miss).
ReuseDecision decide_reuse(const ReusePolicy& policy, const LumaFrame& frame, std::uint32_t region,
                           std::uint32_t step, const Retrieval& similar, const Retrieval& temporal);

}  // namespace vrex::pipeline
