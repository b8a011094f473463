"""Renders an anchors measurement (the JSON of `python3 -m vrex.run --anchors`, e.g. model/anchors-test.json):
accuracy and device KV bytes against stream length for the full cache, V-Rex and each anchor (an SVG
plot), then the anchors and ablations tables and the ReSV recall (issue 22). `make demo` leads with it.

Usage: python3 model/vrex/anchors_report.py JSON [--svg FILE] [--markdown] [--sweep JSON...]

--sweep: the anchors at equal ACCURACY. JSON is the record at the frozen budget, the others the same
streams and questions at other budgets (`--budget B --anchor-runs ...`): per anchor, the device KV it
needs to come within V-Rex's CI of the full cache (its mean accuracy change no worse than the lower
end of V-Rex's CI), or the largest budget measured when none does.

Standard library only (no torch, no HAL): it runs before anything is built.
"""
from __future__ import annotations

import argparse
import json
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


def equal_accuracy(main: dict[str, Any], sweeps: list[dict[str, Any]]) -> dict[str, Any]:
    """Per anchor of @main and @sweeps (records of the same streams and questions at other budgets):
    its points (budget, device bytes, accuracy change vs the full cache) by budget, and the first
    that comes within V-Rex's CI of the full cache (mean change >= the lower end of V-Rex's change
    CI in @main), None when no budget measured does."""
    v = main["anchors"]["vrex_hierarchy"]
    floor = v["accuracy_change"]["ci95"][0]
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json", type=Path)
    ap.add_argument("--svg", type=Path, help="write the accuracy / KV bytes against stream length plot here")
    ap.add_argument("--markdown", action="store_true", help="tables as Markdown")
    ap.add_argument("--sweep", type=Path, nargs="+", default=[],
                    help="records of the same streams at other budgets: the anchors at equal accuracy")
    args = ap.parse_args(argv)
    try:
        j = json.loads(args.json.read_text())
        text = summary(j, args.markdown)
        if args.sweep:
            text += "\n\n" + equal_accuracy_lines(equal_accuracy(j, [json.loads(p.read_text()) for p in args.sweep]))
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
