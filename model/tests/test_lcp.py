"""vrex.enable: the KV cache is vrex block memory; reuse skips prefill; exact streaming == reference."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import vrex
from vrex import lcp
from vrex.decoder import Decoder

from synthetic import decoder, luma, streamed_and_reference, tokens


@pytest.fixture()
def model() -> Decoder:
    return decoder()


def no_questions() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long)


def test_enable_binds_model_and_geometry(model: Decoder) -> None:
    s = vrex.enable(model, policy="exact")
    assert model.vrex is s
    c = model.c
    assert s.alloc.block_bytes == c.layers * 2 * c.kv_heads * c.tokens_per_region * c.head_dim * 4


def test_bad_options_are_refused(model: Decoder) -> None:
    with pytest.raises(ValueError, match="unknown policy"):
        vrex.enable(model, policy="nope")
    with pytest.raises(ValueError, match="radius"):
        vrex.enable(model, radius=40)
    r = vrex.enable(model).stream()
    with pytest.raises(ValueError, match="tokens must be"):
        r.step(luma(0), torch.zeros(3, 3), *no_questions())
    with pytest.raises(ValueError, match="question targets"):
        r.step(luma(0), tokens(1)[0], torch.tensor([0]), torch.tensor([1]))


def test_kv_tensors_alias_block_memory(model: Decoder) -> None:
    r = vrex.enable(model, policy="exact").stream()
    r.step(luma(0), tokens(1)[0], *no_questions())
    view = r.views[-1][5]
    blk = next(b for b in r.pinned.values() if b.address == view.data_ptr())
    # The decoder wrote its K/V there: layer 0 K of region 5 equals a recomputation.
    with torch.no_grad():
        k0, _ = model.blocks[0].attn.kv(model.blocks[0].norm1(model.embed_frame(tokens(1)[0])))
        v0 = model.value0(tokens(1)[0])  # layer-0 V: the encoder features themselves
    assert torch.allclose(view[0, 0], k0[:, 20:24], atol=1e-6)
    assert torch.allclose(view[0, 1], v0[:, 20:24], atol=1e-6)
    # A write through torch is seen through the HAL's own view of the block (a retrieval).
    view[2, 1, 1, 2, 7] = 12345.0
    got = r.st.retrieve_temporal(5, 0)  # between frames: offset 0 is the frame just ended
    assert got is not None and got["block"].id == blk.id
    hal_bytes = np.frombuffer(memoryview(got["block"]), dtype=np.float32).reshape(view.shape)
    assert hal_bytes[2, 1, 1, 2, 7] == 12345.0


def test_exact_streaming_equals_full_sequence_reference(model: Decoder) -> None:
    """Block-backed prefill frame by frame over the whole cache reproduces the reference forward
    (cache layout, window, positions and question visibility are right), for present and past
    questions, beyond the window."""
    x = tokens(9)
    r = vrex.enable(model, policy="exact").stream()
    rng = np.random.default_rng(0)

    def questions(t: int) -> tuple[torch.Tensor, torch.Tensor]:
        regions = torch.from_numpy(rng.integers(0, 16, 3))
        return regions, torch.tensor([t, max(0, t - 1), int(rng.integers(0, t + 1))])

    got, want, stats = streamed_and_reference(model, r, x, questions)
    assert all(fs.reused == 0 and fs.tokens == 64 for fs in stats)
    assert torch.allclose(got, want, atol=1e-4)
    assert r.cache_tokens() == 9 * 64
    assert r.distinct_blocks() == 9 * 16


def count_prefilled_tokens(model: Decoder) -> list[int]:
    seen: list[int] = []
    orig = model.blocks[1].attn.kv

    def hook(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        seen.append(h.shape[0])
        return orig(h)

    model.blocks[1].attn.kv = hook  # type: ignore[method-assign]
    return seen


def test_identical_frame_reuses_every_region_and_skips_its_prefill(model: Decoder) -> None:
    seen = count_prefilled_tokens(model)
    r = vrex.enable(model).stream()
    x = tokens(1)[0]
    r.step(luma(0), x, *no_questions())
    blocks = r.distinct_blocks()
    views0 = [v.data_ptr() for v in r.views[0]]
    logits, fs = r.step(luma(0), x, torch.tensor([3]), torch.tensor([1]))
    assert fs.reused == 16 and fs.tokens == 0
    # Layer 1's K/V projection saw no token of the reused frame (Decoder.prefill does not call it then).
    assert seen[0] == 64 and sum(seen[1:]) == 0
    assert r.distinct_blocks() == blocks  # no block allocated
    assert [v.data_ptr() for v in r.views[1]] == views0  # frame 1's entries are frame 0's blocks
    assert logits.shape == (1, model.c.codes)


def test_guard_refuses_a_changed_region_and_age_cap_forces_recompute(model: Decoder) -> None:
    x = tokens(1)[0]
    r = vrex.enable(model, max_age=2).stream()
    r.step(luma(0), x, *no_questions())
    y = x.clone()
    y[8:12] = torch.randn(4, x.shape[1]) * 5  # region 2 changes
    _, fs = r.step(luma(0), y, *no_questions())
    assert not fs.reused_region[2] and fs.reused == 15
    _, fs = r.step(luma(0), y, *no_questions())
    assert fs.reused == 16
    _, fs = r.step(luma(0), y, *no_questions())  # frame 3: blocks of frame 0 are 3 > 2 frames old
    assert fs.reused == 1 and fs.reused_region[2]  # only region 2 (computed at frame 1) is young enough


def test_reuse_is_approximate_only_through_the_context_of_deeper_layers(model: Decoder) -> None:
    """On an identical frame a reused block's layer-0 K/V equals what exact KV computes (layer 0
    sees no other token), its deeper layers were computed with another window (the approximation
    reuse makes); the answers read layer 0 (gate 0 at initialisation), so they do not move."""
    x = tokens(1)[0]
    ex = vrex.enable(model, policy="exact").stream()
    vx = vrex.enable(model).stream()
    q = (torch.tensor([1, 2]), torch.tensor([0, 0]))
    for t in range(2):
        le, _ = ex.step(luma(0), x, *q)
        lv, fs = vx.step(luma(0), x, *q)
    assert fs.reused == 16
    e1, v1 = ex.views[1][7], vx.views[1][7]
    assert torch.equal(e1[0], v1[0])
    assert not torch.allclose(e1[1:], v1[1:], atol=1e-6)
    assert float(model.gate) == 0.0 and torch.allclose(le, lv, atol=1e-5)


def test_close_unpins_and_refuses_steps(model: Decoder) -> None:
    r = vrex.enable(model).stream()
    r.step(luma(0), tokens(1)[0], *no_questions())
    r.close()
    assert r.distinct_blocks() == 0
    with pytest.raises(RuntimeError, match="closed"):
        r.step(luma(0), tokens(1)[0], *no_questions())


def test_a_policy_plugs_in_by_name(model: Decoder) -> None:
    class EveryOther(lcp.Policy):
        """Reuses the previous frame's block of every even region (no guard): a plug-in example."""

        def choose(self, fp: tuple[int, int], hashes: list[int]) -> dict[int, object]:
            out = {}
            for r in range(0, 16, 2):
                got = self.run.st.retrieve_temporal(r, -1)
                if got is not None:
                    out[r] = got["block"]
            return out

    lcp.POLICIES["every_other"] = EveryOther
    try:
        r = vrex.enable(model, policy="every_other").stream()
        r.step(luma(0), tokens(1)[0], *no_questions())
        _, fs = r.step(luma(1), tokens(1, seed=2)[0], *no_questions())
        assert fs.reused == 8 and fs.reused_region[0] and not fs.reused_region[1]
    finally:
        del lcp.POLICIES["every_other"]


