#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
"""The product figure: what the emulated V-Rex device costs per frame, as a share of the builtin model's
exact step on the same frames.

usage: emu_cost.py --mode=full|quick|smoke --out=FILE.jsonl   (the bench binary contract; build/bench/
       vrex_bench_emucost wraps it with the model's PYTHONPATH)

Each repeat is one call of vrex.run.run (the code `vrexctl run --model builtin` runs; the workloads of the
model benchmark, vrex.model_bench.clips: vtest.avi as 4 streams at several stream offsets). Every HAL call
the vrex run's streams make (begin_frame: staging the luma and the FCC fingerprint; retrieve_temporal /
retrieve_similar: SHIE lookups; reuse, allocate, release, end_frame: block bookkeeping and SHIE inserts;
fingerprint_distance) is timed with the thread's CPU clock, the clock run.py times the prefill with. The
figure is that time per stream-frame divided by the exact run's prefill per stream-frame (every region
prefilled: the model's exact step), both from the same run over the same frames. Target: <= 2 %.
What it leaves out: the model's own Python around the calls, and the exact run's own HAL calls stay in its
step (they are part of the model's exact step as vrexctl runs it).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Callable

import numpy as np

from vrex import lcp, model_bench, run

TARGET = 0.02


class HalMeter:
    """CPU seconds and calls spent inside the HAL by the session whose stream is stepping."""

    def __init__(self) -> None:
        self.by_session: dict[int, list[float]] = {}
        self.current: list[float] | None = None

    def timed(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            acc = self.current
            t0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                if acc is not None:
                    acc[0] += time.thread_time() - t0
                    acc[1] += 1

        return call


class TimedStream:
    """Forwards every attribute of a hal.Stream; its methods are timed by the meter."""

    def __init__(self, stream: Any, meter: HalMeter) -> None:
        self._stream = stream
        self._meter = meter

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._stream, name)
        return self._meter.timed(attr) if callable(attr) else attr


def install(meter: HalMeter) -> Callable[[], None]:
    """Wraps StreamRunner (its stream, and its step as the meter's current session) and the HAL's
    fingerprint_distance; returns the function that undoes it."""
    orig_init, orig_step = lcp.StreamRunner.__init__, lcp.StreamRunner.step
    orig_fd = lcp.hal.fingerprint_distance

    def init(self: Any, session: Any, stream: Any) -> None:
        orig_init(self, session, stream)
        self.st = TimedStream(stream, meter)

    def step(self: Any, *args: Any, **kwargs: Any) -> Any:
        meter.current = meter.by_session.setdefault(id(self.s), [0.0, 0])
        try:
            return orig_step(self, *args, **kwargs)
        finally:
            meter.current = None

    lcp.StreamRunner.__init__ = init  # type: ignore[method-assign]
    lcp.StreamRunner.step = step  # type: ignore[method-assign]
    lcp.hal.fingerprint_distance = meter.timed(orig_fd)

    def undo() -> None:
        lcp.StreamRunner.__init__ = orig_init  # type: ignore[method-assign]
        lcp.StreamRunner.step = orig_step  # type: ignore[method-assign]
        lcp.hal.fingerprint_distance = orig_fd

    return undo


def is_vrex(opts: Any) -> bool:
    """The product's run (run.MODES['vrex']: the defaults): reuse with the FCC filter, no retrieval."""
    d = lcp.Options()
    return bool(opts.reuse and opts.fcc and opts.retrieval == "none" and opts.radius == model_bench.RADIUS
                and opts.guard_bits == d.guard_bits)


def one_run(clip: Any, frames: int, offset: int) -> dict[str, float]:
    meter = HalMeter()
    sessions: list[Any] = []
    orig_session = lcp.Session.__init__

    def session_init(self: Any, *args: Any, **kwargs: Any) -> None:
        orig_session(self, *args, **kwargs)
        sessions.append(self)

    lcp.Session.__init__ = session_init  # type: ignore[method-assign]
    undo = install(meter)
    try:
        out = run.run([clip] * model_bench.STREAMS, frames, model_bench.RADIUS, lcp.Options.guard_bits, offset,
                      max_age=lcp.Options.max_age, with_resv=False)
    finally:
        undo()
        lcp.Session.__init__ = orig_session  # type: ignore[method-assign]
    vrex = [s for s in sessions if is_vrex(s.opts)]
    if len(vrex) != 1:
        raise RuntimeError(f"expected one vrex session among {len(sessions)}, found {len(vrex)}")
    hal_s, calls = meter.by_session.get(id(vrex[0]), [0.0, 0])
    stream_frames = out["frames"] * out["streams"]
    if not calls or not stream_frames:
        raise RuntimeError("the vrex run made no timed HAL call")
    exact_ms = out["exact_prefill_ms_mean"] / out["streams"]  # run.py: per step, summed over the streams
    emu_ms = 1e3 * hal_s / stream_frames
    return {"ratio": emu_ms / exact_ms, "emu_ms": emu_ms, "exact_ms": exact_ms, "calls": calls / stream_frames,
            "frames": out["frames"], "streams": out["streams"]}


def spread(v: list[float]) -> dict[str, Any]:
    return {"min": float(np.min(v)), "median": float(np.median(v)), "max": float(np.max(v)), "n": len(v)}


def records(label: str, reps: list[dict[str, float]], offsets: list[int]) -> list[dict[str, Any]]:
    r0 = reps[0]
    notes = (f"{label}: {int(r0['streams'])} streams x {int(r0['frames'])} frames per repeat, stream offsets "
             f"{offsets}; HAL time of the vrex run (FCC, SHIE lookups and inserts, block calls) per stream-frame "
             "over the exact run's prefill per stream-frame, thread CPU time, same run, same frames")
    out = []
    for key, name, unit, target in (
            ("ratio", "emulation cost per frame (FCC + SHIE lookups + HAL calls) vs the builtin model's exact step",
             "ratio", TARGET),
            ("emu_ms", "emulation cost per frame (FCC + SHIE lookups + HAL calls)", "ms/frame", None),
            ("exact_ms", "the builtin model's exact step per frame (prefill, every region)", "ms/frame", None),
            ("calls", "HAL calls per frame", "calls/frame", None)):
        v = [r[key] for r in reps]
        s = spread(v)
        out.append({"name": f"product/{label}: {name}", "ours": s["median"], "baseline": None, "unit": unit,
                    "ratio": None, "target": target, "target_on": "ours", "target_sense": "at_most",
                    "met": None if target is None else s["median"] <= target, "baseline_name": "", "notes": notes,
                    "ours_spread": s, "kind": "product"})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("full", "quick", "smoke"), default="quick")
    ap.add_argument("--out", default="")
    args, _ = ap.parse_known_args(argv)
    sets, frames = model_bench.clips(args.mode)
    recs: list[dict[str, Any]] = []
    for label, clip, offsets in sets:
        reps = []
        for off in offsets:
            t0 = time.perf_counter()
            reps.append(one_run(clip, frames, off))
            print(f"emu_cost: {label} offset {off}: {reps[-1]['ratio']:.4f} "
                  f"({reps[-1]['emu_ms']:.3f} / {reps[-1]['exact_ms']:.2f} ms per frame), "
                  f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
        recs += records(label, reps, offsets)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in recs))
    for r in recs:
        s = r["ours_spread"]
        met = "" if r["met"] is None else (" MET" if r["met"] else " MISSED")
        print(f"RESULT {r['name']:<100s} {r['ours']:.4g} [{s['min']:.4g}, {s['max']:.4g}] {r['unit']}{met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
