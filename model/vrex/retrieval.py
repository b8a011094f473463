"""Decode-time token retrieval over the vrex KV cache: ReSV/WiCSum (issue 12) and two software anchors.

`vrex.enable(model, retrieval="wicsum", ratio=0.3)` makes the query tokens of every frame (the tokens
whose logits the model emits, i.e. the decode side) attend only to the cached visual tokens a selector
picks, instead of all of them. Frame-level reuse is unchanged: the selector sees whatever KV the
window's (possibly reused) blocks hold. Visual tokens of fresh regions (the prefill) still attend to
everything; the query tokens' own transient K/V is always kept.

Selectors, per (layer, KV head) and per query row (query token x query head of the group):
  wicsum  the HAL's ResvHead (lib/resv.c on the emulated device): the cached keys, rotated as the
          attention sees them, are hashed (32 SRP bits) and clustered by the HCU, and the WTU's WiCSum
          picks the clusters for the query's hash. No Python re-implementation of the hash.
  oracle  exact top-k by the true scores, k = the number of tokens WiCSum picked for the same row.
  quest   Quest-style pages of PAGE tokens: per page the min/max of every key dimension bound q.k from
          above; the ceil(k / PAGE) pages of highest bound are read.
  random  k tokens uniformly at random (the control: a budget without a mechanism).
oracle/quest/random run WiCSum first to get its budget, so all four read matched KV-byte budgets.

Keys are rotated with window-relative RoPE positions (decoder.py), which move every frame, so each
frame rebuilds the heads (truncate(0) + append of the window's keys). The cost model counts that.

Whatever the active selector, every attention call records (RetrievalStats) the share of the full
softmax mass over the cached tokens that each selector's set holds (attention-mass recall), the
tokens it reads, and an operation count of the selection against the attention work it saves.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
import numpy as np
import torch

from .decoder import Attention

try:
    import _vrexhal as hal  # type: ignore[import-not-found]
except ImportError as e:  # pragma: no cover
    raise ImportError("vrex.retrieval: the _vrexhal extension is not on PYTHONPATH") from e

KINDS = ("wicsum", "oracle", "quest", "random")
PAGE = 16
HASH_BITS = 32


def mass_lut(scale: float) -> list[int]:
    """The WTU's MASS-mode weight per Hamming distance d: round(65535 exp(scale (cos(pi d/32) - 1))), the
    softmax weight of a key at the angle the distance estimates for a logit scale @scale. Floor 1 (the
    device default has 0 for d >= 30): every cluster keeps a weight, so ratio 1.0 selects every token."""
    return [max(1, round(65535 * math.exp(scale * (math.cos(math.pi * d / 32) - 1)))) for d in range(33)]


@dataclass
class RetrievalStats:
    """Per (frame, layer, KV head, query row) records, flattened. Recall and token shares are per row;
    bytes are per (query token, KV head): the union over the group's query heads, what a GQA step fetches."""
    recall: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    tokens: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    read: dict[str, float] = field(default_factory=lambda: {k: 0.0 for k in KINDS})  # union tokens
    full: float = 0.0            # tokens a full-attention step reads (same union basis)
    steps: int = 0               # query tokens (decode steps) x layers
    # Operation counts (adds/compares/MACs, 1 each) per selector, and the attention MACs saved.
    sel_ops: dict[str, float] = field(default_factory=lambda: {k: 0.0 for k in KINDS})
    saved_ops: dict[str, float] = field(default_factory=lambda: {k: 0.0 for k in KINDS})
    hash_once_ops: float = 0.0   # wicsum's hashing if keys were hashed once at insertion
    sel_s: float = 0.0           # thread CPU time of the HAL calls (hash + WiCSum)
    attn_s: float = 0.0          # thread CPU time of the full attention these calls replace
    clusters: list[float] = field(default_factory=list)  # clusters per head per frame / tokens
    need95: list[float] = field(default_factory=list)  # per row: share of tokens the oracle needs for 0.95


@dataclass
class RetrievalOptions:
    kind: str = "wicsum"
    ratio: float = 0.3
    th: int = 7
    lut_scale: float = 6.0
    seed: int = 0


