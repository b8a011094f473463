#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
"""Merge bench JSON Lines parts into results.json; generate docs/benchmarks.md and bench/analysis.md from it.

usage: report.py --parts DIR --results FILE --markdown FILE [--analysis FILE] [--causes FILE]
                 --command CMD --mode MODE [--revision REV] [--load-start S] [--load-end S]
                 [--skipped '<benchmark>: <why>' ...] [--merge]
       report.py --check|--check-figures|--regenerate --results bench/results.json --markdown docs/benchmarks.md
                 --analysis bench/analysis.md [--shie-doc docs/hw/shie.md]
       report.py --self-test

results.json is {"meta": {...}, "records": [...]}; a record is {"name", "ours", "baseline", "unit", "ratio",
"target", "met", ...} plus optional spreads ({"min", "median", "max", "n"}) and structured fields (kind,
workload, op, method, family, roof_fraction, ...). Both Markdown files are pure functions of results.json
(and bench/causes.json, the hand-written causes of misses), so --check can prove they are not stale.
Python 3 standard library only.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import subprocess
import sys
import tempfile

REQUIRED = ("name", "ours", "baseline", "unit", "ratio", "target", "met")

# Provenance of every figure in the generated Markdown. While rendering, text taken or computed from
# results.json is wrapped in OPEN ... CLOSE (d()); what is left outside the spans is report.py's own prose
# and bench/causes.json. --check-figures fails when that hand-written text carries a number that is not a
# design constant listed in HANDWRITTEN_OK: a measured figure can only reach the reports through
# results.json. The markers are removed before the files are written (plain()).
OPEN, CLOSE = "\x1e", "\x1f"

# Numbers the hand-written text may carry: parameters of the method or the design, not measurements.
# Each entry is a regex on the hand-written text (matched before numbers are looked for) and why it is
# not a figure. A measured number never belongs here: put it in a record.
HANDWRITTEN_OK = [
    (r">= 5 repeats", "the repeat count every record must reach (bench/README.md)"),
    (r"every 200 ms", "the load sampler's period (bench/bench_record.h)"),
    (r"\(>= 50 %\)", "the roofline target of the scan-type methods"),
    (r"\b7B class", "the decoder size of the design (docs/hw), not a measurement"),
    (r"\b32-bit hash", "ReSV's hash width (docs/hw/resv.md)"),
    (r"\b16 tokens", "Quest-style page size of the ReSV benchmark (bench/README.md)"),
    (r"\bissue \d+", "a reference to a project issue"),
    (r"§\d+", "a reference to a section of a document"),
    (r"\b(4k|16k|100k|1M)\b", "the table sizes of the benchmark's plan (bench/shie_vs_faiss.cpp)"),
    (r"\b8 queries per pass", "the SIMD scans' query group (kScanGroup)"),
    (r"\b64-bit word", "the operand width of the popcnt instruction"),
    (r"\b32 bytes", "the width of an AVX2 register"),
    (r"FAISS 1\.7\.3", "the FAISS version Debian ships"),
]
NUMBER = re.compile(r"(?<![\w.\-])\d+(?:[.,]\d+)*")


def d(x):
    """Text taken or computed from results.json (a provenance span; see OPEN)."""
    return OPEN + str(x).replace(OPEN, "").replace(CLOSE, "") + CLOSE


def count(v):
    """A count from results.json, e.g. queries answered by a path."""
    return d(f"{v:.0f}")


def pct(v, digits=0):
    """A share from results.json as a percentage (without the % sign)."""
    return d(f"{100 * v:.{digits}f}")


def plain(text):
    return text.replace(OPEN, "").replace(CLOSE, "")


def handwritten_numbers(marked):
    """(number, context) of every number outside the provenance spans and HANDWRITTEN_OK."""
    text = re.sub(re.escape(OPEN) + "[^" + CLOSE + "]*" + re.escape(CLOSE), " ", marked)
    for pattern, _why in HANDWRITTEN_OK:
        text = re.sub(pattern, " ", text)
    found = []
    for m in NUMBER.finditer(text):
        found.append((m.group(0), text[max(0, m.start() - 50):m.end() + 30].replace("\n", " ")))
    return found


def load_parts(parts_dir):
    records = []
    for path in sorted(glob.glob(os.path.join(parts_dir, "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                rec = json.loads(line)
                missing = [k for k in REQUIRED if k not in rec]
                if missing:
                    raise ValueError(f"{path}:{lineno}: record lacks {missing}")
                records.append(rec)
    return records


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            kib = int(f.readline().split()[1])
            mem = f", {kib / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    try:
        cc = subprocess.run(["c++", "--version"], capture_output=True, text=True, check=False).stdout.splitlines()[0]
    except (OSError, IndexError):
        cc = "unknown compiler"
    return f"{cpu}, {os.cpu_count()} cores{mem}; Linux {platform.release()}; {cc}"


def fmt(v):
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "**no**"
    if abs(v) >= 100:
        return d(f"{v:,.0f}")
    if abs(v) >= 10:
        return d(f"{v:.1f}")
    return d(f"{v:.3g}")


def spread(s):
    """'median [min–max]' of a spread dict, or '' when absent."""
    if not s:
        return ""
    return f"{fmt(s['median'])} [{fmt(s['min'])}–{fmt(s['max'])}]"


def noisy(r):
    """A record measured while more tasks were runnable than the machine has CPUs (bench_record.h)."""
    return r.get("noisy") == "load"


def load_text(r):
    if r.get("load_running_mean") is None:
        return "–"
    return d(f"{r['load_running_mean']:.1f}/{r.get('cpus', 0):.0f}") + (" **noisy**" if noisy(r) else "")


def ratio_text(r):
    """The paired ratio with its confidence interval when the record has one, else the plain ratio."""
    if r.get("ratio_ci_lo") is None:
        return fmt(r.get("ratio"))
    level = pct(r["ratio_ci_level"], 1)
    return f"{fmt(r['ratio'])} [{fmt(r['ratio_ci_lo'])}–{fmt(r['ratio_ci_hi'])}, {level} %] {d(r.get('verdict', ''))}"


def paths_text(r):
    """Which path answered the timed queries of a SHIE record (lib's vrex_shie_paths counters)."""
    if r.get("path_probes") is None:
        return "–"
    parts = [(r["path_probes"], "probes"), (r.get("path_crowd_scan", 0), "crowd→scan"),
             (r.get("path_budget_scan", 0), "budget→scan"), (r.get("path_bruteforce", 0), "brute force")]
    text = ", ".join(f"{count(v)} {what}" for v, what in parts if v)
    if r.get("path_group_scan"):
        text += f" ({count(r['path_group_scan'])} in the group scan)"
    return text or "–"


def value_text(r, which):
    s = r.get(f"{which}_spread")
    return spread(s) if s else fmt(r.get(which))


def target_text(r):
    if r.get("target") is None:
        return "–"
    on = r.get("target_on", "ratio")
    t = r["target"]
    t = d(f"{t:,.0f}") if float(t).is_integer() else fmt(t)
    sign = "≤" if r.get("target_sense") == "at_most" else "≥"
    return f"{sign} {t}x" if on == "ratio" else f"{sign} {t} {d(r['unit'])}"


def table(records):
    out = ["| benchmark | ours | baseline | unit | ratio | target | met | load (runnable/CPUs) |",
           "|---|---:|---:|---|---:|---:|:---:|---:|"]
    for r in records:
        base = value_text(r, "baseline")
        if r.get("baseline_name"):
            base = f"{base} ({d(r['baseline_name'])})" if r["baseline"] is not None else d(r["baseline_name"])
        out.append(f"| {d(r['name'])} | {value_text(r, 'ours')} | {base} | {d(r['unit'])} | {ratio_text(r)} | "
                   f"{target_text(r)} | {fmt(r['met'])} | {load_text(r)} |")
    return out


def group_of(name):
    head = name.split(":", 1)[0]
    return head.split("/", 1)[0]


def kind(r):
    return r.get("kind", "")


def is_roof_target(r):
    return kind(r) == "measurement" and r.get("roof_fraction") is not None


# ---- SHIE section -----------------------------------------------------------------------------------
def workloads(records):
    seen = []
    for r in records:
        w = r.get("workload")
        if w and w not in seen:
            seen.append(w)
    return seen


def shie_tables(records):
    lines = []
    for wl in workloads(records):
        meas = [r for r in records if r.get("workload") == wl and kind(r) == "measurement"]
        comp = [r for r in records if r.get("workload") == wl and kind(r) == "comparison"]
        sweep = [r for r in records if r.get("workload") == wl and kind(r) == "sweep"]
        if not meas:
            continue
        lines += [f"### {d(wl)}", ""]
        notes = sorted({r["notes"] for r in meas if r.get("notes")})
        lines += [d(n) for n in notes] + [""]
        timed = sorted({int(r["queries_timed"]) for r in meas if r.get("queries_timed") is not None})
        if timed:
            lines += [f"Queries timed per round: {', '.join(d(x) for x in timed)}.", ""]
        lines += ["| method | range q/s median [min–max] | range roof | range answered by | "
                  "nearest q/s median [min–max] | nearest roof | nearest answered by |",
                  "|---|---:|---:|---|---:|---:|---|"]
        methods = []
        for r in meas:
            if r["method"] not in methods:
                methods.append(r["method"])
        for m in methods:
            cells = []
            for op in ("range", "nearest"):
                r = next((x for x in meas if x["method"] == m and x["op"] == op), None)
                if r is None:
                    cells += ["–", "–", "–"]
                    continue
                roof = "–"
                if r.get("roof_fraction") is not None:
                    roof = (f"{pct(r['roof_fraction'])} % of {fmt(r['baseline'])} "
                            f"({d(r.get('roof_bound'))}, {d(r.get('roof_level'))})")
                cells += [spread(r.get("ours_spread")) + (" (noisy)" if noisy(r) else ""), roof, paths_text(r)]
            lines.append(f"| {d(m)} | " + " | ".join(cells) + " |")
        lines.append("")
        if comp:
            lines += ["| comparison (same interleaved rounds) | ours | baseline | ratio: median of per-round ratios "
                      "[CI, level] | target | met |",
                      "|---|---:|---:|---:|---:|:---:|"]
            for r in comp:
                what = r["name"].split(": ", 1)[1]
                lines.append(f"| {d(r['op'])}: {d(what)} | {spread(r.get('ours_spread'))} | "
                             f"{spread(r.get('baseline_spread'))} ({d(r['baseline_name'])}) | {ratio_text(r)} | "
                             f"{target_text(r)} | {fmt(r['met'])} |")
            lines.append("")
        if sweep:
            cfgs = []
            for r in sweep:
                if r["method"] not in cfgs:
                    cfgs.append(r["method"])
            cols = [(fam, op) for op in ("range", "nearest") for fam in ("faiss-debian", "faiss-native")]
            lines += ["<details><summary>Exact IndexBinaryMultiHash sweep (q/s, median of its own repeats)</summary>",
                      "", "| configuration | " + " | ".join(f"{d(f.split('-')[1])} {d(o)}" for f, o in cols) + " |",
                      "|---|" + "---:|" * len(cols)]
            for c in cfgs:
                cells = []
                for fam, op in cols:
                    r = next((x for x in sweep if x["method"] == c and x["family"] == fam and x["op"] == op), None)
                    cells.append(spread(r.get("ours_spread")) if r else "–")
                lines.append(f"| {d(c)} | " + " | ".join(cells) + " |")
            lines += ["", "</details>", ""]
    return lines


# ---- analysis -----------------------------------------------------------------------------------------
def load_causes(path):
    if not path or not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def cause_for(r, causes):
    """The hand-written cause of a miss: the first entry whose regex matches the record name."""
    for c in causes:
        if re.search(c["match"], r["name"]):
            return c["cause"]
    return None


def shie_facts(r, records):
    """Figures of the same workload that explain a SHIE ratio: the arena against the caches, the scan's roof."""
    wl, op = r.get("workload"), r.get("op")
    if not wl:
        return ""
    out = []
    ours = next((x for x in records if x.get("workload") == wl and x.get("op") == op and x.get("family") == "shie"
                 and kind(x) == "measurement"), None)
    caches = next((x for x in records if x["name"].startswith("roofline/cache sizes")), None)
    if ours and ours.get("arena_bytes") and caches:
        arena, l2, l3 = ours["arena_bytes"] / 2**20, caches["ours"] / 1024, caches["baseline"] / 1024
        codes = ours["n"] * 16 / 2**20
        out.append(f"SHIE arena {d(f'{arena:.1f}')} MiB against L2 {d(f'{l2:.2g}')} MiB and L3 {d(f'{l3:.3g}')} MiB"
                   f" (the codes alone: {d(f'{codes:.2g}')} MiB)")
    scans = [x for x in records if x.get("workload") == wl and x.get("op") == op and x.get("roof_fraction") is not None
             and x.get("family") == "scan"]
    if scans:
        best = max(scans, key=lambda x: x["ours"])
        out.append(f"best SIMD scan {d(best['method'])} at {pct(best['roof_fraction'])} % of its roof "
                   f"({d(best.get('roof_bound'))} bound, table in {d(best.get('roof_level'))})")
    if ours:
        us = 1e6 / ours["ours"]
        out.append(f"SHIE {fmt(ours['ours'])} q/s = {d(f'{us:.2g}')} µs per query")
    # The design change's own control: the same lookup with the change switched off, same run.
    prev = next((x for x in records if x.get("workload") == wl and x.get("op") == op and kind(x) == "comparison"
                 and "before the probe budget" in x["name"]), None)
    if prev and prev.get("ratio") is not None:
        out.append(f"against the same lookup before the probe budget and vector scan (control, same run) "
                   f"{ratio_text(prev)}x ({fmt(prev['baseline'])} -> {fmt(prev['ours'])} q/s)")
    one = next((x for x in records if x.get("workload") == wl and x.get("op") == op and kind(x) == "comparison"
                and "one query per call (control)" in x["name"]), None)
    if one and one.get("ratio") is not None:
        out.append(f"against the same lookup one query per call (control, same run) "
                   f"{ratio_text(one)}x ({fmt(one['baseline'])} -> {fmt(one['ours'])} q/s)")
    return "; ".join(out) + "." if out else ""


# Mechanisms the reports claim, per benchmark group, and the record of the same run that switches each
# one off (its control). The analysis lists every mechanism of a group the run measured with the number of
# control records found: zero is a miss of the run, not of the mechanism.
CONTROLS = [
    ("shie", "MIH index (SHIE lookups)", r"vs control \(brute force, MIH off\)$", None),
    ("shie", "probe budget and vector fallback scan", r"before the probe budget and vector scan \(control\)$", None),
    ("shie", "batched nearest lookups", r"one query per call \(control\)$", "nearest"),
    ("shie", "MIH geometry sized to the table", r"fixed 8 x 16 MIH geometry \(control\)$", None),
    ("shie", "vector popcount in the scans", r": control: scan, scalar popcnt", None),
    ("fcc", "frames streamed from memory larger than L3", r"cycled in cache \(control\)$", None),
    ("model", "fingerprint decides the reuse", r"\(control: fingerprint radius 0\)$", None),
    ("resv", "WiCSum selection", r"\(control: random tokens\)$", None),
    ("kernel", "fixed cost of an ioctl", r"^kernel/null ioctl", None),
    ("kernel", "TCG timing of the guest", r"emulated backend in the TCG guest vs on the host$", None),
]


def controls_text(records):
    groups = {group_of(r["name"]) for r in records}
    # SHIE: a control counts per (workload, lookup) that has comparisons; the others per record.
    units = sorted({(r["workload"], r["op"]) for r in records if kind(r) == "comparison" and r.get("workload")})
    lines = []
    for group, mechanism, pattern, op in CONTROLS:
        if group not in groups:
            continue
        found = [r for r in records if group_of(r["name"]) == group and re.search(pattern, r["name"])]
        if group == "shie" and units:
            have = {(r.get("workload"), r.get("op")) for r in found}
            mine = [(w, o) for w, o in units if op is None or o == op]
            missing = [f"{d(w)} {d(o)}" for w, o in mine if (w, o) not in have]
            text = f"in {d(len(mine) - len(missing))} of {d(len(mine))} workload lookups"
            if missing:
                text += "; **no control for** " + ", ".join(missing)
        else:
            text = f"{d(len(found))} control records" if found else "**no control record in this run**"
        lines.append(f"- {group}: {mechanism} — {text}")
    return lines


def spreadless_text(records):
    """Records without repeats: named, so a single figure is never mistaken for a median."""
    bare = [r for r in records if not r.get("ours_spread")]
    if not bare:
        return ["Every record carries its spread."]
    by = {}
    for r in bare:
        by.setdefault(group_of(r["name"]), []).append(r["name"])
    return [f"- {d(g)}: " + "; ".join(d(n) for n in names) for g, names in by.items()]


def sampling_text(records):
    """What the records say about their own repeats and load: counted, not asserted."""
    spread_n = [r["ours_spread"]["n"] for r in records if r.get("ours_spread")]
    five = sum(1 for n in spread_n if n >= 5)
    sampled = [r for r in records if r.get("load_running_mean") is not None]
    text = (f"{d(five)} of {d(len(records))} records are medians of >= 5 repeats with [min–max]; "
            f"{d(len(records) - len(spread_n))} are single figures (no spread).")
    if sampled:
        bad = sum(1 for r in sampled if noisy(r))
        text += (f" Load was sampled during each record's own measurement (runnable tasks every 200 ms): "
                 f"{d(bad)} of {d(len(sampled))} records were measured with more runnable tasks than CPUs on average "
                 "and are marked noisy.")
    else:
        text += " This run predates the per-record load sampling: only the load average at start and end is known."
    return text


def analysis(results, causes):
    records = results["records"]
    meta = results.get("meta", {})
    lines = ["## Analysis of the targets", "",
             "<!-- Generated by bench/report.py from bench/results.json and bench/causes.json; do not edit by hand."
             " `ctest -R bench_report_fresh` fails when this file disagrees with results.json. -->", "",
             f"Run: `{d(meta.get('command', '?'))}` at `{d(meta.get('revision', '?'))}`, {d(meta.get('date', '?'))}. "
             f"Load average at start {d(meta.get('load_start', '?'))}, at end {d(meta.get('load_end', '?'))}. "
             + sampling_text(records), ""]
    roof = {r["name"]: r for r in records if kind(r) == "roof"}
    if roof:
        lines += ["Roofline of this run: " + "; ".join(f"{d(n.split(': ', 1)[1])} = {value_text(r, 'ours')} {d(r['unit'])}"
                                                        for n, r in roof.items()) + ".", ""]
    skipped = meta.get("skipped") or []
    if skipped:
        lines += ["### Not measured in this run", ""] + [f"- {d(s)}" for s in skipped] + [""]
    lines += ["### Every claimed mechanism and its control in this run", ""] + controls_text(records) + [""]
    lines += ["### Records without a spread (single figures)", ""] + spreadless_text(records) + [""]
    targeted = [r for r in records if r.get("target") is not None and not is_roof_target(r)]
    met = sum(1 for r in targeted if r.get("met"))
    lines += [f"### Speed and memory targets: {d(met)} of {d(len(targeted))} met", ""]
    for r in targeted:
        verdict = "MET" if r.get("met") else "MISSED"
        lo, hi = r.get("ratio_ci_lo"), r.get("ratio_ci_hi")
        if lo is not None and hi is not None and r.get("target_on", "ratio") == "ratio" and lo <= r["target"] <= hi:
            verdict += " at the median; its confidence interval straddles the target"
        lines.append(f"- **{d(r['name'])}** {target_text(r)}: {ratio_text(r)} — {verdict}. "
                     f"Ours {value_text(r, 'ours')} vs {value_text(r, 'baseline')} {d(r['unit'])} "
                     f"({d(r.get('baseline_name', ''))}).")
        if not r.get("met"):
            c = cause_for(r, causes)
            lines.append(f"  - Cause: {c}" if c else "  - Cause: not analysed yet (no entry in bench/causes.json).")
        facts = shie_facts(r, records)
        if facts:
            lines.append(f"  - Measured alongside: {facts}")
    lines.append("")
    roofs = [r for r in records if is_roof_target(r)]
    if roofs:
        met = sum(1 for r in roofs if r.get("met"))
        lines += [f"### Scan results against their roofline (>= 50 %): {d(met)} of {d(len(roofs))} met", "",
                  "| method | met / measured | roof fraction, min–max over workloads |", "|---|---:|---:|"]
        by = {}
        for r in roofs:
            by.setdefault(r["method"], []).append(r)
        for m, rs in by.items():
            fr = [x["roof_fraction"] for x in rs]
            lines.append(f"| {d(m)} | {d(sum(1 for x in rs if x.get('met')))} / {d(len(rs))} | "
                         f"{pct(min(fr))} %–{pct(max(fr))} % |")
        lines.append("")
        for m, rs in by.items():
            missed = [x for x in rs if not x.get("met")]
            if not missed:
                continue
            c = cause_for(missed[0], causes)
            lines.append(f"- **{d(m)}** missed on {d(len(missed))} of {d(len(rs))}: "
                         + (c if c else "not analysed yet (no entry in bench/causes.json)."))
        lines.append("")
    return "\n".join(lines)


def markdown(results, analysis_text):
    records = results["records"]
    meta = results.get("meta", {})
    lines = [
        "# Benchmarks",
        "",
        "<!-- Generated by bench/report.py from results.json; do not edit by hand. -->",
        "",
        f"- **Command:** `{d(meta.get('command', '?'))}` (mode `{d(meta.get('mode', '?'))}`)",
        f"- **Date:** {d(meta.get('date', '?'))}; source revision `{d(meta.get('revision', '?'))}`",
        f"- **Machine:** {d(meta.get('machine', '?'))}",
        f"- **Load average:** {d(meta.get('load_start', '?'))} at start, {d(meta.get('load_end', '?'))} at end"
        " (shared machine)"
        + (f"; the run took {d(meta['duration_s'] // 60)} min {d(meta['duration_s'] % 60)} s"
           if meta.get("duration_s") else ""),
        "- **Method:** see bench/README.md. One core: FAISS pinned to one OpenMP thread, our code single-threaded;"
        " rates are per CPU second of the process; the methods of a SHIE workload are timed interleaved, round by"
        " round, and a comparison's ratio is the median of the per-round ratios with a distribution-free confidence"
        " interval (records that carry one). " + sampling_text(records),
        "- **Footage:** vtest.avi and tree.avi from Debian's opencv-doc (OpenCV sample data; vtest.avi comes from a"
        " University of Reading research dataset, credited as its terms ask), fetched by scripts/fetch-footage.sh,"
        " never committed.",
        "",
    ]
    targeted = [r for r in records if r.get("target") is not None and not is_roof_target(r)]
    if targeted:
        met = sum(1 for r in targeted if r.get("met"))
        lines += [f"## Targets ({d(met)} of {d(len(targeted))} met; roofline targets in the analysis)", ""]
        lines += table(targeted) + [""]
    shie = [r for r in records if r.get("workload")]
    other = [r for r in records if not r.get("workload")]
    groups = {}
    for r in other:
        groups.setdefault(group_of(r["name"]), []).append(r)
    for g, recs in groups.items():
        lines += [f"## {d(g)}", ""] + table(recs) + [""]
        notes = sorted({r["notes"] for r in recs if r.get("notes")})
        if notes:
            lines += ["Notes:", ""] + [f"- {d(n)}" for n in notes] + [""]
    if shie:
        lines += ["## shie: SHIE vs native/Debian FAISS and SIMD scans, per workload", ""] + shie_tables(records)
    lines += [analysis_text.rstrip(), ""]
    return "\n".join(lines)


# ---- docs/hw/shie.md: where the index beats a scan and where it is one -------------------------------
SHIE_BEGIN = "<!-- BEGIN bench/report.py: where the index beats a scan (from bench/results.json; do not edit) -->"
SHIE_END = "<!-- END bench/report.py -->"


def shie_reading(paths_probes, total, r):
    """How a SHIE lookup answered and how it compares with the best scan, in words (no figures)."""
    verdict = r.get("verdict", "")
    if not total or not verdict:
        return "not classified: this run did not count the paths or pair the rounds"
    if paths_probes * 2 >= total:
        if verdict == "faster":
            return "the index beats the best scan"
        return "the index answers, but no faster than a scan" if verdict != "slower" else "a scan beats the index"
    what = {"faster": "faster than the bare scan", "slower": "slower than the bare scan"}.get(verdict, "on a par")
    return f"it is a scan ({what})"


def shie_scan_section(results):
    """The generated part of docs/hw/shie.md: per workload and lookup, which path answered and the paired
    ratio against the best alternative of the same run."""
    records = results["records"]
    meta = results.get("meta", {})
    best = [r for r in records if kind(r) == "comparison" and re.search(r" vs best (alternative|of) ", r["name"])]
    lines = [SHIE_BEGIN, "",
             f"Run: `{d(meta.get('command', '?'))}` at `{d(meta.get('revision', '?'))}`, {d(meta.get('date', '?'))}"
             f" ({d(meta.get('machine', '?'))}). Each row: the SHIE lookup against the best alternative timed in the"
             " same interleaved rounds (native FAISS and every SIMD scan, including the register-blocked scan with"
             " SHIE's own group kernel), as the median of the per-round ratios with its confidence interval, and"
             " which path answered the timed queries (lib's `vrex_shie_paths`). Full tables: docs/benchmarks.md.",
             ""]
    if not best:
        return "\n".join(lines + ["This run has no SHIE comparison records.", "", SHIE_END]) + "\n"
    lines += ["| workload | lookup | timed queries | answered by | SHIE q/s | best alternative, q/s | ratio [CI] | reading |",
              "|---|---|---:|---|---:|---:|---:|---|"]
    beats, scans = [], []
    for r in best:
        wl, op = r["workload"], r["op"]
        ours = next((x for x in records if x.get("workload") == wl and x.get("op") == op and x.get("family") == "shie"
                     and kind(x) == "measurement"), {})
        probes = ours.get("path_probes") or 0
        total = sum(ours.get(k) or 0 for k in ("path_probes", "path_crowd_scan", "path_budget_scan", "path_bruteforce"))
        reading = shie_reading(probes, total, r)
        (beats if reading.startswith("the index beats") else scans if reading.startswith("it is a scan") else []
         ).append(f"{d(wl)} {d(op)}")
        what = r["name"].split(": ", 1)[1].split(" vs ", 1)[0]
        timed = count(r["queries_timed"]) if r.get("queries_timed") is not None else "–"
        lines.append(f"| {d(wl)} | {d(op)}: {d(what)} | {timed} | {paths_text(ours) if ours else '–'} | "
                     f"{value_text(r, 'ours')} | {value_text(r, 'baseline')} ({d(r.get('baseline_name', ''))}) | "
                     f"{ratio_text(r)} | {reading} |")
    lines += ["", "- **The index beats the best scan:** " + (", ".join(beats) or "nowhere in this run") + ".",
              "- **The lookup is a scan** (most timed queries answered by the fallback scan): "
              + (", ".join(scans) or "nowhere in this run") + ".", "", SHIE_END]
    return "\n".join(lines) + "\n"


def splice(doc, block):
    """@doc with its generated block replaced by @block; None when the markers are missing."""
    i, j = doc.find(SHIE_BEGIN), doc.find(SHIE_END)
    if i < 0 or j < i:
        return None
    return doc[:i] + block.rstrip("\n") + doc[j + len(SHIE_END):]


def write(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def render(results, causes_path):
    """The generated texts with their provenance spans (see OPEN): analysis, Markdown, shie.md block."""
    a = analysis(results, load_causes(causes_path)) + "\n"
    return {"analysis": a, "markdown": markdown(results, a), "shie_doc": shie_scan_section(results)}


def outputs(args):
    """(path, kind) of every file the report writes or checks."""
    out = [(args.analysis, "analysis"), (args.markdown, "markdown"), (getattr(args, "shie_doc", None), "shie_doc")]
    return [(p, k) for p, k in out if p]


def file_text(path, kind, texts):
    """What @path must hold: the plain text, or for shie.md the document with its block spliced in (None
    when the document lacks the markers). A missing shie.md (a quick run's copy) is the block alone."""
    want = plain(texts[kind])
    if kind != "shie_doc" or not os.path.exists(path):
        return want
    with open(path, encoding="utf-8") as f:
        return splice(f.read(), want)


def write_all(args, results):
    texts = render(results, args.causes)
    for path, k in outputs(args):
        text = file_text(path, k, texts)
        if text is None:
            print(f"report: {path} has no generated block ({SHIE_BEGIN}); not written", file=sys.stderr)
            return 1
        write(path, text)
    return 0


def generate(args):
    records = load_parts(args.parts)
    if not records:
        print(f"report: no records in {args.parts}", file=sys.stderr)
        return 1
    meta = {"command": args.command, "mode": args.mode, "revision": args.revision or "unknown",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine(), "load_start": args.load_start, "load_end": args.load_end}
    if getattr(args, "duration_s", None) is not None:
        meta["duration_s"] = args.duration_s
    if args.skipped:
        meta["skipped"] = list(args.skipped)
    results = {"meta": meta, "records": records}
    if getattr(args, "merge", False):
        results = merged(args.results, results)
    write(args.results, json.dumps(results, indent=1) + "\n")
    if write_all(args, results):
        return 1
    targeted = [r for r in records if r.get("target") is not None]
    missed = [r["name"] for r in targeted if not r.get("met")]
    print(f"report: {len(records)} records -> {args.results}, {args.markdown}; "
          f"targets met {len(targeted) - len(missed)} of {len(targeted)}")
    for name in missed:
        print(f"report: target missed: {name}")
    return 0


def group(name):
    return name.split("/", 1)[0]


def merged(path, new):
    """@new (a run of some benchmarks only, VREX_BENCH_ONLY) merged into the results at @path: its
    records replace every record of the groups it measured, the others stay as they were, and the meta
    keeps the earlier run's fields with this run named in command, revision and "remeasured"."""
    try:
        with open(path, encoding="utf-8") as f:
            old = json.load(f)
    except (OSError, ValueError):
        return new
    groups = sorted({group(r["name"]) for r in new["records"]})
    m = new["meta"]
    meta = dict(old["meta"])
    which = ", ".join(groups)
    meta["command"] = (f"{meta.get('command', '?')}; {which} re-measured by '{m['command']}' at {m['revision']}, "
                       f"{m['date']}, load average {m['load_start']} at start, {m['load_end']} at end")
    meta["revision"] = f"{meta.get('revision', '?')} ({which}: {m['revision']})"
    meta["remeasured"] = meta.get("remeasured", []) + [{"groups": groups, **m}]
    keep = [r for r in old["records"] if group(r["name"]) not in groups]
    return {"meta": meta, "records": keep + new["records"]}


def stale_files(args, texts):
    """Paths whose content is not what results.json generates (hand-edited or stale)."""
    bad = []
    for path, k in outputs(args):
        want = file_text(path, k, texts)
        try:
            with open(path, encoding="utf-8") as f:
                have = f.read()
        except OSError as e:
            print(f"report --check: {e}", file=sys.stderr)
            bad.append(path)
            continue
        if want is None or have != want:
            print(f"report --check: {path} differs from what {args.results} generates "
                  f"(re-run `make bench` or bench/report.py --regenerate)", file=sys.stderr)
            bad.append(path)
    return bad


def check(args):
    """Regenerates the Markdown from results.json and compares: stale or hand-edited files fail."""
    with open(args.results, encoding="utf-8") as f:
        results = json.load(f)
    bad = stale_files(args, render(results, args.causes))
    print(f"report --check: {'stale' if bad else 'up to date'}")
    return 1 if bad else 0


def check_figures(args):
    """Every number in the reports comes from results.json: the files are exactly what results.json
    generates, and the generator's own text (report.py's prose, bench/causes.json) carries no number but
    the design constants of HANDWRITTEN_OK."""
    with open(args.results, encoding="utf-8") as f:
        results = json.load(f)
    texts = render(results, args.causes)
    bad = len(stale_files(args, texts))
    for k in ("markdown", "shie_doc"):  # the analysis is part of the Markdown
        for number, context in handwritten_numbers(texts[k]):
            print(f"report --check-figures: {k}: hand-written number {number!r} not from results.json: "
                  f"...{context}... (put the figure in a record, or list a design constant in HANDWRITTEN_OK)",
                  file=sys.stderr)
            bad += 1
    print(f"report --check-figures: {'FAILED' if bad else 'every figure comes from results.json'}")
    return 1 if bad else 0


def regenerate(args):
    with open(args.results, encoding="utf-8") as f:
        results = json.load(f)
    return write_all(args, results)


def self_test():
    recs = [
        {"name": "shie/uniform/16k/nearest: SHIE batch vs best alternative (X)", "ours": 2000.0, "baseline": 10.0,
         "unit": "queries/s", "queries_timed": 512,
         "ratio": 200.0, "target": 3, "target_on": "ratio", "met": True, "baseline_name": "X", "notes": "n",
         "ours_spread": {"min": 1900.0, "median": 2000.0, "max": 2100.0, "n": 5},
         "baseline_spread": {"min": 9.0, "median": 10.0, "max": 11.0, "n": 5},
         "kind": "comparison", "workload": "uniform/16k", "op": "nearest",
         "ratio_ci_lo": 150.0, "ratio_ci_hi": 250.0, "ratio_ci_level": 0.9375, "verdict": "faster"},
        {"name": "shie/uniform/16k/nearest: SHIE batch", "ours": 2000.0, "baseline": None, "unit": "queries/s",
         "ratio": None, "target": None, "met": None, "baseline_name": "", "notes": "n",
         "ours_spread": {"min": 1900.0, "median": 2000.0, "max": 2100.0, "n": 5}, "kind": "measurement",
         "workload": "uniform/16k", "op": "nearest", "method": "SHIE batch", "family": "shie", "queries_timed": 512,
         "path_probes": 12, "path_crowd_scan": 0, "path_budget_scan": 500, "path_group_scan": 500,
         "load_running_mean": 7.5, "load_running_max": 9, "cpus": 2, "noisy": "load"},
        {"name": "shie/uniform/16k/nearest: scan", "ours": 100.0, "baseline": 400.0, "unit": "queries/s",
         "ratio": 0.25, "target": 0.5, "met": False, "baseline_name": "roofline", "notes": "n",
         "ours_spread": {"min": 90.0, "median": 100.0, "max": 110.0, "n": 5}, "kind": "measurement",
         "workload": "uniform/16k", "op": "nearest", "method": "scan", "family": "scan", "roof_fraction": 0.25,
         "roof_bound": "compute", "roof_level": "L2"},
        {"name": "fcc/1080p: throughput", "ours": 900.0, "baseline": None, "unit": "frames/s", "ratio": None,
         "target": 1000, "target_on": "ours", "met": False, "baseline_name": "", "notes": ""},
        {"name": "alloc/trace: resident", "ours": 20.0, "baseline": 100.0, "unit": "MiB", "ratio": 0.2,
         "target": 0.5, "target_on": "ratio", "target_sense": "at_most", "met": True, "baseline_name": "B",
         "notes": ""},
    ]
    causes = [{"match": "^fcc/", "cause": "CAUSE-FCC"}, {"match": ": scan$", "cause": "CAUSE-SCAN"}]
    with tempfile.TemporaryDirectory() as d:
        parts = os.path.join(d, "parts")
        os.makedirs(parts)
        with open(os.path.join(parts, "a.jsonl"), "w", encoding="utf-8") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
        cpath = os.path.join(d, "causes.json")
        write(cpath, json.dumps(causes))
        shie_doc = os.path.join(d, "shie.md")
        write(shie_doc, f"# SHIE\n\nprose 16k\n\n{SHIE_BEGIN}\nold 1.31x\n{SHIE_END}\n\nmore prose\n")
        ns = argparse.Namespace(parts=parts, results=os.path.join(d, "r.json"), markdown=os.path.join(d, "b.md"),
                                analysis=os.path.join(d, "a.md"), shie_doc=shie_doc, causes=cpath,
                                command="make bench", mode="full",
                                revision="abc1234", load_start="5.0", load_end="7.0",
                                skipped=["vrex_bench_kernel: SKIP-REASON"])
        if generate(ns) != 0:
            return 1
        with open(ns.results, encoding="utf-8") as f:
            back = json.load(f)
        with open(ns.markdown, encoding="utf-8") as f:
            md = f.read()
        with open(ns.analysis, encoding="utf-8") as f:
            an = f.read()
        with open(shie_doc, encoding="utf-8") as f:
            sd = f.read()
        checks = [
            (back["records"] == recs, "results.json round-trips the records"),
            (back["meta"]["revision"] == "abc1234" and back["meta"]["load_start"] == "5.0", "meta recorded"),
            ("## Targets (2 of 3 met" in md, "targets summary counts met/missed, roofline apart"),
            ("200 [150–250, 93.8 %] faster" in md, "paired ratio with its confidence interval"),
            ("12 probes, 500 budget→scan (500 in the group scan)" in md, "path counts per SHIE record"),
            ("2,000 [1,900–2,100] (noisy)" in md and "1 of 1 records were measured with more runnable" in md,
             "noisy records marked and counted"),
            ("Queries timed per round: 512." in md, "the timed query count in the workload table"),
            ("2,000 [1,900–2,100]" in md, "spreads rendered"),
            ("≥ 3x" in md and "≥ 1,000 frames/s" in md and "≤ 0.5x" in md, "target rendering"),
            ("CAUSE-FCC" in an and "CAUSE-SCAN" in an, "causes of misses come from causes.json"),
            ("0 of 1 met" in an and "25 %" in md, "roofline fractions"),
            (an.strip() in md, "the analysis is part of the Markdown"),
            ("SKIP-REASON" in an and back["meta"]["skipped"], "a skipped benchmark is named with its reason"),
            (check(ns) == 0, "--check accepts freshly generated files"),
            (check_figures(ns) == 0, "--check-figures accepts the generated files"),
            (OPEN not in md + an + sd and CLOSE not in md + an + sd, "no provenance marker reaches a file"),
            (sd.startswith("# SHIE\n\nprose 16k\n") and sd.endswith("more prose\n") and "old 1.31x" not in sd
             and "| uniform/16k | nearest: SHIE batch | 512 | 12 probes, 500 budget→scan (500 in the group scan)"
             in sd and "it is a scan (faster than the bare scan)" in sd, "shie.md: only the block is generated"),
            ("no control record in this run" in an and "- fcc: fcc/1080p: throughput" in an,
             "missing controls and spreadless records are listed"),
        ]
        # A measured figure written into a cause (not a record) must fail --check-figures, even once the
        # files are regenerated; a design constant of HANDWRITTEN_OK must not.
        write(cpath, json.dumps([{"match": "^fcc/", "cause": "CAUSE-FCC at 8.29 pairs per cycle"},
                                 {"match": ": scan$", "cause": "CAUSE-SCAN, a 7B class decoder"}]))
        regenerate(ns)
        checks.append((check(ns) == 0 and check_figures(ns) == 1,
                       "--check-figures rejects a number in a cause that results.json does not carry"))
        write(cpath, json.dumps(causes + [{"match": "^alloc/", "cause": "a 7B class decoder"}]))
        regenerate(ns)
        checks.append((check_figures(ns) == 0, "--check-figures accepts a listed design constant"))
        with open(ns.markdown, "a", encoding="utf-8") as f:
            f.write("SHIE was 3.17x faster\n")
        checks.append((check_figures(ns) == 1, "--check-figures rejects a figure typed into the Markdown"))
        regenerate(ns)
        with open(shie_doc, encoding="utf-8") as f:
            sd = f.read()
        write(shie_doc, sd.replace("| 512 |", "| 96 |"))
        checks.append((check(ns) == 1, "--check rejects a hand edit inside the shie.md block"))
        write(shie_doc, sd.replace("more prose", "more prose, 1.31x by hand"))
        checks.append((check(ns) == 0, "hand-written shie.md prose outside the block is not the report's"))
        with open(ns.analysis, "a", encoding="utf-8") as f:
            f.write("hand edit\n")
        checks.append((check(ns) == 1, "--check rejects a hand-edited analysis"))
        with open(os.path.join(parts, "bad.jsonl"), "w", encoding="utf-8") as f:
            f.write('{"name": "x"}\n')
        try:
            load_parts(parts)
            checks.append((False, "a record without the required keys is rejected"))
        except ValueError:
            checks.append((True, "a record without the required keys is rejected"))
    failed = [what for ok, what in checks if not ok]
    for what in failed:
        print(f"self-test FAILED: {what}", file=sys.stderr)
    print(f"report self-test: {len(checks) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--merge", action="store_true",
                    help="merge the parts into --results: replace the groups they measured, keep the rest")
    ap.add_argument("--check", action="store_true", help="fail if the Markdown files are stale")
    ap.add_argument("--check-figures", action="store_true",
                    help="fail if the reports carry a number that is not from results.json")
    ap.add_argument("--shie-doc", help="docs/hw/shie.md: its generated block (where the index beats a scan)")
    ap.add_argument("--regenerate", action="store_true", help="rewrite the Markdown files from --results")
    ap.add_argument("--parts")
    ap.add_argument("--results")
    ap.add_argument("--markdown")
    ap.add_argument("--analysis")
    ap.add_argument("--causes", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "causes.json"))
    ap.add_argument("--command", default="make bench")
    ap.add_argument("--mode", default="full")
    ap.add_argument("--revision", help="source revision measured, e.g. git describe --always --dirty")
    ap.add_argument("--load-start", default="?")
    ap.add_argument("--load-end", default="?")
    ap.add_argument("--duration-s", type=int, help="wall-clock seconds of the run (scripts/bench.sh)")
    ap.add_argument("--skipped", action="append", default=[],
                    help="'<benchmark>: <why>' for a benchmark this run did not measure (repeatable)")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if args.check or args.check_figures or args.regenerate:
        if not (args.results and args.markdown):
            ap.error("--check/--check-figures/--regenerate need --results and --markdown")
        if args.check_figures:
            return check_figures(args)
        return check(args) if args.check else regenerate(args)
    if not (args.parts and args.results and args.markdown):
        ap.error("--parts, --results and --markdown are required")
    return generate(args)


if __name__ == "__main__":
    sys.exit(main())
