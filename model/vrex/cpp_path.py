"""The C++ path of the builtin model for vrex/run.py: the same stream loop as lcp.StreamRunner, run by
vrex::lcp::StreamRunner (model/cpp/runner.cpp) -- libtorch executes decoder.py's step scripted by
vrex/script.py, vrex::lcp::ReusePolicy (the policy lcp.VrexPolicy drives too) decides reuse over
libvrex-hal. Policies: exact and vrex (the plugged-in Python policies run on the Python path).
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

POLICIES = ("exact", "vrex")
# What runs the decoder's per-frame work (vrex::lcp::Kernels): "native" (NativeDecoder: the same math
# on plain buffers, no aten dispatch) or "scripted" (the TorchScript methods under libtorch).
KERNELS = ("native", "scripted")
READS = ("reach", "resv")  # Options.extra["read"]: what the questions read (vrex::lcp::ReadOptions)


def available() -> bool:
    return _vrexrun is not None


class _NoStats:
    def stats(self) -> dict[str, Any]:
        return {}


class _Alloc:
    def __init__(self, block_bytes: int):
        self.block_bytes = block_bytes


class Session:
    """lcp.Session's face (stream(), alloc.block_bytes) over a C++ session of its own emulated device."""

    def __init__(self, model: Decoder, opts: lcp.Options, module: Path, profile: bool = False,
                 kernels: str = "native"):
        """@profile: also time the FCC's own work per frame (FrameStats.fcc_s; the product figure's
        breakdown, bench/emu_cost.py). @kernels: one of KERNELS."""
        if _vrexrun is None:
            raise RuntimeError("vrex: the C++ path needs the _vrexrun extension (built with libtorch-dev into "
                               "build/model); run with --path python")
        if opts.policy not in POLICIES:
            raise ValueError(f"the C++ path runs the policies {POLICIES}, not '{opts.policy}' (use --path python)")
        if opts.backend != "emulated":
            raise ValueError("the C++ path runs on the emulated device")
        self.read = str(opts.extra.get("read", "reach"))
        if self.read not in READS:
            raise ValueError(f"the C++ path's question read is one of {READS}, not '{self.read}'")
        if kernels not in KERNELS:
            raise ValueError(f"the C++ path's kernels are one of {KERNELS}, not '{kernels}'")
        self.model = model
        self.opts = opts
        self.kernels = kernels
        _vrexrun.set_num_threads(torch.get_num_threads())
        self.s = _vrexrun.Session(str(module), opts.policy, opts.fcc, opts.radius, opts.guard_bits, opts.max_age,
                                  opts.similar, lcp.EMU_BANKS, lcp.EMU_BANK_MIB + int(opts.extra.get("device", 0)),
                                  self.read, float(opts.extra.get("ratio", 0.5)), profile_fcc=profile,
                                  kernels=kernels)
        self.alloc = _Alloc(self.s.block_bytes)

    def stream(self) -> "StreamRunner":
        return StreamRunner(self, self.s.stream())


class StreamRunner:
    def __init__(self, session: Session, runner: Any):
        self.s = session
        self.r = runner
        self.t = 0
        self.policy = _NoStats()

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
        fs = lcp.FrameStats(step_s=st["step_s"], emu_s=st["emu_s"], regions=c.regions, reused=reused,
                            reused_region=list(st["reused_region"]), stages=dict(st["stages"]),
                            fcc_s=st.get("fcc_s"), ask_s=st["ask_s"],
                            tokens=(c.regions - reused) * c.tokens_per_region, flops=flops)
        self.t += 1
        return torch.from_numpy(logits), fs

    def distinct_blocks(self) -> int:
        return int(self.r.distinct_blocks())

    def cache_tokens(self) -> int:
        return int(self.r.cache_tokens())

    def close(self) -> None:
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
