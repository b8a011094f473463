#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
"""Records of a guest benchmark (vrex_bench_kernel in QEMU) from its serial log, with the host's load.

usage: guest_records.py --serial LOG --host-load SAMPLES [--host-part FILE] --out FILE.jsonl

The guest program prints one "@@VREX-BENCH <json>" line per record. Its own load fields describe the
guest (one vCPU, the benchmark itself runnable): under TCG the figure that matters is the host's, since
the guest's clock keeps running while the host deschedules QEMU's vCPU thread, so host load inflates the
guest's CPU times. scripts/bench.sh samples the host's runnable tasks (/proc/stat procs_running, every
200 ms, one number per line in SAMPLES) while the guest runs; they become the records' load fields
(load_running_mean/max, load_samples, cpus, noisy) and the guest's own move to guest_load_*.

With --host-part (the same program's --emu-only records measured on the host in the same run), each
guest "lookups via ioctl vs emulation" record gets a derived record: the emulated backend in the guest
against the same backend on the host, i.e. what TCG costs the code both sides share.
Python 3 standard library only.
"""
import argparse
import json
import os
import re
import sys

import host_load

PREFIX = "@@VREX-BENCH "
GUEST_LOAD = ("load_running_mean", "load_running_max", "load_samples", "load_avg1", "cpus", "noisy")


def guest_records(serial_path):
    records = []
    with open(serial_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip("\r\n")
            if line.startswith(PREFIX):
                records.append(json.loads(line[len(PREFIX):]))
    return records


def annotate(rec, samples, cpus):
    for key in GUEST_LOAD:
        if key in rec:
            rec["guest_" + key] = rec.pop(key)
    return host_load.annotate(rec, samples, cpus, "host, while the guest ran")


def tcg_records(guest, host):
    """Guest emulated backend vs the host's, per batch size: the TCG slowdown of the shared code."""
    by_batch = {}
    for r in host:
        m = re.match(r"^kernel/batch=(\d+): emulated backend \(host", r["name"])
        if m:
            by_batch[m.group(1)] = r
    out = []
    for g in guest:
        m = re.match(r"^kernel/batch=(\d+): lookups via ioctl vs emulation", g["name"])
        if not m or m.group(1) not in by_batch or g.get("baseline") is None:
            continue
        h = by_batch[m.group(1)]
        out.append({
            "name": f"kernel/batch={m.group(1)}: emulated backend in the TCG guest vs on the host",
            "ours": g["baseline"], "baseline": h["ours"], "unit": "lookups/s",
            "ratio": g["baseline"] / h["ours"] if h["ours"] else None,
            "target": None, "met": None,
            "baseline_name": "the same program's emulated backend on the host (--emu-only), same run",
            "notes": "what TCG costs the code both backends share (the reference model's lookups): the guest's "
                     "rates are TCG-translated code timed by the guest's clock",
            "ours_spread": g.get("baseline_spread"), "baseline_spread": h.get("ours_spread"),
            "kind": "control",
            **{k: g[k] for k in ("load_running_mean", "load_running_max", "load_samples", "cpus", "noisy",
                                 "load_source") if k in g},
        })
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serial", required=True)
    ap.add_argument("--host-load", required=True)
    ap.add_argument("--host-part")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    records = guest_records(args.serial)
    if not records:
        print(f"guest_records: no {PREFIX.strip()} lines in {args.serial}", file=sys.stderr)
        return 1
    samples = host_load.read_samples(args.host_load)
    cpus = os.cpu_count() or 1
    records = [annotate(r, samples, cpus) for r in records]
    if args.host_part and os.path.exists(args.host_part):
        with open(args.host_part, encoding="utf-8") as f:
            host = [json.loads(x) for x in f if x.strip()]
        records += tcg_records(records, host)
    with open(args.out, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
