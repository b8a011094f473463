"""Renders an anchors measurement (the JSON of `python3 -m vrex.run --anchors`, e.g. model/anchors-test.json):
accuracy and device KV bytes against stream length for the full cache, V-Rex and each anchor (an SVG
plot), then the anchors and ablations tables and the ReSV recall (issue 22). `make demo` leads with it.

Usage: python3 model/vrex/anchors_report.py JSON [--svg FILE] [--markdown] [--sweep JSON...]

--sweep: the anchors at equal ACCURACY. JSON is the record at the frozen budget, the others the same
streams and questions at other budgets (`--budget B --anchor-runs ...`): per anchor, the device KV it
needs to come within V-Rex's CI of the full cache (its mean accuracy change no worse than the lower
end of V-Rex's CI, or than the full cache where V-Rex's whole CI lies above it), or the largest budget
measured when none does. The sweep records may span several workloads, stream seeds and model
variants (with, for each, a record at JSON's budget): one table per (model variant, workload, seed);
two records of one budget (a rerun) are merged (merge_rerun: the runs they share must agree, but for
the DTD anchor's order dependence). Where a (variant, workload) has several seeds, a pooled table:
accuracy change with a CI by bootstrap over the segments of all seeds (the records' task.by_segment),
device KV peak min..max over the seeds, the pooled equal-accuracy point and each seed's own.

--zombie: records of the zombie-release study where blocks are aliased (`--anchor-runs` with the
no_refresh_r4 and alias_no_zombie_r* study runs: their `zombie_by_reference` section): per model
variant, workload and run, the device KV zombie release saves against creation age's curve at equal
staging traffic, and the blocks it saves staging at equal device KV, with their CIs.

Standard library only (no torch, no HAL): it runs before anything is built.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

CURVES = ("full_cache", "vrex_hierarchy", "streaming_llm", "infinipot_v", "rekv", "timechat_dtd", "quest", "random")
COLOURS = {"full_cache": "#000000", "vrex_hierarchy": "#d62728", "streaming_llm": "#1f77b4", "infinipot_v": "#2ca02c",
           "rekv": "#9467bd", "timechat_dtd": "#8c564b", "quest": "#e377c2", "random": "#7f7f7f"}
MiB = 1 << 20


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def ci(a: dict[str, Any]) -> str:
    lo, hi = a["ci95"]
    return f"{pct(a['mean'])} [{pct(lo)}, {pct(hi)}]"


def rows(j: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    out = [("anchors", k, v) for k, v in j["anchors"].items()]
    out += [("ablations", k, v) for k, v in j["ablations"].items()]
    return out


def accuracy_by_length(j: dict[str, Any], name: str) -> list[float | None]:
    run = "exact" if name == "full_cache" else name
    return [b["mean"] for b in j["task"]["by_length"][run]]


def table(j: dict[str, Any], markdown: bool) -> str:
    head = ("section", "run", "accuracy % [95 % CI]", "change vs full, points [CI]", "device KV peak MiB",
            "x full", "total KV MiB", "visual prefill FLOPs x", "step time x [CI]")
    lines = []
    for sec, name, v in rows(j):
        ch = v.get("accuracy_change")
        chs = "-" if ch is None else f"{100 * ch['mean']:+.1f} [{100 * ch['ci95'][0]:+.1f}, {100 * ch['ci95'][1]:+.1f}]"
        tr = v.get("prefill", {}).get("time_ratio")
        trs = "-" if not isinstance(tr, dict) else f"{tr['mean']:.2f} [{tr['ci95'][0]:.2f}, {tr['ci95'][1]:.2f}]"
        lines.append((sec, name, ci(v["accuracy"]), chs, f"{v['device_bytes_peak'] / MiB:.2f}",
                      f"{v['device_ratio']:.4f}", f"{v['total_bytes_peak'] / MiB:.2f}",
                      f"{v['prefill']['flops_ratio']:.3f}", trs))
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(r) + " |" for r in lines]
        return "\n".join(out)
    w = [max(len(h), *(len(r[i]) for r in lines)) for i, h in enumerate(head)]
    return "\n".join("  ".join(c.ljust(w[i]) for i, c in enumerate(r)) for r in [head, *lines])


def resv_lines(j: dict[str, Any]) -> str:
    r = j.get("resv")
    if not r or r.get("recall_mean") is None:
        return "resv: no question about the past"
    qk = r.get("qk_only", {})
    return (f"ReSV (V-Rex, position-aware) on {r['questions']} past questions: attention-mass recall "
            f"{r['recall_mean']:.3f} [{r['recall']['ci95'][0]:.3f}, {r['recall']['ci95'][1]:.3f}] reading "
            f"{100 * r['kv_bytes_ratio']:.2f} % of the history's KV blocks; at the same blocks: oracle "
            f"{r['oracle']['recall_mean']:.3f}, Quest {r['quest']['recall_mean']:.3f}, Quest + position table "
            f"{r['quest_bias']['recall_mean']:.3f}, random {r['random']['recall_mean']:.4f}; the HAL's q.k-only "
            f"ReSV {qk.get('recall_mean', float('nan')):.3f} at {100 * (qk.get('kv_bytes_ratio') or 0):.1f} % of the bytes")


def svg(j: dict[str, Any]) -> str:
    """Two panels over the stream quarters: accuracy (%), and device KV MiB (log scale)."""
    import math

    frames = [hi for _, hi in j["task"]["by_length"]["frames"]]
    W, H, L, R, T, B, GAP = 900, 380, 60, 170, 30, 45, 80
    pw = (W - L - R - GAP) / 2
    ph = H - T - B
    names = [n for n in CURVES if n in j["anchors"]]
    acc = {n: accuracy_by_length(j, n) for n in names}
    dev = {n: j["anchors"][n]["device_bytes_by_length"] for n in names}
    x0, x1 = 0, frames[-1]
    vals = [a for n in names for a in acc[n] if a is not None]
    a0, a1 = max(0.0, math.floor(min(vals) * 10) / 10), min(1.0, math.ceil(max(vals) * 10) / 10)
    dv = [d / MiB for n in names for d in dev[n] if d > 0]
    d0, d1 = math.floor(math.log10(min(dv))), math.ceil(math.log10(max(dv)))

    def px(i: int, f: float) -> float:
        return L + i * (pw + GAP) + pw * (f - x0) / max(1, x1 - x0)

    def py_acc(a: float) -> float:
        return T + ph * (1 - (a - a0) / max(1e-9, a1 - a0))

    def py_dev(d: float) -> float:
        return T + ph * (1 - (math.log10(d) - d0) / max(1e-9, d1 - d0))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>']
    for i, title in enumerate(("task accuracy (%), questions asked in each quarter",
                               "device KV peak (MiB, log), all streams")):
        xl = L + i * (pw + GAP)
        out.append(f'<rect x="{xl}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
        out.append(f'<text x="{xl}" y="{T - 10}" font-size="12">{title}</text>')
        for f in frames:
            out.append(f'<text x="{px(i, f):.1f}" y="{T + ph + 15}" text-anchor="middle">{f}</text>')
        out.append(f'<text x="{xl + pw / 2:.1f}" y="{H - 8}" text-anchor="middle">stream length (frames; 64 tokens each)</text>')
    for k in range(6):
        a = a0 + (a1 - a0) * k / 5
        out.append(f'<text x="{L - 5}" y="{py_acc(a) + 4:.1f}" text-anchor="end">{100 * a:.0f}</text>')
    for e in range(d0, d1 + 1):
        out.append(f'<text x="{L + pw + GAP - 5}" y="{py_dev(10 ** e) + 4:.1f}" text-anchor="end">{10 ** e:g}</text>')
    for n in names:
        c = COLOURS[n]
        wdt = 3 if n in ("full_cache", "vrex_hierarchy") else 1.5
        pts = " ".join(f"{px(0, f):.1f},{py_acc(a):.1f}" for f, a in zip(frames, acc[n]) if a is not None)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="{wdt}"/>')
        pts = " ".join(f"{px(1, f):.1f},{py_dev(d / MiB):.1f}" for f, d in zip(frames, dev[n]) if d > 0)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="{wdt}"/>')
    for k, n in enumerate(names):
        y = T + 14 * k + 8
        xl = W - R + 10
        out.append(f'<line x1="{xl}" y1="{y}" x2="{xl + 18}" y2="{y}" stroke="{COLOURS[n]}" stroke-width="3"/>')
        label = "V-Rex (hierarchy + ReSV)" if n == "vrex_hierarchy" else n
        out.append(f'<text x="{xl + 22}" y="{y + 4}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out)


def summary(j: dict[str, Any], markdown: bool = False) -> str:
    a = j["task"]["accuracy"]
    s = j["anchors_setup"]
    clips = ", ".join(c["key"] for c in j["clips"])
    lines = [f"V-Rex against the streaming-video KV anchors at equal device memory (issue 22): {j['questions']} "
             f"questions, {len(j['streams'])} streams x {j['args']['frames']} frames of the {j['clips'][0]['split']} "
             f"clips ({clips}), "
             f"exact cache {j['exact_cache_tokens_peak']} tokens/stream, weights {j['weights']}",
             f"device budget {s['budget_blocks_per_stream']} blocks/stream ({s['resident_frames']} resident frames + "
             f"{s['fetch_blocks_per_question']} staged per question) against the full cache's "
             f"{j['anchors']['full_cache']['device_bytes_peak'] / MiB:.1f} MiB; CI: {j['task']['ci']}",
             f"full cache (exact) {ci(a['exact'])} %, vrex (frame reuse, whole cache) {ci(a['vrex'])} %",
             "", "accuracy by stream quarter (%): " + ", ".join(f"{lo}-{hi}" for lo, hi in j["task"]["by_length"]["frames"])]
    for n in CURVES:
        if n in j["anchors"]:
            lines.append(f"  {n:16s} " + "  ".join(pct(x).rjust(5) for x in accuracy_by_length(j, n)))
    lines += ["", table(j, markdown), "", resv_lines(j)]
    return "\n".join(lines)


def threshold(vrex_change: dict[str, Any]) -> float:
    """The mean accuracy change vs the full cache an anchor needs to be at V-Rex's accuracy: the lower
    end of V-Rex's CI; where V-Rex's whole CI lies above the full cache (it reads fewer, better
    blocks), the full cache's accuracy itself (an anchor cannot beat the full cache by reading more)."""
    return min(vrex_change["ci95"][0], 0.0)


