"""What any coldness rule could save: the questions' reads replayed against residency rules (issue 22).

The position-aware read's selection (anchors.Managed, resv_pos) depends on the keys' hashes and the
position table, not on which blocks are on the device; so one run that logs every question's
selection (`log_reads`: the `zombie_bound` ablation run) gives the demand of every residency rule
on the same questions. With refresh every slot is a block of its own (one frame references it).

A question at step t DEMANDS the distinct blocks its selection picked outside the visual window
(frames < t - window + 1: the prefill keeps the window on the device); a demanded block that is not
resident is staged back (at most `fetch` a question: the cap). Memory is counted as extra resident
blocks beyond the window, per step.

  age(r)    creation age (fifo; with refresh = zombie by references): frames t - r + 1 .. t - 1 on
            the device at step t
  use(r)    zombie release by use as hierarchy.py runs it (touches where the reach holds a demoted
            block), replayed: checks the replay against the measured runs
  bound     the clairvoyant rule: keeping a block past the window until its k-th future demand
            costs the steps in between and saves k stagings. Savings at a memory budget are at most
            the fractional knapsack over those increments (each increment taken alone: a
            relaxation, so an upper bound on every rule, clairvoyant or not, without the cap)

Figures: the bound's savings at age(r + 1)'s memory against age's own, and the least memory the
bound needs for age(r + 1)'s savings (no rule can match creation age's traffic with less), each
with a 95 % CI by bootstrap over stream segments (blocks, questions and steps resampled with the
segment of their frame / step).
"""
from __future__ import annotations

from typing import Any

import numpy as np


Question = tuple[int, int, list[int], list[int]]  # step, frame asked about, selected outside the window, all selected


def _stream(reads: list[tuple[int, int, list[int]]], window: int, regions: int) -> list[Question]:
    out = []
    for t, g, sel in reads:
        edge = (t - window + 1) * regions  # slots below it are outside the window
        out.append((int(t), int(g), sorted({int(s) for s in sel if s < edge}), sorted({int(s) for s in sel})))
    return out


