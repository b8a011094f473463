"""TorchScript export of the builtin decoder for the C++ LCP layer (model/cpp), plus golden data.

The C++ side (vrex::lcp, model/cpp) owns everything vrex-specific: the HAL device, candidates, the
key-hash guard, reuse, the window ledger and the KV blocks' memory. The TorchScript module only
does the math of one frame, over the K/V tensors it is handed (torch::from_blob over the blocks):

  embed_frame(tokens [64, C]) -> vis [64, D]        visual embeddings of the frame
  key_hash(vis) -> [16] int64                       SRP hash of each region's layer-0 keys (lcp.py)
  forward(vis, fresh, kv, past_n) -> [16, codes]    prefill of the fresh regions + queries
      fresh  region indices to compute (ascending); kv: (past_n + 1) * 16 block tensors
      [L, 2, KVH, T, hd] frame-major, the last 16 the current frame's; the fresh regions' blocks
      are written (layer by layer, K before RoPE), the others only read.

It is lcp.StreamRunner.step's math, written once more in TorchScript's subset (no dataclass
config); tests compare the two (model/tests/test_export.py, GoogleTest lcp_cpp.*).

Usage: python3 -m vrex.export [--weights trained|random] [--golden DIR --clip PATH --frames N]
  prints the TorchScript path: next to the cached weights (trained: /var/cache/vrex/model/builtin-*/
  decoder-<hash>.ts, keyed by this file too) or DIR/decoder.ts (random).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path
from typing import List

import numpy as np
import torch
from torch import nn

from . import footage, lcp, train
from .decoder import Config, Decoder, RMSNorm


class ScriptLayer(nn.Module):
    def __init__(self, blk: nn.Module, c: Config):
        super().__init__()
        self.norm1: RMSNorm = blk.norm1
        self.wq = blk.attn.wq
        self.wk = blk.attn.wk
        self.wv = blk.attn.wv
        self.wo = blk.attn.wo
        self.norm2: RMSNorm = blk.norm2
        self.w1 = blk.w1
        self.w2 = blk.w2
        self.w3 = blk.w3
        self.heads = c.heads
        self.kv_heads = c.kv_heads
        self.head_dim = c.head_dim

    def kv(self, h: torch.Tensor) -> List[torch.Tensor]:
        """Normed states @h [T, D] -> pre-rotation K, V [KVH, T, hd]."""
        t = h.shape[0]
        k = self.wk(h).view(t, self.kv_heads, self.head_dim).transpose(0, 1)
        v = self.wv(h).view(t, self.kv_heads, self.head_dim).transpose(0, 1)
        return [k, v]

    def attend(self, h: torch.Tensor, qc: torch.Tensor, qs: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               kc: torch.Tensor, ks: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        t = h.shape[0]
        rep = self.heads // self.kv_heads
        q = self.wq(h).view(t, self.heads, self.head_dim).transpose(0, 1)
        q = rotate(q, qc, qs).reshape(self.kv_heads, rep * t, self.head_dim)
        kr = rotate(k, kc, ks)
        s = torch.baddbmm(bias, q, kr.transpose(1, 2), alpha=self.head_dim ** -0.5)
        o = torch.softmax(s, dim=-1) @ v
        o = o.view(self.heads, t, self.head_dim).transpose(0, 1).reshape(t, self.heads * self.head_dim)
        return self.wo(o)

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm2(x)
        return x + self.w2(torch.nn.functional.silu(self.w1(h)) * self.w3(h))


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def rope_tables(pos: torch.Tensor, d: int, base: float) -> List[torch.Tensor]:
    inv = torch.pow(torch.full([d // 2], base, dtype=torch.float64),
                    -torch.arange(0, d // 2, dtype=torch.float64) * 2.0 / d)
    ang = pos.to(torch.float64)[:, None] * inv[None, :]
    return [ang.cos().float(), ang.sin().float()]


class ScriptStep(nn.Module):
    def __init__(self, m: Decoder, planes: torch.Tensor):
        super().__init__()
        c = m.c
        self.embed = m.embed
        self.slot_embed = m.slot_embed
        self.query_embed = m.query_embed
        self.layers = nn.ModuleList([ScriptLayer(b, c) for b in m.blocks])
        self.norm = m.norm
        self.head = m.head
        self.register_buffer("planes", planes.clone())
        self.regions = c.regions
        self.tpr = c.tokens_per_region
        self.visual = c.visual
        self.slots = c.slots
        self.heads = c.heads
        self.kv_heads = c.kv_heads
        self.head_dim = c.head_dim
        self.n_layers = c.layers
        self.window = c.window
        self.codes = c.codes
        self.rope_base = c.rope_base

    @torch.jit.export
    def geometry(self) -> List[int]:
        """[layers, kv_heads, head_dim, tokens_per_region, regions, window, codes, feat_dim]."""
        return [self.n_layers, self.kv_heads, self.head_dim, self.tpr, self.regions, self.window, self.codes,
                self.embed.in_features]

    @torch.jit.export
    def embed_frame(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embed(tokens) + self.slot_embed

    @torch.jit.export
    def key_hash(self, vis: torch.Tensor) -> torch.Tensor:
        layer0 = self.layers[0]
        k0 = self.wk0(layer0.norm1(vis))  # [64, KVH * hd]
        per = k0.view(self.regions, self.tpr, self.kv_heads, self.head_dim).permute(0, 2, 1, 3)
        bits = (per.reshape(self.regions, -1) @ self.planes.t()) > 0
        weights = torch.pow(torch.full([self.planes.shape[0]], 2, dtype=torch.int64),
                            torch.arange(self.planes.shape[0], dtype=torch.int64))
        return (bits.to(torch.int64) * weights).sum(1)

    def wk0(self, h: torch.Tensor) -> torch.Tensor:
        out = h
        for i, layer in enumerate(self.layers):
            if i == 0:
                out = layer.wk(h)
        return out

    def forward(self, vis: torch.Tensor, fresh: List[int], kv: List[torch.Tensor], past_n: int) -> torch.Tensor:
        if len(kv) != (past_n + 1) * self.regions:
            raise RuntimeError("kv must hold (past_n + 1) * regions block tensors")
        fidx: List[int] = []
        for r in fresh:
            for j in range(self.tpr):
                fidx.append(r * self.tpr + j)
        fresh_idx = torch.tensor(fidx, dtype=torch.long)
        x = torch.cat([vis[fresh_idx], self.query_embed])
        q_slot = torch.cat([fresh_idx, torch.arange(self.visual, self.slots)])
        q_frame = torch.full_like(q_slot, past_n)
        k_slot = torch.cat([torch.arange(self.visual).repeat(past_n), torch.arange(self.slots)])
        k_frame = torch.cat([torch.arange(past_n).repeat_interleave(self.visual),
                             torch.full([self.slots], past_n, dtype=torch.long)])
        earlier = (k_frame[None, :] < q_frame[:, None]) & (k_slot[None, :] < self.visual)
        same = (k_frame[None, :] == q_frame[:, None]) & (k_slot[None, :] <= q_slot[:, None])
        mask = earlier | same
        rep = self.heads // self.kv_heads
        bias = torch.zeros(mask.shape).masked_fill_(~mask, float("-inf")).repeat(rep, 1)
        qr = rope_tables(q_frame * self.slots + q_slot, self.head_dim, self.rope_base)
        kr = rope_tables(k_frame * self.slots + k_slot, self.head_dim, self.rope_base)
        nf = len(fresh) * self.tpr
        past_k: List[torch.Tensor] = []
        past_v: List[torch.Tensor] = []
        li = 0
        for layer in self.layers:
            h = layer.norm1(x)
            kvl = layer.kv(h)
            k, v = kvl[0], kvl[1]
            cur: List[torch.Tensor] = []
            for i, r in enumerate(fresh):  # write the new K/V into the region's vrex block
                blk = kv[past_n * self.regions + r]
                blk[li, 0].copy_(k[:, i * self.tpr:(i + 1) * self.tpr])
                blk[li, 1].copy_(v[:, i * self.tpr:(i + 1) * self.tpr])
            for b in kv:
                cur.append(b[li])
            allkv = torch.stack(cur, dim=2).reshape(2, self.kv_heads, (past_n + 1) * self.visual, self.head_dim)
            ks = torch.cat([allkv[0], k[:, nf:]], 1)
            vs = torch.cat([allkv[1], v[:, nf:]], 1)
            a = layer.attend(h, qr[0], qr[1], ks, vs, kr[0], kr[1], bias)
            x = layer.mlp(x + a)
            li += 1
        return self.head(self.norm(x[nf:]))


def export_hash() -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update((Path(__file__).parent / "decoder.py").read_bytes())
    return h.hexdigest()[:12]


def script(model: Decoder) -> torch.jit.ScriptModule:
    return torch.jit.script(ScriptStep(model.eval(), lcp.hash_planes(model.c)))


def random_model() -> tuple[Decoder, dict[str, torch.Tensor]]:
    """The seeded random weights of vrex.run's VREX_MODEL_WEIGHTS=random."""
    torch.manual_seed(0)
    model = Decoder(Config()).eval()
    return model, {"mean": torch.zeros(model.c.feat_dim), "std": torch.full((model.c.feat_dim,), 3.0)}


