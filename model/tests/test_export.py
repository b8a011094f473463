"""vrex.export: the TorchScript step the C++ LCP layer runs computes what the Python paths compute."""
from __future__ import annotations

from pathlib import Path

import torch

from vrex import export
from vrex.decoder import Config, Decoder


def stream_exact(step: torch.jit.ScriptModule, feats: torch.Tensor) -> torch.Tensor:
    """Exact-KV streaming through the scripted step, blocks as plain tensors (a sliding window)."""
    layers, kvh, hd, tpr, regions, window, _, _ = step.geometry()
    frames: list[list[torch.Tensor]] = []
    out = []
    for t in range(len(feats)):
        vis = step.embed_frame(feats[t])
        cur = [torch.full((layers, 2, kvh, tpr, hd), float("nan")) for _ in range(regions)]
        kv = [b for fr in frames for b in fr] + cur
        out.append(step(vis, list(range(regions)), kv, len(frames)))
        frames.append(cur)
        if len(frames) == window:
            frames.pop(0)
    return torch.stack(out)


@torch.no_grad()
def test_scripted_step_equals_reference(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = Decoder(Config()).eval()
    path = tmp_path / "d.ts"
    export.script(model).save(str(path))
    step = torch.jit.load(str(path))
    feats = torch.randn(7, 64, Config().feat_dim, generator=torch.Generator().manual_seed(3))
    ref = model(feats[None], window=model.c.window)[0]
    got = stream_exact(step, feats)
    assert torch.isfinite(got).all()  # every block the step reads was written (NaN-filled before)
    assert (got - ref).abs().max().item() < 1e-4


@torch.no_grad()
def test_scripted_key_hash_equals_lcp() -> None:
    import vrex

    torch.manual_seed(0)
    model = Decoder(Config()).eval()
    step = export.script(model)
    feats = torch.randn(64, Config().feat_dim, generator=torch.Generator().manual_seed(4))
    s = vrex.enable(model)
    vis = model.embed(feats) + model.slot_embed
    blk0 = model.blocks[0]
    k0, _ = blk0.attn.kv(blk0.norm1(vis)[None])
    assert step.key_hash(step.embed_frame(feats)).tolist() == s.key_hash(k0[0])