def age_demand(qs: list[Question], r: int, regions: int, cap: int | None) -> np.ndarray:
    """Blocks staged per question under creation age with @r resident frames (@cap: the read's)."""
    out = np.zeros(len(qs))
    for i, (t, _g, sl, _a) in enumerate(qs):
        n = sum(1 for s in sl if s // regions < t - r + 1)
        out[i] = min(n, cap) if cap is not None else n
    return out


def age_extra(steps: int, r: int, window: int, regions: int) -> np.ndarray:
    """Resident blocks beyond the window at each step under age(@r)."""
    t = np.arange(steps)
    return regions * (np.minimum(t, r - 1) - np.minimum(t, window - 1)).astype(float)


def use_replay(qs: list[Question], steps: int, r: int, window: int, regions: int, reach: int,
               cap: int) -> tuple[np.ndarray, np.ndarray]:
    """hierarchy.py's `use` coldness on the logged selections: (blocks staged per question, extra
    resident blocks per step)."""
    last: dict[int, int] = {}      # resident past blocks -> max(frame, last read)
    demoted: set[int] = set()
    staged = np.zeros(len(qs))
    extra = np.zeros(steps)
    by_step: dict[int, list[int]] = {}
    for i, (t, _g, _s, _a) in enumerate(qs):
        by_step.setdefault(t, []).append(i)
    for t in range(steps):
        # Aging after frame t - 1 ended: frame t - 1's blocks enter, the cold ones leave.
        if t >= 1:
            for s in range((t - 1) * regions, t * regions):
                last[s] = t - 1
        for s in [s for s, ref in last.items() if t - ref >= r]:
            del last[s]
            demoted.add(s)
        extra[t] = sum(1 for s in last if s // regions < t - window + 1)
        for i in by_step.get(t, []):
            _t, g, sl, sel = qs[i]
            staged[i] = min(cap, sum(1 for s in sl if s in demoted))
            # Touches count from the next aging on: the step's questions all see the same residency.
            lo, hi = max(0, g - reach), min(t - 1, g + reach)
            if any(s in demoted for s in range(lo * regions, (hi + 1) * regions)):
                for s in sel:
                    if s in last:
                        last[s] = max(last[s], t)
    return staged, extra


def increments(qs: list[Question], window: int, regions: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per block, its future demands past the window as knapsack increments: (stagings saved, steps
    of residency they cost, the block's frame). Keeping a block of frame f past the window until step
    d costs d - f - window + 1 steps."""
    demand: dict[int, dict[int, int]] = {}
    for t, _g, sl, _a in qs:
        for s in sl:
            d = demand.setdefault(s, {})
            d[t] = d.get(t, 0) + 1
    val, cost, frame = [], [], []
    for s, d in demand.items():
        f = s // regions
        prev = f + window - 1  # the last step the window holds it
        for t in sorted(d):
            val.append(d[t])
            cost.append(t - prev)
            frame.append(f)
            prev = t
    return np.array(val, float), np.array(cost, float), np.array(frame, np.int64)


def reread_counts(qs: list[Question], steps: int, window: int, regions: int, horizon: int, ages: int
                  ) -> np.ndarray:
    """Per step and block age a (1..@ages frames): [all blocks, those demanded past the window within the
    next @horizon steps, blocks the step's reads selected, those of them demanded] -> [steps, ages, 4]."""
    sel_at: dict[int, set[int]] = {}
    dem_at: dict[int, set[int]] = {}
    for t, _g, sl, sel in qs:
        sel_at.setdefault(t, set()).update(sel)
        dem_at.setdefault(t, set()).update(sl)
    later: list[set[int]] = []
    for t in range(steps):
        u: set[int] = set()
        for d in range(t + 1, min(steps, t + horizon + 1)):
            u |= dem_at.get(d, set())
        later.append(u)
    out = np.zeros((steps, ages, 4))
    for t in range(steps):
        for a in range(1, min(ages, t) + 1):
            for s in range((t - a) * regions, (t - a + 1) * regions):
                y = s in later[t]
                x = s in sel_at.get(t, ())
                out[t, a - 1] += (1, y, x, x and y)
    return out


def _knapsack(val: np.ndarray, cost: np.ndarray, budget: float) -> float:
    """Fractional knapsack (items pre-sorted by density): the most value within @budget."""
    cc = np.concatenate([[0.0], np.cumsum(cost)])
    vv = np.concatenate([[0.0], np.cumsum(val)])
    return float(np.interp(budget, cc, vv))


def _budget_for(val: np.ndarray, cost: np.ndarray, want: float) -> float:
    """The least budget whose fractional knapsack reaches @want."""
    cc = np.concatenate([[0.0], np.cumsum(cost)])
    vv = np.concatenate([[0.0], np.cumsum(val)])
    return float(np.interp(want, vv, cc)) if want <= vv[-1] else float("inf")


def bound(streams: list[dict[str, Any]], seg_lengths: list[list[int]], window: int, regions: int, reach: int,
          cap: int, resident: int, reps: int = 2000, seed: int = 0) -> dict[str, Any]:
    """@streams: the zombie_bound run's stats per stream ("reads", "device_series"); @resident: the
    anchors' resident frames (age(resident) is the control's setting)."""
    q_grp, q_age = [], {r: [] for r in range(window, resident + 3)}
    q_age_cap = {r: [] for r in range(window, resident + 3)}
    q_use = {r: [] for r in (resident - 1, resident)}
    s_grp, s_extra = [], {r: [] for r in range(window, resident + 3)}
    s_use = {r: [] for r in (resident - 1, resident)}
    inc_v, inc_c, inc_g = [], [], []
    capped = 0
    n_q = 0
    rr = []
    for si, (st, ls) in enumerate(zip(streams, seg_lengths)):
        steps = len(st["device_series"])
        seg = np.repeat(np.arange(len(ls)), ls)[:steps] + si * 10000
        qs = _stream(st["reads"], window, regions)
        q_grp.append(seg[[q[0] for q in qs]] if qs else np.zeros(0, np.int64))
        s_grp.append(seg)
        for r in q_age:
            q_age[r].append(age_demand(qs, r, regions, None))
            q_age_cap[r].append(age_demand(qs, r, regions, cap))
            s_extra[r].append(age_extra(steps, r, window, regions))
        for r in q_use:
            if r >= window:
                a, b = use_replay(qs, steps, r, window, regions, reach, cap)
                q_use[r].append(a)
                s_use[r].append(b)
        v, c, f = increments(qs, window, regions)
        inc_v.append(v)
        inc_c.append(c)
        inc_g.append(seg[np.minimum(f, steps - 1)])
        rr.append(reread_counts(qs, steps, window, regions, resident, 16))
        capped += int(sum(1 for q in qs if len(q[2]) > cap))
        n_q += len(qs)
    qg, sg = np.concatenate(q_grp), np.concatenate(s_grp)
    v, c, ig = np.concatenate(inc_v), np.concatenate(inc_c), np.concatenate(inc_g)
    order = np.argsort(-(v / c), kind="stable")
    v, c, ig = v[order], c[order], ig[order]
    ids = np.unique(np.concatenate([qg, sg, ig]))
    pos = {g: i for i, g in enumerate(ids)}
    qi, si_, ii = (np.array([pos[g] for g in x], np.int64) for x in (qg, sg, ig))
    rng = np.random.default_rng(seed)
    weights = np.concatenate([np.ones((1, len(ids))),
                              np.stack([np.bincount(rng.integers(0, len(ids), len(ids)), minlength=len(ids))
                                        for _ in range(reps)])])
    lo_r = window  # the window alone: the bound's increments count from a block's exit from it

    def per_rep(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return (weights[:, idx] * x[None, :]).sum(1)

    dem = {r: per_rep(np.concatenate(q_age[r]), qi) for r in q_age}
    extra = {r: per_rep(np.concatenate(s_extra[r]), si_) for r in s_extra}
    n_steps = per_rep(np.ones(len(sg)), si_)
    saved_bound, budget_need = [], []
    for w in weights:  # the increments of the resampled segments (density order is kept)
        keep = w[ii] > 0
        saved_bound.append(v[keep] * w[ii][keep])
        budget_need.append(c[keep] * w[ii][keep])
    out_rows: dict[str, Any] = {}
    for r in range(lo_r + 1, resident + 3):
        age_saved = dem[lo_r] - dem[r]
        budget = extra[r] - extra[lo_r]
        b_saved = np.array([_knapsack(saved_bound[k], budget_need[k], budget[k]) for k in range(len(weights))])
        b_need = np.array([_budget_for(saved_bound[k], budget_need[k], age_saved[k]) for k in range(len(weights))])
        out_rows[f"age_{r}"] = {
            "extra_blocks_per_step": _ci(budget / n_steps),
            "saved_per_step": _ci(age_saved / n_steps),
            "bound_saved_per_step": _ci(b_saved / n_steps),
            "bound_over_age": _ci(b_saved / np.maximum(age_saved, 1e-9)),
            "bound_extra_blocks_for_age_savings": _ci(b_need / n_steps),
            "bound_memory_share": _ci(b_need / np.maximum(budget, 1e-9)),
        }
    # Does a read predict a read? Blocks a step's reads selected against all blocks of the same age:
    # the share demanded past the window within the next `resident` steps (lift 1: no information).
    cnt = np.concatenate(rr)  # [steps, ages, 4] in step order, the groups of sg
    per = np.stack([(weights[:, si_] @ cnt[:, a, :]) for a in range(cnt.shape[1])], axis=1)  # [1+reps, ages, 4]
    with np.errstate(divide="ignore", invalid="ignore"):
        p_all = per[..., 1] / per[..., 0]
        expected = np.nansum(per[..., 2] * p_all, axis=1)
        observed = per[..., 3].sum(1)
        p_sel = observed / per[..., 2].sum(1)
    reread = {"horizon_steps": resident, "selected_then_demanded": _ci(p_sel),
              "same_age_demanded": _ci(expected / per[..., 2].sum(1)), "lift": _ci(observed / expected),
              "selected_block_steps": float(per[0, :, 2].sum())}
    use_rows = {}
    for r in q_use:
        if q_use[r]:
            use_rows[f"use_{r}"] = {"staged": float(np.concatenate(q_use[r]).sum()),
                                    "extra_blocks_per_step": float(np.concatenate(s_use[r]).mean())}
    return {"questions": n_q, "capped_questions": capped,
            "staged_age": {f"age_{r}": float(np.concatenate(q_age_cap[r]).sum()) for r in q_age_cap},
            "demand_age": {f"age_{r}": float(np.concatenate(q_age[r]).sum()) for r in q_age},
            "use_replay": use_rows, "vs_window_alone": out_rows, "reread": reread,
            "demanded_blocks": int(len(v)), "window": window, "resident": resident}


def _ci(x: np.ndarray) -> dict[str, Any]:
    x = np.where(np.isfinite(x), x, np.nan)
    lo, hi = np.nanpercentile(x[1:], [2.5, 97.5])
    return {"mean": float(x[0]), "ci95": [float(lo), float(hi)]}