class Retrieval:
    def __init__(self, device: "hal.Device", layers: int, kv_heads: int, head_dim: int, opts: RetrievalOptions):
        if opts.kind not in KINDS:
            raise ValueError(f"retrieval must be one of {', '.join(KINDS)}, not '{opts.kind}'")
        if not 0.0 <= opts.ratio <= 1.0:
            raise ValueError(f"retrieval ratio must be in [0, 1], not {opts.ratio}")
        self.opts = opts
        self.device = device
        lut = mass_lut(opts.lut_scale)
        # One hardware head serves every (layer, KV head): the keys are rebuilt per call anyway (RoPE
        # positions move every frame), and the device has only 16 heads for all sessions.
        self.head = hal.ResvHead(device, head_dim, opts.th, opts.ratio, "mass", lut=lut,
                                 bytes_per_token=2 * head_dim * 4)
        self.gen = torch.Generator().manual_seed(opts.seed)
        self.stats = RetrievalStats()

    # ---- selectors ----------------------------------------------------------------------------------
    def wicsum(self, layer: int, g: int, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, int]:
        """WiCSum mask [R, N] of the HAL's head for queries @q [R, hd] over keys @k [N, hd]; clusters."""
        head = self.head
        head.truncate(0)
        c0 = hal.resv_stats(self.device)["clusters"]
        head.append(np.ascontiguousarray(k.numpy()))
        ncl = hal.resv_stats(self.device)["clusters"] - c0
        mask, _, _ = head.select_mask(np.ascontiguousarray(q.numpy()))
        return torch.from_numpy(mask), ncl

    @staticmethod
    def oracle(scores: torch.Tensor, budget: torch.Tensor) -> torch.Tensor:
        """Top-budget[r] tokens of row r by the true scores @scores [R, N] (ties: lower index)."""
        order = torch.sort(scores, dim=-1, descending=True, stable=True).indices
        rank = torch.empty_like(order)
        rank.scatter_(1, order, torch.arange(scores.shape[1]).expand_as(order))
        return rank < budget[:, None]

    @staticmethod
    def quest(q: torch.Tensor, k: torch.Tensor, budget: torch.Tensor, page: int = PAGE) -> torch.Tensor:
        """Quest-style pages: upper bound of q.k per page from the per-dimension key min/max; the
        ceil(budget / page) pages of highest bound per row (ties: lower page)."""
        n = k.shape[0]
        pages = (n + page - 1) // page
        pad = pages * page - n
        kp = torch.cat([k, k[-1:].expand(pad, -1)]) if pad else k  # padding repeats a real key
        kp = kp.view(pages, page, -1)
        kmax, kmin = kp.max(1).values, kp.min(1).values  # P hd
        ub = torch.maximum(q[:, None, :] * kmax[None], q[:, None, :] * kmin[None]).sum(-1)  # R P
        npages = (budget + page - 1) // page
        psel = Retrieval.oracle(ub, npages)  # R P
        return psel.repeat_interleave(page, dim=1)[:, :n]

    def random(self, shape: tuple[int, int], budget: torch.Tensor) -> torch.Tensor:
        key = torch.rand(shape, generator=self.gen)
        return Retrieval.oracle(key, budget)

    # ---- attention ----------------------------------------------------------------------------------
    def attend(self, attn: Attention, layer: int, h: torch.Tensor, q_rope: tuple[torch.Tensor, torch.Tensor],
               k: torch.Tensor, v: torch.Tensor, k_rope: tuple[torch.Tensor, torch.Tensor], bias: torch.Tensor,
               nf: int, n_cached: int) -> torch.Tensor:
        """lcp.attend with the query tokens' rows (the last t - @nf of the frame) restricted to the
        selected tokens among the first @n_cached keys (the cached visual tokens). Identical operations
        otherwise, so a selection of every token gives bit-identical output."""
        from .lcp import rotate

        c = attn.c
        t = h.shape[1]
        rep = c.heads // c.kv_heads
        q = attn.wq(h[0]).view(t, c.heads, c.head_dim).transpose(0, 1)  # H T hd
        q = rotate(q, *q_rope).reshape(c.kv_heads, rep * t, c.head_dim)
        kr = rotate(k[0], *k_rope)
        a0 = time.thread_time()
        s = torch.baddbmm(bias, q, kr.transpose(1, 2), alpha=c.head_dim**-0.5)
        attn_s = time.thread_time() - a0
        nq = t - nf
        if nq > 0 and n_cached > 0:
            rows = torch.cat([torch.arange(r * t + nf, (r + 1) * t) for r in range(rep)])  # head-major
            sub = s[:, rows]  # KVH R Tk (copy)
            for g in range(c.kv_heads):
                sel = self._select(layer, g, q[g, rows], kr[g, :n_cached], sub[g], n_cached, nq, rep, c.head_dim)
                sub[g, :, :n_cached].masked_fill_(~sel, float("-inf"))
            s[:, rows] = sub
        a0 = time.thread_time()
        o = torch.softmax(s, dim=-1) @ v[0]
        self.stats.attn_s += attn_s + time.thread_time() - a0
        o = o.view(c.heads, t, c.head_dim).transpose(0, 1).reshape(1, t, c.heads * c.head_dim)
        return attn.wo(o)

    def _select(self, layer: int, g: int, q: torch.Tensor, k: torch.Tensor, scores: torch.Tensor, n: int,
                nq: int, rep: int, hd: int) -> torch.Tensor:
        """The active selector's mask [R, n] for one KV head; records every selector's figures."""
        st = self.stats
        t0 = time.thread_time()
        w, ncl = self.wicsum(layer, g, q, k)
        st.sel_s += time.thread_time() - t0
        budget = w.sum(1)
        sc = scores[:, :n]
        masks = {"wicsum": w, "oracle": self.oracle(sc, budget), "quest": self.quest(q, k, budget),
                 "random": self.random(tuple(sc.shape), budget)}
        # Attention-mass recall against the full softmax (over every visible key of the row; the
        # query tokens' own keys are always read, so recall is the selected share of the cached mass).
        p = torch.softmax(scores, dim=-1)[:, :n]
        mass = p.sum(-1).clamp_min(1e-30)
        r_rows = q.shape[0]
        pages = (n + PAGE - 1) // PAGE
        # Operation counts per KV head and frame (docs/hw/resv.md §7): hashing every cached key (the
        # per-frame rebuild) and clustering it against at most ncl representatives; per row a query
        # hash, two passes over the clusters and one over the tokens. Anchors: the oracle computes every
        # score (n * hd MACs per row); Quest builds min/max per page (2 n hd, per frame) and bounds every
        # page (2 P hd per row). Saved: (n - read) * 2 hd MACs (QK and PV) per row.
        ops = {
            "wicsum": n * HASH_BITS * hd + n * ncl + r_rows * (HASH_BITS * hd + 2 * ncl + n),
            "oracle": r_rows * n * hd,
            "quest": 2 * n * hd + r_rows * 2 * pages * hd,
            "random": r_rows * n,
        }
        ops["oracle"] += ops["wicsum"]  # the matched budget comes from WiCSum: the anchors pay for it
        st.hash_once_ops += min(n, 64) * HASH_BITS * hd
        for kind, m in masks.items():
            st.recall[kind] += ((p * m).sum(-1) / mass).tolist()
            st.tokens[kind] += (m.sum(-1).double() / n).tolist()
            union = m.view(rep, nq, n).any(0).sum().item()
            st.read[kind] += union
            st.sel_ops[kind] += ops[kind]
            st.saved_ops[kind] += (n * r_rows - m.sum().item()) * 2 * hd
        cum = (torch.sort(p, dim=-1, descending=True).values.cumsum(-1) / mass[:, None])
        st.need95 += (((cum < 0.95).sum(-1) + 1).clamp_max(n).double() / n).tolist()
        st.full += n * nq
        st.steps += nq
        st.clusters.append(ncl / n)
        return masks[self.opts.kind]


def summary(st: RetrievalStats, kind: str) -> dict[str, float]:
    """Aggregates of one selector: means over rows, bytes and ops over everything."""
    rec = np.array(st.recall[kind]) if st.recall[kind] else np.zeros(1)
    return {
        "recall_mean": float(rec.mean()),
        "recall_p10": float(np.percentile(rec, 10)),
        "tokens_ratio": float(np.mean(st.tokens[kind])) if st.tokens[kind] else 0.0,
        "kv_bytes_ratio": st.read[kind] / st.full if st.full else 0.0,
        "selection_ops_per_step": st.sel_ops[kind] / st.steps if st.steps else 0.0,
        "attention_ops_saved_per_step": st.saved_ops[kind] / st.steps if st.steps else 0.0,
        "selection_cost_ratio": st.sel_ops[kind] / st.saved_ops[kind] if st.saved_ops[kind] else float("inf"),
    }
