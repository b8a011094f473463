"""The LCP layer: the decoder's KV cache IS vrex KV blocks, and region reuse skips prefill.

`vrex.enable(model)` returns a `Session` bound to a libvrex-hal device and allocator whose geometry is
the model's. `Session.stream()` gives a `StreamRunner`; `StreamRunner.step(luma, tokens)` prefills one
frame and returns the query tokens' logits.

One KV block per (frame, region): layout [layer][K=0,V=1][kv_head][token][head_dim] fp32, viewed as
a torch tensor over the block's device memory (buffer protocol, no copy). K is stored BEFORE RoPE
(decoder.py), so a reused block takes the position of the frame that references it.

Reuse of region r at frame t:
  candidates  the HAL's temporal lookup (r, offset -1) and similarity lookup (r, frame fingerprint,
              radius, past frames only). With fcc=True a candidate counts only when the FCC
              fingerprint of its frame is within `radius` of this frame's (for the similarity lookup
              the HAL enforces that itself); fcc=False (the no-FCC control) takes the temporal
              candidate whatever the fingerprints say.
  guard       model-side: sign-random-projection hash (32 hyperplanes) of the region's layer-0 keys,
              computed from the frame's embeddings (one K projection, far cheaper than the prefill),
              against the hash recorded when the candidate block was computed (what the block
              holds, so drift cannot accumulate); Hamming <= 2 passes, and the block must be at most
              max_age = 4 frames old (values chosen by measurement: docs/model.md "Guard").
  reuse       Stream.reuse(r, block): the frame's entry points at the old block; the region's visual
              tokens are not computed (no K/V projections, attention or MLP for them).
The window ledger releases a block once no frame of the last W references it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .decoder import Attention, Config, Decoder, visibility

try:
    import _vrexhal as hal  # type: ignore[import-not-found]
except ImportError as e:  # pragma: no cover - message for a missing build
    raise ImportError("vrex: the _vrexhal extension is not on PYTHONPATH (cmake builds it into "
                      "build/model)") from e

HASH_BITS = 32
HASH_SEED = 1234


@dataclass
class Options:
    reuse: bool = True
    fcc: bool = True            # filter candidates by the FCC fingerprint radius
    radius: int = 20            # fingerprint Hamming radius (0..31)
    guard_bits: int = 2         # max Hamming distance of the key hashes (docs/model.md "Guard")
    max_age: int = 4            # reuse a block at most this many frames after it was computed (0: no cap)
    similar: bool = True        # also ask the similarity lookup
    backend: str = "emulated"
    # Decode-time token retrieval (retrieval.py): "none", "wicsum" (ReSV on the device), or the
    # anchors "oracle" / "quest" / "random" at WiCSum's budget; ratio = the WiCSum ratio register.
    retrieval: str = "none"
    ratio: float = 0.3
    resv_th: int = 7
    resv_lut_scale: float = 6.0


@dataclass
class FrameStats:
    prefill_s: float = 0.0       # CPU time of this thread (torch runs on one thread): robust to load
    prefill_wall_s: float = 0.0
    tokens: int = 0              # tokens prefilled (visual of fresh regions + queries)
    reused: int = 0
    regions: int = 0
    attn_out: list[torch.Tensor] = field(default_factory=list)  # per layer, the queries' attention output


def hash_planes(c: "Config") -> torch.Tensor:
    """The guard's SRP hyperplanes (the C++ path gets the same ones through vrex.export)."""
    gen = torch.Generator().manual_seed(HASH_SEED)
    return torch.randn(HASH_BITS, c.kv_heads * c.tokens_per_region * c.head_dim, generator=gen)


def popcount32(x: int) -> int:
    return bin(x).count("1")


