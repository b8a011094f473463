"""Trains the builtin decoder on the task (vrex/task.py); weights cached by a hash of code + data.

Training streams are edited streams of the TRAINING clips only (a fresh random one every step);
the validation clip (task.CLIPS, split "val") gives the curve and the number every knob is frozen
on; test clips are never read here. Fixed seed, one thread (a shared 2-core machine: OpenMP's
spinning threads cost 10x in wall time).

Usage: python3 -m vrex.train [--force] [--variant deep]  -> prints the weights path; a no-op when
cached. --variant deep trains the model whose answer reads the deepest layer (decoder.VARIANTS; its
own cache directory deep-<key>, never shipped: trained once per machine). A fresh
cache takes the weights committed in model/weights/ when they were trained for this tree's cache key
(vrex/shipped.py), and trains otherwise, saying why. --ship writes the cached set to model/weights/;
--reproduce retrains from scratch and compares with the shipped set.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from . import footage, shipped, task
from .decoder import VARIANTS, Config, Decoder

SEED = 0
STEPS = 30
STREAM_FRAMES = 40      # frames per training stream (the questions reach back up to 39 frames)
QUESTIONS = 8           # per frame (cheap next to the visual tokens)
LR = 1e-3
KMEANS_ITERS = 30
EVAL_EVERY = 30
VAL_STREAMS = 2
VAL_FRAMES = 160
SOURCES = ["train.py", "task.py", "decoder.py", "footage.py", "tfjs.py"]


def cache_key(paths: dict[str, Path]) -> str:
    h = hashlib.sha256()
    here = Path(__file__).parent
    for s in SOURCES:
        h.update((here / s).read_bytes())
    h.update((footage.encoder_dir() / "weights.bin").read_bytes())
    for c in task.CLIPS:
        if c.split != "test":
            h.update(f"{c.key}:{c.step}:{c.split}:{footage.content_sha256(paths[c.key])}".encode())
    return h.hexdigest()[:16]


def key_inputs(paths: dict[str, Path]) -> dict[str, str]:
    """The sha256 of each input cache_key hashes: names what changed when a key differs."""
    here = Path(__file__).parent
    out = {f"model/vrex/{s}": footage.file_sha256(here / s) for s in SOURCES}
    out["encoder weights.bin"] = footage.file_sha256(footage.encoder_dir() / "weights.bin")
    for c in task.CLIPS:
        if c.split != "test":
            out[f"clip {c.key} (step {c.step}, {c.split})"] = footage.content_sha256(paths[c.key])
    return out


class Data:
    """Encoder tokens of the train + val clips, the standardisation and the codebook."""

    def __init__(self, paths: dict[str, Path], n_codes: int, gen: torch.Generator):
        # A cold feature cache encodes the clips, and building the encoder's layers draws from torch's
        # global RNG: forked, so the decoder's initialisation does not depend on whether the cache was
        # warm (the warm path draws nothing here, so its weights stay the shipped ones).
        with torch.random.fork_rng(devices=[]):
            self.feats = {c.key: torch.from_numpy(task.features(c, paths[c.key]))
                          for c in task.CLIPS if c.split != "test"}
        train = [self.feats[c.key] for c in task.clips_of("train")]
        flat = torch.cat(train).reshape(-1, train[0].shape[-1])
        self.mean, self.std = flat.mean(0), flat.std(0) + 1e-5
        rv = torch.cat([task.region_vectors(f, self.mean, self.std) for f in train]).reshape(-1, flat.shape[-1])
        self.codebook = task.kmeans(rv, n_codes, KMEANS_ITERS, gen)
        self.codes = {k: task.codes(f, self.mean, self.std, self.codebook) for k, f in self.feats.items()}

    def stream(self, split: str, frames: int, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor, list[task.Segment]]:
        """An edited stream of @split's clips: normalised tokens [F, 64, C], codes [F, 16], segments."""
        keys = [c.key for c in task.clips_of(split)]
        segs = task.edited_stream({k: len(self.feats[k]) for k in keys}, frames, rng)
        idx = task.stream_frames(segs)
        x = torch.stack([self.feats[k][i] for k, i in idx])
        y = torch.stack([self.codes[k][i] for k, i in idx])
        return (x - self.mean) / self.std, y, segs


