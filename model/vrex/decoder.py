"""The builtin video decoder: Llama-style (RMSNorm, RoPE, grouped-query attention, SwiGLU).

A frame is 16 SHIE regions (4x4 grid) x 4 visual tokens (2x2 cells of the encoder's 8x8 feature
map). Visual tokens are the KV cache: their K/V (every layer) is what vrex blocks hold, and a long
stream keeps all of it (the exact baseline is the whole, growing cache).

Questions are transient tokens (like a prompt: never cached, never seen by later tokens) asked at
frame t: "which code did region r have k frames ago" (k = 0 is the present-frame task). A question
is region r's learned embedding; its head outputs a distribution over the codebook (vrex/task.py):
a learned projection back into the encoder's feature space, scored by cosine against the task's
fixed codebook (a buffer of the model). The answer is then "the code nearest to the features the
question read", which holds on clips whose features training never covered; a free linear head
learns the training clips' code statistics instead (99 % train / 60 % on the validation clip for
a linear probe of the region vectors, docs/model.md).

Visibility:
  visual token of frame f   every visual token of frames f - W + 1 .. f (W = Config.window; the
                            frame's own tokens all at once: a frame arrives whole)
  question asked at frame t every visual token of frames 0 .. t (the whole cache)

RoPE positions are FRAME indices (all tokens of a frame share one; slot embeddings tell them
apart). Keys are cached BEFORE rotation and rotated at attention time with the position of the frame
that references them, so a reused block takes the position of the frame that reuses it. A question
about frame t - k is rotated with position t - k: the attention logit of a key then depends on its
distance to the frame asked about, which is how a question finds "k frames ago" in a long cache.

Decoder.forward is the full-sequence reference (training); Decoder.step is one frame of the
streaming computation over a block-backed cache (vrex/lcp.py calls it); pytest holds them equal.
Decoder.step is TorchScript-compatible: vrex/script.py scripts it for the C++ runner (model/cpp), so
its annotations use typing's Optional/List and it avoids what TorchScript cannot compile.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import List, Optional

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class Config:
    feat_dim: int = 96
    d_model: int = 64
    layers: int = 4
    heads: int = 4
    kv_heads: int = 4
    head_dim: int = 32
    ffn: int = 192
    regions: int = 16
    tokens_per_region: int = 4
    codes: int = 64
    window: int = 4
    question_reach: int = 2  # a question reads the frames within this many of the frame it asks about
    rope_base: float = 1000.0

    @property
    def visual(self) -> int:
        return self.regions * self.tokens_per_region

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(pos: torch.Tensor, d: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin [T, d/2] for positions @pos [T]; pairs (i, i + d/2) rotate by pos * base^(-2i/d)."""
    inv = base ** (-torch.arange(0, d // 2, dtype=torch.float64) * 2.0 / d)
    ang = pos.to(torch.float64)[:, None] * inv[None, :]
    return ang.cos().float(), ang.sin().float()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


INIT_BIAS = 8.0
REL_BUCKETS = 17  # frame distance key - target: 0, then log2 buckets 1..8 after, 9..16 before


def rel_bucket(d: torch.Tensor) -> torch.Tensor:
    """Signed log2 bucket of frame distances @d (key frame - question's target frame)."""
    mag = torch.log2(d.abs().clamp_min(1).to(torch.float32)).floor().to(torch.long).clamp_max(7) + 1
    return torch.where(d == 0, torch.zeros_like(d), torch.where(d > 0, mag, mag + 8))


class Attention(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.c = c
        # Questions only: a learned bias per head on the key's frame distance to the frame asked about
        # (T5-style relative buckets) and on the key's slot given the region asked about. RoPE alone
        # makes "find frame t - k, region r" a needle search SGD learns slowly (docs/model.md).
        self.rel = nn.Parameter(torch.zeros(c.heads, REL_BUCKETS))
        self.slot = nn.Parameter(torch.zeros(c.heads, c.regions, c.visual))
        # Initialised to look at the asked region of the asked frame (training moves them): learning
        # it from zero did not transfer to held-out clips within this machine's budget (docs/model.md).
        with torch.no_grad():
            self.rel[:, 0] = INIT_BIAS
            for r in range(c.regions):
                self.slot[:, r, r * c.tokens_per_region : (r + 1) * c.tokens_per_region] = INIT_BIAS
        self.wq = nn.Linear(c.d_model, c.heads * c.head_dim, bias=False)
        self.wk = nn.Linear(c.d_model, c.kv_heads * c.head_dim, bias=False)
        self.wv = nn.Linear(c.d_model, c.kv_heads * c.head_dim, bias=False)
        self.wo = nn.Linear(c.heads * c.head_dim, c.d_model, bias=False)

    def kv(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Pre-rotation K and V of normed states @h [T, D] -> [KVH, T, hd] each."""
        t = h.shape[0]
        k = self.wk(h).view(t, self.c.kv_heads, self.c.head_dim).transpose(0, 1)
        v = self.wv(h).view(t, self.c.kv_heads, self.c.head_dim).transpose(0, 1)
        return k, v

    def attend(self, h: torch.Tensor, q_rope: tuple[torch.Tensor, torch.Tensor], k: torch.Tensor, v: torch.Tensor,
               k_rope: tuple[torch.Tensor, torch.Tensor], bias: Optional[torch.Tensor]) -> torch.Tensor:
        """@h [Tq, D] normed query states, @k/@v [KVH, Tk, hd] pre-rotation, @bias [Tq, Tk] additive
        mask (0 visible, -inf hidden) or None (all visible). Grouped-query: the query heads of a group
        share one matmul against their KV head (no copy of K/V per query head)."""
        c = self.c
        t = h.shape[0]
        rep = c.heads // c.kv_heads
        q = self.wq(h).view(t, c.heads, c.head_dim).transpose(0, 1) * c.head_dim**-0.5  # H Tq hd
        q = rotate(q, *q_rope).reshape(c.kv_heads, rep * t, c.head_dim)  # head h = kv * rep + r
        s = q @ rotate(k, *k_rope).transpose(1, 2)  # KVH (rep Tq) Tk
        if bias is not None:
            s = s + self._heads(bias, t)
        o = torch.softmax(s, dim=-1) @ v
        self.last_read = o.view(c.heads, t, c.head_dim).transpose(0, 1).reshape(t, c.heads * c.head_dim)
        return self.wo(self.last_read)

    def _heads(self, bias: torch.Tensor, t: int) -> torch.Tensor:
        """[Tq, Tk] (every head) or [H, Tq, Tk] -> the scores' [KVH, rep * Tq, Tk] layout."""
        c = self.c
        if bias.dim() == 2:
            return bias.repeat(c.heads // c.kv_heads, 1)[None]
        return bias.reshape(c.kv_heads, (c.heads // c.kv_heads) * t, bias.shape[-1])

    def question_bias_pairs(self, q_region: torch.Tensor, q_target: torch.Tensor, k_frame: torch.Tensor,
                            k_slot: torch.Tensor) -> torch.Tensor:
        """question_bias for per-question keys @k_frame/@k_slot [Q, M] -> [H, Q, M]."""
        b = rel_bucket(k_frame - q_target[:, None])
        return self.rel[:, b] + self.slot[:, q_region[:, None], k_slot]

    def attend_gathered(self, h: torch.Tensor, q_rope: tuple[torch.Tensor, torch.Tensor], k: torch.Tensor,
                        v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """Each query row reads its own keys: @h [Q, D], @k/@v [KVH, Q, M, hd] (K rotated), @bias
        [H, Q, M] additive (-inf: not read)."""
        c = self.c
        t = h.shape[0]
        rep = c.heads // c.kv_heads
        q = self.wq(h).view(t, c.heads, c.head_dim).transpose(0, 1) * c.head_dim**-0.5
        q = rotate(q, *q_rope).view(c.kv_heads, rep, t, c.head_dim).transpose(1, 2)  # KVH Q rep hd
        s = q @ k.transpose(-1, -2) + bias.view(c.kv_heads, rep, t, k.shape[2]).transpose(1, 2)  # KVH Q rep M
        o = torch.softmax(s, dim=-1) @ v  # KVH Q rep hd
        self.last_read = o.permute(1, 0, 2, 3).reshape(t, c.heads * c.head_dim)
        return self.wo(self.last_read)

    def question_bias(self, q_region: torch.Tensor, q_target: torch.Tensor, k_frame: torch.Tensor,
                      k_slot: torch.Tensor) -> torch.Tensor:
        """[H, Q, Tk] learned bias of the questions' attention (see __init__)."""
        b = rel_bucket(k_frame[None, :] - q_target[:, None])  # Q Tk
        return self.rel[:, b] + self.slot[:, q_region][:, :, k_slot]

    def attend_parts(self, h: torch.Tensor, q_rope: tuple[torch.Tensor, torch.Tensor],
                     parts: list[tuple[torch.Tensor, torch.Tensor]], biases: Optional[List[torch.Tensor]] = None) -> torch.Tensor:
        """attend() with every key visible, the keys given in parts (K already rotated, V) that are
        never concatenated: one softmax over the scores of all parts (a long cache is read in place)."""
        c = self.c
        t = h.shape[0]
        rep = c.heads // c.kv_heads
        q = self.wq(h).view(t, c.heads, c.head_dim).transpose(0, 1) * c.head_dim**-0.5
        q = rotate(q, *q_rope).reshape(c.kv_heads, rep * t, c.head_dim)
        s = torch.cat([(q @ k.transpose(1, 2)) for k, _ in parts], -1)
        if biases is not None:
            s = s + torch.cat([self._heads(b, t) for b in biases], -1)
        p = torch.softmax(s, dim=-1)
        o: Optional[torch.Tensor] = None
        off = 0
        for k, v in parts:
            part = p[..., off : off + k.shape[1]] @ v
            o = part if o is None else o + part
            off += k.shape[1]
        assert o is not None
        return self.wo(o.view(c.heads, t, c.head_dim).transpose(0, 1).reshape(t, c.heads * c.head_dim))


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


# Which layer's values the answer reads (Decoder(read_layer=...)): "builtin" reads layer 0, the model
# of record; "deep" reads the deepest layer (docs/model.md "Session 9"), so that reused deeper-layer KV
# computed from an older frame answers with that frame's content even when layer 0 is refreshed.
VARIANTS = {"builtin": 0, "deep": -1}


class Decoder(nn.Module):
    def __init__(self, c: Config, read_layer: int = 0):
        super().__init__()
        self.c = c
        # The layer whose visual values are the tokens' standardised features (value0) besides layer 0,
        # and whose question read is the answer (answer()). Not in Config: the builtin's saved config
        # (and so its weights file) stays what it was.
        self.read_layer = read_layer % c.layers
        if self.read_layer not in (0, c.layers - 1):
            raise ValueError(f"read_layer {read_layer}: the answer reads layer 0 or the deepest layer")
        self.embed = nn.Linear(c.feat_dim, c.d_model)
        self.slot_embed = nn.Parameter(torch.randn(c.visual, c.d_model) * 0.02)
        self.question_embed = nn.Parameter(torch.randn(c.regions, c.d_model) * 0.02)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.layers))
        self.norm = RMSNorm(c.d_model)
        self.head = nn.Linear(c.d_model, c.feat_dim)
        self.logit_scale = nn.Parameter(torch.tensor(2.3))  # exp: 10
        self.gate = nn.Parameter(torch.tensor(0.0))
        if c.kv_heads * c.head_dim < c.feat_dim:
            raise ValueError("layer-0 values hold the encoder features: kv_heads x head_dim >= feat_dim")
        self.register_buffer("codebook", F.normalize(torch.randn(c.codes, c.feat_dim), dim=-1))

    def value0(self, z: torch.Tensor) -> torch.Tensor:
        """Layer-0 V of visual tokens: their standardised encoder features @z [T, C], zero-padded to
        KVH x hd and split over the heads (fixed, not learned) -> [KVH, T, hd]."""
        c = self.c
        v = F.pad(z, (0, c.kv_heads * c.head_dim - c.feat_dim))
        return v.view(z.shape[0], c.kv_heads, c.head_dim).transpose(0, 1)

    def answer(self, xq: torch.Tensor, read0: torch.Tensor) -> torch.Tensor:
        """Logits over the codebook: cosine of what the questions' heads read at read_layer (layer 0 in
        the builtin; @read0 [Q, H*hd], features of the tokens they attended to) plus a gated correction from their final
        states @xq [Q, D]."""
        v = read0[:, : self.c.feat_dim] + self.gate * self.head(self.norm(xq))
        return self.logit_scale.exp() * F.normalize(v, dim=-1) @ self.codebook.T

    def embed_frame(self, tokens: torch.Tensor) -> torch.Tensor:
        """@tokens [..., 64, C] standardised encoder tokens (region-major) -> [..., 64, D]."""
        return self.embed(tokens) + self.slot_embed

    def rope(self, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return rope_tables(pos, self.c.head_dim, self.c.rope_base)

    def layer0_keys(self, vis: torch.Tensor) -> torch.Tensor:
        """Layer-0 pre-rotation keys [KVH, 64, hd] of a frame's embeddings @vis [64, D]: what the
        reuse guard hashes (one RMSNorm and one K projection, far cheaper than the prefill)."""
        blk = self.blocks[0]
        return blk.attn.kv(blk.norm1(vis))[0]

    @torch.jit.unused  # training only: the scripted module runs step()
    def forward(self, feats: torch.Tensor, q_frame: torch.Tensor, q_region: torch.Tensor,
                q_target: torch.Tensor) -> torch.Tensor:
        """Full-sequence reference over one stream. @feats [F, 64, C]; questions i asked at frame
        @q_frame[i] about region @q_region[i] at frame @q_target[i] <= q_frame[i] -> logits [Q, codes]."""
        c = self.c
        f = feats.shape[0]
        n = c.visual
        x = self.embed_frame(feats).reshape(f * n, c.d_model)
        frame_of = torch.arange(f).repeat_interleave(n)
        slot_of = torch.arange(n).repeat(f)
        rope_v = self.rope(frame_of)
        # Windowed visual attention as a [F, W*64] gather of keys (frames f-W+1 .. f; earlier than 0 masked).
        src = torch.arange(f)[:, None] - torch.arange(c.window - 1, -1, -1)[None, :]  # F W
        valid = (src >= 0).repeat_interleave(n, dim=1)  # F (W*64)
        key_idx = (src.clamp_min(0)[:, :, None] * n + torch.arange(n)).reshape(f, c.window * n)
        xq = self.question_embed[q_region]
        rope_q = self.rope(q_target)
        hidden = (frame_of[None, :] > q_frame[:, None]) | ((frame_of[None, :] - q_target[:, None]).abs() > c.question_reach)
        q_bias = torch.zeros(len(q_frame), f * n).masked_fill_(hidden, float("-inf"))
        w_bias = torch.zeros(valid.shape).masked_fill_(~valid, float("-inf"))[None, :, None, :]
        for li, blk in enumerate(self.blocks):
            h = blk.norm1(x)
            k, v = blk.attn.kv(h)  # KVH (F*64) hd
            if li == 0 or li == self.read_layer:
                v = self.value0(feats.reshape(f * n, c.feat_dim))
            hq = blk.norm1(xq)
            qb = q_bias[None] + blk.attn.question_bias(q_region, q_target, frame_of, slot_of)
            xq = blk.mlp(xq + blk.attn.attend(hq, rope_q, k, v, rope_v, qb))
            if li == self.read_layer:
                read0 = blk.attn.last_read
            if li + 1 < len(self.blocks):  # the last layer's visual outputs feed nothing
                x = x + self._window_attend(blk.attn, h, k, v, key_idx, w_bias, rope_v)
                x = blk.mlp(x)
        return self.answer(xq, read0)

    def _window_attend(self, attn: Attention, h: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                       key_idx: torch.Tensor, w_bias: torch.Tensor, rope_v: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        c = self.c
        f, n, rep = key_idx.shape[0], c.visual, c.heads // c.kv_heads
        q = attn.wq(h).view(f * n, c.heads, c.head_dim).transpose(0, 1) * c.head_dim**-0.5
        q = rotate(q, *rope_v).view(c.kv_heads, rep, f, n, c.head_dim).transpose(1, 2).reshape(c.kv_heads, f, rep * n, c.head_dim)
        kr = rotate(k, *rope_v)
        kw, vw = kr[:, key_idx], v[:, key_idx]  # KVH F (W*64) hd
        s = q @ kw.transpose(-1, -2) + w_bias  # KVH F (rep*64) (W*64)
        o = torch.softmax(s, dim=-1) @ vw  # KVH F (rep*64) hd
        o = o.view(c.kv_heads, f, rep, n, c.head_dim).permute(1, 3, 0, 2, 4).reshape(f * n, c.heads * c.head_dim)
        return attn.wo(o)

    def step(self, z: torch.Tensor, vis: torch.Tensor, fresh: list[int], cur: list[torch.Tensor],
             cache: tuple[torch.Tensor, torch.Tensor], t: int, q_region: torch.Tensor,
             q_target: torch.Tensor, keep: Optional[torch.Tensor] = None,
             q_read: Optional[torch.Tensor] = None) -> torch.Tensor:
        """One frame of the streaming computation (the prefill of frame @t) over a block-backed cache:
        prefill() then ask() (the questions read frame t's K/V of every layer, which prefill wrote;
        the visual tokens never read the questions, so the two halves run one after the other).

        @z [64, C] the frame's standardised encoder tokens, @vis [64, D] their embeddings
        (embed_frame); @fresh the regions to compute; @cur the
        frame's 16 block tensors [L, 2, KVH, T, hd] in region order (vrex blocks: fresh regions'
        K/V is written into them, the others hold reused K/V and are only read);
        @cache (K, V), each [L, KVH, >= (t+1)*64, hd]: frames 0 .. t-1 as their blocks hold them, K
        rotated to its frame's position; frame t's are written there (reused blocks take position
        t). Questions: regions @q_region about frames @q_target (<= t), each reading the frames
        within question_reach of its target. Returns logits [Q, codes]. Reused regions cost nothing
        here: no projection, attention or MLP for their tokens. @keep, @q_read: see ask()."""
        self.prefill(z, vis, fresh, cur, cache, t)
        return self.ask(cache, t, q_region, q_target, keep, q_read)

    def prefill(self, z: torch.Tensor, vis: torch.Tensor, fresh: list[int], cur: list[torch.Tensor],
                cache: tuple[torch.Tensor, torch.Tensor], t: int) -> None:
        """The visual half of step(): frame @t's K/V of every layer into @cache and into the fresh
        regions' blocks. The op count does not grow with the regions reused: the frame's blocks are
        read once (one stack for every layer), the fresh tokens' rows are written by one indexed copy
        per layer, and each fresh block is written once, after the last layer."""
        c = self.c
        tpr, n = c.tokens_per_region, c.visual
        ck, cv = cache
        rows = t * n + (torch.tensor(fresh, dtype=torch.long)[:, None] * tpr + torch.arange(tpr)).reshape(-1)
        cos, sin = self.rope(torch.full((1,), t))  # one position: broadcast over the frame's tokens
        if len(fresh) < c.regions:  # the reused regions' K/V of every layer, as their blocks hold them
            now = torch.stack(cur, dim=3).reshape(c.layers, 2, c.kv_heads, n, c.head_dim)
            ck[:, :, t * n : (t + 1) * n] = rotate(now[:, 0], cos, sin)
            cv[:, :, t * n : (t + 1) * n] = now[:, 1]
        if len(fresh) == 0:
            return
        x = vis[rows - t * n]
        w0 = max(0, t - c.window + 1)  # first frame of the visual window
        ks: List[torch.Tensor] = []
        vs: List[torch.Tensor] = []
        for li, blk in enumerate(self.blocks):
            h = blk.norm1(x)
            k, v = blk.attn.kv(h)  # KVH nf hd
            if li == 0 or li == self.read_layer:
                v = self.value0(z[rows - t * n])
            ks.append(k)
            vs.append(v)
            ck[li].index_copy_(1, rows, rotate(k, cos, sin))
            cv[li].index_copy_(1, rows, v)
            if li + 1 < len(self.blocks):
                win_k, win_v = ck[li, :, w0 * n : (t + 1) * n], cv[li, :, w0 * n : (t + 1) * n]
                x = blk.mlp(x + blk.attn.attend_parts(h, (cos, sin), [(win_k, win_v)]))
        kv = torch.stack([torch.stack(ks), torch.stack(vs)], dim=1)  # L 2 KVH nf hd
        for i, r in enumerate(fresh):
            cur[r].copy_(kv[:, :, :, i * tpr : (i + 1) * tpr])

    def ask(self, cache: tuple[torch.Tensor, torch.Tensor], t: int, q_region: torch.Tensor,
            q_target: torch.Tensor, keep: Optional[torch.Tensor] = None,
            q_read: Optional[torch.Tensor] = None) -> torch.Tensor:
        """The questions' half of step(), over @cache holding frames 0 .. @t (prefill() wrote t):
        regions @q_region about frames @q_target (<= t), each reading the frames within
        question_reach of its target -> logits [Q, codes]. @keep [Q, (t+1)*64]: a memory policy's
        -inf over the keys it left out (vrex/anchors.py). @q_read [Q, M]: the cache tokens (frame *
        64 + slot, <= t's) each question reads INSTEAD of its whole reach, -1 padding (a selector's
        choice: ReSV in the C++ runner); only those are gathered. The keys of every layer are
        gathered at once, and the position buckets of the learned bias computed once."""
        c = self.c
        n = c.visual
        xq = self.question_embed[q_region]
        rope_q = self.rope(q_target)
        # The keys each question reads: frames target-reach .. target+reach, clipped to 0 .. t.
        offs = torch.arange(-c.question_reach, c.question_reach + 1)
        fr = q_target[:, None] + offs[None, :]  # Q R
        ok = (fr >= 0) & (fr <= t)
        fr = fr.clamp(0, t)
        q_keys = (fr[:, :, None] * n + torch.arange(n)).reshape(len(q_target), fr.shape[1] * n)  # Q (R*64)
        q_mask = torch.zeros(ok.shape).masked_fill_(~ok, float("-inf")).repeat_interleave(n, dim=1)
        q_frame_of = fr.repeat_interleave(n, dim=1)
        q_slot_of = torch.arange(n).repeat(fr.shape[1])[None, :].expand_as(q_keys)
        if q_read is not None:
            if q_read.shape[0] != q_target.shape[0] or (q_read.numel() > 0 and int(q_read.max()) >= (t + 1) * n):
                raise ValueError("q_read: one row per question, tokens of frames 0 .. t")
            q_keys = q_read.clamp_min(0)
            q_mask = torch.zeros(q_read.shape).masked_fill_(q_read < 0, float("-inf"))
            q_frame_of, q_slot_of = torch.div(q_keys, n, rounding_mode="floor"), q_keys % n
        blind: Optional[torch.Tensor] = None
        if keep is not None:
            q_mask = q_mask + keep.gather(1, q_keys)
        if keep is not None or q_read is not None:
            blind = torch.isinf(q_mask).all(1)  # every key it would read was left out
        ck, cv = cache
        kq, vq = ck[:, :, q_keys], cv[:, :, q_keys]  # L KVH Q M hd: every layer's keys in one gather
        bucket = rel_bucket(q_frame_of - q_target[:, None])
        slot_q = q_region[:, None].expand_as(q_slot_of)
        read0 = xq  # read_layer sets it (TorchScript wants it defined on every path)
        for li, blk in enumerate(self.blocks):
            bias = q_mask[None] + blk.attn.rel[:, bucket] + blk.attn.slot[:, slot_q, q_slot_of]
            hq = blk.norm1(xq)
            xq = blk.mlp(xq + blk.attn.attend_gathered(hq, rope_q, kq[li], vq[li], bias))
            if li == self.read_layer:
                read0 = blk.attn.last_read
        logits = self.answer(xq, read0)
        if blind is not None and bool(blind.any()):  # nothing to read: no information (uniform)
            logits = logits.masked_fill(blind[:, None], 0.0)
        return logits


# Bits of the reuse guard's sign-random-projection hash of a region's layer-0 keys (script.key_hashes).
GUARD_HASH_BITS = 32


def step_flops(c: Config, fresh_regions: int, t: int, questions: int, guard: bool, question_keys: int | None = None) -> int:
    """Multiply-adds x 2 of Decoder.step at frame @t (plus, when @guard, the guard's layer-0 K
    projection of all 64 tokens and their hashes' projections onto its hyperplanes): projections,
    attention scores and weighted sums, MLP, head. Norms,
    RoPE and softmax are left out (elementwise, the same for every policy). @question_keys: the keys
    all questions read together (their reach windows clipped to the stream)."""
    d, a, kva, n = c.d_model, c.heads * c.head_dim, c.kv_heads * c.head_dim, c.visual
    nf = fresh_regions * c.tokens_per_region
    w_keys = (min(t, c.window - 1) + 1) * n
    # Keys the questions read, summed over them (default: every question reads a full reach window).
    q_keys = question_keys if question_keys is not None else questions * (2 * c.question_reach + 1) * n
    proj_q = d * a + a * d  # wq, wo
    proj_kv = 2 * d * kva
    mlp = 3 * d * c.ffn
    f = 0
    for li in range(c.layers):
        f += nf * proj_kv
        if li + 1 < c.layers:
            f += nf * (proj_q + mlp) + nf * c.heads * c.head_dim * w_keys * 2
        f += questions * (proj_q + mlp) + c.heads * c.head_dim * q_keys * 2
    f += questions * (d * c.feat_dim + c.feat_dim * c.codes)
    f += nf * c.feat_dim * d if nf else 0  # embedding of the fresh tokens
    if guard:
        f += n * d * kva + (n - nf) * c.feat_dim * d  # all 64 tokens' layer-0 keys (+ their embedding)
        f += n * kva * GUARD_HASH_BITS  # each region's keys onto the hash's hyperplanes
    return 2 * f
