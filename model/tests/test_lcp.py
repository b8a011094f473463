"""vrex.enable: the KV cache is vrex block memory; reuse skips prefill; exact streaming == reference."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import vrex
from vrex import lcp
from vrex.decoder import Config, Decoder


@pytest.fixture()
def model() -> Decoder:
    torch.manual_seed(0)
    return Decoder(Config()).eval()


def tokens(frames: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(frames, 64, Config().feat_dim, generator=torch.Generator().manual_seed(seed))


def luma(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (96, 128), dtype=np.uint8)


def test_enable_binds_model_and_geometry(model: Decoder) -> None:
    s = vrex.enable(model, reuse=False)
    assert model.vrex is s
    assert s.alloc.block_bytes == 4 * 2 * 2 * 4 * 64 * 4 == 16384


def test_kv_tensors_alias_block_memory(model: Decoder) -> None:
    s = vrex.enable(model, reuse=False)
    r = s.stream()
    r.step(luma(0), tokens(1)[0])
    blk = r.frames[-1][5]
    view = r.views[-1][5]
    assert view.data_ptr() == blk.address
    # The decoder wrote its K/V there: layer 0 K of the region equals a recomputation.
    with torch.no_grad():
        vis = model.embed(tokens(1)[0]) + model.slot_embed
        k0, v0 = model.blocks[0].attn.kv(model.blocks[0].norm1(vis)[None])
    assert torch.allclose(view[0, 0], k0[0, :, 20:24], atol=1e-6)
    assert torch.allclose(view[0, 1], v0[0, :, 20:24], atol=1e-6)
    # A write through torch is seen through the HAL's own view of the block (a retrieval).
    view[3, 1, 1, 2, 7] = 12345.0
    got = r.st.retrieve_temporal(5, 0)
    assert got is not None and got["block"].id == blk.id
    hal_bytes = np.frombuffer(memoryview(got["block"]), dtype=np.float32).reshape(view.shape)
    assert hal_bytes[3, 1, 1, 2, 7] == 12345.0


def test_exact_streaming_equals_full_sequence_reference(model: Decoder) -> None:
    """Block-backed prefill, frame by frame over the sliding window, reproduces the reference
    forward with sliding-window visibility (so the cache layout, masks and positions are right)."""
    c = model.c
    x = tokens(7)
    r = vrex.enable(model, reuse=False).stream()
    for t in range(7):
        logits, _ = r.step(luma(t), x[t])
        with torch.no_grad():
            want = model(x[: t + 1][None], window=c.window)[0, -1]
        assert torch.allclose(logits, want, atol=1e-4), t
        assert r.resident_blocks() <= c.window * c.regions


def count_prefilled_tokens(model: Decoder) -> list[int]:
    seen: list[int] = []
    orig = model.blocks[1].attn.kv

    def hook(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        seen.append(h.shape[1])
        return orig(h)

    model.blocks[1].attn.kv = hook  # type: ignore[method-assign]
    return seen


def test_identical_frame_reuses_every_region_and_skips_its_prefill(model: Decoder) -> None:
    seen = count_prefilled_tokens(model)
    s = vrex.enable(model)
    r = s.stream()
    x = tokens(1)[0]
    _, f0 = r.step(luma(0), x)
    before = s.alloc.stats()["allocations"]
    logits, f1 = r.step(luma(0), x)
    assert (f0.reused, f1.reused) == (0, 16)
    assert seen == [64 + 16, 16]  # only the 16 query tokens were prefilled in the second frame
    assert s.alloc.stats()["allocations"] == before  # no new block
    assert all(b.id == a.id for a, b in zip(r.frames[0], r.frames[1]))
    exact = vrex.enable(model, reuse=False).stream()
    exact.step(luma(0), x)
    want, _ = exact.step(luma(0), x)
    # Same tokens: only the within-frame visibility of the reused keys differs from exact.
    assert torch.allclose(torch.softmax(logits, -1), torch.softmax(want, -1), atol=0.05)


def test_guard_rejects_changed_keys_even_with_identical_fingerprint(model: Decoder) -> None:
    r = vrex.enable(model).stream()
    x = tokens(2)
    r.step(luma(0), x[0])
    y = x[0].clone()
    y[8:12] = x[1][8:12]  # region 2 changes completely, the luma does not
    _, fs = r.step(luma(0), y)
    assert fs.reused == 15
    assert r.frames[1][2].id != r.frames[0][2].id


def test_radius0_needs_identical_fingerprints(model: Decoder) -> None:
    """Same tokens (the guard passes), a slightly different luma: the fingerprint filter decides."""
    x = tokens(1)[0]
    yy, xx = np.mgrid[0:96, 0:128]
    a = ((xx * 2 + yy) % 256).astype(np.uint8)  # smooth content: a small patch moves the FCC a little
    b = a.copy()
    b[:8, :8] += 60
    probe = vrex.enable(model, reuse=False).stream().st
    fa = probe.begin_frame(a)["fp"]
    probe.end_frame()
    fb = probe.begin_frame(b)["fp"]
    probe.end_frame()
    d = lcp.hal.fingerprint_distance(fa, fb)
    assert 0 < d <= 20, d
    reused = {}
    for name, kw in (("r0", {"radius": 0}), ("r20", {"radius": 20}), ("nofcc", {"fcc": False})):
        r = vrex.enable(model, **kw).stream()
        r.step(a, x)
        reused[name] = r.step(b, x)[1].reused
    assert reused == {"r0": 0, "r20": 16, "nofcc": 16}


def test_window_ledger_keeps_hal_and_model_in_step(model: Decoder) -> None:
    s = vrex.enable(model)
    r = s.stream()
    x = tokens(3)
    for t in range(12):
        r.step(luma(t % 2), x[t % 3] if t % 4 else x[0])
        assert s.alloc.stats()["resident_blocks"] == r.resident_blocks() <= model.c.window * 16


def test_age_cap_recomputes_old_blocks(model: Decoder) -> None:
    """Identical frames pass every guard; the age cap alone makes the runner recompute a region whose
    block is older than max_age frames (drift the key hash cannot see stays bounded)."""
    x = tokens(1)[0]
    r = vrex.enable(model, max_age=2).stream()
    reused = [r.step(luma(0), x)[1].reused for _ in range(6)]
    assert reused == [0, 16, 16, 0, 16, 16]
    uncapped = vrex.enable(model, max_age=0).stream()
    assert [uncapped.step(luma(0), x)[1].reused for _ in range(6)] == [0, 16, 16, 16, 16, 16]
