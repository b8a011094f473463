"""The C++ path of the builtin model for vrex/run.py: the same stream loop as lcp.StreamRunner, run by
vrex::lcp::StreamRunner (model/cpp/runner.cpp) -- libtorch executes decoder.py's step scripted by
vrex/script.py, vrex::lcp::ReusePolicy (the policy lcp.VrexPolicy drives too) decides reuse over
libvrex-hal. Policies: exact, vrex (aliasing, or with lcp.Options.refresh / recall) and, of the plugged-in
Python policies (vrex/anchors.py), V-Rex of record alone: `managed` with anchors' vrex_hierarchy
configuration (vrex prefill, the memory hierarchy, the position-aware ReSV read), which the runner
runs in C++ (model/cpp/tiers.cpp, runner.cpp); the other plugged-in policies run on the Python path.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import lcp, script
from .decoder import Config, Decoder, step_flops

try:
    import _vrexrun  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - libtorch-dev missing at build time
    _vrexrun = None

POLICIES = ("exact", "vrex", "managed")
# What runs the decoder's per-frame work (vrex::lcp::Kernels): "native" (NativeDecoder: the same math
# on plain buffers, no aten dispatch) or "scripted" (the TorchScript methods under libtorch).
KERNELS = ("native", "scripted")
READS = ("reach", "resv")  # Options.extra["read"]: what the questions read (vrex::lcp::ReadOptions)
# The one managed (vrex/anchors.py) configuration the C++ runner runs: V-Rex of record (vrex_hierarchy).
HIERARCHY = {"prefill": "vrex", "memory": "tiers", "read": "resv_pos"}
# anchors.Managed's options the C++ runner does not run (dropping: the policy would have to forget the
# dropped blocks; the eviction rules' budget; DTD's reuse meter; the read log).
_PYTHON_ONLY = ("drop", "budget", "match", "log_reads")


def available() -> bool:
    return _vrexrun is not None


def why_not(opts: dict[str, Any]) -> str | None:
    """None when the C++ path runs lcp.Options(**@opts), else why not."""
    policy = opts.get("policy", "vrex")
    extra = opts.get("extra", {})
    if policy not in POLICIES:
        return f"the C++ path runs the policies {POLICIES}, not '{policy}' (use --path python)"
    if policy == "managed":
        got = {k: extra.get(k) for k in HIERARCHY}
        if got != HIERARCHY or any(extra.get(k) for k in _PYTHON_ONLY):
            return (f"the C++ path runs one managed configuration, {HIERARCHY} (V-Rex of record), without "
                    f"{', '.join(_PYTHON_ONLY)}; not {extra}")
        if not int(extra.get("resident", 0)):
            return "the C++ hierarchy needs extra resident > 0 frames"
        return None
    if str(extra.get("read", "reach")) not in READS:
        return f"the C++ path's question read is one of {READS}, not '{extra.get('read')}'"
    if policy == "exact" and (opts.get("refresh") or opts.get("recall")):
        return "refresh and recall are V-Rex's"
    return None


class _NoStats:
    def stats(self) -> dict[str, Any]:
        return {}


class _Alloc:
    def __init__(self, block_bytes: int):
        self.block_bytes = block_bytes


# Every field of lcp.Options, as Session hands it to the C++ runner (or refuses it in why_not): a
# field added to Options without a way into the runner would make a C++ run silently the default's
# (test_cpp_vrex.py checks the two lists agree).
OPTIONS = ("policy", "fcc", "radius", "guard_bits", "max_age", "similar", "recall", "recall_radius", "host_slots",
           "recall_guard_bits", "recall_candidates", "tiered", "refresh", "motion_gate", "backend", "extra")


class Session:
    """lcp.Session's face (stream(), alloc.block_bytes) over a C++ session of its own emulated device."""

    def __init__(self, model: Decoder, opts: lcp.Options, module: Path, profile: bool = False,
                 kernels: str = "native"):
        """@profile: also time the FCC's own work per frame (FrameStats.fcc_s; the product figure's
        breakdown, bench/emu_cost.py). @kernels: one of KERNELS."""
        if _vrexrun is None:
            raise RuntimeError("vrex: the C++ path needs the _vrexrun extension (built with libtorch-dev into "
                               "build/model); run with --path python")
        why = why_not({"policy": opts.policy, "refresh": opts.refresh, "recall": opts.recall, "extra": opts.extra})
        if why is not None:
            raise ValueError(why)
        if opts.backend != "emulated":
            raise ValueError("the C++ path runs on the emulated device")
        ex = opts.extra
        self.hierarchy = opts.policy == "managed"
        # V-Rex of record: the vrex prefill, the hierarchy (resident frames, coldness) and ReSV's read
        # over it (anchors.Managed's resv_pos: the runner's "resv" read with tiers).
        self.read = "resv" if self.hierarchy else str(ex.get("read", "reach"))
        if kernels not in KERNELS:
            raise ValueError(f"the C++ path's kernels are one of {KERNELS}, not '{kernels}'")
        self.model = model
        self.opts = opts
        self.kernels = kernels
        _vrexrun.set_num_threads(torch.get_num_threads())
        self.s = _vrexrun.Session(str(module), "vrex" if self.hierarchy else opts.policy, opts.fcc, opts.radius,
                                  opts.guard_bits, opts.max_age, opts.similar, lcp.EMU_BANKS,
                                  lcp.EMU_BANK_MIB + int(ex.get("device", 0)), self.read, float(ex.get("ratio", 0.5)),
                                  profile_fcc=profile, refresh=opts.refresh, recall=opts.recall,
                                  recall_radius=opts.recall_radius, recall_guard_bits=opts.recall_guard_bits,
                                  resident=int(ex.get("resident", 0)) if self.hierarchy else 0,
                                  coldness=str(ex.get("coldness", "zombie")), fetch=int(ex.get("fetch", 4)),
                                  kernels=kernels, motion_gate=opts.motion_gate,
                                  host_blocks=int(ex.get("host_blocks", 0)), disk_dir=str(ex.get("disk_dir") or ""),
                                  host_reserve=int(ex.get("host_reserve", 0)), host_slots=opts.host_slots,
                                  recall_candidates=opts.recall_candidates, tiered=opts.tiered)
        self.alloc = _Alloc(self.s.block_bytes)

    def stream(self) -> "StreamRunner":
        return StreamRunner(self, self.s.stream())


