"""Why aliasing reuse loses accuracy: how often a region's CODE (the task's answer) changes between
frames that a reuse guard would let through, per guard signal and threshold.

Usage: python3 -m vrex.guard_study [CLIP_KEY ...] [--lags 1,2,8,32] [--json]   (default: CAP13, validation)

For every pair of frames (f - lag, f) of a clip and every region: does the ground-truth code change,
and would the guard accept the older block for frame f? Signals: the guard's own 32-bit SRP hash of
the region's layer-0 pre-rotation keys (lcp), a 32-bit SRP hash of its layer-0 VALUES (= the
standardised encoder features the answer reads), and the exact cosine of the region's mean feature
vector (what the code is the nearest centroid of). If even a near-1 cosine lets through about as many
code changes as no guard at all, no guard threshold can make aliasing lossless: the codes flip at
feature changes below any cheap guard's resolution.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from . import footage, script, task, train

KEY_BITS = (0, 1, 2, 4)
VALUE_BITS = (0, 1, 2, 4)
COSINES = (0.999, 0.995, 0.99, 0.98)
VALUE_SEED = 77


def popcount(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint64)
    out = np.zeros(x.shape, dtype=np.int64)
    for _ in range(64):
        out += (x & np.uint64(1)).astype(np.int64)
        x = x >> np.uint64(1)
    return out


def study(key: str, lags: list[int]) -> dict[str, Any]:
    torch.set_num_threads(1)
    model, extra = train.load(train.weights_path())
    c = model.c
    clip = task.clip_by_key(key)
    feats = torch.from_numpy(footage.encode_clip(task.clip_paths([key])[key], step=clip.step))
    codes = task.codes(feats, extra["mean"], extra["std"], extra["codebook"]).numpy()
    z = (feats - extra["mean"]) / extra["std"]
    planes = script.hash_planes(c.kv_heads, c.tokens_per_region, c.head_dim)
    with torch.no_grad():
        kh = np.stack([script.key_hashes(model.layer0_keys(model.embed_frame(f)), planes, c.regions).numpy() for f in z])
    vplanes = torch.randn(32, c.tokens_per_region * c.feat_dim, generator=torch.Generator().manual_seed(VALUE_SEED))
    vbits = ((z.view(len(z), c.regions, -1) @ vplanes.T) > 0).numpy()
    mean = F.normalize(z.view(len(z), c.regions, c.tokens_per_region, c.feat_dim).mean(2), dim=-1)
    out: dict[str, Any] = {"clip": key, "frames": int(len(z)), "lags": []}
    for lag in lags:
        if lag >= len(z):
            continue
        ch = codes[lag:] != codes[:-lag]
        dk = popcount(kh[lag:] ^ kh[:-lag])
        dv = (vbits[lag:] != vbits[:-lag]).sum(-1)
        cos = (mean[lag:] * mean[:-lag]).sum(-1).numpy()

        def row(acc: np.ndarray) -> dict[str, float]:
            return {"accepted": float(acc.mean()), "code_changed": float(ch[acc].mean()) if acc.any() else 0.0}

        out["lags"].append({
            "lag": lag, "code_changed_all": float(ch.mean()),
            "key_hash": {str(b): row(dk <= b) for b in KEY_BITS},
            "value_hash": {str(b): row(dv <= b) for b in VALUE_BITS},
            "cosine": {str(x): row(cos >= x) for x in COSINES}})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m vrex.guard_study", description=__doc__.split("\n")[0])
    ap.add_argument("clips", nargs="*", default=["CAP13"], help="task clip keys (vrex/task.py)")
    ap.add_argument("--lags", default="1,2,8,32")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    res = [study(k, [int(x) for x in args.lags.split(",")]) for k in args.clips]
    if args.json:
        print(json.dumps(res))
        return 0
    for r in res:
        print(f"{r['clip']} ({r['frames']} frames): share of accepted region pairs / code changed among them")
        for lg in r["lags"]:
            print(f"  lag {lg['lag']}: code changed in {lg['code_changed_all']:.3f} of all pairs")
            for sig in ("key_hash", "value_hash", "cosine"):
                cells = " | ".join(f"{th}: {v['accepted']:.3f} / {v['code_changed']:.3f}" for th, v in lg[sig].items())
                print(f"    {sig:10s} {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