def rope_tables(pos: torch.Tensor, d: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin of decoder.rope for positions @pos, computed once per frame for all layers."""
    inv = base ** (-torch.arange(0, d // 2, dtype=torch.float64) * 2.0 / d)
    ang = pos.to(torch.float64)[:, None] * inv[None, :]
    return ang.cos().float(), ang.sin().float()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def attend(attn: Attention, h: torch.Tensor, q_rope: tuple[torch.Tensor, torch.Tensor], k: torch.Tensor,
           v: torch.Tensor, k_rope: tuple[torch.Tensor, torch.Tensor], bias: torch.Tensor) -> torch.Tensor:
    """Attention.attend of the decoder, computed per KV head (the query heads of a group share one
    matmul against their KV head instead of copying K/V per query head), with RoPE tables shared by
    the layers and an additive mask @bias [rep * Tq, Tk]. pytest checks it against the reference."""
    c = attn.c
    t = h.shape[1]
    rep = c.heads // c.kv_heads
    q = attn.wq(h[0]).view(t, c.heads, c.head_dim).transpose(0, 1)  # H T hd
    q = rotate(q, *q_rope).reshape(c.kv_heads, rep * t, c.head_dim)  # head h = kv * rep + r
    kr = rotate(k[0], *k_rope)  # KVH Tk hd
    s = torch.baddbmm(bias, q, kr.transpose(1, 2), alpha=c.head_dim**-0.5)
    o = torch.softmax(s, dim=-1) @ v[0]  # KVH (rep T) hd
    o = o.view(c.heads, t, c.head_dim).transpose(0, 1).reshape(1, t, c.heads * c.head_dim)
    return attn.wo(o)


class Session:
    def __init__(self, model: Decoder, opts: Options):
        c = model.c
        self.model = model
        self.opts = opts
        self.device = hal.Device.open(opts.backend)
        self.alloc = hal.KvAllocator(self.device, c.layers, c.kv_heads, c.head_dim, c.tokens_per_region)
        self.shape = (c.layers, 2, c.kv_heads, c.tokens_per_region, c.head_dim)
        if self.alloc.block_bytes != int(np.prod(self.shape)) * 4:
            raise RuntimeError(f"block is {self.alloc.block_bytes} B, the model needs {int(np.prod(self.shape)) * 4}")
        self.planes = hash_planes(c)
        if c.window + 1 > self.device.zombie_frames + 1:
            raise RuntimeError(f"window {c.window} frames exceeds the device's zombie threshold "
                               f"{self.device.zombie_frames}: blocks would be evicted under the window")
        self.retrieval = None
        if opts.retrieval != "none":
            from . import retrieval

            self.retrieval = retrieval.Retrieval(self.device, c.layers, c.kv_heads, c.head_dim,
                                                 retrieval.RetrievalOptions(opts.retrieval, opts.ratio, opts.resv_th,
                                                                            opts.resv_lut_scale))

    def stream(self) -> "StreamRunner":
        return StreamRunner(self, self.alloc.create_stream())

    def view(self, block: "hal.KvBlock") -> torch.Tensor:
        """The block's memory as a [L, 2, KVH, T, hd] fp32 tensor (aliases the block, no copy)."""
        arr = np.frombuffer(memoryview(block), dtype=np.float32)  # keeps @block (and its stream) alive
        return torch.from_numpy(arr).view(self.shape)

    def key_hash(self, k0: torch.Tensor) -> list[int]:
        """SRP hash per region of layer-0 pre-rotation keys @k0 [KVH, 64, hd] -> 16 x 32-bit ints."""
        c = self.model.c
        per = k0.view(c.kv_heads, c.regions, c.tokens_per_region, c.head_dim).permute(1, 0, 2, 3)
        bits = (per.reshape(c.regions, -1) @ self.planes.T) > 0
        weights = torch.tensor([1 << i for i in range(HASH_BITS)], dtype=torch.int64)
        return [int(v) for v in (bits.to(torch.int64) * weights).sum(1)]


def enable(model: Decoder, **kw: object) -> Session:
    """Binds @model to a vrex device: its KV cache becomes vrex blocks (see the module docstring)."""
    model.eval()
    s = Session(model, Options(**kw))  # type: ignore[arg-type]
    model.vrex = s  # type: ignore[assignment]
    return s


class StreamRunner:
    def __init__(self, session: Session, stream: "hal.Stream"):
        self.s = session
        self.st = stream
        self.t = 0
        self.frames: list[list["hal.KvBlock"]] = []   # window: per frame, the block of each region
        self.views: list[list[torch.Tensor]] = []
        self.hashes: dict[int, tuple[int, int]] = {}  # block id -> (key hash, frame) when computed
        self.last_ref: dict[int, tuple[int, "hal.KvBlock"]] = {}  # block id -> last frame referencing it
        self.peak_blocks = 0

    def _candidates(self, r: int, fp: tuple[int, int]) -> list["hal.KvBlock"]:
        o = self.s.opts
        out = []
        tmp = self.st.retrieve_temporal(r, -1)
        if tmp is not None and (not o.fcc or hal.fingerprint_distance(fp, tmp["fp"]) <= o.radius):
            out.append(tmp["block"])
        if o.similar and o.fcc:
            sim = self.st.retrieve_similar(r, fp, o.radius, "stream", True)
            if sim is not None and (not out or sim["block"].id != out[0].id):
                out.append(sim["block"])
        return out

    def _guard(self, block_id: int, h: int) -> bool:
        """The model-side guard: the block's keys (hashed when it was computed, i.e. what the block
        holds) are within guard_bits of this frame's, and the block is at most max_age frames old."""
        o = self.s.opts
        rec = self.hashes.get(block_id)
        if rec is None:  # not computed by this runner (or already released): never trusted
            return False
        if o.max_age and self.t - rec[1] > o.max_age:
            return False
        return popcount32(rec[0] ^ h) <= o.guard_bits

    @torch.no_grad()
    def step(self, luma: np.ndarray, tokens: torch.Tensor, keep_attn: bool = False) -> tuple[torch.Tensor, FrameStats]:
        """Prefills one frame. @tokens [64, C] standardised encoder tokens -> logits [16, codes]."""
        m, c, o = self.s.model, self.s.model.c, self.s.opts
        fs = FrameStats(regions=c.regions)
        info = self.st.begin_frame(luma)
        t0, w0 = time.thread_time(), time.perf_counter()
        vis = m.embed(tokens) + m.slot_embed
        reuse_of: dict[int, "hal.KvBlock"] = {}
        hashes: list[int] = []
        if o.reuse:
            blk0 = m.blocks[0]
            k0, _ = blk0.attn.kv(blk0.norm1(vis)[None])
            hashes = self.s.key_hash(k0[0])
            for r in range(c.regions):
                for cand in self._candidates(r, info["fp"]):
                    if self._guard(cand.id, hashes[r]):
                        reuse_of[r] = cand
                        break
        blocks: list["hal.KvBlock"] = []
        views: list[torch.Tensor] = []
        fresh: list[int] = []
        for r in range(c.regions):
            if r in reuse_of:
                self.st.reuse(r, reuse_of[r])
                b = reuse_of[r]
            else:
                b = self.st.allocate(r)
                fresh.append(r)
            blocks.append(b)
            views.append(self.s.view(b))
            self.last_ref[b.id] = (self.t, b)
            if o.reuse and r not in reuse_of:
                self.hashes[b.id] = (hashes[r], self.t)
        fs.reused = len(reuse_of)

        tpr = c.tokens_per_region
        fresh_idx = torch.tensor([r * tpr + j for r in fresh for j in range(tpr)], dtype=torch.long)
        x = torch.cat([vis[fresh_idx], m.query_embed])[None]
        past_n = len(self.frames)
        q_slot = torch.cat([fresh_idx, torch.arange(c.visual, c.slots)])
        q_frame = torch.full_like(q_slot, past_n)
        k_slot = torch.cat([torch.arange(c.visual).repeat(past_n), torch.arange(c.slots)])
        k_frame = torch.cat([torch.arange(past_n).repeat_interleave(c.visual), torch.full((c.slots,), past_n)])
        mask = visibility(q_frame, q_slot, k_frame, k_slot, c.visual)
        rep = c.heads // c.kv_heads
        bias = torch.zeros(mask.shape).masked_fill_(~mask, float("-inf")).repeat(rep, 1)
        q_rope = rope_tables(q_frame * c.slots + q_slot, c.head_dim, c.rope_base)
        k_rope = rope_tables(k_frame * c.slots + k_slot, c.head_dim, c.rope_base)
        # Past window, all layers at once: [L, 2, KVH, P*64, hd] read from the blocks.
        if past_n:
            past = torch.stack([v for fr in self.views for v in fr], dim=3)  # L 2 KVH (P*16) T hd
            past = past.reshape(c.layers, 2, c.kv_heads, past_n * c.visual, c.head_dim)
        nf = len(fresh) * tpr
        for li, blk in enumerate(m.blocks):
            h = blk.norm1(x)
            k, v = blk.attn.kv(h)  # [1, KVH, nf + 16, hd]
            for i, r in enumerate(fresh):  # write the new K/V into the region's vrex block
                views[r][li, 0].copy_(k[0, :, i * tpr : (i + 1) * tpr])
                views[r][li, 1].copy_(v[0, :, i * tpr : (i + 1) * tpr])
            cur = torch.stack([vw[li] for vw in views], dim=2).reshape(2, c.kv_heads, c.visual, c.head_dim)
            ks = [cur[0], k[0, :, nf:]]
            vs = [cur[1], v[0, :, nf:]]
            if past_n:
                ks.insert(0, past[li, 0])
                vs.insert(0, past[li, 1])
            kk, vv = torch.cat(ks, 1)[None], torch.cat(vs, 1)[None]
            if self.s.retrieval is not None:  # the query tokens read only the selected cached tokens
                a = self.s.retrieval.attend(blk.attn, li, h, q_rope, kk, vv, k_rope, bias, nf, (past_n + 1) * c.visual)
            else:
                a = attend(blk.attn, h, q_rope, kk, vv, k_rope, bias)
            if keep_attn:
                fs.attn_out.append(a[0, nf:].clone())
            x = blk.mlp(x + a)
        logits = m.head(m.norm(x[0, nf:]))
        fs.prefill_s = time.thread_time() - t0
        fs.prefill_wall_s = time.perf_counter() - w0
        fs.tokens = x.shape[1]

        self.frames.append(blocks)
        self.views.append(views)
        self.peak_blocks = len(self.last_ref)  # distinct blocks the W frames of this step reference
        if len(self.frames) == c.window:  # the oldest frame leaves the window after this step
            self.frames.pop(0)
            self.views.pop(0)
            leaving = self.t - c.window + 1
            for bid, (last, b) in list(self.last_ref.items()):
                if last <= leaving:
                    self.st.release(b)
                    del self.last_ref[bid]
                    self.hashes.pop(bid, None)
        self.st.end_frame()
        self.t += 1
        return logits, fs

    def resident_blocks(self) -> int:
        return len(self.last_ref)
