"""Trains the builtin decoder on real footage; weights cached by a hash of code + data.

Task: for every SHIE region, predict the codebook code of that region's encoder features in the
NEXT frame, from a causal window of the last W frames' visual tokens. Codebook: spherical k-means
(64 codes) of the training frames' region features (mean of the region's 4 tokens, standardised,
L2-normalised). Data: vtest.avi frames [0, 636) + tree.avi for training, vtest.avi [636, 795) held
out. Fixed seed, 2 threads.

Usage: python3 -m vrex.train [--force]  -> prints the weights path; a no-op when cached.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from . import footage
from .decoder import Config, Decoder

SEED = 0
STEPS = 240
BATCH = 4
LR = 2e-3
VAL_WINDOWS = 16  # evaluated every EVAL_EVERY steps (the full held-out set once, at the end)
EVAL_EVERY = 80
VTEST_TRAIN = 636
KMEANS_ITERS = 30
SOURCES = ["train.py", "decoder.py", "footage.py", "tfjs.py"]


def clips() -> dict[str, Path]:
    out = subprocess.run([str(Path(__file__).resolve().parents[2] / "scripts" / "fetch-footage.sh")],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"fetch-footage.sh failed: {out.stderr.strip()}")
    env = dict(line.split("=", 1) for line in out.stdout.split())
    return {"vtest": Path(env["VREX_VTEST_AVI"]), "tree": Path(env["VREX_TREE_AVI"])}


def cache_key(paths: dict[str, Path]) -> str:
    h = hashlib.sha256()
    here = Path(__file__).parent
    for s in SOURCES:
        h.update((here / s).read_bytes())
    h.update((footage.encoder_dir() / "weights.bin").read_bytes())
    for name in sorted(paths):
        h.update(footage.file_sha256(paths[name]).encode())
    return h.hexdigest()[:16]


def region_vectors(feats: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """[F, 64, C] tokens -> [F, 16, C] unit vectors of the standardised region means."""
    z = (feats - mean) / std
    r = z.view(z.shape[0], 16, 4, z.shape[-1]).mean(2)
    return F.normalize(r, dim=-1)


def kmeans(x: torch.Tensor, k: int, iters: int, gen: torch.Generator) -> torch.Tensor:
    """Spherical k-means (cosine), k-means++-style seeding; deterministic with @gen."""
    cent = x[torch.randint(len(x), (1,), generator=gen)]
    for _ in range(k - 1):
        d = 1.0 - (x @ cent.T).max(1).values
        cent = torch.cat([cent, x[torch.multinomial(d.clamp_min(1e-9), 1, generator=gen)]])
    for _ in range(iters):
        a = (x @ cent.T).argmax(1)
        for j in range(k):
            m = x[a == j]
            if len(m):
                cent[j] = F.normalize(m.mean(0), dim=0)
    return cent


def codes(feats: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, cent: torch.Tensor) -> torch.Tensor:
    return (region_vectors(feats, mean, std) @ cent.T).argmax(-1)


def windows(feats: torch.Tensor, tgt: torch.Tensor, w: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every window of @w frames whose next frames exist: inputs [N, w, 64, C], targets [N, w, 16]."""
    n = feats.shape[0] - w
    idx = torch.arange(n)[:, None] + torch.arange(w)[None, :]
    return feats[idx], tgt[idx + 1]


