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
--fcc: with recall, the guard bits x the FCC fingerprint radius (FCC_GRID, age cap 2), with refresh
and aliasing, over cutback streams: on a model whose answer depends on the
reused deeper layers (--variant deep) the two filters in series decide what stale KV reaches an answer.
--age (after --fcc): at --fcc's radius, guard bits x age cap x recall on/off (AGE_GRID) with refresh,
over cutback streams: what bounds how old the reused deeper layers may be.
--pan (session 10, deep variant): at anchors.DEEP_REUSE's knobs, guard bits x the FCC fingerprint
filter on/off (PAN_GRID) over pan streams of the validation clip (vrex/workloads.py: camera motion, no
cuts): whether stale KV under camera motion gets past the key-hash guard, and whether the FCC stops it.
--gate (session 10, deep variant): the FCC's region motion gate (lcp.Options.motion_gate: a region
the FCC saw move takes no earlier block) x guard bits x fingerprint radius (GATE_GRID) on pan streams of
the validation clip; every row paired per question against the FCC off at the same guard bits.
--variant: the model (decoder.VARIANTS); the knobs frozen for the deep variant are anchors.DEEP_REUSE.
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
# Radii up to 31: a recall is a SHIE similarity lookup (session 10; 96, all appearance bits, was the
# policy's own index).
RECALL_GRID = [(rad, g) for rad in (8, 24, 31) for g in (2, 8)]
FCC_GRID = [(g, rad) for g in (0, 1, 2, 8) for rad in (4, 12, 20)]
PAN_GRID = [(g, fcc) for g in (0, 1, 2, 32) for fcc in (True, False)]
# (guard bits, FCC radius or None for the FCC off, region motion gate or None)
GATE_GRID = [(g, rad, gate) for g in (0, 1, 2) for rad, gate in ((4, None), (None, None), (4, 0), (31, 0), (31, 16))]
AGE_GRID = [(g, a, rec) for g in (0, 1) for a in (1, 2) for rec in (True, False)]
FCC_RECALL_RADIUS = 24  # the recall's appearance radius frozen by --recall; its key-hash bits follow the guard's
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


def tune(streams: int = STREAMS, frames: int = FRAMES, refresh: bool = False,
         variant: str = "builtin") -> dict[str, Any]:
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
    res = run.run(paths, streams, frames, 4, o.radius, o.guard_bits, o.max_age, runs=runs, split="val",
                  variant=variant)
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
            "refresh": refresh, "variant": variant, "weights": res["weights"],
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


def measured(res: dict[str, Any], name: str) -> dict[str, Any]:
    """What run.run() measured for the grid point @name: reuse, accuracy and its change, KL, KV bytes."""
    return {"reuse_rate": res[name]["reuse_rate"], "accuracy": res["task"]["accuracy"][name],
            "accuracy_change": res["quality"][name]["accuracy_change"], "kl_mean": res["quality"][name]["mean"],
            "kv_bytes": res[name]["kv_bytes"]}


def tune_fcc(streams: int = STREAMS, frames: int = FRAMES, variant: str = "deep") -> dict[str, Any]:
    """Guard bits x FCC radius (FCC_GRID, age cap 2) with recall (the recall's key-hash bits = the
    guard's, its radius FCC_RECALL_RADIUS), with refresh and aliasing (no refresh), on cutback streams
    of the validation clip, by choose()'s rule over both (ties: the stricter guard, then the smaller
    radius, then refresh)."""
    paths = list(task.clip_paths([c.key for c in task.clips_of("val")]).values())
    o = lcp.Options()
    runs: dict[str, dict[str, Any]] = {"exact": {"policy": "exact"}, "vrex": {"policy": "vrex"}}
    for refresh in (True, False):
        for g, rad in FCC_GRID:
            runs[f"{'refresh' if refresh else 'alias'}_g{g}_r{rad}"] = {
                "policy": "vrex", "guard_bits": g, "max_age": 2, "radius": rad, "refresh": refresh,
                "recall": True, "recall_radius": FCC_RECALL_RADIUS, "recall_guard_bits": g,
                "extra": {"device": len(runs)}}  # more runs than one emulated device has streams
    res = run.run(paths, streams, frames, 4, o.radius, o.guard_bits, o.max_age, runs=runs, split="val",
                  workload="cutback", variant=variant)
    out: dict[str, Any] = {"clips": [str(p) for p in paths], "streams": streams, "frames": frames,
                           "tolerance": TOLERANCE, "workload": "cutback", "variant": variant,
                           "weights": res["weights"], "exact_accuracy": res["task"]["accuracy"]["exact"],
                           "max_age": 2, "recall_radius": FCC_RECALL_RADIUS}
    rows = []
    for refresh in (True, False):
        for g, rad in FCC_GRID:
            name = f"{'refresh' if refresh else 'alias'}_g{g}_r{rad}"
            rows.append({"refresh": refresh, "guard_bits": g, "max_age": rad, **measured(res, name)})
    best = choose(rows, TOLERANCE)
    for r in rows:  # choose() breaks ties on max_age: here the radius
        r["radius"] = r.pop("max_age")
    out["grid"] = rows
    out["chosen"] = ({"refresh": best["refresh"], "guard_bits": best["guard_bits"], "radius": best["radius"]}
                     if best else None)
    return out