def test_refresh_writes_layer0_fresh_and_keeps_the_deeper_layers_reused(model: Decoder) -> None:
    """Refresh: a reused region gets a new block: the candidate's deeper layers, the frame's own
    layer 0 (keys = what exact computes, values = the frame's features), and no prefill of its tokens;
    the answer reads layer 0, so a stale candidate no longer answers with old features."""
    seen = count_prefilled_tokens(model)
    x = tokens(1)[0]
    y = x + 0.01 * tokens(1, seed=2)[0]  # a near-identical frame: the guard passes, the features moved
    ex = vrex.enable(model, policy="exact").stream()
    al = vrex.enable(model, guard_bits=32).stream()
    rf = vrex.enable(model, guard_bits=32, refresh=True).stream()
    q = (torch.tensor([1, 2, 3]), torch.tensor([1, 1, 1]))
    for r in (ex, al, rf):
        r.step(luma(0), x, *no_questions())
    seen.clear()
    le, _ = ex.step(luma(0), y, *q)
    la, fa = al.step(luma(0), y, *q)
    lr, fr = rf.step(luma(0), y, *q)
    assert seen == [64]  # exact computes frame 1; neither reuse run prefills a token of it (no call)
    assert fa.reused == fr.reused == 16 and fr.tokens == 0
    assert rf.distinct_blocks() == 32 and al.distinct_blocks() == 16  # refresh costs blocks, not FLOPs
    e1, r1, cand = ex.views[1][5], rf.views[1][5], rf.views[0][5]
    assert r1.data_ptr() != cand.data_ptr()
    assert torch.allclose(r1[0], e1[0], atol=1e-6)  # layer 0 as exact computes it
    assert torch.equal(r1[1:], cand[1:])  # deeper layers: the candidate's
    assert not torch.equal(al.views[1][5][0], e1[0])  # aliasing reads the old frame's layer 0
    assert float(model.gate) == 0.0
    assert torch.allclose(lr, le, atol=1e-5) and not torch.allclose(la, le, atol=1e-5)


