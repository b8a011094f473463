"""Frames of a clip through FFmpeg, and the encoder's per-frame token features (cached per clip).

Tokens: the encoder's 8x8 feature map, region-major: SHIE region r = (r // 4, r % 4) of the 4x4
grid owns the 2x2 cells (2*ry + dy, 2*rx + dx), token index r * 4 + dy * 2 + dx.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from . import tfjs

ENCODER_PACKAGE = "nsfwjs-4.3.0"
ENCODER_LAYER = "block_12_add"  # stride 16, 96 channels: an 8x8 map at 128x128 input
INPUT_SIZE = 128
FEAT_DIM = 96
GRID = 8


def cache_root() -> Path:
    return Path(os.environ.get("VREX_CACHE", "/var/cache/vrex")) / "model"


def encoder_dir() -> Path:
    d = cache_root() / ENCODER_PACKAGE
    if not (d / "model.json").is_file():
        raise FileNotFoundError(f"{d}/model.json missing: run scripts/fetch-encoder.sh (make deps does)")
    return d


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def content_sha256(path: Path) -> str:
    """What a clip holds, whatever container it came in: the sha256 of its file, except for a
    losslessly stored image sequence (FFV1: scripts/fetch-footage.sh stores the PGM sequences so),
    whose Matroska bytes differ from one encode to the next (the muxer's random UIDs), and which is
    named by the sha256 of its decoded luma frames back to back (the manifest's `luma_sha256`)."""
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name",
                          "-of", "csv=p=0", str(path)], capture_output=True, text=True)
    if out.returncode != 0:
        raise ValueError(f"{path}: ffprobe cannot read it: {out.stderr.strip()}")
    if out.stdout.strip() != "ffv1":
        return file_sha256(path)
    h = hashlib.sha256()
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-i", str(path), "-fps_mode", "passthrough", "-f", "rawvideo",
           "-pix_fmt", "gray", "-"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as p:
        assert p.stdout is not None
        for chunk in iter(lambda: p.stdout.read(1 << 20), b""):
            h.update(chunk)
        err = p.stderr.read().decode(errors="replace") if p.stderr else ""
        if p.wait() != 0:
            raise ValueError(f"{path}: ffmpeg failed: {err.strip()}")
    return h.hexdigest()


def probe(path: Path) -> tuple[int, int]:
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "stream=width,height", "-of", "json", str(path)], capture_output=True, text=True)
    if out.returncode != 0:
        raise ValueError(f"{path}: ffprobe cannot read it: {out.stderr.strip()}")
    streams = json.loads(out.stdout).get("streams", [])
    if not streams:
        raise ValueError(f"{path}: no video stream")
    return int(streams[0]["width"]), int(streams[0]["height"])


def frames(path: Path, pix_fmt: str, size: tuple[int, int] | None = None,
           max_frames: int | None = None, step: int = 1) -> Iterator[np.ndarray]:
    """Decoded frames, one coded frame each (passthrough: tree.avi is variable-rate); with @step,
    every step-th coded frame (0, step, 2 step, ...; @max_frames counts the frames yielded)."""
    if step < 1:
        raise ValueError(f"{path}: frame step must be >= 1, not {step}")
    w, h = size if size else probe(path)
    ch = {"gray": 1, "rgb24": 3}[pix_fmt]
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-i", str(path), "-fps_mode", "passthrough"]
    if size:
        cmd += ["-vf", f"scale={w}:{h}:flags=area"]
    if max_frames:
        cmd += ["-frames:v", str(max_frames * step)]
    cmd += ["-f", "rawvideo", "-pix_fmt", pix_fmt, "-"]
    i = 0
    n = w * h * ch
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as p:
        assert p.stdout is not None
        while True:
            buf = p.stdout.read(n)
            if len(buf) < n:
                break
            i += 1
            if (i - 1) % step:
                continue
            a = np.frombuffer(buf, np.uint8)
            yield a.reshape(h, w) if ch == 1 else a.reshape(h, w, 3)
        err = p.stderr.read().decode(errors="replace") if p.stderr else ""
        if p.wait() != 0:
            raise ValueError(f"{path}: ffmpeg failed: {err.strip()}")


def region_major(fmap: torch.Tensor) -> torch.Tensor:
    """[N, C, 8, 8] -> [N, 64, C] in region-major token order."""
    n, c = fmap.shape[:2]
    x = fmap.view(n, c, 4, 2, 4, 2)  # ry dy rx dx
    return x.permute(0, 2, 4, 3, 5, 1).reshape(n, 64, c)


def encode_clip(path: Path, max_frames: int | None = None, batch: int = 32, step: int = 1) -> np.ndarray:
    """[F, 64, C] float32 encoder tokens of a clip (every @step-th frame); cached under
    cache_root()/features by the clip's sha256, the encoder and the subsampling."""
    digest = file_sha256(path)

    def cache_file(n: int | None) -> Path:
        key = f"{digest}:{ENCODER_PACKAGE}:{ENCODER_LAYER}:{INPUT_SIZE}:{n}" + (f":step{step}" if step > 1 else "")
        return cache_root() / "features" / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.npy"

    if max_frames and cache_file(None).is_file():  # the whole clip is cached already
        return np.load(cache_file(None))[:max_frames]
    cached = cache_file(max_frames)
    if cached.is_file():
        return np.load(cached)
    enc = tfjs.load(encoder_dir(), ENCODER_LAYER)
    out: list[np.ndarray] = []
    pending: list[np.ndarray] = []

    def flush() -> None:
        x = torch.from_numpy(np.stack(pending)).permute(0, 3, 1, 2).float() / 255.0
        with torch.no_grad():
            f = enc(x)
        if f.shape[-2:] != (GRID, GRID):
            raise ValueError(f"encoder map is {tuple(f.shape[-2:])}, not {GRID}x{GRID}")
        out.append(region_major(f).numpy())
        pending.clear()

    for fr in frames(path, "rgb24", (INPUT_SIZE, INPUT_SIZE), max_frames, step):
        pending.append(fr)
        if len(pending) == batch:
            flush()
    if pending:
        flush()
    if not out:
        raise ValueError(f"{path}: no frames decoded")
    feats = np.concatenate(out).astype(np.float32)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".tmp{os.getpid()}.npy")
    np.save(tmp, feats)
    tmp.replace(cached)
    return feats
