"""Stream workloads for vrex.run (`--workload`): how a stream's frames are cut from its split's clips.

  edited    task.edited_stream: segments of 16-64 frames, each from a RANDOM start of a clip other
            than the previous segment's (the model issue's streams: cuts land anywhere in a clip)
  cutback   an interview-style edit between shots: segments of 8-24 frames, shots taken in turn,
            and each shot CONTINUES where the stream left it (a shot ends: back to its start). Every
            cut back returns to a view the stream saw some 8-48 frames earlier -- past the age cap
            and the device's resident frames, so only blocks demoted to the host tier can serve it.
            Shots are the split's clips; a split of one clip (validation) gives two shots, its halves.

Both return task.Segment lists (consecutive segments are cuts: task.cut_frames).

  pan       camera motion without cuts (RENDERED: its frames are made here, not taken from the clips):
            one continuous shot of one clip per stream (stream s: clip s mod n; time runs on from a
            random start, back and forth at the clip's ends), seen through a crop window that holds,
            pans slowly (0.5-1.5 FCC grid px a frame), pans fast (2-4 grid px, within the FCC's +-4
            search) or zooms (+-1.5 % of the window a frame), one move per segment of 8-24 frames,
            bouncing off the frame's edges. Each crop goes through the encoder at 128x128 (the task's
            input) and, as luma, to the FCC at run.LUMA_SIZE; ground truth is computed from the
            crops' tokens as for any frame. Segments are the moves (the bootstrap's groups).
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from . import footage, task, tfjs

CUTBACK_SEG = (8, 24)


def cutback_stream(lengths: dict[str, int], frames: int, rng: np.random.Generator,
                   seg_min: int = CUTBACK_SEG[0], seg_max: int = CUTBACK_SEG[1]) -> list[task.Segment]:
    """@frames frames cutting between shots that each continue where they were left (see above)."""
    if frames < 1 or seg_min < 1 or seg_max < seg_min:
        raise ValueError(f"cutback: frames {frames}, segments {seg_min}..{seg_max}")
    keys = sorted(lengths)
    shots: list[tuple[str, int, int]] = []  # (clip, first frame, frames)
    if len(keys) == 1:
        n = lengths[keys[0]]
        if n < 2 * seg_min:
            raise ValueError(f"cutback: clip {keys[0]} has {n} frames, too few for two shots")
        shots = [(keys[0], 0, n // 2), (keys[0], n // 2, n - n // 2)]
    else:
        shots = [(k, 0, lengths[k]) for k in keys]
    cursor = [int(rng.integers(0, s[2])) for s in shots]
    out: list[task.Segment] = []
    left, prev = frames, -1
    while left > 0:
        pool = [i for i in range(len(shots)) if i != prev]
        i = pool[int(rng.integers(len(pool)))]
        clip, first, n_shot = shots[i]
        n = min(left, int(rng.integers(seg_min, seg_max + 1)))
        while n > 0:  # a shot that ends goes back to its start (one more cut)
            take = min(n, n_shot - cursor[i])
            out.append(task.Segment(clip, first + cursor[i], take))
            cursor[i] = (cursor[i] + take) % n_shot
            n -= take
            left -= take
        prev = i
    return out


WORKLOADS: dict[str, Callable[[dict[str, int], int, np.random.Generator], list[task.Segment]]] = {
    "edited": task.edited_stream,
    "cutback": cutback_stream,
}


# ---- pan: rendered camera motion --------------------------------------------------------------

PAN_SEG = (8, 24)
PAN_MOVES = ("hold", "slow", "fast", "zoom")
PAN_P = (0.2, 0.3, 0.3, 0.2)
PAN_SCALE = (0.45, 0.8)      # window side / frame side
PAN_START_SCALE = (0.55, 0.7)
PAN_GRID = 128               # FCC grid columns: a pan speed is in grid px of the window (docs/hw/fcc.md)
PAN_VERSION = 1              # bump when the rendering changes (the feature cache key)


@dataclass(frozen=True)
class Rendered:
    """A stream whose frames a workload made: one virtual clip @name of len(luma) frames."""
    name: str
    feats: np.ndarray      # [F, 64, C] float32 encoder tokens of the crops
    luma: np.ndarray       # [F, H, W] uint8, the FCC's input (run.LUMA_SIZE)
    segments: list[task.Segment]
    windows: np.ndarray    # [F, 5] source frame, x0, y0, width, height (source px) of each crop
    moves: list[str]       # per segment


def pan_windows(src_w: int, src_h: int, n_src: int, frames: int,
                rng: np.random.Generator) -> tuple[np.ndarray, list[task.Segment], list[str]]:
    """The crop windows of a pan stream ([frames, 5]: source frame, x0, y0, w, h), its segments
    (over frames 0..frames-1 of the stream; clip name filled in by the caller) and moves."""
    if frames < 1 or n_src < 1:
        raise ValueError(f"pan: {frames} frames from a clip of {n_src}")
    t0 = int(rng.integers(0, max(1, n_src - frames + 1)))
    scale = float(rng.uniform(*PAN_START_SCALE))
    cx = float(rng.uniform(scale / 2, 1 - scale / 2))
    cy = float(rng.uniform(scale / 2, 1 - scale / 2))
    out = np.zeros((frames, 5), np.int64)
    segs: list[task.Segment] = []
    moves: list[str] = []
    t = 0
    while t < frames:
        n = min(frames - t, int(rng.integers(PAN_SEG[0], PAN_SEG[1] + 1)))
        move = PAN_MOVES[int(rng.choice(len(PAN_MOVES), p=PAN_P))]
        speed = {"hold": 0.0, "slow": rng.uniform(0.5, 1.5), "fast": rng.uniform(2.0, 4.0), "zoom": 0.0}[move]
        ang = float(rng.uniform(0, 2 * np.pi))
        zoom = float(rng.choice([-1.0, 1.0])) * 0.015 if move == "zoom" else 0.0
        # speed: grid px a frame of the window -> a fraction of the frame (x and y alike: the grid
        # squares the window as the encoder and the FCC do)
        vx, vy = np.cos(ang) * speed / PAN_GRID, np.sin(ang) * speed / PAN_GRID
        segs.append(task.Segment("", t, n))
        moves.append(move)
        for _ in range(n):
            if t > 0:
                scale = float(np.clip(scale * (1 + zoom), *PAN_SCALE))
                cx += vx * scale
                cy += vy * scale
                half = scale / 2
                if not half <= cx <= 1 - half:  # bounce off the frame's edge
                    vx, cx = -vx, float(np.clip(cx, half, 1 - half))
                if not half <= cy <= 1 - half:
                    vy, cy = -vy, float(np.clip(cy, half, 1 - half))
            period = 2 * (n_src - 1) if n_src > 1 else 1
            k = (t0 + t) % period
            src = k if k < n_src else period - k
            w, h = round(scale * src_w), round(scale * src_h)
            x0 = min(max(round((cx - scale / 2) * src_w), 0), src_w - w)
            y0 = min(max(round((cy - scale / 2) * src_h), 0), src_h - h)
            out[t] = (src, x0, y0, w, h)
            t += 1
    return out, segs, moves


def _luma(rgb: torch.Tensor) -> torch.Tensor:
    """[N, 3, H, W] float 0..255 -> [N, 1, H, W] BT.601 luma."""
    w = torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1)
    return (rgb * w).sum(1, keepdim=True)


def render(path: Path, step: int, windows: np.ndarray, luma_size: tuple[int, int],
           batch: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """Encoder tokens [F, 64, C] and luma [F, H, W] of the crops @windows of the clip at @path
    (every @step-th frame); cached under footage.cache_root()/features/pan by the clip, the
    windows, the encoder and the luma size."""
    digest = footage.file_sha256(path)
    key = hashlib.sha256(f"{digest}:{step}:{footage.ENCODER_PACKAGE}:{footage.ENCODER_LAYER}:"
                         f"{footage.INPUT_SIZE}:{luma_size}:{PAN_VERSION}:".encode() + windows.tobytes()).hexdigest()[:20]
    d = footage.cache_root() / "features" / "pan"
    f_feat, f_luma = d / f"{key}.feat.npy", d / f"{key}.luma.npy"
    if f_feat.is_file() and f_luma.is_file():
        return np.load(f_feat), np.load(f_luma)
    need = set(int(i) for i in windows[:, 0])
    src: dict[int, np.ndarray] = {}
    for i, fr in enumerate(footage.frames(path, "rgb24", None, None, step)):
        if i in need:
            src[i] = fr
        if len(src) == len(need):
            break
    if len(src) != len(need):
        raise ValueError(f"{path}: {len(need) - len(src)} frames of the pan past the clip's end")
    enc = tfjs.load(footage.encoder_dir(), footage.ENCODER_LAYER)
    feats: list[np.ndarray] = []
    lumas: list[np.ndarray] = []
    lw, lh = luma_size
    for b in range(0, len(windows), batch):
        crops, ys = [], []
        for s_i, x0, y0, w, h in windows[b:b + batch]:
            c = torch.from_numpy(np.array(src[int(s_i)][y0:y0 + h, x0:x0 + w])).permute(2, 0, 1)
            c = c.unsqueeze(0).float()
            crops.append(F.interpolate(c, size=(footage.INPUT_SIZE, footage.INPUT_SIZE), mode="area"))
            ys.append(F.interpolate(_luma(c), size=(lh, lw), mode="area"))
        x = torch.cat(crops).round().clamp(0, 255) / 255.0
        with torch.no_grad():
            fm = enc(x)
        feats.append(footage.region_major(fm).numpy())
        lumas.append(torch.cat(ys).round().clamp(0, 255).to(torch.uint8)[:, 0].numpy())
    out_f, out_l = np.concatenate(feats).astype(np.float32), np.concatenate(lumas)
    d.mkdir(parents=True, exist_ok=True)
    for arr, dst in ((out_f, f_feat), (out_l, f_luma)):
        tmp = dst.with_suffix(f".tmp{os.getpid()}.npy")
        np.save(tmp, arr)
        tmp.replace(dst)
    return out_f, out_l


def pan_stream(sources: Sequence[tuple[str, Path, int, int]], stream: int, frames: int,
               rng: np.random.Generator, luma_size: tuple[int, int]) -> Rendered:
    """Stream @stream of the pan workload over @sources ((name, path, step, frames) of the split's
    clips): clip stream mod len(sources), see the module's doc."""
    name, path, step, n_src = sources[stream % len(sources)]
    w, h = footage.probe(path)
    windows, segs, moves = pan_windows(w, h, n_src, frames, rng)
    vname = f"{name}/pan{stream}"
    feats, luma = render(path, step, windows, luma_size)
    segs = [task.Segment(vname, s.start, s.length) for s in segs]
    return Rendered(vname, feats, luma, segs, windows, moves)


RENDERED: dict[str, Callable[..., Rendered]] = {"pan": pan_stream}