def equal_accuracy(main: dict[str, Any], sweeps: list[dict[str, Any]]) -> dict[str, Any]:
    """Per anchor of @main and @sweeps (records of the same streams and questions at other budgets):
    its points (budget, device bytes, accuracy change vs the full cache) by budget, and the first
    that comes within V-Rex's CI of the full cache (mean change >= the lower end of V-Rex's change
    CI in @main, or >= 0 where that CI lies above the full cache: see threshold()), None when no
    budget measured does."""
    v = main["anchors"]["vrex_hierarchy"]
    floor = threshold(v["accuracy_change"])
    exact = main["task"]["accuracy"]["exact"]["mean"]
    pts: dict[str, list[dict[str, Any]]] = {}
    for j in [main, *sweeps]:
        if j["task"]["accuracy"]["exact"]["mean"] != exact or j["questions"] != main["questions"]:
            raise ValueError("a sweep record is not on the same streams and questions (its full cache differs)")
        budget = j["anchors_setup"]["budget_blocks_per_stream"]
        for name, r in j["anchors"].items():
            if name not in ("full_cache", "vrex_hierarchy"):
                pts.setdefault(name, []).append({"budget": budget, "device_bytes_peak": r["device_bytes_peak"],
                                                 "accuracy_change": r["accuracy_change"]})
    out: dict[str, Any] = {"vrex": {"device_bytes_peak": v["device_bytes_peak"], "accuracy_change": v["accuracy_change"]},
                           "threshold": floor, "anchors": {}}
    for name, p in pts.items():
        p.sort(key=lambda x: x["budget"])
        hit = next((x for x in p if x["accuracy_change"]["mean"] >= floor), None)
        out["anchors"][name] = {"points": p, "reached": hit,
                                "x_vrex": hit["device_bytes_peak"] / v["device_bytes_peak"] if hit else None}
    return out


