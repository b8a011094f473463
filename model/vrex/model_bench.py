"""`make bench` entry for the builtin model in the loop (issues 14, 21): frame-level KV reuse vs exact KV.

Usage: python3 -m vrex.model_bench --mode=full|quick|smoke --out=FILE.jsonl   (the bench binary contract,
bench/bench_options.h; build/bench/vrex_bench_model wraps it). Records are JSON Lines in bench/README.md's
format, median [min, max] over the repeats (5 in full mode).

Each repeat is one call of run.run (the code `vrexctl run --model builtin` runs, not a copy): exact KV, vrex
reuse and the radius-0 control in lockstep over the same edited streams of the held-out test clips (vtest.avi
and mire-2). Repeats differ by the stream seed, so each one sees other segments (independent repeats); the
time ratio is run.py's clock (thread CPU time of the whole step, warm-up frames left out).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from . import lcp, run, task

# (path in run.run's object, unit, target, at_most, what): the figures and their targets (docs/model.md).
METRICS: tuple[tuple[tuple[str, ...], str, float | None, bool, str], ...] = (
    (("task", "accuracy", "exact", "mean"), "share", None, False, "task accuracy, exact KV"),
    (("task", "accuracy", "vrex", "mean"), "share", None, False, "task accuracy, vrex reuse"),
    (("task", "accuracy", "baselines", "copy", "mean"), "share", None, False, "task accuracy, copy baseline"),
    (("quality", "vrex", "accuracy_change", "mean"), "share", -0.01, False, "task accuracy change, vrex - exact"),
    (("quality", "vrex", "mean", "mean"), "nats", None, True, "KL(exact || vrex) of the answers"),
    (("kv_bytes", "ratio"), "ratio", 0.5, True, "KV bytes vs the exact (whole, growing) cache, peak"),
    (("prefill", "time_ratio", "mean"), "ratio", None, True, "step CPU time vs exact KV"),
    (("prefill", "flops_ratio"), "ratio", None, True, "step FLOPs vs exact KV"),
    (("prefill", "flops_floor"), "ratio", None, True, "step FLOP floor (every region reused) vs exact KV"),
    (("reuse_rate",), "share", None, False, "share of regions whose KV is reused"),
)
TARGET_RADIUS0_LOSS = 0.2


def clips(mode: str) -> tuple[list[Path], int, int, list[int]]:
    """Test clips, streams per repeat, frames per stream, seed per repeat."""
    paths = task.clip_paths([c.key for c in task.clips_of("test")])
    test = list(paths.values())
    if mode == "smoke":
        return test, 1, 12, [1]
    if mode == "quick":
        return test, 1, 40, [1, 2, 3]
    return test, 1, 200, [1, 2, 3, 4, 5]


def get(d: dict[str, Any], path: tuple[str, ...]) -> float:
    for k in path:
        d = d[k]
    return float(d)  # type: ignore[arg-type]


def spread(v: list[float]) -> dict[str, Any]:
    a = sorted(v)
    return {"min": a[0], "median": float(np.median(a)), "max": a[-1], "n": len(a)}


def judge(value: float, target: float | None, at_most: bool) -> bool | None:
    if target is None:
        return None
    return value <= target if at_most else value >= target


def record(name: str, ours: list[float], unit: str, notes: str, target: float | None, at_most: bool) -> dict[str, Any]:
    o = spread(ours)
    return {"name": name, "ours": o["median"], "baseline": None, "unit": unit, "ratio": None, "target": target,
            "target_on": "ours", "target_sense": "at_most" if at_most else "at_least",
            "met": judge(o["median"], target, at_most), "baseline_name": "", "notes": notes, "ours_spread": o,
            "kind": "model"}


def radius0_loss(rep: dict[str, Any]) -> float:
    """Share of the vrex run's reuse the radius-0 control loses (1 - its reuse / vrex's)."""
    r = rep["reuse_rate"]
    return 1.0 - rep["control_radius0"]["reuse_rate"] / r if r > 0 else 0.0


def records(label: str, reps: list[dict[str, Any]], seeds: list[int]) -> list[dict[str, Any]]:
    r0 = reps[0]
    a = r0["args"]
    base = (f"builtin model ({r0['weights']}), radius {a['radius']}, guard {a['guard_bits']} bits, max age "
            f"{a['max_age']}, {a['streams']} edited streams x {a['frames']} frames of the test clips, "
            f"{a['questions_per_frame']} questions/frame, stream seeds {seeds} (one per repeat); python3 -m vrex.run's "
            f"code path (vrexctl run --model builtin), emulated HAL, one thread; exact KV cache peak "
            f"{r0['exact_cache_tokens_peak']} tokens/stream; exact step {np.median([r['prefill']['exact_step_ms_mean'] for r in reps]):.1f} "
            f"ms CPU (median)")
    out = []
    for path, unit, target, at_most, what in METRICS:
        out.append(record(f"model/{label}: {what}", [get(r, path) for r in reps], unit, base, target, at_most))
    out.append(record(f"model/{label}: reuse lost by the radius-0 control (control: fingerprint radius 0)",
                      [radius0_loss(r) for r in reps], "share", base + "; 1 - control reuse / vrex reuse",
                      TARGET_RADIUS0_LOSS, False))
    out.append(record(f"model/{label}: KL(exact || run) of the answers (control: fingerprint radius 0)",
                      [get(r, ("quality", "control_radius0", "mean", "mean")) for r in reps], "nats", base, None, True))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m vrex.model_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("full", "quick", "smoke"), default="quick")
    ap.add_argument("--out", default="", help="JSON Lines file to append the records to")
    args = ap.parse_args(argv)
    paths, streams, frames, seeds = clips(args.mode)
    o = lcp.Options()
    reps = []
    for seed in seeds:
        t0 = time.perf_counter()
        reps.append(run.run(paths, streams, frames, 4, o.radius, o.guard_bits, o.max_age, seed=seed))
        print(f"model_bench: seed {seed}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    recs = records("test-clips", reps, seeds)
    if args.mode != "smoke":  # issue 22: the anchors and ablations at equal device memory
        from . import anchors_bench
        recs += anchors_bench.records(*anchors_bench.measure(args.mode), record)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in recs))
    for r in recs:
        met = "" if r["met"] is None else (" MET" if r["met"] else " MISSED")
        s = r["ours_spread"]
        print(f"RESULT {r['name']:<90s} {r['ours']:.4g} [{s['min']:.4g}, {s['max']:.4g}] {r['unit']}{met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
