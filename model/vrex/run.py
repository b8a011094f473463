"""Quality and cost of vrex KV reuse on the builtin model, against exact KV, in one run.

Usage: python3 -m vrex.run [--max-frames N] [--radius R] [--json] CLIP...
Every clip is one stream. VREX_MODEL_WEIGHTS=random runs seeded random weights (CLI plumbing tests). Five runs go in lockstep over the same frames, each on its own emulated
device: exact (every region prefilled), vrex (FCC candidates + key-hash guard), control_radius0
(fingerprint radius 0), control_no_fcc (temporal candidate without the fingerprint filter) and resv
(vrex + decode-time WiCSum retrieval at --resv-ratio, compared with vrex: the `resv` object).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import footage, lcp, train
from .decoder import Config, Decoder

MODES = {
    "exact": {"reuse": False},
    "vrex": {},
    "control_radius0": {"radius": 0},
    "control_no_fcc": {"fcc": False},
    # Decode-time retrieval (retrieval.py) on top of the vrex run: WiCSum at RESV_RATIO; the `resv` object.
    "resv": {"retrieval": "wicsum"},
}
RESV_RATIO = 0.7
# Streams of the emulated device (lib/vrex_model.c's default), one device per process shared by the runs.
EMU_STREAMS = 16
KEYS = ["kl_mean", "kl_p99", "top1_agreement", "attn_rel_err_p50", "prefill_ms_ratio", "reuse_rate",
        "resident_bytes_ratio_window"]


class Acc:
    def __init__(self) -> None:
        self.kl: list[float] = []
        self.agree: list[float] = []
        self.attn: list[float] = []
        self.prefill: list[float] = []
        self.prefill_wall: list[float] = []
        self.tokens = 0
        self.reused = 0
        self.regions = 0
        self.resident = 0
        self.baseline = 0
        self.frame_kl: list[float] = []
        self.frame_top1: list[float] = []
        self.frame_reused: list[int] = []


def kl(p_logits: torch.Tensor, q_logits: torch.Tensor) -> torch.Tensor:
    lp, lq = torch.log_softmax(p_logits.double(), -1), torch.log_softmax(q_logits.double(), -1)
    return (lp.exp() * (lp - lq)).sum(-1)


def run(clips: list[Path], max_frames: int | None, radius: int, guard_bits: int,
        stream_offset: int = 0, resv_ratio: float = RESV_RATIO, max_age: int = 0,
        with_resv: bool = True) -> dict[str, Any]:
    """@stream_offset: the i-th clip's stream starts at frame i * stream_offset (so that several
    streams of one clip show different footage). @with_resv=False leaves out the resv run (no `resv`
    object): the emulated device is one per process with 16 streams, so 5 runs x 4 streams do not fit."""
    modes = {k: v for k, v in MODES.items() if with_resv or k != "resv"}
    torch.set_num_threads(1)  # see train.py: one thread on a shared 2-core machine
    if os.environ.get("VREX_MODEL_WEIGHTS") == "random":
        # Plumbing tests of the CLI (tests/tools): seeded random weights, no training.
        torch.manual_seed(0)
        model = Decoder(Config()).eval()
        norm = {"mean": torch.zeros(model.c.feat_dim), "std": torch.full((model.c.feat_dim,), 3.0)}
    else:
        model, norm = train.load()
    c = model.c
    feats = []
    starts = [i * stream_offset for i in range(len(clips))]
    for p, start in zip(clips, starts):
        f = torch.from_numpy(footage.encode_clip(p, start + max_frames if max_frames else None))[start:]
        if len(f) == 0:
            raise ValueError(f"{p}: no frames at or after frame {start}")
        feats.append((f - norm["mean"]) / norm["std"])
    sessions = {}
    for name, kw in modes.items():
        opts: dict[str, Any] = {"radius": radius, "guard_bits": guard_bits, "max_age": max_age}
        opts.update(kw)
        if name == "resv":
            opts["ratio"] = resv_ratio
        sessions[name] = lcp.Session(model, lcp.Options(**opts))
    runners = {name: [s.stream() for _ in clips] for name, s in sessions.items()}
    acc = {name: Acc() for name in modes}
    exact_ms: list[float] = []
    resv_kl: list[float] = []
    resv_agree: list[float] = []
    block_bytes = sessions["exact"].alloc.block_bytes
    lumas = [footage.frames(p, "gray", None, start + max_frames if max_frames else None) for p, start in zip(clips, starts)]
    for it, start in zip(lumas, starts):
        for _ in range(start):
            next(it)
    n = max(len(f) for f in feats)
    for t in range(n):
        frame_out: dict[str, list[tuple[torch.Tensor, lcp.FrameStats]]] = {m: [] for m in modes}
        for i, clip in enumerate(clips):
            if t >= len(feats[i]):
                continue
            luma = next(lumas[i], None)
            if luma is None:
                raise ValueError(f"{clip}: fewer decoded luma frames than encoder frames at {t}")
            # Rotate the order of the runs every frame: on a shared machine a fixed order would bias
            # the prefill-time ratio towards whichever run goes first.
            names = list(modes)
            k = (t + i) % len(names)
            for name in names[k:] + names[:k]:
                frame_out[name].append(runners[name][i].step(luma, feats[i][t], keep_attn=True))
        for name in modes:
            a = acc[name]
            resident = sum(r.peak_blocks for r in runners[name])
            a.resident += resident * block_bytes
            a.baseline += sum(min(t + 1, c.window) * c.regions for i in range(len(clips)) if t < len(feats[i])) * block_bytes
            a.prefill.append(sum(fs.prefill_s for _, fs in frame_out[name]))
            a.prefill_wall.append(sum(fs.prefill_wall_s for _, fs in frame_out[name]))
            a.tokens += sum(fs.tokens for _, fs in frame_out[name])
            a.reused += sum(fs.reused for _, fs in frame_out[name])
            a.frame_reused.append(sum(fs.reused for _, fs in frame_out[name]))
            a.regions += sum(fs.regions for _, fs in frame_out[name])
            stats = sessions[name].alloc.stats()
            held = sum(r.resident_blocks() for r in runners[name])
            if stats["resident_blocks"] != held:
                raise RuntimeError(f"{name}: HAL holds {stats['resident_blocks']} blocks, the window ledger {held}")
        exact_ms.append(acc["exact"].prefill[-1] * 1e3)
        for name in modes:
            a = acc[name]
            fk, ft = [], []
            for (le, fe), (lm, fm) in zip(frame_out["exact"], frame_out[name]):
                k = kl(le, lm)
                agree = (le.argmax(-1) == lm.argmax(-1)).double()
                a.kl += k.tolist()
                a.agree += agree.tolist()
                fk.append(k.mean().item())
                ft.append(agree.mean().item())
                for ae, am in zip(fe.attn_out, fm.attn_out):
                    a.attn.append(((am - ae).norm() / ae.norm().clamp_min(1e-12)).item())
            a.frame_kl.append(float(np.mean(fk)))
            a.frame_top1.append(float(np.mean(ft)))
        for (lv, _), (lr, _) in zip(frame_out["vrex"], frame_out.get("resv", [])):  # retrieval vs full attention
            resv_kl += kl(lv, lr).tolist()
            resv_agree += (lv.argmax(-1) == lr.argmax(-1)).double().tolist()

    def summary(name: str) -> dict[str, Any]:
        a = acc[name]
        e = acc["exact"]
        return {
            "kl_mean": float(np.mean(a.kl)),
            "kl_p99": float(np.percentile(a.kl, 99)),
            "top1_agreement": float(np.mean(a.agree)),
            "attn_rel_err_p50": float(np.percentile(a.attn, 50)),
            "prefill_ms_ratio": float(np.sum(a.prefill) / np.sum(e.prefill)),
            "prefill_ms_ratio_median_frame": float(np.median(np.array(a.prefill) / np.array(e.prefill))),
            "prefill_wall_ms_ratio": float(np.sum(a.prefill_wall) / np.sum(e.prefill_wall)),
            "prefill_tokens_ratio": a.tokens / e.tokens,
            "reuse_rate": a.reused / a.regions,
            "resident_bytes_ratio_window": a.resident / a.baseline,
        }

    out: dict[str, Any] = {
        "model": "builtin",
        "clips": [str(p) for p in clips],
        "frames": n,
        "streams": len(clips),
        "stream_offset": stream_offset,
        "window_frames": c.window,
        "radius": radius,
        "guard_hamming": guard_bits,
        "guard_max_age": max_age,
        "hash_bits": lcp.HASH_BITS,
        "block_bytes": block_bytes,
        "exact_prefill_ms_mean": float(np.mean(exact_ms)),
        "prefill_clock": "thread CPU time (torch on one thread); prefill_wall_ms_ratio is wall-clock",
    }
    out.update(summary("vrex"))
    for name in ("control_radius0", "control_no_fcc"):
        out[name] = summary(name)
    if with_resv:
        out["resv"] = resv_summary(sessions["resv"], resv_ratio, resv_kl, resv_agree, summary("resv"))
    out["per_frame"] = {
        "kl_mean": acc["vrex"].frame_kl,
        "top1_agreement": acc["vrex"].frame_top1,
        "prefill_ms_exact": [x * 1e3 for x in acc["exact"].prefill],
        "prefill_ms_vrex": [x * 1e3 for x in acc["vrex"].prefill],
        "reused_vrex": acc["vrex"].frame_reused,
    }
    return out


def resv_summary(s: lcp.Session, ratio: float, kls: list[float], agree: list[float],
                 vs_exact: dict[str, Any]) -> dict[str, Any]:
    """The `resv` object: WiCSum's recall, bytes and cost on this run's K/Q, its logits against the vrex
    run with full attention, and the anchors at WiCSum's per-row budget on the same K/Q."""
    from . import retrieval

    assert s.retrieval is not None
    st = s.retrieval.stats
    out: dict[str, Any] = {"selector": "wicsum", "ratio": ratio, "th": s.opts.resv_th,
                           "lut_scale": s.opts.resv_lut_scale, "page_tokens": retrieval.PAGE}
    out.update(retrieval.summary(st, "wicsum"))
    out["kl_mean"] = float(np.mean(kls)) if kls else 0.0
    out["top1_agreement"] = float(np.mean(agree)) if agree else 1.0
    out["kl_mean_vs_exact"] = vs_exact["kl_mean"]
    out["top1_agreement_vs_exact"] = vs_exact["top1_agreement"]
    out["oracle_tokens_for_recall95"] = float(np.mean(st.need95)) if st.need95 else 0.0
    out["clusters_per_token"] = float(np.mean(st.clusters)) if st.clusters else 0.0
    out["decode_steps"] = st.steps
    out["anchors"] = {k: retrieval.summary(st, k) for k in ("oracle", "quest", "random")}
    out["targets"] = {"recall_mean": 0.95, "top1_agreement": 0.95, "kv_bytes_ratio_max": 0.30,
                      "selection_cost_ratio_max": 1.0}
    out["met"] = {"recall": out["recall_mean"] >= 0.95, "top1": out["top1_agreement"] >= 0.95,
                  "bytes": out["kv_bytes_ratio"] <= 0.30, "cost": out["selection_cost_ratio"] < 1.0}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m vrex.run", description=__doc__.split("\n")[0])
    ap.add_argument("clips", nargs="+", type=Path, help="video files FFmpeg reads (one stream each)")
    ap.add_argument("--max-frames", type=int, default=None)
    ap.add_argument("--radius", type=int, default=20, help="fingerprint Hamming radius (0..31)")
    ap.add_argument("--guard-bits", type=int, default=lcp.Options.guard_bits, help="key-hash Hamming threshold (0..32)")
    ap.add_argument("--max-age", type=int, default=lcp.Options.max_age,
                    help="reuse a block at most this many frames after it was computed (0: no cap)")
    ap.add_argument("--stream-offset", type=int, default=0, help="the i-th clip starts at frame i * this")
    ap.add_argument("--resv-ratio", type=float, default=RESV_RATIO, help="WiCSum ratio of the resv run (0..1)")
    ap.add_argument("--json", action="store_true", help="print the JSON object only")
    args = ap.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    for p in args.clips:
        if not p.is_file():
            print(f"vrex.run: {p}: no such file", file=sys.stderr)
            return 2
    if not 0.0 <= args.resv_ratio <= 1.0:
        print("vrex.run: --resv-ratio must be 0..1", file=sys.stderr)
        return 2
    if not 0 <= args.radius <= 31 or not 0 <= args.guard_bits <= 32 or args.max_age < 0:
        print("vrex.run: --radius must be 0..31, --guard-bits 0..32 and --max-age >= 0", file=sys.stderr)
        return 2
    try:
        # Every run holds one stream per clip on the same emulated device: leave the resv run out when
        # all five do not fit (4 clips), rather than fail.
        with_resv = len(args.clips) * len(MODES) <= EMU_STREAMS
        res = run(args.clips, args.max_frames, args.radius, args.guard_bits, args.stream_offset, args.resv_ratio,
                  args.max_age, with_resv)
        if not with_resv:
            res["resv_skipped"] = (f"{len(args.clips)} streams x {len(MODES)} runs exceed the emulated device's "
                                   f"{EMU_STREAMS} streams")
    except (ValueError, RuntimeError, FileNotFoundError) as e:
        print(f"vrex.run: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(res))
    else:
        for k in KEYS:
            print(f"{k:30s} {res[k]:.4f}   radius0 {res['control_radius0'][k]:.4f}   "
                  f"no_fcc {res['control_no_fcc'][k]:.4f}")
        if "resv" not in res:
            print(f"resv: not run ({res['resv_skipped']})")
            return 0
        rv = res["resv"]
        print(f"resv (WiCSum ratio {rv['ratio']})  recall {rv['recall_mean']:.4f}, top-1 {rv['top1_agreement']:.4f}, "
              f"KV bytes {rv['kv_bytes_ratio']:.4f}, selection/saved ops {rv['selection_cost_ratio']:.3f}; oracle recall "
              f"{rv['anchors']['oracle']['recall_mean']:.4f}, quest {rv['anchors']['quest']['recall_mean']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
