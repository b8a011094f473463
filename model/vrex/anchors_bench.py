"""`make bench` records of issue 22: V-Rex against the streaming-video KV anchors and its ablations at
equal device memory, with spreads over independent repeats (vrex.model_bench appends them).

Each repeat is one `run.run` over the held-out test clips with every run of vrex/ablations.py (the code
`vrexctl run --model builtin --anchors` runs), another stream seed per repeat (other segments). The
figures: each run's task-accuracy change against the full cache (in the same repeat), its device KV
peak against the full cache's, its visual-prefill FLOP ratio; ReSV's recall and bytes, and Quest's recall
at ReSV's bytes. Median [min, max] over the repeats.
"""
from __future__ import annotations

import time
import sys
from typing import Any

from . import ablations, lcp, run, task

# Frozen on the validation clip (docs/model.md "Knobs"): the same defaults as `python3 -m vrex.run --anchors`.
BUDGET, RESIDENT, RATIO = 84, 5, 0.5
TARGET_ACCURACY_LOSS = -0.01   # V-Rex within 1 point of the full cache
TARGET_DEVICE_RATIO = 0.05     # at <= 0.05x its peak device-resident KV
TARGET_FLOPS = 0.25            # prefill <= 0.25x exact FLOPs
TARGET_RECALL, TARGET_RESV_BYTES = 0.9, 0.10


def sizes(mode: str) -> tuple[int, int, list[int]]:
    """Streams per repeat, frames per stream, seed per repeat (full: >= 10k exact-cache tokens)."""
    if mode == "smoke":
        return 1, 12, [1]
    if mode == "quick":
        return 1, 32, [1, 2]
    return 1, 160, [1, 2, 3]


def measure(mode: str) -> tuple[list[dict[str, Any]], list[int]]:
    streams, frames, seeds = sizes(mode)
    paths = list(task.clip_paths([c.key for c in task.clips_of("test")]).values())
    o = lcp.Options()
    reps = []
    for seed in seeds:
        t0 = time.perf_counter()
        runs = {k: v for k, v in run.RUNS.items() if k != "control_radius0"}
        runs.update(ablations.runs(BUDGET, RESIDENT, RATIO))
        res = run.run(paths, streams, frames, 4, o.radius, o.guard_bits, o.max_age, min(8, frames // 4), runs, seed)
        reps.append(ablations.report(res, BUDGET, RESIDENT))
        print(f"anchors_bench: seed {seed}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return reps, seeds


def records(reps: list[dict[str, Any]], seeds: list[int], record: Any) -> list[dict[str, Any]]:
    """@record: vrex.model_bench.record (name, values, unit, notes, target, at_most)."""
    r0 = reps[0]
    a, s = r0["args"], r0["anchors_setup"]
    base = (f"builtin model ({r0['weights']}), {a['streams']} edited stream x {a['frames']} frames of the test clips "
            f"per repeat, stream seeds {seeds}; device budget {s['budget_blocks_per_stream']} blocks/stream "
            f"({s['resident_frames']} resident frames + {s['fetch_blocks_per_question']} staged per question), "
            f"exact cache {r0['exact_cache_tokens_peak']} tokens/stream; python3 -m vrex.run --anchors's code path")
    out = []
    for sec in ("anchors", "ablations"):
        for name in r0[sec]:
            if name == "full_cache":
                continue
            rows = [r[sec][name] for r in reps]
            vrex = sec == "anchors" and name == "vrex_hierarchy"
            out.append(record(f"anchors/{sec}.{name}: task accuracy change vs the full cache",
                              [x["accuracy_change"]["mean"] for x in rows], "share", base,
                              TARGET_ACCURACY_LOSS if vrex else None, False))
            out.append(record(f"anchors/{sec}.{name}: device KV peak vs the full cache",
                              [x["device_ratio"] for x in rows], "ratio", base,
                              TARGET_DEVICE_RATIO if vrex else None, True))
            out.append(record(f"anchors/{sec}.{name}: visual prefill FLOPs vs exact",
                              [x["prefill"]["flops_ratio"] for x in rows], "ratio", base,
                              TARGET_FLOPS if vrex else None, True))
    out.append(record("anchors/resv: attention-mass recall on the past questions",
                      [r["resv"]["recall_mean"] for r in reps], "share", base, TARGET_RECALL, False))
    out.append(record("anchors/resv: share of the history's KV bytes read",
                      [r["resv"]["kv_bytes_ratio"] for r in reps], "share", base, TARGET_RESV_BYTES, True))
    out.append(record("anchors/resv: recall minus Quest's at the same bytes (control: Quest page bounds)",
                      [r["resv"]["recall_mean"] - r["resv"]["quest"]["recall_mean"] for r in reps], "share", base,
                      0.0, False))
    return out
