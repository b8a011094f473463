"""The builtin video decoder: Llama-style (RMSNorm, RoPE, grouped-query attention, SwiGLU).

A frame is 16 SHIE regions (4x4 grid) x 4 visual tokens (2x2 cells of the encoder's 8x8 feature
map), followed by 16 query tokens, one per region, whose head outputs a distribution over the
codebook code of that region in the NEXT frame. Query tokens are transient (their K/V is never
cached, like a prompt); visual tokens' K/V is what vrex blocks hold.

Visibility (the causal mask): a token sees every visual token of the earlier frames of the window
and the tokens of its own frame up to itself (slot order: visual 0..63, then queries 64..79).
Earlier frames' query tokens are never visible.

RoPE: keys are cached BEFORE rotation; q and k are rotated at attention time with the position the
token has in the current window, p = (frame - first frame of the window) * 80 + slot. A reused block
therefore takes the position of the frame and slot that reference it, and sliding the window needs
no re-rotation of anything stored.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class Config:
    feat_dim: int = 96
    d_model: int = 256
    layers: int = 4
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 64
    ffn: int = 512
    regions: int = 16
    tokens_per_region: int = 4
    codes: int = 64
    window: int = 4
    rope_base: float = 10000.0

    @property
    def visual(self) -> int:
        return self.regions * self.tokens_per_region

    @property
    def slots(self) -> int:
        return self.visual + self.regions

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope(x: torch.Tensor, pos: torch.Tensor, base: float) -> torch.Tensor:
    """Rotates pairs (i, i + d/2) of the last dim of @x [..., T, d] by pos * base^(-2i/d)."""
    d = x.shape[-1]
    inv = base ** (-torch.arange(0, d // 2, dtype=torch.float64) * 2.0 / d)
    ang = pos.to(torch.float64)[:, None] * inv[None, :]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def visibility(q_frame: torch.Tensor, q_slot: torch.Tensor, k_frame: torch.Tensor, k_slot: torch.Tensor,
               visual: int, window: int | None = None) -> torch.Tensor:
    """[Tq, Tk] bool: may query token i attend to key token j (see the module docstring). With
    @window, only the window - 1 frames before the query's own are visible (sliding window)."""
    earlier = (k_frame[None, :] < q_frame[:, None]) & (k_slot[None, :] < visual)
    if window is not None:
        earlier &= k_frame[None, :] > q_frame[:, None] - window
    same = (k_frame[None, :] == q_frame[:, None]) & (k_slot[None, :] <= q_slot[:, None])
    return earlier | same


class Attention(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.c = c
        self.wq = nn.Linear(c.d_model, c.heads * c.head_dim, bias=False)
        self.wk = nn.Linear(c.d_model, c.kv_heads * c.head_dim, bias=False)
        self.wv = nn.Linear(c.d_model, c.kv_heads * c.head_dim, bias=False)
        self.wo = nn.Linear(c.heads * c.head_dim, c.d_model, bias=False)

    def kv(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Pre-rotation K and V of normed states @h [B, T, D] -> [B, KVH, T, hd] each."""
        b, t, _ = h.shape
        k = self.wk(h).view(b, t, self.c.kv_heads, self.c.head_dim).transpose(1, 2)
        v = self.wv(h).view(b, t, self.c.kv_heads, self.c.head_dim).transpose(1, 2)
        return k, v

    def attend(self, h: torch.Tensor, q_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               k_pos: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """@h [B, Tq, D] normed queries' states; @k/@v [B, KVH, Tk, hd] pre-rotation; mask [Tq, Tk]."""
        c = self.c
        b, t, _ = h.shape
        q = self.wq(h).view(b, t, c.heads, c.head_dim).transpose(1, 2)
        q = rope(q, q_pos, c.rope_base)
        k = rope(k, k_pos, c.rope_base)
        rep = c.heads // c.kv_heads  # grouped-query: each KV head serves rep query heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        s = (q @ k.transpose(-1, -2)) / c.head_dim**0.5
        s = s.masked_fill(~mask, float("-inf"))
        o = torch.softmax(s, dim=-1) @ v
        return self.wo(o.transpose(1, 2).reshape(b, t, c.heads * c.head_dim))


class Block(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.norm1 = RMSNorm(c.d_model)
        self.attn = Attention(c)
        self.norm2 = RMSNorm(c.d_model)
        self.w1 = nn.Linear(c.d_model, c.ffn, bias=False)
        self.w3 = nn.Linear(c.d_model, c.ffn, bias=False)
        self.w2 = nn.Linear(c.ffn, c.d_model, bias=False)

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Decoder(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.c = c
        self.embed = nn.Linear(c.feat_dim, c.d_model)
        self.slot_embed = nn.Parameter(torch.randn(c.visual, c.d_model) * 0.02)
        self.query_embed = nn.Parameter(torch.randn(c.regions, c.d_model) * 0.02)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.layers))
        self.norm = RMSNorm(c.d_model)
        self.head = nn.Linear(c.d_model, c.codes)

    def frame_inputs(self, feats: torch.Tensor) -> torch.Tensor:
        """@feats [B, F, 64, C] encoder tokens (region-major) -> [B, F*80, D] embeddings."""
        b, f, n, _ = feats.shape
        vis = self.embed(feats) + self.slot_embed
        qry = self.query_embed.expand(b, f, -1, -1)
        return torch.cat([vis, qry], dim=2).reshape(b, f * self.c.slots, self.c.d_model)

    def token_index(self, frames: int) -> tuple[torch.Tensor, torch.Tensor]:
        fr = torch.arange(frames).repeat_interleave(self.c.slots)
        sl = torch.arange(self.c.slots).repeat(frames)
        return fr, sl

    def forward(self, feats: torch.Tensor, window: int | None = None) -> torch.Tensor:
        """Full-sequence reference: @feats [B, F, 64, C] -> logits [B, F, 16, codes] (exact KV).
        @window: sliding-window visibility, what streaming with a W-frame KV cache computes."""
        b, f = feats.shape[:2]
        x = self.frame_inputs(feats)
        fr, sl = self.token_index(f)
        pos = fr * self.c.slots + sl
        mask = visibility(fr, sl, fr, sl, self.c.visual, window)
        for blk in self.blocks:
            h = blk.norm1(x)
            k, v = blk.attn.kv(h)
            x = x + blk.attn.attend(h, pos, k, v, pos, mask)
            x = blk.mlp(x)
        logits = self.head(self.norm(x)).view(b, f, self.c.slots, self.c.codes)
        return logits[:, :, self.c.visual :]
