#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
"""The host's load over a benchmark's run, for records that do not sample their own.

usage: host_load.py --part FILE.jsonl --samples SAMPLES --source TEXT

The C++ benchmarks sample the runnable tasks during each record's own window (bench/bench_record.h); the
Python ones (vrex_bench_model, vrex_bench_emucost) do not, and a guest's samples describe the guest.
scripts/bench.sh samples the host's runnable tasks (/proc/stat procs_running, every 200 ms, one number
per line in SAMPLES) while such a benchmark runs; this adds them to every record of its part that has
no load fields of its own: load_running_mean/max, load_samples, cpus, noisy (more runnable tasks than
CPUs on average) and load_source (what the window was). Python 3 standard library only.
"""
import argparse
import json
import os
import sys


def read_samples(path):
    values = []
    if not os.path.exists(path):
        return values
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                values.append(float(line))
    return values


def annotate(rec, samples, cpus, source):
    """@rec with the host load of @samples (a list of runnable-task counts)."""
    if not samples:
        return rec
    rec["load_running_mean"] = sum(samples) / len(samples)
    rec["load_running_max"] = max(samples)
    rec["load_samples"] = len(samples)
    rec["cpus"] = cpus
    if rec["load_running_mean"] > cpus:
        rec["noisy"] = "load"
    else:
        rec.pop("noisy", None)
    rec["load_source"] = source
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", required=True)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    if not os.path.exists(args.part):
        return 0
    samples = read_samples(args.samples)
    cpus = os.cpu_count() or 1
    with open(args.part, encoding="utf-8") as f:
        records = [json.loads(x) for x in f if x.strip()]
    records = [r if r.get("load_running_mean") is not None else annotate(r, samples, cpus, args.source)
               for r in records]
    tmp = args.part + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    os.replace(tmp, args.part)
    return 0


if __name__ == "__main__":
    sys.exit(main())
