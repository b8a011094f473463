"""Record of the memory hierarchy's decisions on the Python path, for the before/after identity of
session 12 (docs/model.md "Session 12: one memory hierarchy"): short anchors runs that exercise every
tier rule (zombie, fifo and use coldness, demotion, the disk tier below `--host-blocks` host copies,
dropping, staging, promotion, recall) and their accuracy, byte peaks, tier counters and per-step
series, per run and stream. Not a test: two records of different commits are compared with --compare.

  PYTHONPATH=../build/model:. python3 tests/tiers_record.py --out A.json [--host-blocks N] CLIP...
  python3 tests/tiers_record.py --compare A.json B.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

RUNS = "vrex_hierarchy,no_demotion,no_zombie,zombie_use,streaming_llm,infinipot_v,timechat_dtd,rekv"
# What the hierarchy decides (vrex/anchors.py Managed.stats): compared for identity.
TIER_KEYS = ("device_bytes_peak", "total_bytes_peak", "host_bytes_peak", "disk_bytes_peak", "demoted", "dropped",
             "spilled", "fetched", "promoted", "recalled", "device_series", "fetched_series", "prefill_flops")


def record(clips: list[Path], frames: int, host_blocks: int, runs_csv: str, workload: str) -> dict[str, Any]:
    from vrex import ablations, run as vrun
    from vrex.anchors import REUSE
    vrex_knobs, alias_knobs = REUSE["builtin"]
    runs = {k: v for k, v in vrun.RUNS.items() if k != "control_radius0"}
    managed = ablations.runs(84, 5, 0.5, only=tuple(runs_csv.split(",")), vrex=vrex_knobs, alias=alias_knobs,
                             measure_resv=False)
    with tempfile.TemporaryDirectory(prefix="vrex-tiers-record-") as disk:
        for kw in managed.values():
            kw["extra"]["host_blocks"] = host_blocks
            kw["extra"]["disk_dir"] = disk
        runs.update(managed)
        res = vrun.run(clips, 1, frames, 4, vrun.lcp.Options.radius, vrun.lcp.Options.guard_bits,
                       vrun.lcp.Options.max_age, min(8, frames // 4), runs, path="python", workload=workload)
        left = os.listdir(disk)
    acc = res["task"]["accuracy"]
    out: dict[str, Any] = {"disk_files_left": left, "runs": {}}
    for name in managed:
        out["runs"][name] = {"accuracy": acc.get(name, acc.get("baselines", {}).get(name)),
                             "streams": [{k: s[k] for k in TIER_KEYS} for s in res["policy_stats"][name]]}
    return out


def compare(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    diffs = []
    for name, ra in a["runs"].items():
        rb = b["runs"].get(name)
        if rb is None:
            diffs.append(f"{name}: missing")
            continue
        if ra["accuracy"] != rb["accuracy"]:
            diffs.append(f"{name}: accuracy {ra['accuracy']} != {rb['accuracy']}")
        for si, (sa, sb) in enumerate(zip(ra["streams"], rb["streams"])):
            diffs += [f"{name}#{si}: {k} {sa[k]} != {sb[k]}" for k in TIER_KEYS if sa[k] != sb[k]]
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("clips", nargs="*", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--frames", type=int, default=40)
    ap.add_argument("--host-blocks", type=int, default=0)
    ap.add_argument("--runs", default=RUNS)
    ap.add_argument("--workload", default="cutback")
    ap.add_argument("--compare", nargs=2, type=Path)
    args = ap.parse_args()
    if args.compare:
        a, b = (json.loads(p.read_text()) for p in args.compare)
        d = compare(a, b)
        print("\n".join(d) if d else f"identical: {len(a['runs'])} runs, keys {', '.join(TIER_KEYS)} and accuracy")
        return 1 if d else 0
    rec = record(args.clips, args.frames, args.host_blocks, args.runs, args.workload)
    root = Path(__file__).resolve().parents[2]
    rec.update({"command": " ".join(sys.argv), "commit": subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                capture_output=True, text=True).stdout.strip(),
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "load": os.getloadavg(), "frames": args.frames, "host_blocks": args.host_blocks,
                "workload": args.workload, "clips": [str(c) for c in args.clips]})
    args.out.write_text(json.dumps(rec, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