def cached_ts() -> Path:
    """decoder-<hash>.ts next to the trained weights (trains first when they are not cached)."""
    w = train.weights_path()
    out = w.parent / f"decoder-{export_hash()}.ts"
    if not out.is_file():
        model, _ = train.load(w)
        tmp = out.with_suffix(".tmp")
        script(model).save(str(tmp))
        tmp.replace(out)
    return out


class Golden(nn.Module):
    """A container C++ loads with torch::jit::load: tensors as attributes."""

    def __init__(self, tensors: dict[str, torch.Tensor]):
        super().__init__()
        for k, v in tensors.items():
            self.register_buffer(k, v)

    def forward(self) -> int:
        return 0


@torch.no_grad()
def golden(model: Decoder, norm: dict[str, torch.Tensor], clip: Path, frames: int, out: Path,
           opts: lcp.Options) -> None:
    """Real frames of @clip through the Python paths: the exact-KV reference (Decoder.forward with
    the window) and vrex.enable's reuse run, for the C++ tests to match."""
    c = model.c
    feats = (torch.from_numpy(footage.encode_clip(clip, frames)) - norm["mean"]) / norm["std"]
    lumas = np.stack(list(footage.frames(clip, "gray", None, frames)))
    ref = model(feats[None], window=c.window)[0]
    sess = lcp.Session(model, opts)
    r = sess.stream()
    logits, reused, tokens = [], [], []
    for t in range(len(feats)):
        lg, fs = r.step(lumas[t], feats[t])
        logits.append(lg)
        reused.append(fs.reused)
        tokens.append(fs.tokens)
    g = Golden({
        "tokens": feats.contiguous(), "luma": torch.from_numpy(lumas).contiguous(),
        "exact_ref": ref.contiguous(), "lcp_logits": torch.stack(logits),
        "lcp_reused": torch.tensor(reused), "lcp_tokens": torch.tensor(tokens),
        "opts": torch.tensor([opts.radius, opts.guard_bits, opts.max_age]),
    })
    torch.jit.script(g.eval()).save(str(out))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m vrex.export", description=__doc__.split("\n")[0])
    ap.add_argument("--weights", choices=["trained", "random"], default="trained")
    ap.add_argument("--out", type=Path, help="directory for decoder.ts (random weights) and golden.pt")
    ap.add_argument("--clip", type=Path, help="golden data from this clip's first --frames frames")
    ap.add_argument("--frames", type=int, default=12)
    args = ap.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    torch.set_num_threads(1)
    if args.weights == "trained":
        ts = cached_ts()
        model, norm = train.load()
        if args.out is not None:  # the golden directory names its module decoder.ts
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "decoder.ts").unlink(missing_ok=True)
            (args.out / "decoder.ts").symlink_to(ts)
    else:
        if args.out is None:
            ap.error("--weights random needs --out")
        model, norm = random_model()
        args.out.mkdir(parents=True, exist_ok=True)
        ts = args.out / "decoder.ts"
        script(model).save(str(ts))
    if args.clip is not None:
        if args.out is None:
            ap.error("--clip needs --out")
        args.out.mkdir(parents=True, exist_ok=True)
        golden(model, norm, args.clip, args.frames, args.out / "golden.pt", lcp.Options())
    print(ts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
