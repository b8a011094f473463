"""TorchScript of the builtin decoder for the C++ runner (model/cpp/runner.cpp): decoder.py's own
Decoder.step and embedding, scripted, plus the guard's key hash (the one definition: lcp.Session
hashes through key_hashes() too).

`export(model, path)` scripts a copy of the model and saves it; C++ loads it with torch::jit::load.
Config is a frozen dataclass TorchScript 1.13 cannot type: the scripted copy carries ScriptConfig,
the same fields as a TorchScript class. Nothing of the math is restated here.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import List, Optional, Tuple

import torch
from torch import nn

from .decoder import GUARD_HASH_BITS, Decoder, rel_bucket, rotate

HASH_BITS = GUARD_HASH_BITS
HASH_SEED = 1234


def hash_planes(kv_heads: int, tokens_per_region: int, head_dim: int) -> torch.Tensor:
    """The guard's sign-random-projection hyperplanes (fixed seed) [HASH_BITS, KVH*T*hd]."""
    gen = torch.Generator().manual_seed(HASH_SEED)
    return torch.randn(HASH_BITS, kv_heads * tokens_per_region * head_dim, generator=gen)


def key_hashes(k0: torch.Tensor, planes: torch.Tensor, regions: int) -> torch.Tensor:
    """SRP hash per region of layer-0 pre-rotation keys @k0 [KVH, regions*T, hd] -> int64 [regions]
    (32-bit values): what the guard compares."""
    kvh, n, hd = k0.shape[0], k0.shape[1], k0.shape[2]
    per = k0.view(kvh, regions, n // regions, hd).permute(1, 0, 2, 3).reshape(regions, -1)
    bits = (per @ planes.t()) > 0
    weights = torch.pow(2, torch.arange(planes.shape[0], dtype=torch.int64))
    return (bits.to(torch.int64) * weights).sum(1)


@torch.jit.script
class ScriptConfig:
    def __init__(self, feat_dim: int, d_model: int, layers: int, heads: int, kv_heads: int, head_dim: int,
                 ffn: int, regions: int, tokens_per_region: int, codes: int, window: int, question_reach: int,
                 rope_base: float, visual: int):
        self.feat_dim = feat_dim
        self.d_model = d_model
        self.layers = layers
        self.heads = heads
        self.kv_heads = kv_heads
        self.head_dim = head_dim
        self.ffn = ffn
        self.regions = regions
        self.tokens_per_region = tokens_per_region
        self.codes = codes
        self.window = window
        self.question_reach = question_reach
        self.rope_base = rope_base
        self.visual = visual


class StepModule(nn.Module):
    """What the C++ runner calls: geometry(), embed(tokens), prepare(tokens) (embedding + guard
    hashes), selector(...) (ReSV's inputs), and prefill() then ask() = forward = Decoder.step over
    the frame's block views and the attention cache (optionally reading only the tokens ReSV
    selected); the runner times ask() apart (StepStats::ask_s)."""

    def __init__(self, model: Decoder):
        super().__init__()
        c = model.c
        d = copy.deepcopy(model).eval()
        sc = ScriptConfig(**c.to_dict(), visual=c.visual)
        for m in d.modules():
            if hasattr(m, "c"):
                m.c = sc
            if hasattr(m, "wq"):  # Attention.last_read: an attribute the scripted methods assign
                m.last_read = torch.zeros(0)
        self.d = d
        self.regions = c.regions
        self.geo = [c.layers, c.kv_heads, c.head_dim, c.tokens_per_region, c.regions, c.visual, c.feat_dim, c.codes]
        self.register_buffer("planes", hash_planes(c.kv_heads, c.tokens_per_region, c.head_dim))

    @torch.jit.export
    def geometry(self) -> List[int]:
        """layers, kv_heads, head_dim, tokens_per_region, regions, visual, feat_dim, codes."""
        return self.geo

    @torch.jit.export
    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.d.embed_frame(tokens)

    @torch.jit.export
    def prepare(self, tokens: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Embeddings, the guard's key hashes and the layer-0 pre-rotation keys [KVH, 64, hd] they
        hash (what a refreshed block's layer 0 holds: lcp.StreamRunner._fill)."""
        vis = self.d.embed_frame(tokens)
        k0 = self.d.layer0_keys(vis)
        return vis, key_hashes(k0, self.planes, self.regions), k0

    @torch.jit.export
    def selector(self, q_region: torch.Tensor, q_target: torch.Tensor, t: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """What ReSV's read needs per question (docs/hw/resv.md §8.2), from the model's layer 0,
        computed as anchors.Managed computes it for vrex_hierarchy (queries(), pos_bias(),
        _resv_pos_slots(): the same ops in the same order, so both paths hash and weigh the same
        values): the query [Q, H*hd] (the region queries of every region, indexed, rotated to the
        frame asked about, then scaled: the heads concatenated like the keys), the past frames of its
        reach [Q, 2*reach+1] (-1 outside 0 .. t-1) and the position table's weight exp(b - max b) of
        each of their tokens [Q, (2*reach+1)*visual] (0 outside), b = the learned question bias's
        frame-distance table and slot table, each averaged over the heads, added."""
        c = self.d.c
        attn = self.d.blocks[0].attn
        nq = q_region.shape[0]
        q0 = attn.wq(self.d.blocks[0].norm1(self.d.question_embed)).view(c.regions, c.heads, c.head_dim)
        cos, sin = self.d.rope(q_target)
        q = rotate(q0[q_region].transpose(0, 1), cos, sin).transpose(0, 1)
        q = (q * c.head_dim**-0.5).reshape(nq, c.heads * c.head_dim)
        offs = torch.arange(-c.question_reach, c.question_reach + 1)
        fr = q_target[:, None] + offs[None, :]
        past = (fr >= 0) & (fr < t)
        b = attn.rel.mean(0)[rel_bucket(fr - q_target[:, None])][:, :, None] + attn.slot.mean(0)[q_region][:, None, :]
        bd = b.double().masked_fill(~past[:, :, None], float("-inf"))  # Q F 64
        top = bd.reshape(nq, -1).max(1).values.clamp_min(-1e300)
        w = torch.exp(bd - top[:, None, None]).float().reshape(nq, fr.shape[1] * c.visual)
        return q, torch.where(past, fr, torch.full_like(fr, -1)), torch.nan_to_num(w, nan=0.0)

    @torch.jit.export
    def region_queries(self) -> torch.Tensor:
        """The layer-0 query of every region question before rotation and scaling [regions, H*hd]
        (anchors.Managed.q0): the C++ runner rotates it to the frame asked about."""
        c = self.d.c
        return self.d.blocks[0].attn.wq(self.d.blocks[0].norm1(self.d.question_embed)).reshape(c.regions, -1)

    @torch.jit.export
    def position_tables(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """The position table of ReSV's read (anchors.Managed.pos_rel, pos_slot): the questions'
        learned distance bias [buckets] and slot bias [regions, visual] of layer 0, averaged over heads."""
        attn = self.d.blocks[0].attn
        return attn.rel.mean(0), attn.slot.mean(0)

    @torch.jit.export
    def query_norm(self) -> torch.Tensor:
        """The median |query| of the model's region questions, scaled (the MASS table's calibration,
        as anchors.Managed computes it)."""
        c = self.d.c
        q0 = self.d.blocks[0].attn.wq(self.d.blocks[0].norm1(self.d.question_embed))
        return q0.reshape(c.regions, -1).norm(2, -1).median() * c.head_dim**-0.5

    @torch.jit.export
    def prefill(self, z: torch.Tensor, vis: torch.Tensor, fresh: List[int], cur: List[torch.Tensor],
                ck: torch.Tensor, cv: torch.Tensor, t: int) -> None:
        """Decoder.prefill: the visual half of forward()."""
        self.d.prefill(z, vis, fresh, cur, (ck, cv), t)

    @torch.jit.export
    def ask(self, ck: torch.Tensor, cv: torch.Tensor, t: int, q_region: torch.Tensor, q_target: torch.Tensor,
            q_read: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Decoder.ask: the questions' half of forward(), after prefill()."""
        return self.d.ask((ck, cv), t, q_region, q_target, None, q_read)

    def forward(self, z: torch.Tensor, vis: torch.Tensor, fresh: List[int], cur: List[torch.Tensor],
                ck: torch.Tensor, cv: torch.Tensor, t: int, q_region: torch.Tensor,
                q_target: torch.Tensor, q_read: Optional[torch.Tensor] = None) -> torch.Tensor:
        return self.d.step(z, vis, fresh, cur, (ck, cv), t, q_region, q_target, None, q_read)


def export(model: Decoder, path: Path) -> Path:
    """Scripts @model's step (StepModule) and saves it at @path."""
    with torch.no_grad():
        torch.jit.script(StepModule(model)).save(str(path))
    return path
