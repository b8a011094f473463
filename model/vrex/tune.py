"""Freezes the reuse knobs on the VALIDATION clip (never on the test clips that are scored).

Usage: python3 -m vrex.tune [--refresh | --recall] [--json]

One lockstep run over edited streams of the validation clip (task.CLIPS, split "val"): exact KV and
vrex at every (guard bits, max age) of the grid, radius fixed at the FCC default. The rule: the
setting with the most reuse whose task accuracy stays within TOLERANCE of exact KV (mean change);
ties go to the stricter guard. Its result is what lcp.Options' defaults are set to (docs/model.md).
--refresh: the same rule over REFRESH_GRID with lcp.Options.refresh (reused regions get their layer 0
written fresh), beside the aliasing defaults as "vrex": what the V-Rex runs with refresh use.
--recall: with refresh at anchors.VREX_REUSE's guard bits and age cap, the recall's appearance radius x
key-hash bits (RECALL_GRID) over cutback streams of the validation clip (vrex/workloads.py: views
come back after cuts), by the same rule.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from . import lcp, run, task

GRID = [(g, a) for g in (1, 2, 4) for a in (2, 4)]
REFRESH_GRID = [(g, a) for g in (1, 2, 4, 8) for a in (2, 4)]
RECALL_GRID = [(rad, g) for rad in (8, 24, 96) for g in (2, 8)]
TOLERANCE = 0.01
STREAMS = 1
FRAMES = 160


def choose(rows: list[dict[str, Any]], tolerance: float) -> dict[str, Any] | None:
    """The most reuse among the settings whose mean accuracy change is >= -@tolerance (ties: the
    stricter guard, then the shorter age cap); when none qualifies, the smallest accuracy loss (then
    the most reuse). None only for an empty grid."""
    if not rows:
        return None
    ok = [r for r in rows if r["accuracy_change"]["mean"] >= -tolerance]
    if not ok:
        return max(rows, key=lambda r: (r["accuracy_change"]["mean"], r["reuse_rate"]))
    return max(ok, key=lambda r: (r["reuse_rate"], -r["guard_bits"], -r["max_age"]))


def tune(streams: int = STREAMS, frames: int = FRAMES, refresh: bool = False) -> dict[str, Any]:
    paths = list(task.clip_paths([c.key for c in task.clips_of("val")]).values())
    o = lcp.Options()
    grid = REFRESH_GRID if refresh else GRID

    def name_of(g: int, a: int) -> str:
        if refresh:
            return f"refresh_g{g}_a{a}"
        return "vrex" if (g, a) == (o.guard_bits, o.max_age) else f"g{g}_a{a}"

    # The current defaults run as "vrex" (run.run reports KV bytes and time for it), the rest by name.
    runs: dict[str, dict[str, Any]] = {"exact": {"policy": "exact"}, "vrex": {"policy": "vrex"}}
    for g, a in grid:
        runs[name_of(g, a)] = {"policy": "vrex", "guard_bits": g, "max_age": a, "refresh": refresh}
    res = run.run(paths, streams, frames, 4, o.radius, o.guard_bits, o.max_age, runs=runs, split="val")
    rows = []
    for g, a in grid:
        name = name_of(g, a)
        q = res["quality"][name]
        reuse = res["reuse_rate"] if name == "vrex" else res[name]["reuse_rate"]
        acc = res["task"]["accuracy"][name]
        rows.append({"guard_bits": g, "max_age": a, "reuse_rate": reuse, "accuracy": acc,
                     "accuracy_change": q["accuracy_change"], "kl_mean": q["mean"]})
    best = choose(rows, TOLERANCE)
    return {"clips": [str(p) for p in paths], "streams": streams, "frames": frames, "tolerance": TOLERANCE,
            "refresh": refresh,
            "exact_accuracy": res["task"]["accuracy"]["exact"], "grid": rows,
            "chosen": {"guard_bits": best["guard_bits"], "max_age": best["max_age"]} if best else None}


def tune_recall(streams: int = STREAMS, frames: int = FRAMES) -> dict[str, Any]:
    from . import anchors
    paths = list(task.clip_paths([c.key for c in task.clips_of("val")]).values())
    o = lcp.Options()
    v = {k: anchors.VREX_REUSE[k] for k in ("refresh", "guard_bits", "max_age")}
    runs: dict[str, dict[str, Any]] = {"exact": {"policy": "exact"}, "vrex": {"policy": "vrex"},
                                       "no_recall": {"policy": "vrex", **v}}
    for rad, g in RECALL_GRID:
        runs[f"recall_r{rad}_g{g}"] = {"policy": "vrex", **v, "recall": True, "recall_radius": rad,
                                       "recall_guard_bits": g}
    res = run.run(paths, streams, frames, 4, o.radius, o.guard_bits, o.max_age, runs=runs, split="val",
                  workload="cutback")
    rows = []
    for rad, g in RECALL_GRID:
        name = f"recall_r{rad}_g{g}"
        rows.append({"recall_radius": rad, "recall_guard_bits": g, "guard_bits": rad, "max_age": g,
                     "reuse_rate": res[name]["reuse_rate"], "accuracy": res["task"]["accuracy"][name],
                     "accuracy_change": res["quality"][name]["accuracy_change"], "kl_mean": res["quality"][name]["mean"]})
    best = choose(rows, TOLERANCE)
    for r in rows:  # choose() breaks ties on guard_bits/max_age: here the radius and the recall's bits
        del r["guard_bits"], r["max_age"]
    return {"clips": [str(p) for p in paths], "streams": streams, "frames": frames, "tolerance": TOLERANCE,
            "workload": "cutback", "reuse": v, "exact_accuracy": res["task"]["accuracy"]["exact"],
            "no_recall": {"reuse_rate": res["no_recall"]["reuse_rate"],
                          "accuracy_change": res["quality"]["no_recall"]["accuracy_change"]},
            "grid": rows,
            "chosen": {"recall_radius": best["recall_radius"], "recall_guard_bits": best["recall_guard_bits"]}
            if best else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m vrex.tune", description=__doc__.split("\n")[0])
    ap.add_argument("--streams", type=int, default=STREAMS)
    ap.add_argument("--frames", type=int, default=FRAMES)
    ap.add_argument("--refresh", action="store_true", help="tune the guard for reuse with layer 0 refreshed")
    ap.add_argument("--recall", action="store_true", help="tune the recall from the host tier (cutback streams)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if args.recall:
        res = tune_recall(args.streams, args.frames)
        print(json.dumps(res) if args.json else json.dumps(res, indent=1))
        return 0
    res = tune(args.streams, args.frames, args.refresh)
    if args.json:
        print(json.dumps(res))
        return 0
    print(f"validation: exact accuracy {res['exact_accuracy']['mean']:.3f}")
    for r in res["grid"]:
        print(f"G={r['guard_bits']} A={r['max_age']}: reuse {r['reuse_rate']:.3f}, accuracy {r['accuracy']['mean']:.3f}, "
              f"change {r['accuracy_change']['mean']:+.3f} {r['accuracy_change']['ci95']}, KL {r['kl_mean']['mean']:.4f}")
    print(f"chosen: {res['chosen']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