def train(out_dir: Path, paths: dict[str, Path]) -> dict[str, object]:
    torch.manual_seed(SEED)
    # One thread: on a shared 2-core machine OpenMP's spinning threads cost 10x in wall time.
    torch.set_num_threads(1)
    t0 = time.time()
    vt = torch.from_numpy(footage.encode_clip(paths["vtest"]))
    tr = torch.from_numpy(footage.encode_clip(paths["tree"]))
    t_feat = time.time() - t0
    train_frames = torch.cat([vt[:VTEST_TRAIN], tr]).reshape(-1, vt.shape[-1])
    mean, std = train_frames.mean(0), train_frames.std(0) + 1e-5
    c = Config(feat_dim=vt.shape[-1])
    gen = torch.Generator().manual_seed(SEED)
    rv = torch.cat([region_vectors(vt[:VTEST_TRAIN], mean, std), region_vectors(tr, mean, std)]).reshape(-1, vt.shape[-1])
    cent = kmeans(rv, c.codes, KMEANS_ITERS, gen)

    def norm(f: torch.Tensor) -> torch.Tensor:
        return (f - mean) / std

    xs, ys = [], []
    for f in (vt[:VTEST_TRAIN], tr):
        x, y = windows(norm(f), codes(f, mean, std, cent), c.window)
        xs.append(x)
        ys.append(y)
    x_tr, y_tr = torch.cat(xs), torch.cat(ys)
    x_va, y_va = windows(norm(vt[VTEST_TRAIN:]), codes(vt[VTEST_TRAIN:], mean, std, cent), c.window)

    model = Decoder(c)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=LR, total_steps=STEPS, pct_start=0.1)
    curve: list[dict[str, float]] = []

    def evaluate(full: bool = False) -> tuple[float, float]:
        sel = slice(None) if full else slice(0, len(x_va), max(1, len(x_va) // VAL_WINDOWS))
        model.eval()
        with torch.no_grad():
            lg = model(x_va[sel])
            loss = F.cross_entropy(lg.reshape(-1, c.codes), y_va[sel].reshape(-1)).item()
            acc = (lg.argmax(-1) == y_va[sel]).float().mean().item()
        model.train()
        return loss, acc

    # Copy baseline: how often the next frame's code equals the current one (held-out frames).
    cv = codes(vt[VTEST_TRAIN:], mean, std, cent)
    copy_acc = (cv[1:] == cv[:-1]).float().mean().item()
    t1 = time.time()
    for step in range(1, STEPS + 1):
        i = torch.randint(len(x_tr), (BATCH,), generator=gen)
        lg = model(x_tr[i])
        loss = F.cross_entropy(lg.reshape(-1, c.codes), y_tr[i].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % EVAL_EVERY == 0 or step == STEPS:
            vl, va = evaluate(step == STEPS)
            curve.append({"step": step, "train_loss": round(loss.item(), 4), "val_loss": round(vl, 4),
                          "val_top1": round(va, 4)})
            print(f"train: step {step} loss {loss.item():.4f} val {vl:.4f} top1 {va:.3f}", file=sys.stderr)
    t_train = time.time() - t1
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.save({"config": c.to_dict(), "state": model.state_dict(), "mean": mean, "std": std, "codebook": cent},
               out_dir / "weights.tmp")
    (out_dir / "weights.tmp").replace(out_dir / "weights.pt")
    manifest = {
        "model": "vrex builtin video decoder",
        "config": c.to_dict(),
        "params": sum(p.numel() for p in model.parameters()),
        "encoder": {"package": "npm nsfwjs@4.3.0", "licence": "MIT (Infinite Red, Inc.)",
                    "network": "Keras MobileNetV2 alpha 1.0", "layer": footage.ENCODER_LAYER,
                    "input": footage.INPUT_SIZE, "frozen": True},
        "data": {name: {"file": p.name, "sha256": footage.file_sha256(p),
                        "source": "Debian opencv-doc 4.6.0 (University of Reading footage, acknowledgement requested)"}
                 for name, p in paths.items()},
        "split": {"train": f"vtest.avi [0, {VTEST_TRAIN}) + tree.avi (all)", "val": f"vtest.avi [{VTEST_TRAIN}, end)"},
        "seed": SEED, "steps": STEPS, "batch": BATCH, "lr": LR, "optimizer": "AdamW wd 0.01, one-cycle",
        "threads": 1, "val_windows_per_eval": f"{VAL_WINDOWS} (all at the last step)", "torch": torch.__version__,
        "train_windows": len(x_tr), "val_windows": len(x_va),
        "copy_baseline_val_top1": round(copy_acc, 4),
        "loss_curve": curve,
        "seconds": {"features": round(t_feat, 1), "train": round(t_train, 1)},
        "cache_key": out_dir.name,
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def weights_path(force: bool = False) -> Path:
    paths = clips()
    out_dir = footage.cache_root() / f"builtin-{cache_key(paths)}"
    if force or not (out_dir / "weights.pt").is_file():
        import fcntl

        out_dir.mkdir(parents=True, exist_ok=True)
        with open(out_dir / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if force or not (out_dir / "weights.pt").is_file():
                train(out_dir, paths)
    return out_dir / "weights.pt"


def load(path: Path | None = None) -> tuple[Decoder, dict[str, torch.Tensor]]:
    blob = torch.load(path or weights_path())
    model = Decoder(Config(**blob["config"]))
    model.load_state_dict(blob["state"])
    model.eval()
    return model, {k: blob[k] for k in ("mean", "std", "codebook")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--force", action="store_true", help="retrain even when cached")
    args = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
    print(weights_path(args.force))
    return 0


if __name__ == "__main__":
    sys.exit(main())
