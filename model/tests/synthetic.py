"""Synthetic inputs the model tests share: an untrained decoder whose question biases count, random
encoder tokens and random luma frames (deterministic by seed)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from vrex.decoder import Config, Decoder


def decoder(read_layer: int = 0) -> Decoder:
    torch.manual_seed(0)  # the same weights whatever the read layer: only that differs
    m = Decoder(Config(), read_layer=read_layer).eval()
    with torch.no_grad():  # the questions' learned biases start at 0: make them count here
        for blk in m.blocks:
            blk.attn.rel.normal_()
            blk.attn.slot.normal_()
    return m


def tokens(frames: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(frames, 64, Config().feat_dim, generator=torch.Generator().manual_seed(seed))


def luma(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (96, 128), dtype=np.uint8)


def streamed_and_reference(m: Decoder, stream: Any, x: torch.Tensor,
                           questions: Callable[[int], tuple[torch.Tensor, torch.Tensor]]) -> tuple[
                               torch.Tensor, torch.Tensor, list[Any]]:
    """Runs @x [F, 64, C] through @stream frame by frame, asking questions(t) -> (regions, targets)
    at frame t, and the same questions through the full-sequence reference @m(...). Returns the
    streamed logits, the reference's, and each step's frame stats."""
    got, stats, qt, qr, qg = [], [], [], [], []
    for t in range(x.shape[0]):
        regions, targets = questions(t)
        logits, fs = stream.step(luma(t), x[t], regions, targets)
        got.append(logits)
        stats.append(fs)
        qt.append(torch.full((len(regions),), t))
        qr.append(regions)
        qg.append(targets)
    with torch.no_grad():
        want = m(x, torch.cat(qt), torch.cat(qr), torch.cat(qg))
    return torch.cat(got), want, stats
