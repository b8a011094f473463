"""`make bench` entry for the builtin model in the loop (issue 14 item 5): frame-level KV reuse vs exact KV.

Usage: python3 -m vrex.model_bench --mode=full|quick|smoke --out=FILE.jsonl   (the bench binary contract,
bench/bench_options.h; build/bench/vrex_bench_model wraps it). Records are JSON Lines in bench/README.md's
format, median [min, max] over the repeats (>= 5).

Each repeat is one call of run.run (the code `vrexctl run --model builtin` runs, not a copy): exact KV,
vrex reuse and the radius-0 / no-FCC controls in lockstep over the same frames, on vtest.avi as 4 streams
and on one other clip (mbt-cube.mkv) as 4 streams. Repeats differ by the stream offset, so each one sees
other footage; the prefill ratio is CPU time of the prefill (run.py's clock), reuse and quality are counts.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from . import lcp, run

ROOT = Path(__file__).resolve().parents[2]
STREAMS = 4
RADIUS = 20
# (key, unit, target, at_most, what): the vrex run's figures from run.run and their targets (docs/model.md).
METRICS: tuple[tuple[str, str, float | None, bool, str], ...] = (
    ("prefill_ms_ratio", "ratio", 0.4, True, "prefill CPU time vs exact KV"),
    ("resident_bytes_ratio_window", "ratio", 0.5, True, "resident KV bytes vs same-window exact baseline"),
    ("kl_mean", "nats", 0.05, True, "KL of the logits vs exact KV"),
    ("top1_agreement", "share", 0.95, False, "top-1 agreement of the logits vs exact KV"),
    ("reuse_rate", "share", None, False, "share of regions whose KV is reused"),
    ("prefill_tokens_ratio", "ratio", None, True, "prefilled tokens vs exact KV"),
    ("prefill_wall_ms_ratio", "ratio", None, True, "prefill wall-clock time vs exact KV"),
)
TARGET_RADIUS0_LOSS = 0.2


def clips(mode: str) -> tuple[list[tuple[str, Path, list[int]]], int]:
    """(label, clip, stream offset per repeat) and frames per stream."""
    env = dict(line.split("=", 1) for line in subprocess.run(
        [str(ROOT / "scripts" / "fetch-footage.sh")], capture_output=True, text=True, check=True).stdout.split())
    vtest, cube = Path(env["VREX_VTEST_AVI"]), Path(env["VREX_CUBE_PATH"])
    if mode == "smoke":
        return [("vtest.avi-x4", vtest, [0])], 3
    if mode == "quick":
        return [("vtest.avi-x4", vtest, [150, 160, 170, 180, 190])], 12
    return [("vtest.avi-x4", vtest, [150, 160, 170, 180, 190]), ("mbt-cube.mkv-x4", cube, [0, 5, 10, 15, 20])], 40


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


def records(label: str, reps: list[dict[str, Any]], offsets: list[int]) -> list[dict[str, Any]]:
    r0 = reps[0]
    base = (f"builtin model, window {r0['window_frames']} frames, radius {r0['radius']}, guard {r0['guard_hamming']} "
            f"bits, max age {r0['guard_max_age']}, {r0['streams']} streams x {r0['frames']} frames, stream offsets {offsets} (one per repeat); "
            f"python3 -m vrex.run's code path (vrexctl run --model builtin), emulated HAL, prefill on one thread; "
            f"exact-KV prefill {np.median([r['exact_prefill_ms_mean'] for r in reps]):.1f} ms CPU per step (median)")
    out = []
    for key, unit, target, at_most, what in METRICS:
        out.append(record(f"model/{label}: {what}", [float(r[key]) for r in reps], unit, base, target, at_most))
    out.append(record(f"model/{label}: reuse lost by the radius-0 control (control: fingerprint radius 0)",
                      [radius0_loss(r) for r in reps], "share", base + "; 1 - control reuse / vrex reuse",
                      TARGET_RADIUS0_LOSS, False))
    out.append(record(f"model/{label}: KL of the logits vs exact KV (control: fingerprint radius 0)",
                      [float(r["control_radius0"]["kl_mean"]) for r in reps], "nats", base, None, True))
    return out


CPP_FRAMES = 60
CPP_RUNS = 5


def cpp_runs(clip: Path) -> list[dict[str, Any]] | None:
    """The C++ LCP layer (model/cpp, TorchScript over libtorch) on @clip's first CPP_FRAMES frames, one
    stream: CPP_RUNS runs of vrex-lcp-bench (exact and reuse runners in lockstep) on one golden export of
    the trained weights (python3 -m vrex.export). None when the wrapper found no vrex-lcp-bench."""
    exe = os.environ.get("VREX_LCP_BENCH", "")
    if not exe or not os.access(exe, os.X_OK):
        return None
    with tempfile.TemporaryDirectory(prefix="vrex-lcp-bench-") as d:
        subprocess.run([sys.executable, "-m", "vrex.export", "--out", d, "--clip", str(clip), "--frames",
                        str(CPP_FRAMES)], check=True, capture_output=True)
        # The simple TorchScript executor: the profiling one re-profiles on the varying shapes (docs/model.md).
        env = dict(os.environ, VREX_LCP_JIT_PROFILING="0")
        return [json.loads(subprocess.run([exe, d], check=True, capture_output=True, text=True, env=env).stdout)
                for _ in range(CPP_RUNS)]


def cpp_records(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    r0 = runs[0]
    notes = (f"C++ LCP layer (model/cpp vrex-lcp-bench, TorchScript export of the trained weights over libtorch, "
             f"simple executor, one thread), vtest.avi frames 0-{r0['frames'] - 1} as one stream, exact and "
             f"default-reuse runners in lockstep alternating order, {len(runs)} runs of the same frames; exact-KV "
             f"prefill {np.median([r['exact_prefill_ms_mean'] for r in runs]):.1f} ms CPU per frame (median)")
    return [record("model/vtest.avi-x1-cpp: prefill CPU time vs exact KV (C++ TorchScript path)",
                   [float(r["prefill_ms_ratio"]) for r in runs], "ratio", notes, 0.4, True),
            record("model/vtest.avi-x1-cpp: share of regions whose KV is reused (C++ TorchScript path)",
                   [float(r["reuse_rate"]) for r in runs], "share", notes, None, False)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m vrex.model_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("full", "quick", "smoke"), default="quick")
    ap.add_argument("--out", default="", help="JSON Lines file to append the records to")
    args = ap.parse_args(argv)
    recs = []
    sets, frames = clips(args.mode)
    for label, clip, offsets in sets:
        reps = []
        for off in offsets:
            t0 = time.perf_counter()
            reps.append(run.run([clip] * STREAMS, frames, RADIUS, lcp.Options.guard_bits, off,
                                max_age=lcp.Options.max_age, with_resv=False))
            print(f"model_bench: {label} offset {off}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        recs += records(label, reps, offsets)
    if args.mode == "full":  # the export alone takes about 30 s: not in quick mode
        runs = cpp_runs(sets[0][1])
        if runs is None:
            print("model_bench: vrex-lcp-bench not built (model/cpp needs libtorch-dev): no C++ record", file=sys.stderr)
        else:
            recs += cpp_records(runs)
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