def equal_accuracy_lines(e: dict[str, Any]) -> str:
    lines = [f"At equal accuracy: the device KV each anchor needs to come within V-Rex's CI of the full cache "
             f"(mean change >= {100 * e['threshold']:+.1f} points; V-Rex {e['vrex']['device_bytes_peak'] / MiB:.2f} MiB)"]
    for name, a in e["anchors"].items():
        pts = "; ".join(f"{x['budget']}: {x['device_bytes_peak'] / MiB:.1f} MiB {100 * x['accuracy_change']['mean']:+.1f}"
                        for x in a["points"])
        r = a["reached"]
        got = (f"{r['device_bytes_peak'] / MiB:.2f} MiB (budget {r['budget']}, {a['x_vrex']:.1f}x V-Rex)" if r else
               f"not reached up to budget {a['points'][-1]['budget']}")
        lines.append(f"  {name:14s} {got}   [{pts}]")
    return "\n".join(lines)


# ---- several workloads, seeds and variants: one table each, and seeds pooled ---------------------

def budget_of(j: dict[str, Any]) -> int:
    return int(j["anchors_setup"]["budget_blocks_per_stream"])


def streams_key(j: dict[str, Any]) -> tuple[str, str, int]:
    """What fixes the streams and questions of a record: the model variant, the workload and the stream
    seed. (Not the weights' cache key: it changes with the code while the weights stay bit-identical;
    equal_accuracy and merge_rerun refuse records whose full cache answers differently.)"""
    a = j["args"]
    return j.get("model", "builtin"), a.get("workload", "edited"), int(a["seed"])