def evaluate(model: Decoder, streams: list[tuple[torch.Tensor, torch.Tensor, tuple[np.ndarray, ...]]],
             base: task.Baselines) -> dict[str, Any]:
    model.eval()
    acc: dict[str, list[np.ndarray]] = {"model": [], "copy": [], "most_frequent": [], "input_blind": []}
    loss = []
    with torch.no_grad():
        for x, y, (qt, qr, qg) in streams:
            lg = model(x, torch.from_numpy(qt), torch.from_numpy(qr), torch.from_numpy(qg))
            ans = y[qg, qr]
            loss.append(F.cross_entropy(lg, ans).item())
            acc["model"].append((lg.argmax(-1) == ans).numpy())
            for k, p in base.predict(y.numpy(), qt, qr, qg).items():
                acc[k].append(p == ans.numpy())
    model.train()
    out: dict[str, Any] = {k: float(np.concatenate(v).mean()) for k, v in acc.items()}
    present = np.concatenate([qt == qg for _, _, (qt, _, qg) in streams])
    m = np.concatenate(acc["model"])
    out["model_present"] = float(m[present].mean())
    out["model_past"] = float(m[~present].mean())
    out["loss"] = float(np.mean(loss))
    return out


def train(out_dir: Path, paths: dict[str, Path], variant: str = "builtin") -> dict[str, Any]:
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    rng = np.random.default_rng(SEED)
    gen = torch.Generator().manual_seed(SEED)
    t0 = time.time()
    c = Config()
    data = Data(paths, c.codes, gen)
    c = Config(feat_dim=data.mean.shape[0])
    t_feat = time.time() - t0

    # Baselines fitted on training streams' questions (the same sampler as training).
    qs, ans = [], []
    for _ in range(20):
        _, y, _ = data.stream("train", STREAM_FRAMES, rng)
        qt, qr, qg = task.questions(len(y), QUESTIONS, rng)
        qs.append(qr)
        ans.append(y.numpy()[qg, qr])
    base = task.Baselines.fit(np.concatenate(qs), np.concatenate(ans), c.codes)

    vrng = np.random.default_rng(SEED + 1)
    val = []
    for _ in range(VAL_STREAMS):
        x, y, _ = data.stream("val", VAL_FRAMES, vrng)
        val.append((x, y, task.questions(len(y), QUESTIONS, vrng)))

    model = Decoder(c, read_layer=VARIANTS[variant])
    model.codebook.copy_(data.codebook)  # the task's codebook: the head scores against it (decoder.py)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=LR, total_steps=STEPS, pct_start=0.1)
    curve: list[dict[str, float]] = []
    t1 = time.time()
    for step in range(1, STEPS + 1):
        x, y, _ = data.stream("train", STREAM_FRAMES, rng)
        qt, qr, qg = task.questions(len(y), QUESTIONS, rng)
        lg = model(x, torch.from_numpy(qt), torch.from_numpy(qr), torch.from_numpy(qg))
        loss = F.cross_entropy(lg, y[torch.from_numpy(qg), torch.from_numpy(qr)])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % EVAL_EVERY == 0 or step == STEPS:
            ev = evaluate(model, val, base)
            curve.append({"step": step, "train_loss": round(loss.item(), 4), "val_loss": round(ev["loss"], 4),
                          "val_accuracy": round(ev["model"], 4), "val_present": round(ev["model_present"], 4),
                          "val_past": round(ev["model_past"], 4), "seconds": round(time.time() - t1, 1)})
            print(f"train: {curve[-1]}", file=sys.stderr, flush=True)
    t_train = time.time() - t1
    final = evaluate(model, val, base)
    out_dir.mkdir(parents=True, exist_ok=True)
    blob = {"config": c.to_dict(), "state": model.state_dict(), "mean": data.mean, "std": data.std,
            "codebook": data.codebook, "baselines": base.to_dict()}
    if variant != "builtin":  # the builtin's file keeps its layout (its sha256 is committed)
        blob["variant"] = variant
    torch.save(blob, out_dir / "weights.tmp")
    (out_dir / "weights.tmp").replace(out_dir / "weights.pt")
    manifest = {
        "model": "vrex builtin video decoder (task: vrex/task.py)",
        "command": "make model (python3 -m vrex.train)" if variant == "builtin"
        else f"python3 -m vrex.train --variant {variant}",
        **({} if variant == "builtin" else {"variant": variant, "read_layer": model.read_layer}),
        "config": c.to_dict(),
        "params": sum(p.numel() for p in model.parameters()),
        "encoder": {"package": "npm nsfwjs@4.3.0", "licence": "MIT (Infinite Red, Inc.)",
                    "network": "Keras MobileNetV2 alpha 1.0", "layer": footage.ENCODER_LAYER,
                    "input": footage.INPUT_SIZE, "frozen": True},
        "data": {c.key: {"file": paths[c.key].name, "sha256": footage.content_sha256(paths[c.key]), "step": c.step,
                         "split": c.split, "frames": len(data.feats[c.key])}
                 for c in task.CLIPS if c.split != "test"},
        "test_clips": [c.key for c in task.clips_of("test")],
        "seed": SEED, "steps": STEPS, "stream_frames": STREAM_FRAMES, "questions_per_frame": QUESTIONS,
        "present_share": task.P_PRESENT, "lr": LR, "optimizer": "AdamW wd 0.01, one-cycle, grad clip 1.0",
        "threads": 1, "torch": torch.__version__,
        "val": {"streams": VAL_STREAMS, "frames": VAL_FRAMES, "accuracy": final,
                "baselines": {k: final[k] for k in ("copy", "most_frequent", "input_blind")}},
        "baselines_fit": base.to_dict(),
        "loss_curve": curve,
        "seconds": {"features_and_codebook": round(t_feat, 1), "train": round(t_train, 1)},
        "cache_key": out_dir.name,
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def weights_path(force: bool = False, variant: str = "builtin") -> Path:
    """The cached weights of @variant (decoder.VARIANTS), trained (or, for the builtin, installed from
    model/weights/) when missing. A variant's key is the builtin's with the variant's name: the same
    code and data, another read layer."""
    if variant not in VARIANTS:
        raise ValueError(f"no model variant '{variant}' ({', '.join(VARIANTS)})")
    paths = task.clip_paths()
    key = cache_key(paths)
    if variant != "builtin":
        key = hashlib.sha256(f"{key}:{variant}".encode()).hexdigest()[:16]
    out_dir = footage.cache_root() / f"{variant}-{key}"
    if force or not (out_dir / "weights.pt").is_file():
        import fcntl

        out_dir.mkdir(parents=True, exist_ok=True)
        with open(out_dir / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if force or not (out_dir / "weights.pt").is_file():
                why = "--force" if force else (shipped.mismatch(key, key_inputs(paths)) if variant == "builtin"
                                               else f"variant {variant} is never shipped")
                if why is None:
                    shipped.install(out_dir)
                    print(f"train: the shipped weights ({shipped.DIR}, key {key}, sha256 verified) "
                          f"installed into {out_dir}", file=sys.stderr)
                else:
                    print(f"train: training and caching in {out_dir}, not taking the shipped weights: {why}",
                          file=sys.stderr, flush=True)
                    train(out_dir, paths, variant)
    return out_dir / "weights.pt"


def load(path: Path | None = None) -> tuple[Decoder, dict[str, Any]]:
    blob = torch.load(path or weights_path())
    model = Decoder(Config(**blob["config"]), read_layer=VARIANTS[blob.get("variant", "builtin")])
    model.load_state_dict(blob["state"])
    model.eval()
    extra = {k: blob[k] for k in ("mean", "std", "codebook")}
    extra["baselines"] = task.Baselines.from_dict(blob["baselines"])
    extra["variant"] = blob.get("variant", "builtin")
    return model, extra


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--force", action="store_true", help="retrain even when cached")
    ap.add_argument("--ship", action="store_true", help="write this tree's weights (cached or trained) to model/weights/")
    ap.add_argument("--reproduce", action="store_true", help="retrain from scratch and compare with model/weights/")
    ap.add_argument("--variant", choices=tuple(VARIANTS), default="builtin",
                    help="deep: the answer reads the deepest layer (never shipped; --ship/--reproduce: builtin only)")
    args = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if args.variant != "builtin" and (args.ship or args.reproduce):
        ap.error("--ship and --reproduce apply to the builtin weights only")
    if args.reproduce:
        return shipped.reproduce()
    path = weights_path(args.force, args.variant)
    if args.ship:
        paths = task.clip_paths()
        print(shipped.ship(path.parent, key_inputs(paths)))
        return 0
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
