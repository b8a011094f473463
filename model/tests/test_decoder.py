"""The decoder: visibility (window for visual tokens, whole past for questions), RoPE by frame."""
from __future__ import annotations

import torch

from vrex.decoder import Config, Decoder, rope_tables, rotate, step_flops
from vrex.script import hash_planes


def model(seed: int = 0) -> Decoder:
    torch.manual_seed(seed)
    return Decoder(Config()).eval()


def feats(frames: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(frames, 64, Config().feat_dim, generator=torch.Generator().manual_seed(seed))


def ask(m: Decoder, x: torch.Tensor, t: int, r: int, target: int) -> torch.Tensor:
    with torch.no_grad():
        return m(x, torch.tensor([t]), torch.tensor([r]), torch.tensor([target]))[0]


def test_questions_never_see_later_frames() -> None:
    m, x = model(), feats(6)
    y = x.clone()
    y[4:] += 1.0
    assert torch.allclose(ask(m, x, 3, 2, 3), ask(m, y, 3, 2, 3), atol=1e-5)
    assert not torch.allclose(ask(m, x, 5, 2, 4), ask(m, y, 5, 2, 4), atol=1e-3)


def test_questions_reach_any_past_frame_and_only_around_it() -> None:
    """A question asked at frame 9 about frame 0 (far outside the 4-frame visual window) reads it; a
    question about frame 2 reads frames 0..4 only, so a change of frame 9 cannot move it."""
    m, x = model(), feats(10)
    y = x.clone()
    y[0] += 2.0
    assert not torch.allclose(ask(m, x, 9, 0, 0), ask(m, y, 9, 0, 0), atol=1e-3)
    z = x.clone()
    z[9] += 2.0
    assert torch.allclose(ask(m, x, 9, 0, 2), ask(m, z, 9, 0, 2), atol=1e-6)  # reads frames 0..4 only
    assert not torch.allclose(ask(m, x, 9, 0, 8), ask(m, z, 9, 0, 8), atol=1e-3)


def test_visual_tokens_see_only_the_window() -> None:
    """Layer-1 keys of frame f come from layer-0 outputs that saw frames f-W+1 .. f: a change at
    frame 0 moves frame W-1's layer-1 keys and leaves frame W's alone."""
    c = Config()
    m, x = model(), feats(c.window + 2)
    y = x.clone()
    y[0] += 2.0
    keys = {}
    orig = m.blocks[1].attn.kv
    for name, inp in (("x", x), ("y", y)):
        got: list[torch.Tensor] = []

        def hook(h: torch.Tensor, got: list[torch.Tensor] = got) -> tuple[torch.Tensor, torch.Tensor]:
            k, v = orig(h)
            got.append(k)
            return k, v

        m.blocks[1].attn.kv = hook  # type: ignore[method-assign]
        ask(m, inp, c.window + 1, 0, 0)
        keys[name] = got[0]
    m.blocks[1].attn.kv = orig  # type: ignore[method-assign]
    n = c.visual
    outside = slice(c.window * n, (c.window + 1) * n)
    inside = slice((c.window - 1) * n, c.window * n)
    assert torch.allclose(keys["x"][:, outside], keys["y"][:, outside], atol=1e-6)
    assert not torch.allclose(keys["x"][:, inside], keys["y"][:, inside], atol=1e-4)


def test_rope_scores_depend_on_frame_distance_only() -> None:
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(1, 32, generator=g), torch.randn(1, 32, generator=g)

    def score(a: int, b: int) -> float:
        qa = rotate(q, *rope_tables(torch.tensor([a]), 32, 1000.0))
        kb = rotate(k, *rope_tables(torch.tensor([b]), 32, 1000.0))
        return float((qa * kb).sum())

    assert abs(score(10, 3) - score(307, 300)) < 1e-4
    assert abs(score(10, 3) - score(10, 4)) > 1e-3


def test_step_flops_counts_reuse_and_the_growing_cache() -> None:
    c = Config()
    full = step_flops(c, 16, 100, 4, False)
    assert step_flops(c, 0, 100, 4, True) < step_flops(c, 8, 100, 4, True) < full
    assert step_flops(c, 16, 200, 4, False) == full  # the visual window is full from t = 3 on
    assert step_flops(c, 16, 1, 4, False) < full
    assert step_flops(c, 16, 100, 4, False, 4 * 64) < full  # fewer keys (reach clipped at the stream's ends)
    assert step_flops(c, 16, 100, 0, False) < full


def test_step_flops_counts_the_guards_keys_and_their_hashes() -> None:
    # The guard's work on a frame: every token's layer-0 keys (the fresh tokens' embedding is the
    # prefill's), then each region's keys projected onto the hash's hyperplanes (script.key_hashes).
    c = Config()
    planes = hash_planes(c.kv_heads, c.tokens_per_region, c.head_dim)  # [bits, KVH * T * hd]
    kva = c.kv_heads * c.head_dim
    for fresh in (0, 5, 16):
        nf = fresh * c.tokens_per_region
        keys = c.visual * c.d_model * kva + (c.visual - nf) * c.feat_dim * c.d_model
        hashes = c.regions * planes.shape[1] * planes.shape[0]
        extra = step_flops(c, fresh, 10, 4, True) - step_flops(c, fresh, 10, 4, False)
        assert extra == 2 * (keys + hashes)
