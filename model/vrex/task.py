"""The task: long online streams of real footage, with questions that need the past and the present.

Clips (fetched by scripts/fetch-footage.sh from their packages; never committed) are held out BY
CLIP: training clips, one validation clip (every knob is frozen on it) and test clips (scored).
A stream is an edited sequence of segments of its split's clips: it cuts between clips and comes
back to them (revisits), and runs for hundreds of frames, so the exact KV cache grows past 10k
tokens (64 visual tokens a frame).

Ground truth, computed exactly from the footage: the code of region r at frame f = the nearest
codebook centroid (cosine) to the region's standardised mean encoder vector (codebook: spherical
k-means of the TRAINING clips' region vectors, fixed seed). At random frames t, transient questions
"which code did region r have k frames ago" are asked (k = 0: the present-frame task; k > 0 log-
uniform in [1, t]: the past). Answer = code[t - k, r].

Trivial baselines (scored on the same questions):
  copy            k = 0: the region's code in the previous frame; k > 0: its code now (nothing changed)
  most_frequent   the most frequent code of the training streams' answers
  input_blind     the most frequent training answer for the question's region (all the question says
                  without looking at the video)
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from . import footage

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Clip:
    key: str    # scripts/fetch-footage.sh key (tools/pipeline/footage-manifest.json)
    step: int   # keep every step-th coded frame (subsampled fps: encoder cost, more motion per frame)
    split: str


# Training: every genre but surveillance; validation: a webcam room; test: a fixed-camera plaza
# (people, cars) and a robot-arm camera over a street scene. No test or validation frame is trained on.
CLIPS = (
    Clip("FRANCK", 4, "train"),     # 4800 frames @ 24 fps -> 1200 @ 6 fps: a talking head
    Clip("MEGAMIND", 2, "train"),   # 270 -> 135: CGI with film cuts
    Clip("CUBE", 2, "train"),       # mbt-cube 218 -> 109: hand pushing a cube on a table
    Clip("LAUNCH", 2, "train"),     # oa4_launch 194 -> 97: rocket launch, two cameras
    Clip("TREE", 1, "train"),       # 68: handheld, foliage
    Clip("VCUBE", 1, "train"),      # visp-cube 80: camera moving over a cube
    Clip("CAP13", 3, "val"),        # 765 @ 25 fps -> 255: webcam, man in a room
    Clip("VTEST", 1, "test"),       # 795 @ 10 fps: fixed-camera plaza
    Clip("MIRE", 2, "test"),        # mire-2 501 -> 251: robot-arm camera, street behind a target
)


def clip_paths(keys: list[str] | None = None) -> dict[str, Path]:
    """Fetches the clips (cached) and returns their paths by key."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "fetch-footage.sh"
    args = [str(script)]
    for k in keys or []:
        args += ["--clip", k]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"fetch-footage.sh failed: {out.stderr.strip()}")
    env = dict(line.split("=", 1) for line in out.stdout.split())
    want = keys or [c.key for c in CLIPS]
    return {k: Path(env[f"VREX_{k}_PATH"]) for k in want}


def clips_of(split: str) -> list[Clip]:
    if split not in SPLITS:
        raise ValueError(f"unknown split '{split}' ({', '.join(SPLITS)})")
    return [c for c in CLIPS if c.split == split]


def clip_by_key(key: str) -> Clip:
    for c in CLIPS:
        if c.key == key:
            return c
    raise ValueError(f"no clip {key} in vrex.task.CLIPS")


def features(clip: Clip, path: Path) -> np.ndarray:
    """[F, 64, C] encoder tokens of the subsampled clip (cached per clip sha256 + step)."""
    return footage.encode_clip(path, step=clip.step)


# ---- codes -----------------------------------------------------------------------------------

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
    """[F, 16] ground-truth code of every region of every frame."""
    return (region_vectors(feats, mean, std) @ cent.T).argmax(-1)


# ---- streams ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Segment:
    clip: str   # key
    start: int  # first (subsampled) frame
    length: int