def merge_rerun(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two records of the same streams at the same budget (a rerun, e.g. with task.by_segment added):
    the anchors of both, and every run's per-segment answers either has. The runs both measured must
    agree (the runs are deterministic), except that the DTD anchor matches V-Rex's reuse rate online,
    so it moves slightly with the number of runs beside it (the order rotates per frame): a run that
    differs is taken from the record with per-segment answers, and the merged record says so in
    merge_notes; when both or neither have them, the records are refused."""
    if a["task"]["accuracy"]["exact"]["mean"] != b["task"]["accuracy"]["exact"]["mean"]:
        raise ValueError(f"two records of {streams_key(a)} at budget {budget_of(a)} differ in the full cache")
    sa, sb = a["task"].get("by_segment"), b["task"].get("by_segment")

    def same(x: dict[str, Any], y: dict[str, Any]) -> bool:
        cx, cy = x.get("accuracy_change"), y.get("accuracy_change")
        return (cx and cx["mean"]) == (cy and cy["mean"]) and x["device_bytes_peak"] == y["device_bytes_peak"]

    differ = sorted(n for n in set(a["anchors"]) & set(b["anchors"]) if not same(a["anchors"][n], b["anchors"][n]))
    if differ and bool(sa) == bool(sb):
        raise ValueError(f"two records of {streams_key(a)} at budget {budget_of(a)} differ in {', '.join(differ)} "
                         f"(other code?): not merged")
    first, second = (b, a) if sb and not sa else (a, b)  # the record with per-segment answers wins
    out = {**first, "anchors": {**second["anchors"], **first["anchors"]}}
    s1, s2 = first["task"].get("by_segment"), second["task"].get("by_segment")
    if s1 or s2:
        if s1 and s2 and (s1["groups"], s1["questions"]) != (s2["groups"], s2["questions"]):
            raise ValueError(f"two records of {streams_key(a)} at budget {budget_of(a)} differ in their segments")
        out["task"] = {**first["task"], "by_segment": {**(s1 or s2), "correct": {**(s2 or {}).get("correct", {}),
                                                                                 **(s1 or {}).get("correct", {})}}}
    notes = [*a.get("merge_notes", []), *b.get("merge_notes", [])]
    for n in differ:
        ca, cb = a["anchors"][n]["accuracy_change"]["mean"], b["anchors"][n]["accuracy_change"]["mean"]
        notes.append(f"budget {budget_of(a)}: {n} {100 * ca:+.1f} vs {100 * cb:+.1f} points in two records of these "
                     f"streams (other runs beside it); the rerun with per-segment answers taken")
    if notes:
        out["merge_notes"] = notes
    return out


def group(records: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[int, dict[str, Any]]]:
    """Records by streams_key, then by budget (reruns merged)."""
    out: dict[tuple[str, str, int], dict[int, dict[str, Any]]] = {}
    for j in records:
        g = out.setdefault(streams_key(j), {})
        b = budget_of(j)
        g[b] = merge_rerun(g[b], j) if b in g else j
    return out


def pooled_change(recs: list[dict[str, Any]], name: str, reps: int = 2000, seed: int = 0) -> dict[str, Any] | None:
    """@name's accuracy change vs the full cache over the questions of all @recs (other seeds: other
    streams), its 95 % CI by bootstrap over the segments of all of them (each record's
    task.by_segment); None when a record has no per-segment answers of @name."""
    num: list[float] = []
    den: list[float] = []
    for j in recs:
        bs = j["task"].get("by_segment")
        if not bs or name not in bs["correct"] or "exact" not in bs["correct"]:
            return None
        num += [r - e for r, e in zip(bs["correct"][name], bs["correct"]["exact"])]
        den += [float(n) for n in bs["questions"]]
    rng = random.Random(seed)
    idx = range(len(num))
    boot = []
    for _ in range(reps):
        pick = rng.choices(idx, k=len(num))
        boot.append(sum(num[i] for i in pick) / max(sum(den[i] for i in pick), 1e-300))
    boot.sort()
    return {"mean": sum(num) / sum(den), "ci95": [boot[int(0.025 * (reps - 1))], boot[int(0.975 * (reps - 1))]],
            "segments": len(num), "questions": int(sum(den)), "records": len(recs)}


def pool_seeds(seeds: dict[int, dict[int, dict[str, Any]]], main_budget: int) -> dict[str, Any]:
    """One (variant, workload) over several stream seeds (@seeds: seed -> budget -> record, each with
    a record at @main_budget): V-Rex's change pooled over the seeds; per anchor and budget measured on
    every seed, the pooled change and the device KV peak per seed; per anchor, the first budget whose
    pooled change comes within V-Rex's pooled CI, and the memory each seed's own sweep needs."""
    order = sorted(seeds)
    mains = [seeds[s][main_budget] for s in order]
    v = pooled_change(mains, "vrex_hierarchy")
    vdev = [m["anchors"]["vrex_hierarchy"]["device_bytes_peak"] for m in mains]
    per_seed = {s: equal_accuracy(seeds[s][main_budget], [r for b, r in seeds[s].items() if b != main_budget])
                for s in order}
    found = {n for m in mains for n in m["anchors"]} - {"full_cache", "vrex_hierarchy"}
    names = [n for n in CURVES if n in found] + sorted(found - set(CURVES))
    out: dict[str, Any] = {"seeds": order, "vrex": {"accuracy_change": v, "device_bytes_peak": vdev},
                           "threshold": threshold(v) if v else None, "anchors": {}}
    for name in names:
        pts = []
        budgets = sorted(set.intersection(*(set(b for b, r in seeds[s].items() if name in r["anchors"])
                                             for s in order)))
        for b in budgets:
            recs = [seeds[s][b] for s in order]
            pts.append({"budget": b, "device_bytes_peak": [r["anchors"][name]["device_bytes_peak"] for r in recs],
                        "accuracy_change": pooled_change(recs, name),
                        "accuracy_change_per_seed": [r["anchors"][name]["accuracy_change"]["mean"] for r in recs]})
        th = out["threshold"]
        hit = next((p for p in pts if th is not None and p["accuracy_change"] is not None
                    and p["accuracy_change"]["mean"] >= th), None)
        own = [per_seed[s]["anchors"].get(name, {}).get("reached") for s in order]
        out["anchors"][name] = {"points": pts, "reached": hit,
                                "reached_per_seed": [None if r is None else {"budget": r["budget"],
                                                                             "device_bytes_peak": r["device_bytes_peak"]}
                                                     for r in own],
                                "x_vrex_per_seed": [per_seed[s]["anchors"].get(name, {}).get("x_vrex") for s in order],
                                "max_budget_per_seed": [max(b for b, r in seeds[s].items() if name in r["anchors"])
                                                        for s in order]}
    return out


def spread(xs: list[float], fmt: str) -> str:
    """min..max of @xs in @fmt, one figure when they print alike."""
    lo, hi = fmt.format(min(xs)), fmt.format(max(xs))
    return lo if lo == hi else f"{lo}..{hi}"


def chg(c: dict[str, Any] | None, unit: str = "") -> str:
    """A change in points (or, with @unit " %", a relative change) with its CI."""
    if c is None:
        return "- (no per-segment answers)"
    return f"{100 * c['mean']:+.1f}{unit} [{100 * c['ci95'][0]:+.1f}, {100 * c['ci95'][1]:+.1f}]"


def pooled_lines(key: tuple[str, str], p: dict[str, Any], markdown: bool) -> str:
    v = p["vrex"]
    head = (f"Pooled over stream seeds {p['seeds']} ({key[0]} model, {key[1]} streams): V-Rex "
            f"{chg(v['accuracy_change'])} points vs the full cache"
            + (f" ({v['accuracy_change']['segments']} segments, {v['accuracy_change']['questions']} questions)"
               if v["accuracy_change"] else "")
            + f" at {spread([b / MiB for b in v['device_bytes_peak']], '{:.2f}')} MiB; an anchor reaches it at "
            + ("-" if p["threshold"] is None else f"a pooled mean change >= {100 * p['threshold']:+.1f} points"))
    rows = []
    for name, a in p["anchors"].items():
        pts = "; ".join(f"{x['budget']}: {spread([b / MiB for b in x['device_bytes_peak']], '{:.2f}')} MiB, "
                        f"{chg(x['accuracy_change'])}" for x in a["points"])
        r = a["reached"]
        pooled = (f"{spread([b / MiB for b in r['device_bytes_peak']], '{:.2f}')} MiB (budget {r['budget']}) = "
                  f"{spread([b / x for b, x in zip(r['device_bytes_peak'], v['device_bytes_peak'])], '{:.1f}')}x V-Rex") if r else \
            ("not reached" + (f" up to budget {a['points'][-1]['budget']}" if a["points"] else ""))
        own = a["reached_per_seed"]
        xs = [x for x in a["x_vrex_per_seed"] if x is not None]
        per = (f"{spread([x['device_bytes_peak'] / MiB for x in own], '{:.2f}')} MiB = {spread(xs, '{:.1f}')}x V-Rex"
               if all(own) else "; ".join(
                   f"seed {sd}: " + (f"{x['device_bytes_peak'] / MiB:.2f} MiB = {xv:.1f}x" if x else
                                     f"not reached up to budget {a['max_budget_per_seed'][i]}")
                   for i, (sd, x, xv) in enumerate(zip(p["seeds"], own, a["x_vrex_per_seed"]))))
        rows.append((name, pts, pooled, per))
    cols = ("anchor", "budget: device MiB (min..max over seeds), pooled change points [CI]",
            "pooled: memory to reach V-Rex's CI", "each seed's own sweep: memory to reach its V-Rex CI")
    if markdown:
        body = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)] + ["| " + " | ".join(r) + " |" for r in rows]
    else:
        body = [f"  {r[0]:14s} pooled {r[2]}; each seed vs its own V-Rex: {r[3]}   [{r[1]}]" for r in rows]
    return "\n".join([head, *([""] if markdown else []), *body])


def sweep_report(main: dict[str, Any], records: list[dict[str, Any]], markdown: bool = False) -> str:
    """The equal-accuracy tables of @main's streams and of every other (variant, workload, seed) among
    @records (each needs a record at @main's budget), then the seeds pooled per (variant, workload)."""
    b0 = budget_of(main)
    groups = group([main, *records])
    out = []
    for key, by_b in groups.items():
        if b0 not in by_b:
            raise ValueError(f"no record at budget {b0} for the {key[0]} model, {key[1]} streams, seed {key[2]}")
        others = [r for b, r in sorted(by_b.items()) if b != b0]
        notes = [n for r in by_b.values() for n in r.get("merge_notes", [])]
        out.append(f"[{key[0]} model, {key[1]} streams, seed {key[2]}] " +
                   equal_accuracy_lines(equal_accuracy(by_b[b0], others)) + "".join(f"\n  note: {n}" for n in notes))
    by_wl: dict[tuple[str, str], dict[int, dict[int, dict[str, Any]]]] = {}
    for (w, wl, seed), by_b in groups.items():
        by_wl.setdefault((w, wl), {})[seed] = by_b
    for key, seeds in by_wl.items():
        if len(seeds) > 1:
            out.append(pooled_lines(key, pool_seeds(seeds, b0), markdown))
    return "\n\n".join(out)


def zombie_lines(records: list[dict[str, Any]]) -> str:
    """Zombie release against creation age where blocks are aliased (ablations.zombie_by_reference),
    one line per record and run; positive: zombie release better."""
    out = ["Zombie release where blocks are aliased (no_refresh: the aliasing configuration, not V-Rex of "
           "record), against creation age's curve; positive = zombie release better:"]
    for j in records:
        z = j.get("zombie_by_reference")
        if not z:
            raise ValueError("a --zombie record has no zombie_by_reference section")
        for name, v in z.items():
            traffic = chg(v["device_bytes_saved_at_equal_traffic_rel"], " %") + (" (extrapolated)" if v["extrapolated"] else "")
            nbytes = chg(v["fetched_saved_at_equal_bytes_rel"], " %") + (" (extrapolated)" if v["extrapolated_bytes"] else "")
            out.append(f"  [{j.get('model', 'builtin')} model, {j['args']['workload']} streams, seed "
                       f"{j['args']['seed']}] {name} (creation age at its resident frames: {v['same_residency']}): "
                       f"device KV saved at equal staging traffic {traffic}; blocks staged saved at equal device "
                       f"KV {nbytes}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json", type=Path)
    ap.add_argument("--svg", type=Path, help="write the accuracy / KV bytes against stream length plot here")
    ap.add_argument("--markdown", action="store_true", help="tables as Markdown")
    ap.add_argument("--sweep", type=Path, nargs="+", default=[],
                    help="records at other budgets (and other workloads or seeds, each with a record at JSON's "
                         "budget): the anchors at equal accuracy")
    ap.add_argument("--zombie", type=Path, nargs="+", default=[],
                    help="records of the zombie-release study where blocks are aliased (zombie_by_reference)")
    args = ap.parse_args(argv)
    try:
        j = json.loads(args.json.read_text())
        text = summary(j, args.markdown)
        if args.sweep:
            text += "\n\n" + sweep_report(j, [json.loads(p.read_text()) for p in args.sweep], args.markdown)
        if args.zombie:
            text += "\n\n" + zombie_lines([json.loads(p.read_text()) for p in args.zombie])
        if args.svg:
            args.svg.write_text(svg(j))
    except (OSError, ValueError, KeyError) as e:
        print(f"anchors_report: {args.json}: {e!r} (not the JSON of python3 -m vrex.run --anchors?)", file=sys.stderr)
        return 1
    print(text)
    if args.svg:
        print(f"plot: {args.svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