def tune_age(radius: int, streams: int = STREAMS, frames: int = FRAMES, variant: str = "deep") -> dict[str, Any]:
    """Guard bits x age cap x recall (AGE_GRID) with refresh at FCC radius @radius (the recall's
    key-hash bits = the guard's, its radius FCC_RECALL_RADIUS) on cutback streams of the validation
    clip, by choose()'s rule (ties: the stricter guard, then the shorter age cap)."""
    paths = list(task.clip_paths([c.key for c in task.clips_of("val")]).values())
    o = lcp.Options()
    runs: dict[str, dict[str, Any]] = {"exact": {"policy": "exact"}, "vrex": {"policy": "vrex"}}
    for g, a, rec in AGE_GRID:
        runs[f"g{g}_a{a}_{'recall' if rec else 'norecall'}"] = {
            "policy": "vrex", "guard_bits": g, "max_age": a, "radius": radius, "refresh": True, "recall": rec,
            "recall_radius": FCC_RECALL_RADIUS, "recall_guard_bits": g, "extra": {"device": len(runs)}}
    res = run.run(paths, streams, frames, 4, o.radius, o.guard_bits, o.max_age, runs=runs, split="val",
                  workload="cutback", variant=variant)
    rows = []
    for g, a, rec in AGE_GRID:
        name = f"g{g}_a{a}_{'recall' if rec else 'norecall'}"
        rows.append({"guard_bits": g, "max_age": a, "recall": rec, **measured(res, name)})
    best = choose(rows, TOLERANCE)
    return {"clips": [str(p) for p in paths], "streams": streams, "frames": frames, "tolerance": TOLERANCE,
            "workload": "cutback", "variant": variant, "weights": res["weights"], "radius": radius,
            "refresh": True, "recall_radius": FCC_RECALL_RADIUS,
            "exact_accuracy": res["task"]["accuracy"]["exact"], "grid": rows,
            "chosen": {k: best[k] for k in ("guard_bits", "max_age", "recall")} if best else None}


def tune_pan(streams: int = STREAMS, frames: int = FRAMES, variant: str = "deep") -> dict[str, Any]:
    """Guard bits x FCC filter (PAN_GRID) at anchors.DEEP_REUSE's other knobs on pan streams of the
    validation clip; choose()'s rule over the grid (ties: the stricter guard)."""
    from . import anchors
    paths = list(task.clip_paths([c.key for c in task.clips_of("val")]).values())
    o = lcp.Options()
    base = {k: v for k, v in anchors.DEEP_REUSE.items() if k != "guard_bits"}
    runs: dict[str, dict[str, Any]] = {"exact": {"policy": "exact"}, "vrex": {"policy": "vrex"}}
    for g, fcc in PAN_GRID:
        runs[f"g{g}_{'fcc' if fcc else 'nofcc'}"] = {"policy": "vrex", **base, "guard_bits": g, "fcc": fcc,
                                                     "extra": {"device": len(runs)}}
    res = run.run(paths, streams, frames, 4, o.radius, o.guard_bits, o.max_age, runs=runs, split="val",
                  workload="pan", variant=variant)
    rows = []
    for g, fcc in PAN_GRID:
        name = f"g{g}_{'fcc' if fcc else 'nofcc'}"
        rows.append({"guard_bits": g, "fcc": fcc, "max_age": 0, **measured(res, name),
                     "reused_targets": res["quality"][name]["split"]["reused"]})
    best = choose(rows, TOLERANCE)
    for r in rows:
        del r["max_age"]
    return {"clips": [str(p) for p in paths], "streams": streams, "frames": frames, "tolerance": TOLERANCE,
            "workload": "pan", "variant": variant, "weights": res["weights"], "knobs": base,
            "exact_accuracy": res["task"]["accuracy"]["exact"], "grid": rows,
            "chosen": {k: best[k] for k in ("guard_bits", "fcc")} if best else None}