def edited_stream(lengths: dict[str, int], frames: int, rng: np.random.Generator,
                  seg_min: int = 16, seg_max: int = 64) -> list[Segment]:
    """An edited stream of @frames frames: segments of seg_min..seg_max frames, each from a clip
    of @lengths (key -> frames) at a random start; consecutive segments come from different clips
    when there are several, so the stream cuts and comes back (revisits a clip, often its scenes)."""
    keys = sorted(lengths)
    out: list[Segment] = []
    left = frames
    prev = None
    while left > 0:
        pool = [k for k in keys if k != prev] or keys
        k = pool[int(rng.integers(len(pool)))]
        n = min(left, int(rng.integers(seg_min, seg_max + 1)), lengths[k])
        start = int(rng.integers(0, lengths[k] - n + 1))
        out.append(Segment(k, start, n))
        left -= n
        prev = k
    return out


def stream_frames(segments: list[Segment]) -> list[tuple[str, int]]:
    return [(s.clip, s.start + i) for s in segments for i in range(s.length)]


def cut_frames(segments: list[Segment]) -> set[int]:
    """Stream frames that start a segment after the first (a cut)."""
    out, t = set(), 0
    for s in segments[:-1]:
        t += s.length
        out.add(t)
    return out


# ---- questions -------------------------------------------------------------------------------

P_PRESENT = 0.25  # share of k = 0 questions


def questions(frames: int, per_frame: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Questions of a stream: (asked at frame t, region r, target frame t - k), @per_frame per frame."""
    t = np.repeat(np.arange(frames), per_frame)
    r = rng.integers(0, 16, len(t))
    present = (rng.random(len(t)) < P_PRESENT) | (t == 0)
    k = np.floor(np.exp(rng.random(len(t)) * np.log(np.maximum(t, 1) + 1.0))).astype(np.int64)
    k = np.clip(k, 1, np.maximum(t, 1))
    k[present] = 0
    return t, r, t - k


@dataclass
class Baselines:
    """Fitted on the training streams' questions and answers."""
    most_frequent: int
    per_region: np.ndarray  # [16] most frequent answer per region

    @staticmethod
    def fit(q_region: np.ndarray, answers: np.ndarray, n_codes: int) -> "Baselines":
        mf = int(np.bincount(answers, minlength=n_codes).argmax())
        pr = np.array([int(np.bincount(answers[q_region == r], minlength=n_codes).argmax())
                       if (q_region == r).any() else mf for r in range(16)])
        return Baselines(mf, pr)

    def predict(self, code: np.ndarray, q_t: np.ndarray, q_region: np.ndarray,
                q_target: np.ndarray) -> dict[str, np.ndarray]:
        """@code [F, 16] ground truth of the stream -> each baseline's answers."""
        prev = np.maximum(q_t - 1, 0)
        copy = np.where(q_target == q_t, code[prev, q_region], code[q_t, q_region])
        return {"copy": copy, "most_frequent": np.full(len(q_t), self.most_frequent),
                "input_blind": self.per_region[q_region]}

    def to_dict(self) -> dict[str, object]:
        return {"most_frequent": self.most_frequent, "per_region": self.per_region.tolist()}

    @staticmethod
    def from_dict(d: dict[str, object]) -> "Baselines":
        return Baselines(int(d["most_frequent"]), np.array(d["per_region"]))  # type: ignore[arg-type]


# ---- statistics ------------------------------------------------------------------------------

def bootstrap_ci(values: np.ndarray, groups: np.ndarray, reps: int = 2000, seed: int = 0,
                 ratio_of: np.ndarray | None = None) -> tuple[float, float, float]:
    """Mean of @values and its 95 % CI by bootstrap over @groups (resampled whole: e.g. stream
    segments, so correlated frames stay together). With @ratio_of: the ratio sum(values) /
    sum(ratio_of) instead of a mean."""
    ids, inv = np.unique(groups, return_inverse=True)
    num = np.bincount(inv, weights=values, minlength=len(ids))
    den = np.bincount(inv, weights=ratio_of if ratio_of is not None else np.ones_like(values, dtype=float),
                      minlength=len(ids))
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(ids), (reps, len(ids)))
    boot = num[pick].sum(1) / np.maximum(den[pick].sum(1), 1e-300)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float(num.sum() / den.sum()), float(lo), float(hi)


def ci_dict(values: np.ndarray, groups: np.ndarray, **kw: object) -> dict[str, object]:
    m, lo, hi = bootstrap_ci(values, groups, **kw)  # type: ignore[arg-type]
    return {"mean": m, "ci95": [lo, hi]}
