"""`make bench` records of issue 22: V-Rex against the streaming-video KV anchors and its ablations at
equal device memory, with spreads over independent repeats (vrex.model_bench appends them).

Each repeat is one `run.run` over the held-out test clips with every run of vrex/ablations.py (the code
`vrexctl run --model builtin --anchors` runs), another stream seed per repeat (other segments). The
figures: each run's task-accuracy change against the full cache (in the same repeat), its device KV
peak against the full cache's, its visual-prefill FLOP ratio; ReSV's recall and bytes, and Quest's recall
at ReSV's bytes. Median [min, max] over the repeats.

The equal-accuracy point, in the same run (same streams, questions and full cache): the retrieval
anchors (ReKV, Quest, random) again at EQUAL_ACCURACY_BUDGET blocks per stream, where their fetch covers
a question's whole reach (docs/model.md "Session 9"/"Session 10": they come within V-Rex's CI there);
each one's accuracy change vs the full cache and its device KV peak against V-Rex's. Three runs more
of about 25 (the window anchors need 2400 blocks, 0.94x the full cache: not repeated here).
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
EQUAL_ACCURACY_BUDGET = 164    # 5 resident frames + a question's whole reach (5 frames x 16 blocks) + 4
EQUAL_ACCURACY_ANCHORS = ("rekv", "quest", "random")


def equal_accuracy_runs(first_device: int) -> dict[str, dict[str, Any]]:
    """The retrieval anchors at EQUAL_ACCURACY_BUDGET, named `NAME@BUDGET`, each on its own emulated
    device from @first_device on (ablations.runs numbers its runs' devices 1..n)."""
    b = EQUAL_ACCURACY_BUDGET
    at = ablations.runs(b, RESIDENT, RATIO, only=EQUAL_ACCURACY_ANCHORS, measure_resv=False)
    out = {}
    for i, (name, kw) in enumerate(at.items()):
        kw["extra"]["device"] = first_device + i
        out[f"{name}@{b}"] = kw
    return out


def equal_accuracy(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """From a run.run result with equal_accuracy_runs (before ablations.report takes its
    policy_stats): per anchor, its accuracy change vs the full cache and device KV peak at the budget."""
    out = {}
    for name in EQUAL_ACCURACY_ANCHORS:
        key = f"{name}@{EQUAL_ACCURACY_BUDGET}"
        out[name] = {"budget": EQUAL_ACCURACY_BUDGET, "accuracy_change": res["quality"][key]["accuracy_change"],
                     "device_bytes_peak": int(sum(s["device_bytes_peak"] for s in res["policy_stats"][key]))}
    return out


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
        runs.update(equal_accuracy_runs(len(runs) + 1))
        res = run.run(paths, streams, frames, 4, o.radius, o.guard_bits, o.max_age, min(8, frames // 4), runs, seed)
        eq = equal_accuracy(res)
        rep = ablations.report(res, BUDGET, RESIDENT)
        rep["equal_accuracy"] = eq
        reps.append(rep)
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
    if all("equal_accuracy" in r for r in reps):
        for name in r0["equal_accuracy"]:
            rows = [r["equal_accuracy"][name] for r in reps]
            eb = f"{base}; {name} at {rows[0]['budget']} blocks/stream in the same run (its fetch covers a question's reach)"
            out.append(record(f"anchors/equal_accuracy.{name}: task accuracy change vs the full cache at "
                              f"{rows[0]['budget']} blocks/stream", [x["accuracy_change"]["mean"] for x in rows],
                              "share", eb, None, False))
            out.append(record(f"anchors/equal_accuracy.{name}: device KV peak vs V-Rex's at {rows[0]['budget']} "
                              f"blocks/stream", [x["device_bytes_peak"] / r["anchors"]["vrex_hierarchy"]["device_bytes_peak"]
                                                 for x, r in zip(rows, reps)], "ratio", eb, None, True))
    out.append(record("anchors/resv: attention-mass recall on the past questions",
                      [r["resv"]["recall_mean"] for r in reps], "share", base, TARGET_RECALL, False))
    out.append(record("anchors/resv: share of the history's KV bytes read",
                      [r["resv"]["kv_bytes_ratio"] for r in reps], "share", base, TARGET_RESV_BYTES, True))
    out.append(record("anchors/resv: recall minus Quest's at the same bytes (control: Quest page bounds)",
                      [r["resv"]["recall_mean"] - r["resv"]["quest"]["recall_mean"] for r in reps], "share", base,
                      0.0, False))
    return out
