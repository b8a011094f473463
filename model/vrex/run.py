"""Task accuracy, KV memory and prefill cost of vrex reuse on the builtin model, against exact KV.

Usage: python3 -m vrex.run [--json] [--streams N] [--frames N] [--path cpp|python] CLIP...

Two paths run the same stream loop with the same policy (model/cpp, vrex::lcp::ReusePolicy over
libvrex-hal): cpp (the default) -- vrex::lcp::StreamRunner, libtorch executing decoder.py's step
scripted by vrex/script.py (vrex/cpp_path.py); python -- lcp.StreamRunner, torch in Python driving the
C++ policy through the binding. model/tests/test_cpp_path.py holds their decisions and answers equal.

The clips (held out from training: a training or validation clip is refused) are cut into S edited
streams of F frames each (segments of 16-64 frames from random starts, cutting between the clips and
coming back: vrex/task.py), fixed seed. Every stream runs in lockstep under each policy, each policy
on its own emulated device, the order rotating per frame (--run-block N: per block of N frames, each
run stepping through the block's frames in a row): exact (every region computed: the whole,
growing KV cache), vrex (HAL candidates + key-hash guard + age cap) and control_radius0 (fingerprint
radius 0). Every frame asks Q transient questions "which code did region r have k frames ago"; the
same questions go to every policy and to the trivial baselines.

Statistics: every mean has a 95 % CI by bootstrap over stream segments (a segment = one cut of one
clip; 2000 resamples, seed 0). Time: thread CPU time of the whole step (HAL calls included, one clock
for all policies and both paths), the first --warmup frames of each stream discarded. "emulation":
the product figure (issue 26), the time of the vrex run's calls into the vrex layer per frame over
the exact run's step on the same frame.
VREX_MODEL_WEIGHTS=random runs seeded random weights (CLI plumbing tests; no training).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import cpp_path, footage, lcp, task, train, workloads
from .decoder import VARIANTS, Config, Decoder, step_flops

RUNS = {
    "exact": {"policy": "exact"},
    "vrex": {"policy": "vrex"},
    "control_radius0": {"policy": "vrex", "radius": 0},
}
# The C++ path adds V-Rex's question read: each question reads the blocks ReSV selects over its
# reach (keys hashed once at insertion, position-aware WiCSum) and the current frame, not every
# token of its reach (cpp_path.READS; docs/model.md "Prefill FLOPs and time").
RESV_READ_RUN = {"vrex_resv": {"policy": "vrex", "extra": {"read": "resv", "ratio": 0.5}}}
LUMA_SIZE = (256, 192)  # the FCC's input: luma scaled once per clip (it fingerprints 8x8 macroblocks)
SEED = 21
PATHS = ("cpp", "python")


@dataclass
class Rec:
    """Per question and per frame records of one policy."""
    answer: list[np.ndarray] = field(default_factory=list)
    logp: list[torch.Tensor] = field(default_factory=list)
    reused_target: list[np.ndarray] = field(default_factory=list)  # the question's (frame, region) reused
    step_s: list[float] = field(default_factory=list)
    emu_s: list[float] = field(default_factory=list)  # of step_s: inside the vrex layer's calls (lcp.FrameStats)
    stages: list[dict[str, float]] = field(default_factory=list)  # emu_s per stage (C++ path)
    engine: list[dict[str, float]] = field(default_factory=list)  # the rest of step_s per part (C++ path)
    fcc_s: list[float | None] = field(default_factory=list)  # the FCC's own work (C++ path, profile)
    ask_s: list[float | None] = field(default_factory=list)  # of step_s: the questions' half (Python path)
    flops: list[int] = field(default_factory=list)
    fresh: list[int] = field(default_factory=list)  # regions computed per frame
    reused: int = 0
    regions: int = 0
    distinct_blocks: int = 0
    cache_tokens: int = 0
    policy: dict[str, Any] = field(default_factory=dict)  # Policy.stats() (vrex/anchors.py)


def load_model(variant: str = "builtin") -> tuple[Decoder, dict[str, Any]]:
    """The trained weights of @variant (decoder.VARIANTS: "deep" answers from the deepest layer)."""
    if os.environ.get("VREX_MODEL_WEIGHTS") == "random":
        torch.manual_seed(0)
        model = Decoder(Config(), read_layer=VARIANTS[variant]).eval()
        c = model.c
        gen = torch.Generator().manual_seed(0)
        cent = torch.nn.functional.normalize(torch.randn(c.codes, c.feat_dim, generator=gen), dim=-1)
        model.codebook.copy_(cent)
        return model, {"mean": torch.zeros(c.feat_dim), "std": torch.full((c.feat_dim,), 3.0), "codebook": cent,
                       "baselines": task.Baselines(0, np.zeros(16, dtype=np.int64)), "weights": "random",
                       "variant": variant}
    path = train.weights_path(variant=variant)
    model, extra = train.load(path)
    extra["weights"] = path.parent.name
    return model, extra


def identify(paths: list[Path], split: str = "test") -> list[task.Clip]:
    """The task's clip of each path (by sha256); a clip the task does not know is held out by
    definition (step 1). Clips of another split than @split are refused: scores come from test clips
    (never trained on, never tuned on), knobs are tuned on the validation clip (vrex/tune.py)."""
    shas = {}
    manifest = json.loads((Path(__file__).resolve().parents[2] / "tools/pipeline/footage-manifest.json").read_text())
    # A video is named by its file's sha256, an image sequence (stored as FFV1, new bytes at each
    # encode) by its decoded luma's: footage.content_sha256 gives whichever applies.
    by_key = {c["key"]: c.get("luma_sha256", c["sha256"]) for c in manifest["clips"]}
    for c in task.CLIPS:
        if c.key in by_key:
            shas[by_key[c.key]] = c
    out = []
    for p in paths:
        c = shas.get(footage.content_sha256(p))
        if c is None:
            c = task.Clip(p.name, 1, split)
        elif c.split != split:
            raise ValueError(f"{p}: {c.key} is a {c.split} clip of the model (vrex/task.py): this run takes "
                             f"{split} clips only ({', '.join(x.key for x in task.clips_of(split))}); scores "
                             f"must come from held-out clips")
        out.append(c)
    return out


def run(paths: list[Path], streams: int, frames: int, questions: int, radius: int, guard_bits: int, max_age: int,
        warmup: int = 8, runs: dict[str, dict[str, Any]] | None = None, seed: int = SEED,
        split: str = "test", path: str | None = None, resv_read: bool = False,
        workload: str = "edited", profile: bool = False, variant: str = "builtin",
        kernels: str = "native", block: int = 1) -> dict[str, Any]:
    """@profile: the C++ path also times the FCC's own work per frame (the product figure's
    breakdown: emulation.stages). @path: "cpp" (vrex/cpp_path.py: the scripted decoder under libtorch, the C++ policy) or
    "python" (lcp.StreamRunner: torch in Python driving the same C++ policy); None: cpp when its
    extension was built (libtorch-dev), else python. Runs with a Python plug-in policy
    (vrex/anchors.py) take the Python path. The JSON's args.path says which ran. @resv_read: on the
    C++ path, also run vrex_resv (RESV_READ_RUN: V-Rex's question read over ReSV's selection).
    @kernels: what runs the decoder on the C++ path (cpp_path.KERNELS), every run alike. @block: frames
    a run steps through in a row (its streams' steps alternating), the runs' order rotating per block;
    1: the runs alternate every step, the order rotating per frame and stream. The decisions and
    answers are the same either way; only the step times differ (what each step finds in the caches)."""
    if path is None:
        path = "cpp" if cpp_path.available() else "python"
    if workload not in workloads.WORKLOADS and workload not in workloads.RENDERED:
        raise ValueError(f"workload must be one of {', '.join([*workloads.WORKLOADS, *workloads.RENDERED])}, "
                         f"not '{workload}'")
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, not '{path}'")
    torch.set_num_threads(1)  # one thread on a shared 2-core machine (train.py)
    if block < 1:
        raise ValueError(f"a block of {block} frames: it must be >= 1")
    if warmup >= frames:
        raise ValueError(f"{warmup} warm-up frames leave none of the {frames} frames per stream to time")
    runs = runs or RUNS
    if "exact" not in runs:
        raise ValueError("the exact run is the reference: it must be one of the runs")
    model, extra = load_model(variant)
    c = model.c
    clips = identify(paths, split)
    names = [f"{cl.key}#{i}" for i, cl in enumerate(clips)]
    feats = {n: torch.from_numpy(footage.encode_clip(p, step=cl.step)) for n, p, cl in zip(names, paths, clips)}
    lumas: dict[str, np.ndarray] = {}
    if workload not in workloads.RENDERED:  # a rendered workload makes its own luma (below)
        lumas = {n: np.stack(list(footage.frames(p, "gray", LUMA_SIZE, None, cl.step)))
                 for n, p, cl in zip(names, paths, clips)}
        for n in names:
            if len(lumas[n]) != len(feats[n]):
                raise ValueError(f"{n}: {len(lumas[n])} luma frames but {len(feats[n])} encoder frames")
    rng = np.random.default_rng(seed)
    rendered: list[workloads.Rendered] = []
    if workload in workloads.RENDERED:  # the workload makes its frames (a crop per frame): virtual clips
        sources = [(n, p, cl.step, len(feats[n])) for n, p, cl in zip(names, paths, clips)]
        rendered = [workloads.RENDERED[workload](sources, s, frames, rng, LUMA_SIZE) for s in range(streams)]
        feats = {r.name: torch.from_numpy(r.feats) for r in rendered}
        lumas = {r.name: r.luma for r in rendered}
    codes = {n: task.codes(f, extra["mean"], extra["std"], extra["codebook"]).numpy() for n, f in feats.items()}
    plan = []
    for s in range(streams):
        if rendered:
            segs = rendered[s].segments
        else:
            segs = workloads.WORKLOADS[workload]({n: len(feats[n]) for n in names}, frames, rng)
        idx = task.stream_frames(segs)
        seg_of = np.concatenate([np.full(sg.length, i) for i, sg in enumerate(segs)])
        qt, qr, qg = task.questions(len(idx), questions, rng)
        plan.append({"segments": segs, "idx": idx, "seg_of": seg_of, "q": (qt, qr, qg),
                     "code": np.stack([codes[n][i] for n, i in idx]), "cuts": set() if rendered else task.cut_frames(segs),
                     "moves": rendered[s].moves if rendered else None})

    base_opts = {"radius": radius, "guard_bits": guard_bits, "max_age": max_age}
    if path == "cpp" and any(cpp_path.why_not(kw) is not None for kw in runs.values()):
        path = "python"
    if path == "python" and any(kw.get("extra", {}).get("host_reserve") for kw in runs.values()):
        raise ValueError("--host-reserve sets up the C++ runner's host pool: it runs on the C++ path only, and "
                         "these runs take the Python path")
    if resv_read and path == "cpp":
        runs = {**runs, **RESV_READ_RUN}
    # The C++ runner's question read "resv" (cpp_path.READS); anchors.py's managed runs name their own
    # reads, one of them also "resv" (resv_qk_only), and those do run in Python.
    if path == "python" and any(kw.get("policy", "vrex") in ("exact", "vrex") and kw.get("extra", {}).get("read") == "resv"
                                for kw in runs.values()):
        raise ValueError("the ReSV question read (vrex_resv) runs on the C++ path only")
    if path == "cpp":
        with cpp_path.tempdir() as d:
            module = cpp_path.scripted(model, d)
            sessions: dict[str, Any] = {name: cpp_path.Session(model, lcp.Options(**{**base_opts, **kw}), module,
                                                               profile=profile and name == "vrex", kernels=kernels)
                                        for name, kw in runs.items()}
    else:
        sessions = {name: lcp.Session(model, lcp.Options(**{**base_opts, **kw})) for name, kw in runs.items()}
    runners = {name: [sess.stream() for _ in plan] for name, sess in sessions.items()}
    recs = {name: [Rec() for _ in plan] for name in runs}
    order = list(runs)
    n_frames = max(len(p["idx"]) for p in plan)
    reused_map = {name: [np.zeros((len(p["idx"]), c.regions), bool) for p in plan] for name in runs}
    progress = os.environ.get("VREX_RUN_PROGRESS") == "1"

    def step(name: str, si: int, t: int) -> None:
        p = plan[si]
        n, i = p["idx"][t]
        tok = (feats[n][i] - extra["mean"]) / extra["std"]
        qt, qr, qg = p["q"]
        sel = qt == t
        q_r, q_g = torch.from_numpy(qr[sel]), torch.from_numpy(qg[sel])
        logits, fs = runners[name][si].step(lumas[n][i], tok, q_r, q_g)
        r = recs[name][si]
        r.answer.append(logits.argmax(-1).numpy())
        r.logp.append(torch.log_softmax(logits.double(), -1))
        r.step_s.append(fs.step_s)
        r.emu_s.append(fs.emu_s)
        r.stages.append(fs.stages)
        r.engine.append(fs.engine)
        r.fcc_s.append(fs.fcc_s)
        r.ask_s.append(fs.ask_s)
        r.flops.append(fs.flops)
        r.fresh.append(fs.regions - fs.reused)
        r.reused += fs.reused
        r.regions += fs.regions
        reused_map[name][si][t] = fs.reused_region

    # A run that reads the reuse meter (DTD's "match") needs its producer ahead of it in every block.
    reads_meter = any(kw.get("extra", {}).get("match") is not None for kw in runs.values())
    producers = [n for n, kw in runs.items() if reads_meter and kw.get("extra", {}).get("meter") is not None]
    shown = -1
    for name, si, t in step_order(order, producers, [len(p["idx"]) for p in plan], block):
        if progress and t % 16 == 0 and t != shown:
            shown = t
            print(f"vrex.run: frame {t}/{n_frames}", file=sys.stderr, flush=True)
        step(name, si, t)
    for name in runs:
        for si in range(len(plan)):
            rr = runners[name][si]
            recs[name][si].distinct_blocks = rr.distinct_blocks()
            recs[name][si].cache_tokens = rr.cache_tokens()
            _, qr, qg = plan[si]["q"]
            recs[name][si].reused_target = [reused_map[name][si][qg, qr]]
            recs[name][si].policy = rr.policy.stats()
            rr.close()
    block_bytes = sessions["exact"].alloc.block_bytes
    # Each runner and its policy refer to each other, so only the cyclic collector frees them and
    # their streams, and every Session of one geometry in the process shares an emulated device of 16
    # streams. Free them here, or a process that runs several times (pytest) finds them all taken.
    del runners, sessions, rr
    gc.collect()
    return summarise(plan, recs, runs, model.c, extra, block_bytes, clips, paths,
                     {"streams": streams, "frames": frames, "questions_per_frame": questions, "radius": radius,
                      "guard_bits": guard_bits, "max_age": max_age, "warmup": warmup, "seed": seed, "path": path,
                      "runs": list(runs), "workload": workload, "block": block,
                      **({"kernels": kernels} if path == "cpp" else {})})


def step_order(runs: Sequence[str], producers: Sequence[str], frames: Sequence[int],
               block: int) -> Iterator[tuple[str, int, int]]:
    """(run, stream, frame) of every step, in the order they go. @frames: each stream's length. With
    @block 1 the runs alternate every step, their order rotating per frame and stream (load must not
    bias one run). Otherwise each run steps through a block of frames in a row, its streams
    alternating, the order rotating per block; @producers (the runs feeding anchors.ReuseMeter, which
    the DTD run reads at frame t for the frames before t) go first in every block, so what the reader
    sees does not depend on the block."""
    n_frames = max(frames)
    for b0 in range(0, n_frames, block):
        if block == 1:
            for si, n in enumerate(frames):
                if b0 < n:
                    k = (b0 + si) % len(runs)
                    for name in [*runs[k:], *runs[:k]]:
                        yield name, si, b0
            continue
        k = (b0 // block) % len(runs)
        rotated = [*runs[k:], *runs[:k]]
        for name in [n for n in rotated if n in producers] + [n for n in rotated if n not in producers]:
            for t in range(b0, min(b0 + block, n_frames)):
                for si, n in enumerate(frames):
                    if t < n:
                        yield name, si, t


def paired_frames(plan: list[dict[str, Any]], recs: dict[str, list[Rec]], name: str,
                  field_name: str | Callable[[Rec], Sequence[Any]],
                  warmup: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per frame of every stream, the first @warmup frames of each left out: run @name's per-frame
    field @field_name (a Rec list: step_s, emu_s, flops, fcc_s; or a function of the Rec giving one
    value per frame, e.g. one stage of Rec.stages), the exact run's step time on the same frame
    (the runs go in lockstep) and the frame's bootstrap group (stream, segment). What every timed
    ratio of summarise() pairs."""
    num, den, gr = [], [], []
    for si, p in enumerate(plan):
        rec = recs[name][si]
        vals = getattr(rec, field_name) if isinstance(field_name, str) else field_name(rec)
        exact = recs["exact"][si].step_s
        if len(exact) != len(vals):
            raise ValueError(f"stream {si}: {name} timed {len(vals)} frames, exact {len(exact)}: not in lockstep")
        sl = slice(min(warmup, len(vals)), len(vals))
        num.append(np.array(vals[sl], dtype=float))
        den.append(np.array(exact[sl], dtype=float))
        gr.append(si * 10000 + np.asarray(p["seg_of"])[sl])
    return np.concatenate(num), np.concatenate(den), np.concatenate(gr)


def step_fit(fresh: np.ndarray, step_s: np.ndarray, exact_step_s: float) -> dict[str, Any]:
    """Least-squares step time = fixed + per_region x fresh regions over a run's timed frames: the
    part of a step no reuse removes (fixed, and its share of the exact run's mean step: the time
    floor, to set beside the FLOP floor) and what one computed region costs. None when every frame
    computed the same number of regions (nothing to fit)."""
    if len(fresh) < 2 or np.ptp(fresh) == 0:
        return {"fixed_ms": None, "per_region_ms": None, "time_floor": None}
    slope, fixed = np.polyfit(fresh.astype(float), step_s, 1)
    return {"fixed_ms": float(fixed * 1e3), "per_region_ms": float(slope * 1e3),
            "time_floor": float(fixed / exact_step_s)}


def time_fit(recs: dict[str, list[Rec]], warmup: int, engine: bool = False) -> dict[str, Any]:
    """Least-squares step time = fixed + per_mflop x step FLOPs over the timed frames of every run
    (the configurations of one record: exact, vrex, ...), with R^2: how far time follows FLOPs.
    @engine: the step minus its vrex-layer calls (emu_s)."""
    fl, ts = [], []
    for rs in recs.values():
        for r in rs:
            sl = slice(min(warmup, len(r.step_s)), len(r.step_s))
            fl.extend(r.flops[sl])
            ts.extend((np.array(r.step_s[sl]) - (np.array(r.emu_s[sl]) if engine else 0.0)).tolist())
    x, y = np.array(fl, dtype=float) / 1e6, np.array(ts, dtype=float)
    if len(x) < 2 or np.ptp(x) == 0:
        return {"fixed_ms": None, "ms_per_mflop": None, "r2": None, "frames": int(len(x))}
    slope, fixed = np.polyfit(x, y, 1)
    r2 = 1.0 - float(np.sum((y - (fixed + slope * x)) ** 2) / np.sum((y - y.mean()) ** 2))
    return {"fixed_ms": float(fixed * 1e3), "ms_per_mflop": float(slope * 1e3), "r2": r2, "frames": int(len(x)),
            "mflop_range": [float(x.min()), float(x.max())]}


def summarise(plan: list[dict[str, Any]], recs: dict[str, list[Rec]], runs: dict[str, dict[str, Any]], c: Config,
              extra: dict[str, Any], block_bytes: int, clips: list[task.Clip], paths: list[Path],
              args: dict[str, Any]) -> dict[str, Any]:
    # Per question: its group (stream, segment of the frame it is asked at), truth, baselines.
    groups, truth, present, event, t_asked, clip_of = [], [], [], [], [], []
    base: dict[str, list[np.ndarray]] = {"copy": [], "most_frequent": [], "input_blind": []}
    for si, p in enumerate(plan):
        qt, qr, qg = p["q"]
        code = p["code"]
        groups.append(si * 10000 + p["seg_of"][qt])
        truth.append(code[qg, qr])
        present.append(qt == qg)
        changed = np.concatenate([[c.regions], (code[1:] != code[:-1]).sum(1)])
        ev = (changed >= 4) | np.isin(np.arange(len(code)), list(p["cuts"]))
        event.append(ev[qg])
        t_asked.append(qt)
        clip_of.append(np.array([p["idx"][f][0].split("#")[0] for f in qg]))
        for k, v in extra["baselines"].predict(code, qt, qr, qg).items():
            base[k].append(v)
    g = np.concatenate(groups)
    y = np.concatenate(truth)
    pres = np.concatenate(present)
    ev = np.concatenate(event)

    def acc(pred: np.ndarray, mask: np.ndarray | None = None) -> dict[str, Any]:
        ok = (pred == y).astype(float)
        if mask is not None:
            if not mask.any():
                return {"mean": None, "ci95": [None, None], "n": 0}
            out = task.ci_dict(ok[mask], g[mask])
            out["n"] = int(mask.sum())
            return out
        return task.ci_dict(ok, g)

    answers = {name: np.concatenate([np.concatenate(r.answer) for r in recs[name]]) for name in runs}
    logp = {name: torch.cat([torch.cat(r.logp) for r in recs[name]]) for name in runs}
    accuracy: dict[str, Any] = {name: acc(answers[name]) for name in runs}
    accuracy["baselines"] = {k: acc(np.concatenate(v)) for k, v in base.items()}
    by_kind = {kind: {**{name: acc(answers[name], m) for name in runs},
                      **{k: acc(np.concatenate(v), m) for k, v in base.items()}}
               for kind, m in (("present", pres), ("past", ~pres))}
    ok = {name: (answers[name] == y).astype(float) for name in runs}
    # Questions and correct answers per bootstrap group (stream, segment) of every run: records of
    # other seeds pool with a bootstrap over all their segments (vrex/anchors_report.py --sweep).
    seg_ids, seg_of_q = np.unique(g, return_inverse=True)
    by_segment = {"groups": [[int(i // 10000), int(i % 10000)] for i in seg_ids],
                  "questions": np.bincount(seg_of_q, minlength=len(seg_ids)).tolist(),
                  "correct": {name: np.bincount(seg_of_q, weights=ok[name], minlength=len(seg_ids)).round().astype(int).tolist()
                              for name in runs}}

    def kl_stats(name: str) -> dict[str, Any]:
        le, lr = logp["exact"], logp[name]
        kl = (le.exp() * (le - lr)).sum(-1).numpy()
        reused_t = np.concatenate([r.reused_target[0] for r in recs[name]])
        out: dict[str, Any] = {"direction": f"KL(exact || {name}) in nats, per question",
                               "mean": task.ci_dict(kl, g), "p99": float(np.percentile(kl, 99)),
                               "top1_agreement": task.ci_dict((answers[name] == answers["exact"]).astype(float), g),
                               "accuracy_change": task.ci_dict(ok[name] - ok["exact"], g)}
        if "vrex_hierarchy" in ok and name != "vrex_hierarchy":  # an ablation against V-Rex, paired per question
            out["accuracy_change_vs_vrex"] = task.ci_dict(ok[name] - ok["vrex_hierarchy"], g)
        other = runs[name].get("extra", {}).get("paired_with")
        if other in ok:  # a grid point against its named reference (vrex.tune), paired per question
            out["accuracy_change_vs_paired"] = {"run": other, **task.ci_dict(ok[name] - ok[other], g)}
        # An aliasing ablation, or the aliasing V-Rex at other resident frames, against aliasing V-Rex.
        if "no_refresh" in ok and (name.startswith("alias_") or name.startswith("no_refresh_")):
            out["accuracy_change_vs_alias"] = task.ci_dict(ok[name] - ok["no_refresh"], g)
        splits = {"reused": reused_t, "fresh": ~reused_t, "event": ev, "static": ~ev}
        out["split"] = {}
        for sname, m in splits.items():
            out["split"][sname] = {
                "questions": int(m.sum()),
                "kl_mean": float(kl[m].mean()) if m.any() else None,
                "accuracy": acc(answers[name], m), "accuracy_exact": acc(answers["exact"], m)}
        return out

    def paired(name: str,
               field_name: str | Callable[[Rec], Sequence[Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return paired_frames(plan, recs, name, field_name, args["warmup"])

    def timing(name: str) -> dict[str, Any]:
        nn_, dd, gg = paired(name, "step_s")
        fn, fd = paired(name, "flops")[0], paired("exact", "flops")[0]  # the same frames: runs go in lockstep
        # Floor: the same frames with every region reused (what no reuse policy can go below: the
        # questions as this run read them, the embedding, the guard): the fresh regions' part out.
        guard = runs[name].get("policy") != "exact"
        floor = paired(name, lambda r: [r.flops[t] - step_flops(c, r.fresh[t], t, 0, guard)
                                        + step_flops(c, 0, t, 0, guard) for t in range(len(r.flops))])[0]
        tr = task.ci_dict(nn_, gg, ratio_of=dd)
        # The engine alone: the step minus its vrex-layer calls (emu_s: the FCC, SHIE lookups and
        # block calls the emulation runs on the CPU, hardware on a board), paired the same way.
        en = nn_ - paired(name, "emu_s")[0]
        ed = dd - paired("exact", "emu_s")[0]
        return {"time_ratio": tr, "engine_time_ratio": task.ci_dict(en, gg, ratio_of=ed),
                "flops_ratio": float(fn.sum() / fd.sum()),
                "flops_floor": float(np.sum(floor) / fd.sum()),
                "step_fit": step_fit(paired(name, "fresh")[0], nn_, float(dd.mean())),
                "step_ms_mean": float(nn_.mean() * 1e3), "exact_step_ms_mean": float(dd.mean() * 1e3),
                "frames_timed": int(len(nn_)), "visual": visual_timing(name), "engine": engine_timing(name)}

    def engine_timing(name: str) -> dict[str, Any]:
        """The step without the emulated hardware's work -- the vrex layer's calls (emu_s: FCC, SHIE
        lookups, the policy, block calls) and, on the C++ path, the ReSV unit's (engine parts
        resv_read and resv_insert: hashing queries and keys, WiCSum) and the copy engine's (dma_read,
        dma_move: the hierarchy's copies); on a board the FCC, SHIE, ReSV and DMA are hardware -- paired per
        frame with exact's step without its own, against the same FLOP ratios; and the visual prefill
        without them (also minus the questions' half), when the halves were timed apart."""
        def resv(r: Rec, part: str) -> list[float]:
            return [p.get(part, 0.0) if p else 0.0 for p in (r.engine or [{}] * len(r.emu_s))]

        def hw(r: Rec) -> list[float]:
            return [e + a + b + c + d for e, a, b, c, d in zip(r.emu_s, resv(r, "resv_read"), resv(r, "resv_insert"),
                                                             resv(r, "dma_read"), resv(r, "dma_move"))]

        def eng(r: Rec) -> list[float]:
            return [s - h for s, h in zip(r.step_s, hw(r))]
        en, _, gg = paired(name, eng)
        ed = paired("exact", eng)[0]
        out: dict[str, Any] = {"time_ratio": task.ci_dict(en, gg, ratio_of=ed), "ms_mean": float(en.mean() * 1e3),
                               "exact_ms_mean": float(ed.mean() * 1e3),
                               "clock": "thread CPU time of the step minus emu_s (the vrex layer's calls) and "
                                        "the ReSV unit's and the copy engine's emulated work"}
        if not any(a is None for r in recs[name] + recs["exact"] for a in r.ask_s):
            def vis(r: Rec) -> list[float]:
                return [s - e - i - m - a for s, e, i, m, a in zip(r.step_s, r.emu_s, resv(r, "resv_insert"),
                                                                   resv(r, "dma_move"), r.ask_s)]
            vn, vd = paired(name, vis)[0], paired("exact", vis)[0]
            out["visual"] = {"time_ratio": task.ci_dict(vn, gg, ratio_of=vd), "ms_mean": float(vn.mean() * 1e3),
                             "exact_ms_mean": float(vd.mean() * 1e3),
                             "clock": "thread CPU time of the step minus the emulated hardware's work and "
                                      "minus the questions' half",
                             "by_fresh_regions": by_fresh(name, vn)}
        # The same ratios with the copy engine's work counted as the engine's: its copies run on the
        # step's thread here, so a reader sees what leaving them out moves (a board's DMA is hardware).
        if any(p and ("dma_read" in p or "dma_move" in p) for r in recs[name] for p in (r.engine or [])):
            def eng_dma(r: Rec) -> list[float]:
                return [s - e - a - b for s, e, a, b in zip(r.step_s, r.emu_s, resv(r, "resv_read"),
                                                            resv(r, "resv_insert"))]
            cn, cd = paired(name, eng_dma)[0], paired("exact", eng_dma)[0]
            counted: dict[str, Any] = {"time_ratio": task.ci_dict(cn, gg, ratio_of=cd), "ms_mean": float(cn.mean() * 1e3)}
            if "visual" in out:
                def vis_dma(r: Rec) -> list[float]:
                    return [s - e - i - a for s, e, i, a in zip(r.step_s, r.emu_s, resv(r, "resv_insert"), r.ask_s)]
                vn, vd = paired(name, vis_dma)[0], paired("exact", vis_dma)[0]
                counted["visual"] = {"time_ratio": task.ci_dict(vn, gg, ratio_of=vd), "ms_mean": float(vn.mean() * 1e3)}
            out["copy_engine_counted"] = counted
        first = recs[name][0]
        if first.engine and first.engine[0]:  # the C++ runner's parts (vrex/lcp/runner.hpp kEngineNames)
            parts: dict[str, Any] = {}
            for k in first.engine[0]:
                pn, pd = (paired(n, lambda r, k=k: [e[k] for e in r.engine])[0] for n in (name, "exact"))
                parts[k] = {"ms_per_frame": float(pn.mean() * 1e3), "exact_ms_per_frame": float(pd.mean() * 1e3)}
            out["parts"] = parts
        return out

    def by_fresh(name: str, vn: np.ndarray) -> dict[str, Any]:
        """@name's timed frames by the regions they computed (0, 1, 2, 3+): how many, their mean
        visual engine time @vn and, on the C++ runner, its prefill part. A step that computes nothing
        costs only the per-frame work; one region's prefill still reads every layer's weights and the
        window's keys and values, which a frame of 64 tokens shares among all of them."""
        fresh = paired(name, "fresh")[0]
        first = recs[name][0]
        pre = paired(name, lambda r: [e["prefill"] for e in r.engine])[0] if first.engine and first.engine[0] else None
        out: dict[str, Any] = {}
        for label, sel in (("0", fresh == 0), ("1", fresh == 1), ("2", fresh == 2), ("3+", fresh >= 3)):
            if sel.any():
                out[label] = {"frames": int(sel.sum()), "ms_mean": float(vn[sel].mean() * 1e3),
                              **({"prefill_ms_mean": float(pre[sel].mean() * 1e3)} if pre is not None else {})}
        return out

    def visual_timing(name: str) -> dict[str, Any] | None:
        """The visual prefill alone (the step without its questions' half: Rec.ask_s), paired per frame
        with the exact run's, against the visual prefill FLOPs (questions left out, the guard in).
        None when a run did not time its halves apart."""
        if any(a is None for r in recs[name] + recs["exact"] for a in r.ask_s):
            return None
        def vis(r: Rec) -> list[float]:
            return [s - a for s, a in zip(r.step_s, r.ask_s)]
        def ask(r: Rec) -> list[float]:
            return list(r.ask_s)
        guard = runs[name].get("policy") != "exact"
        vn, _, gg = paired(name, vis)
        vd = paired("exact", vis)[0]
        ven, ved = vn - paired(name, "emu_s")[0], vd - paired("exact", "emu_s")[0]
        an, ad = paired(name, ask)[0], paired("exact", ask)[0]
        fv = paired(name, lambda r: [step_flops(c, r.fresh[t], t, 0, guard) for t in range(len(r.fresh))])[0]
        fe = paired("exact", lambda r: [step_flops(c, c.regions, t, 0, False) for t in range(len(r.fresh))])[0]
        return {"time_ratio": task.ci_dict(vn, gg, ratio_of=vd), "engine_time_ratio": task.ci_dict(ven, gg, ratio_of=ved),
                "flops_ratio": float(fv.sum() / fe.sum()),
                "flops_ratio_ci": task.ci_dict(fv, gg, ratio_of=fe),
                "step_fit": step_fit(paired(name, "fresh")[0], vn, float(vd.mean())),
                "ms_mean": float(vn.mean() * 1e3), "exact_ms_mean": float(vd.mean() * 1e3),
                "questions_ms_mean": float(an.mean() * 1e3), "exact_questions_ms_mean": float(ad.mean() * 1e3),
                "questions_time_ratio": task.ci_dict(an, gg, ratio_of=ad),
                "clock": "thread CPU time of the step minus its questions' half (the read rule's selection and "
                         "staging, Decoder.ask): FCC, guard, reuse decisions, installs, Decoder.prefill, HAL calls"}

    def emulation(name: str) -> dict[str, Any]:
        """The product figure (issue 26): the time @name's steps spend in the vrex layer (FCC, SHIE
        lookups, the policy, block calls) over the exact run's step on the same frames, paired per
        frame, CI by bootstrap over segments, warm-up left out; on the C++ path also per stage (the
        stages' shares add up to the figure) and, profiled, the FCC's own work within begin_frame."""
        nn_, dd, gg = paired(name, "emu_s")
        out: dict[str, Any] = {
            "ratio_to_exact_step": task.ci_dict(nn_, gg, ratio_of=dd), "ms_per_frame": float(nn_.mean() * 1e3),
            "exact_step_ms": float(dd.mean() * 1e3), "frames_timed": int(len(nn_)),
            "clock": "thread CPU time; begin_frame (FCC), the policy's choice (one SHIE lookup batch, guard), "
                     "apply_frame (alias, allocate, pin), computed, end_frame (inserts, publish, aging)"}
        first = recs[name][0]
        if first.stages and first.stages[0]:
            stages: dict[str, Any] = {}
            for k in first.stages[0]:
                sn, sd, sg = paired(name, lambda r, k=k: [st[k] for st in r.stages])
                stages[k] = {"ms_per_frame": float(sn.mean() * 1e3),
                             "ratio_to_exact_step": task.ci_dict(sn, sg, ratio_of=sd)}
            if first.fcc_s and first.fcc_s[0] is not None:
                fn, fd, fg = paired(name, "fcc_s")
                stages["fcc"] = {"ms_per_frame": float(fn.mean() * 1e3),
                                 "ratio_to_exact_step": task.ci_dict(fn, fg, ratio_of=fd),
                                 "within": "begin_frame (the reference model's fingerprint of the same plane, "
                                           "timed apart and checked equal to the device's)"}
            out["stages"] = stages
        return out

    def reuse_rate(name: str) -> float:
        r = recs[name]
        return sum(x.reused for x in r) / max(1, sum(x.regions for x in r))

    exact_blocks = sum(r.distinct_blocks for r in recs["exact"])
    # Accuracy against stream length: the questions asked in each quarter of the stream (the cache
    # and every memory-bounded run's losses grow with it).
    ta = np.concatenate(t_asked)
    n_max = max(len(p["idx"]) for p in plan)
    edges = [round(n_max * i / 4) for i in range(5)]
    by_length: dict[str, Any] = {"frames": [[edges[i], edges[i + 1]] for i in range(4)]}
    # Per clip: the questions whose target frame comes from that clip (streams cut between clips).
    co = np.concatenate(clip_of)
    by_clip = {k: {name: acc(answers[name], co == k) for name in runs} for k in sorted(set(co.tolist()))}
    for name in runs:
        by_length[name] = [acc(answers[name], (ta >= edges[i]) & (ta < edges[i + 1])) for i in range(4)]
    out: dict[str, Any] = {
        "model": extra.get("variant", "builtin"),
        "weights": extra["weights"],
        "clips": [{"path": str(p), "key": cl.key, "split": cl.split, "step": cl.step} for p, cl in zip(paths, clips)],
        "args": args,
        "streams": [{"frames": len(p["idx"]), "segments": [[s.clip, s.start, s.length] for s in p["segments"]],
                     "cuts": len(p["cuts"]), **({"moves": p["moves"]} if p["moves"] else {})} for p in plan],
        "questions": int(len(y)),
        "task": {"question": "which code did region r have k frames ago (k = 0: the present frame)",
                 "accuracy": accuracy, "by_kind": by_kind, "by_length": by_length,
                 "by_clip": by_clip,
                 "by_segment": by_segment,
                 "ci": "95 % bootstrap over stream segments (2000 resamples)"},
        "exact_cache_tokens_peak": max(r.cache_tokens for r in recs["exact"]),
        "kv_bytes": {"exact_peak": exact_blocks * block_bytes,
                     "vrex_device_peak": sum(r.distinct_blocks for r in recs["vrex"]) * block_bytes,
                     "vrex_total_peak": sum(r.distinct_blocks for r in recs["vrex"]) * block_bytes,
                     "block_bytes": block_bytes,
                     "note": "caches only grow (every frame stays readable), so peaks are the final sizes summed "
                             "over the streams; no demotion yet: every vrex block stays in device memory "
                             "(device = total)"} if "vrex" in runs else {"exact_peak": exact_blocks * block_bytes},
        "prefill": timing("vrex") if "vrex" in runs else {},
        "prefill_clock": "thread CPU time of the whole step (FCC, lookups, guard, allocation, decoder, end_frame)",
        "time_fit": {"step": time_fit(recs, args["warmup"]), "engine": time_fit(recs, args["warmup"], engine=True),
                     "what": "least squares over every run's timed frames: step time = fixed + per MFLOP x "
                             "decoder.step_flops; engine: the step minus its vrex-layer calls (emu_s)"},
        "reuse_rate": reuse_rate("vrex") if "vrex" in runs else 0.0,
        "emulation": emulation("vrex") if "vrex" in runs else {},
    }
    for name in runs:
        if name == "exact":
            continue
        out.setdefault("quality", {})[name] = kl_stats(name)
        if name != "vrex":
            out[name] = {"reuse_rate": reuse_rate(name), "accuracy": accuracy[name],
                         "prefill": timing(name), "kv_bytes": sum(r.distinct_blocks for r in recs[name]) * block_bytes}
    if "vrex" in runs:
        out["kv_bytes"]["ratio"] = out["kv_bytes"]["vrex_device_peak"] / out["kv_bytes"]["exact_peak"]
    stats = {name: [r.policy for r in recs[name]] for name in runs if recs[name][0].policy}
    if stats:
        out["policy_stats"] = stats  # vrex/ablations.py turns them into its sections
    out["kv_bytes"].setdefault("block_bytes", block_bytes)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m vrex.run", description=__doc__.split("\n")[0])
    ap.add_argument("clips", nargs="+", type=Path, help="held-out video files FFmpeg reads")
    ap.add_argument("--streams", type=int, default=4, help="edited streams (independent repeats)")
    ap.add_argument("--frames", type=int, default=240, help="frames per stream (64 cached tokens each)")
    ap.add_argument("--questions", type=int, default=4, help="questions per frame")
    ap.add_argument("--radius", type=int, default=lcp.Options.radius, help="fingerprint Hamming radius (0..31)")
    ap.add_argument("--guard-bits", type=int, default=lcp.Options.guard_bits, help="key-hash Hamming threshold (0..32)")
    ap.add_argument("--max-age", type=int, default=lcp.Options.max_age,
                    help="reuse a block at most this many frames after it was computed (0: no cap)")
    ap.add_argument("--warmup", type=int, default=None,
                    help="frames per stream left out of the timing (default: 8, at most a quarter of --frames)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--run-block", type=int, default=1, metavar="FRAMES",
                    help="frames each run steps through in a row before the next run takes over (its streams "
                         "alternating; the order rotates per block), as an engine serving its streams alone "
                         "would; 1: the runs alternate every step. Same decisions and answers; only the times "
                         "differ")
    ap.add_argument("--workload", choices=(*workloads.WORKLOADS, *workloads.RENDERED), default="edited",
                    help="how streams are cut from the clips (vrex/workloads.py)")
    ap.add_argument("--path", choices=PATHS, default=None,
                    help="cpp: the scripted decoder under libtorch with the C++ policy (the default when built); "
                         "python: torch in Python driving the same C++ policy (--anchors runs take the python path)")
    ap.add_argument("--kernels", choices=cpp_path.KERNELS, default="native",
                    help="C++ path: the decoder's per-frame work as native kernels or the scripted module's methods")
    ap.add_argument("--no-control", action="store_true", help="leave out the radius-0 control run")
    ap.add_argument("--no-resv-read", action="store_true",
                    help="leave out vrex_resv (C++ path: questions read what ReSV selects, not their whole reach)")
    ap.add_argument("--anchors", action="store_true",
                    help="also run the streaming-video KV anchors and the V-Rex ablations at equal device "
                         "memory (vrex/ablations.py: anchors, ablations and resv sections)")
    # Frozen on the validation clip (docs/model.md "Anchors ... knobs"): 5 resident frames + 4 blocks
    # staged per question, WiCSum ratio 0.5.
    ap.add_argument("--budget", type=int, default=84, help="--anchors: device KV blocks per stream")
    ap.add_argument("--resident", type=int, default=5,
                    help="--anchors: frames the retrieval rules keep on the device (the rest is fetch)")
    ap.add_argument("--resv-ratio", type=float, default=0.5, help="--anchors: WiCSum mass ratio")
    ap.add_argument("--no-resv-recall", action="store_true",
                    help="--anchors: leave out the resv.* recall measurement (CPU off the step's clock)")
    ap.add_argument("--vrex-knobs", default="", metavar="JSON",
                    help="--anchors: lcp.Options fields that override V-Rex's frozen knobs (and so every "
                         "ablation's), e.g. '{\"guard_bits\": 2, \"motion_gate\": 0}'")
    ap.add_argument("--host-reserve", type=int, default=0, metavar="BLOCKS",
                    help="--anchors --path cpp: host slots per stream the hierarchy's host pool maps and faults in "
                         "when the stream starts (outside every step; 0: it grows with the demotions)")
    ap.add_argument("--anchor-runs", default="",
                    help="--anchors: comma-separated anchors/ablations to run (default: all but ablations.STUDY_RUNS)")
    ap.add_argument("--variant", choices=tuple(VARIANTS), default="builtin",
                    help="the model: builtin (the answer reads layer 0) or deep (it reads the deepest layer; "
                         "--anchors: V-Rex with the variant's knobs, anchors.REUSE)")
    ap.add_argument("--split", choices=("test", "val"), default="test",
                    help="the clips' split: test (scored figures) or val (knobs are frozen on the validation clip)")
    ap.add_argument("--json", action="store_true", help="print the JSON object only")
    args = ap.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if args.warmup is None:
        args.warmup = min(8, args.frames // 4)
    for p in args.clips:
        if not p.is_file():
            print(f"vrex.run: {p}: no such file", file=sys.stderr)
            return 2
    if not 0 <= args.radius <= 31 or not 0 <= args.guard_bits <= 32 or args.max_age < 0:
        print("vrex.run: --radius must be 0..31, --guard-bits 0..32 and --max-age >= 0", file=sys.stderr)
        return 2
    if args.run_block < 1:
        print("vrex.run: --run-block must be >= 1", file=sys.stderr)
        return 2
    if args.host_reserve < 0:
        print("vrex.run: --host-reserve must be >= 0", file=sys.stderr)
        return 2
    if args.streams < 1 or args.frames < 2 or args.questions < 1 or not 0 <= args.warmup < args.frames:
        print("vrex.run: --streams >= 1, --frames >= 2, --questions >= 1 and 0 <= --warmup < --frames",
              file=sys.stderr)
        return 2
    runs = {k: v for k, v in RUNS.items() if not (args.no_control and k == "control_radius0")}
    try:
        if args.anchors:
            from . import ablations
            only = tuple(args.anchor_runs.split(",")) if args.anchor_runs else None
            from .anchors import REUSE
            vrex_knobs, alias_knobs = REUSE[args.variant]
            if args.vrex_knobs:
                over = json.loads(args.vrex_knobs)
                unknown = set(over) - set(lcp.Options.__dataclass_fields__) if isinstance(over, dict) else {"(not an object)"}
                if unknown:
                    raise ValueError(f"--vrex-knobs: not lcp.Options fields: {', '.join(sorted(unknown))}")
                vrex_knobs = {**vrex_knobs, **over}
            runs.update(ablations.runs(args.budget, args.resident, args.resv_ratio, only=only,
                                       vrex=vrex_knobs, alias=alias_knobs, measure_resv=not args.no_resv_recall))
            if args.host_reserve:
                for kw in runs.values():
                    if "extra" in kw:
                        kw["extra"]["host_reserve"] = args.host_reserve
        res = run(args.clips, args.streams, args.frames, args.questions, args.radius, args.guard_bits,
                  args.max_age, args.warmup, runs, args.seed, path=args.path, resv_read=not args.no_resv_read,
                  split=args.split, workload=args.workload, variant=args.variant, kernels=args.kernels,
                  block=args.run_block)
        if args.anchors:
            res = ablations.report(res, args.budget, args.resident, runs)
            res["args"]["vrex_knobs"] = {k: v for k, v in vrex_knobs.items()}
            res["args"]["host_reserve"] = args.host_reserve
    except (ValueError, RuntimeError, FileNotFoundError) as e:
        print(f"vrex.run: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(res))
        return 0
    a = res["task"]["accuracy"]

    def f(d: dict[str, Any]) -> str:
        return f"{d['mean']:.3f} [{d['ci95'][0]:.3f}, {d['ci95'][1]:.3f}]"

    print(f"questions {res['questions']} over {len(res['streams'])} streams; exact cache peak "
          f"{res['exact_cache_tokens_peak']} tokens")
    for k in ("exact", "vrex"):
        print(f"accuracy {k:15s} {f(a[k])}")
    for k, v in a["baselines"].items():
        print(f"baseline {k:15s} {f(v)}")
    q = res["quality"]["vrex"]
    pf = res["prefill"]
    print(f"KL(exact || vrex) {f(q['mean'])}, accuracy change {f(q['accuracy_change'])}, reuse {res['reuse_rate']:.3f}")
    print(f"prefill time ratio {f(pf['time_ratio'])}, FLOP ratio {pf['flops_ratio']:.3f}, floor {pf['flops_floor']:.3f}"
          + (f"; time floor {pf['step_fit']['time_floor']:.3f} (fixed {pf['step_fit']['fixed_ms']:.1f} ms a step, "
             f"{pf['step_fit']['per_region_ms']:.2f} ms a computed region)" if pf["step_fit"]["fixed_ms"] is not None else ""))
    ev = pf.get("engine", {}).get("visual")
    if ev is not None:  # the C++ path: the visual step without the emulated hardware, frame by frame
        by = ", ".join(f"{k}: {b['frames']} at {b['ms_mean']:.3f} ms" for k, b in ev["by_fresh_regions"].items())
        print(f"visual engine time ratio {f(ev['time_ratio'])} ({ev['ms_mean']:.3f} against {ev['exact_ms_mean']:.3f} "
              f"ms a frame); frames by regions computed: {by}")
    if "vrex_resv" in res:
        rr = res["vrex_resv"]
        print(f"vrex_resv (questions read ReSV's selection): accuracy {f(rr['accuracy'])}, prefill time ratio "
              f"{f(rr['prefill']['time_ratio'])}, FLOP ratio {rr['prefill']['flops_ratio']:.3f}, "
              f"floor {rr['prefill']['flops_floor']:.3f}")
    kb = res["kv_bytes"]
    print(f"KV bytes: exact {kb['exact_peak']}, vrex {kb['vrex_device_peak']} ({kb['ratio']:.3f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
