"""A run placed on a control's memory curve: device bytes at equal staging traffic, blocks staged at
equal device bytes (docs/model.md "Session 11: zombie release by use", "Session 14: zombie release
where blocks are aliased").

A control (creation age) trades device bytes for staging traffic along a curve set by its resident
frames. Comparing a coldness rule with the control at the same resident frames mixes the two; placing
the rule on the control's curve asks what the control would need for the rule's traffic (or bytes).
Between two measured residencies the curve is the chord: creation age keeping part of the next-oldest
frame, whose blocks are alike. Every figure comes from the per-step series of the same streams, so the
runs are paired, and its 95 % CI from one bootstrap over stream segments shared by every run.
"""
from __future__ import annotations

from typing import Any

import numpy as np

Stats = dict[str, list[dict[str, Any]]]
SERIES = ("device_series", "fetched_series")


def step_means(stats: Stats, seg_lengths: list[list[int]], names: list[str], reps: int,
               seed: int) -> dict[tuple[str, str], np.ndarray]:
    """Per run and series: the mean per stream step, then @reps replicates ([1 + reps]), each over the
    same resample of stream segments for every run (paired)."""
    first = stats[names[0]]
    grp = np.concatenate([si * 10000 + np.repeat(np.arange(len(ls)), ls)[: len(first[si]["device_series"])]
                          for si, ls in enumerate(seg_lengths)])
    ids, inv = np.unique(grp, return_inverse=True)
    steps = np.bincount(inv, minlength=len(ids)).astype(float)
    pick = np.concatenate([np.arange(len(ids))[None, :],
                           np.random.default_rng(seed).integers(0, len(ids), (reps, len(ids)))])
    n_steps = steps[pick].sum(1)
    out = {}
    for n in names:
        for k in SERIES:
            x = np.concatenate([np.asarray(s[k], dtype=float) for s in stats[n]])
            if len(x) != len(inv):
                raise ValueError(f"{n}'s {k} has {len(x)} steps, {names[0]}'s {len(inv)}: not the same streams")
            out[(n, k)] = np.bincount(inv, weights=x, minlength=len(ids))[pick].sum(1) / n_steps
    return out


def on_curve(x: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """y at @x on the piecewise-linear curve through the points (@xs[i], @ys[i]) taken in their order
    (resident frames), per column (replicate). The chord is the first whose ends bracket x; past both
    ends of the curve, the end chord nearer x, extended. Returns (y, the chord's index)."""
    a, b = xs[:-1], xs[1:]
    inside = (np.minimum(a, b) <= x) & (x <= np.maximum(a, b))
    nearer_last = np.abs(x - xs[-1]) < np.abs(x - xs[0])
    j = np.where(inside.any(0), inside.argmax(0), np.where(nearer_last, len(a) - 1, 0))
    cols = np.arange(xs.shape[1])
    x0, x1, y0, y1 = xs[j, cols], xs[j + 1, cols], ys[j, cols], ys[j + 1, cols]
    with np.errstate(divide="ignore", invalid="ignore"):
        return y0 + (x - x0) / (x1 - x0) * (y1 - y0), j


def ci(x: np.ndarray) -> dict[str, Any]:
    """The estimate (x[0]) and the 2.5/97.5 percentiles of the replicates, leaving out those whose
    chord was flat (no finite answer)."""
    x = np.where(np.isfinite(x), x, np.nan)
    lo, hi = np.nanpercentile(x[1:], [2.5, 97.5])
    return {"mean": float(x[0]), "ci95": [float(lo), float(hi)]}


def against_curve(stats: Stats, seg_lengths: list[list[int]], run: str, curve: list[str], same: str,
                  reps: int = 2000, seed: int = 0) -> dict[str, Any]:
    """@run against the control's @curve (run names in the order of their resident frames, >= 2) and
    against @same (the control at @run's resident frames, one of @curve). Saved figures are > 0 when
    @run is better: the curve's device bytes at @run's traffic minus @run's, and the curve's blocks
    staged a step at @run's device bytes minus @run's, each absolute and relative."""
    m = step_means(stats, seg_lengths, [run, *curve], reps, seed)
    du, fu = m[(run, "device_series")], m[(run, "fetched_series")]
    dc = np.stack([m[(n, "device_series")] for n in curve])
    fc = np.stack([m[(n, "fetched_series")] for n in curve])
    dev_eq, j_f = on_curve(fu, fc, dc)
    fet_eq, j_d = on_curve(du, dc, fc)
    same_i = curve.index(same)

    def outside(x: float, xs: np.ndarray) -> bool:
        return bool(not xs.min() <= x <= xs.max())

    with np.errstate(divide="ignore", invalid="ignore"):
        return {"control": list(curve), "same_residency": same,
                "extrapolated": outside(fu[0], fc[:, 0]), "extrapolated_bytes": outside(du[0], dc[:, 0]),
                "chord_at_equal_traffic": [curve[j_f[0]], curve[j_f[0] + 1]],
                "chord_at_equal_bytes": [curve[j_d[0]], curve[j_d[0] + 1]],
                "device_bytes_mean": ci(du), "fetched_per_step": ci(fu),
                "control_device_bytes_mean": [float(v) for v in dc[:, 0]],
                "control_fetched_per_step": [float(v) for v in fc[:, 0]],
                "device_bytes_saved_at_equal_traffic": ci(dev_eq - du),
                "device_bytes_saved_at_equal_traffic_rel": ci((dev_eq - du) / dev_eq),
                "fetched_saved_at_equal_bytes": ci(fet_eq - fu),
                "fetched_saved_at_equal_bytes_rel": ci((fet_eq - fu) / fet_eq),
                "vs_same_residency": {"device_bytes": ci(du - dc[same_i]), "fetched_per_step": ci(fu - fc[same_i])},
                "device_bytes_peak": [total(stats[n], "device_bytes_peak") for n in (run, *curve)],
                "fetched": [total(stats[n], "fetched") for n in (run, *curve)]}


def total(st: list[dict[str, Any]], key: str) -> int:
    """@key summed over the streams."""
    return int(sum(s[key] for s in st))
