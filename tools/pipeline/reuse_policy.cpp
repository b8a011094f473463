#include "reuse_policy.hpp"

namespace vrex::pipeline {

ReuseDecision decide_reuse(const ReusePolicy& policy, const LumaFrame& frame, std::uint32_t region,
                           std::uint32_t step, const Retrieval& similar, const Retrieval& temporal) {
    ReuseDecision d;
    bool seen = false, too_old = false;
    double best_rejected = -1.0;
    const Retrieval* cands[2] = {&similar, &temporal};
    for (int i = 0; i < 2; i++) {
        const Retrieval& c = *cands[i];
        if (!c.hit || c.block.view.empty()) continue;
        if (i == 1 && similar.hit && similar.block.id == c.block.id) continue;  // the same block twice
        const auto origin = read_payload_header(c.block.view);
        if (!origin) continue;
        seen = true;
        if (step - origin->step > policy.max_reuse_age) {
            too_old = true;
            continue;
        }
        const auto p = payload_psnr(c.block.view, frame, region);
        if (!p) continue;
        if (*p < policy.psnr_guard_db) {
            best_rejected = std::max(best_rejected, *p);
            continue;
        }
        // The temporal candidate comes second: with prefer_chain it wins over any passing similar one.
        const bool chain = i == 1 && policy.prefer_chain;
        if (d.outcome == ReuseDecision::Outcome::reuse && *p <= d.psnr && !chain) continue;
        d.outcome = ReuseDecision::Outcome::reuse;
        d.block = c.block;
        d.psnr = *p;
        d.from_similar = i == 0;
        d.approximate = i == 0 && c.approximate;
        d.distance = c.distance;
        d.origin = *origin;
    }
    // A block the temporal lookup offered too is the temporal chain's, whatever the radius: the
    // similarity lookup only adds what the temporal one did not find.
    if (d.outcome == ReuseDecision::Outcome::reuse && d.from_similar && temporal.hit &&
        temporal.block.id == d.block.id) {
        d.from_similar = false;
        d.approximate = false;
        d.distance = 0;
    }
    if (d.outcome == ReuseDecision::Outcome::reuse || !seen) return d;
    if (best_rejected >= 0.0) {
        d.outcome = ReuseDecision::Outcome::guard_rejected;
        d.psnr = best_rejected;
    } else if (too_old) {
        d.outcome = ReuseDecision::Outcome::too_old;
    }
    return d;
}

}  // namespace vrex::pipeline