class _HierarchyStats:
    """anchors.Managed.stats()'s keys for vrex/ablations.py, from the C++ hierarchy (the resv.* recall
    measurement is the Python path's: its lists stay empty)."""

    REC = ("recall_resv", "recall_oracle", "recall_quest", "recall_random", "bytes_ratio", "capped",
           "recall_quest_bias", "recall_resv_qk", "bytes_ratio_resv_qk", "fetched_q")

    def __init__(self, runner: "StreamRunner"):
        self.run = runner
        self.final: dict[str, Any] = {}

    def stats(self) -> dict[str, Any]:
        st = dict(self.final or self.run.r.hierarchy_stats())
        c = self.run.s.model.c
        st["prefill_flops"] = [step_flops(c, fr, t, 0, True) for t, fr in enumerate(self.run.fresh)]
        st["prefill_flops_exact"] = [step_flops(c, c.regions, t, 0, False) for t in range(len(self.run.fresh))]
        st["lut_scale"] = None
        return {**st, **{k: [] for k in self.REC}}


class StreamRunner:
    def __init__(self, session: Session, runner: Any):
        self.s = session
        self.r = runner
        self.t = 0
        self.fresh: list[int] = []
        self.policy: Any = _HierarchyStats(self) if session.hierarchy else _NoStats()

    def step(self, luma: np.ndarray, tokens: torch.Tensor, q_region: torch.Tensor,
             q_target: torch.Tensor) -> tuple[torch.Tensor, lcp.FrameStats]:
        c = self.s.model.c
        logits, st = self.r.step(luma, tokens.numpy(), q_region.numpy(), q_target.numpy())
        reused = int(st["reused"])
        guard = self.s.opts.policy != "exact"
        if self.s.read == "resv":  # the questions' attention over the keys they read, plus the selector's work
            flops = (step_flops(c, c.regions - reused, self.t, len(q_target), guard, int(st["question_keys"]))
                     + resv_read_ops(c, int(st["hashed"]), int(st["weighed"])))
        else:
            flops = lcp.frame_flops(c, c.regions - reused, self.t, q_target, guard)
        self.fresh.append(c.regions - reused)
        fs = lcp.FrameStats(step_s=st["step_s"], emu_s=st["emu_s"], regions=c.regions, reused=reused,
                            reused_region=list(st["reused_region"]), stages=dict(st["stages"]),
                            fcc_s=st.get("fcc_s"), ask_s=st["ask_s"], engine=dict(st["engine"]),
                            tokens=(c.regions - reused) * c.tokens_per_region, flops=flops)
        self.t += 1
        return torch.from_numpy(logits), fs

    def distinct_blocks(self) -> int:
        return int(self.r.distinct_blocks())

    def cache_tokens(self) -> int:
        return int(self.r.cache_tokens())

    def close(self) -> None:
        if isinstance(self.policy, _HierarchyStats) and not self.policy.final:
            self.policy.final = self.r.hierarchy_stats()  # before the runner unpins its blocks
        self.r.close()


def resv_read_ops(c: Config, hashed: int, weighed: int) -> int:
    """Operations of ReSV's read, counted like step_flops counts a multiply-add as 2: the HCU's 32
    sign projections of each hashed key or query (one add per value and plane: kv_heads x head_dim x
    32), and per weighed token a Hamming distance, a LUT x position product and the block sum (2)."""
    return hashed * c.kv_heads * c.head_dim * script.HASH_BITS + weighed * 2


def scripted(model: Decoder, workdir: str) -> Path:
    """@model's step scripted into @workdir (vrex/script.py)."""
    return script.export(model, Path(workdir) / "decoder-step.pt")


def tempdir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="vrex-script-")
