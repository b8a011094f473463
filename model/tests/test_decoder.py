"""The decoder: causal visibility, grouped-query attention, RoPE's relative property."""
from __future__ import annotations

import torch

from vrex.decoder import Config, Decoder, rope, visibility


def model(seed: int = 0) -> Decoder:
    torch.manual_seed(seed)
    return Decoder(Config()).eval()


def feats(frames: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(1, frames, 64, Config().feat_dim, generator=torch.Generator().manual_seed(seed))


def test_future_frames_do_not_change_earlier_outputs() -> None:
    m, x = model(), feats(3)
    y = x.clone()
    y[:, 2] += 1.0
    with torch.no_grad():
        a, b = m(x), m(y)
    assert torch.allclose(a[:, :2], b[:, :2], atol=1e-5)
    assert not torch.allclose(a[:, 2], b[:, 2], atol=1e-3)


def test_visual_tokens_are_causal_inside_a_frame() -> None:
    c = Config()
    fr = torch.zeros(c.slots, dtype=torch.long)
    sl = torch.arange(c.slots)
    mask = visibility(fr, sl, fr, sl, c.visual)
    assert torch.equal(mask, torch.tril(torch.ones(c.slots, c.slots, dtype=torch.bool)))


def test_earlier_frames_queries_are_invisible() -> None:
    c = Config()
    fr = torch.tensor([1])
    mask = visibility(fr, torch.tensor([0]), torch.tensor([0, 0, 1]), torch.tensor([5, c.visual + 3, 0]), c.visual)
    assert mask.tolist() == [[True, False, True]]


def test_grouped_query_attention_matches_explicit_heads() -> None:
    """Query heads 2h and 2h+1 read KV head h: recomputing each head by hand must agree."""
    c = Config()
    m = model()
    attn = m.blocks[0].attn
    assert attn.wk.out_features == c.kv_heads * c.head_dim and attn.wq.out_features == c.heads * c.head_dim
    h = torch.randn(1, 10, c.d_model)
    pos = torch.arange(10)
    mask = torch.tril(torch.ones(10, 10, dtype=torch.bool))
    with torch.no_grad():
        k, v = attn.kv(h)
        got = attn.attend(h, pos, k, v, pos, mask)
        q = rope(attn.wq(h).view(1, 10, c.heads, c.head_dim).transpose(1, 2), pos, c.rope_base)
        kr = rope(k, pos, c.rope_base)
        outs = []
        for head in range(c.heads):
            g = head // (c.heads // c.kv_heads)
            s = q[0, head] @ kr[0, g].T / c.head_dim**0.5
            outs.append(torch.softmax(s.masked_fill(~mask, float("-inf")), -1) @ v[0, g])
        want = attn.wo(torch.cat(outs, -1))[None]
    assert torch.allclose(got, want, atol=1e-5)


def test_rope_scores_depend_on_position_difference_only() -> None:
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(1, 64, generator=g), torch.randn(1, 64, generator=g)

    def score(m: int, n: int) -> float:
        return float((rope(q, torch.tensor([m]), 1e4) * rope(k, torch.tensor([n]), 1e4)).sum())

    assert abs(score(10, 3) - score(107, 100)) < 1e-4
    assert abs(score(10, 3) - score(10, 4)) > 1e-3