def gate_name(g: int, rad: int | None, gate: int | None) -> str:
    return f"g{g}_" + ("nofcc" if rad is None else f"r{rad}") + ("" if gate is None else f"_gate{gate}")


def tune_gate(streams: int = STREAMS, frames: int = FRAMES, variant: str = "deep",
              workload: str = "pan") -> dict[str, Any]:
    """GATE_GRID at anchors.DEEP_REUSE's other knobs on @workload streams (pan, or cutback for the
    joint view) of the validation clip, by choose()'s rule (ties: the stricter guard); each row also
    paired against the FCC off."""
    from . import anchors
    paths = list(task.clip_paths([c.key for c in task.clips_of("val")]).values())
    o = lcp.Options()
    base = {k: v for k, v in anchors.DEEP_REUSE.items() if k not in ("guard_bits", "radius")}
    runs: dict[str, dict[str, Any]] = {"exact": {"policy": "exact"}, "vrex": {"policy": "vrex"}}
    for g, rad, gate in GATE_GRID:
        runs[gate_name(g, rad, gate)] = {
            "policy": "vrex", **base, "guard_bits": g, "fcc": rad is not None, "radius": rad or 0,
            "motion_gate": gate, "extra": {"device": len(runs), "paired_with": gate_name(g, None, None)}}
    res = run.run(paths, streams, frames, 4, o.radius, o.guard_bits, o.max_age, runs=runs, split="val",
                  workload=workload, variant=variant)
    rows = []
    for g, rad, gate in GATE_GRID:
        name = gate_name(g, rad, gate)
        q = res["quality"][name]
        rows.append({"guard_bits": g, "radius": rad, "motion_gate": gate, "max_age": 0, **measured(res, name),
                     "vs_fcc_off": q.get("accuracy_change_vs_paired"), "reused_targets": q["split"]["reused"]})
    best = choose(rows, TOLERANCE)
    for r in rows:
        del r["max_age"]
    return {"clips": [str(p) for p in paths], "streams": streams, "frames": frames, "tolerance": TOLERANCE,
            "workload": workload, "variant": variant, "weights": res["weights"], "knobs": base,
            "exact_accuracy": res["task"]["accuracy"]["exact"], "grid": rows,
            "chosen": {k: best[k] for k in ("guard_bits", "radius", "motion_gate")} if best else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m vrex.tune", description=__doc__.split("\n")[0])
    ap.add_argument("--streams", type=int, default=STREAMS)
    ap.add_argument("--frames", type=int, default=FRAMES)
    ap.add_argument("--refresh", action="store_true", help="tune the guard for reuse with layer 0 refreshed")
    ap.add_argument("--recall", action="store_true", help="tune the recall from the host tier (cutback streams)")
    ap.add_argument("--fcc", action="store_true",
                    help="tune the guard bits x FCC radius with refresh and aliasing (cutback streams)")
    ap.add_argument("--age", type=int, metavar="RADIUS", default=None,
                    help="tune guard bits x age cap x recall with refresh at this FCC radius (cutback streams)")
    ap.add_argument("--pan", action="store_true",
                    help="guard bits x FCC filter at the deep knobs on pan streams (camera motion)")
    ap.add_argument("--gate", action="store_true",
                    help="the FCC region motion gate x guard bits x radius at the deep knobs on pan streams")
    ap.add_argument("--workload", choices=("pan", "cutback"), default="pan", help="--gate: the streams")
    ap.add_argument("--variant", choices=("builtin", "deep"), default="builtin", help="the model (decoder.VARIANTS)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if args.gate:
        res = tune_gate(args.streams, args.frames, args.variant, args.workload)
        print(json.dumps(res) if args.json else json.dumps(res, indent=1))
        return 0
    if args.pan:
        res = tune_pan(args.streams, args.frames, args.variant)
        print(json.dumps(res) if args.json else json.dumps(res, indent=1))
        return 0
    if args.age is not None:
        res = tune_age(args.age, args.streams, args.frames, args.variant)
        print(json.dumps(res) if args.json else json.dumps(res, indent=1))
        return 0
    if args.fcc:
        res = tune_fcc(args.streams, args.frames, args.variant)
        print(json.dumps(res) if args.json else json.dumps(res, indent=1))
        return 0
    if args.recall:
        res = tune_recall(args.streams, args.frames)
        print(json.dumps(res) if args.json else json.dumps(res, indent=1))
        return 0
    res = tune(args.streams, args.frames, args.refresh, args.variant)
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