def test_recall_fetches_a_block_back_when_a_view_comes_back_after_a_cut(model: Decoder) -> None:
    """Scene A, then scene B past the age cap, then A again: without recall A is computed again;
    with recall its regions are installed from A's blocks (no prefill), their bytes A's."""
    a, b = tokens(1, seed=5)[0], tokens(1, seed=6)[0]
    plan = [(0, a)] + [(1, b)] * 5 + [(0, a)]
    runs = {name: vrex.enable(model, max_age=2, refresh=False, recall=rec, recall_radius=8, recall_guard_bits=0).stream()
            for name, rec in (("off", False), ("on", True))}
    stats = {}
    for name, r in runs.items():
        for scene, x in plan:
            _, fs = r.step(luma(100 + scene), x, *no_questions())
        stats[name] = fs
    assert stats["off"].reused == 0  # the device's candidates are B's, and A's are past the age cap
    on = runs["on"]
    assert stats["on"].reused == 16 and stats["on"].tokens == 0
    for reg in range(16):
        assert torch.equal(on.views[6][reg], on.views[0][reg])
        assert on.views[6][reg].data_ptr() != on.views[0][reg].data_ptr()  # a new block, filled
    assert on.policy.core.counters["recalled"] >= 16 and on.policy.core.counters["installed"] >= 16
    # Found by the SHIE in its host tier: the runner indexed a copy of every block past the age cap
    # there (the device's zombie rule retired A's own entries by frame 6).
    assert on.policy.core.hosted >= 16 and runs["off"].policy.core.host_slots == 0


def test_motion_gate_refuses_the_region_the_fcc_saw_move(model: Decoder) -> None:
    """Options.motion_gate: the same tokens (the guard accepts every region), but the luma of region 5
    (grid x 32..63, y 24..47 of the FCC's 128x96 grid) moved 2 px right: with the gate that region is
    computed, the other 15 reused; without it (or with the FCC off) all 16 are reused. The motion is
    the device's (begin_frame's region_motion, lib's vrex_fcc_region_motion in the FCC step) and the
    gate the C++ policy's (hal.ReusePolicy, ReuseOptions::motion_gate)."""
    x = tokens(1)[0]
    a = luma(0)
    b = a.copy()
    b[24:48, 34:62] = a[24:48, 32:60]
    got = {}
    for name, kw in (("gate", {"motion_gate": 0}), ("loose", {"motion_gate": 90}), ("off", {}),
                     ("no_fcc", {"motion_gate": 0, "fcc": False})):
        r = vrex.enable(model, radius=31, **kw).stream()
        r.step(a, x, *no_questions())
        _, fs = r.step(b, x, *no_questions())
        got[name] = fs.reused_region
        motion = r.frame_info["region_motion"]
        assert motion == lcp.hal.fcc_region_motion(b, a)  # the device's, the reference model's own call
        assert motion[5] >= 2 * 32 // 12 and sum(motion) == motion[5]
        assert r.policy.core.counters["gated"] == (1 if name == "gate" else 0)
    assert got["gate"] == [r != 5 for r in range(16)]
    assert all(got["loose"]) and all(got["off"]) and all(got["no_fcc"])
    with pytest.raises(ValueError, match="motion_gate"):
        vrex.enable(model, motion_gate=256)
