"""Decode-time retrieval (vrex.retrieval): the HAL's WiCSum against a brute-force reference written from
docs/hw/resv.md, exactness at ratio 1.0, the anchors on constructed cases, and the JSON/bench keys."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import _vrexhal as hal  # type: ignore[import-not-found]
from vrex import lcp, resv_bench, retrieval, run, train
from vrex.decoder import Config, Decoder

M64 = (1 << 64) - 1
SEED = 0x5245535631323334  # ResvParams' default seed


def hcu_signs(seed: int) -> list[list[int]]:
    """docs/hw/resv.md §2.1: row r is words 4r .. 4r + 3 of splitmix64(seed); bit i set = entry -1."""
    state, rows = seed, []
    for _ in range(32):
        words = []
        for _ in range(4):
            state = (state + 0x9E3779B97F4A7C15) & M64
            z = state
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            words.append(z ^ (z >> 31))
        rows.append(words)
    return rows


def ref_hash(signs: list[list[int]], key: np.ndarray) -> int:
    h = 0
    for r in range(32):
        s = sum(-int(v) if (signs[r][i // 64] >> (i % 64)) & 1 else int(v) for i, v in enumerate(key))
        if s >= 0:
            h |= 1 << r
    return h


def ref_wicsum(keys: np.ndarray, query: np.ndarray, th: int, ratio: float, lut: list[int]) -> np.ndarray:
    """Brute force: leader clustering (nearest representative within th, ties oldest), then the shortest
    prefix of the clusters sorted by (distance, id) whose count * lut[d] sum reaches ratio of the total."""
    signs = hcu_signs(SEED)
    hashes = [ref_hash(signs, hal.resv_quantize(k)) for k in keys]
    reps: list[int] = []
    members: list[list[int]] = []
    for t, h in enumerate(hashes):
        best, best_d = -1, th + 1
        for i, rep in enumerate(reps):
            d = bin(rep ^ h).count("1")
            if d < best_d:
                best, best_d = i, d
        if best < 0:
            reps.append(h)
            members.append([t])
        else:
            members[best].append(t)
    qh = ref_hash(signs, hal.resv_quantize(query))
    dist = [bin(r ^ qh).count("1") for r in reps]
    w = [len(m) * lut[d] for m, d in zip(members, dist)]
    total, q16 = sum(w), round(ratio * 65536)
    sel = np.zeros(len(keys), dtype=bool)
    cum = 0
    for c in sorted(range(len(reps)), key=lambda c: (dist[c], c)):
        if cum * 65536 >= total * q16:
            break
        cum += w[c]
        sel[members[c]] = True
    return sel


@pytest.mark.parametrize("n,th,ratio,case", [(1, 7, 0.3, 0), (17, 7, 0.3, 1), (40, 7, 0.7, 2), (60, 3, 0.5, 3),
                                             (60, 12, 0.9, 4), (33, 7, 0.0, 5), (50, 7, 1.0, 6)])
def test_wicsum_selection_equals_bruteforce(n: int, th: int, ratio: float, case: int) -> None:
    rng = np.random.default_rng(case)
    centres = rng.standard_normal((4, 64))
    # Video-like keys: noisy copies of a few directions, so clusters have several members.
    keys = (centres[rng.integers(0, 4, n)] + 0.3 * rng.standard_normal((n, 64))).astype(np.float32)
    queries = np.concatenate([centres[:2], rng.standard_normal((3, 64))]).astype(np.float32)
    lut = retrieval.mass_lut(6.0)
    head = hal.ResvHead(hal.Device.open("emulated"), 64, th, ratio, "mass", lut=lut)
    assert head.append(keys) == n
    mask, _, _ = head.select_mask(queries)
    for i, q in enumerate(queries):
        want = ref_wicsum(keys, q, th, ratio, lut)
        assert mask[i].tolist() == want.tolist(), f"query {i}"
    if ratio == 1.0:
        assert mask.all()
    if ratio == 0.0:
        assert not mask.any()


def test_oracle_takes_the_top_scores() -> None:
    scores = torch.tensor([[0.1, 5.0, -1.0, 3.0, 3.0], [9.0, 8.0, 7.0, 6.0, 5.0]])
    m = retrieval.Retrieval.oracle(scores, torch.tensor([3, 1]))
    assert m.tolist() == [[False, True, False, True, True], [True, False, False, False, False]]
    assert retrieval.Retrieval.oracle(scores, torch.tensor([0, 5])).sum(1).tolist() == [0, 5]


def test_quest_pages_bound_and_pick() -> None:
    torch.manual_seed(0)
    k = torch.randn(70, 8) * 0.1
    q = torch.randn(3, 8)
    k[37] = q[0] * 10  # page 2 (tokens 32..47) holds the key that dominates query 0
    m = retrieval.Retrieval.quest(q, k, torch.tensor([1, 16, 17]), page=16)
    assert m.shape == (3, 70)
    assert m[0].nonzero().flatten().tolist() == list(range(32, 48))  # ceil(1/16) = 1 page: the right one
    assert m[1].sum() == 16 and m[2].sum() == 32  # 1 and 2 whole pages
    # The last page is partial (70 = 4 * 16 + 6): selecting every page selects every token once.
    assert retrieval.Retrieval.quest(q, k, torch.tensor([70, 70, 70]), page=16).all()
    # The bound is an upper bound of every key's score in its page.
    kmax = torch.stack([k[i:i + 16].max(0).values for i in range(0, 70, 16)])
    kmin = torch.stack([k[i:i + 16].min(0).values for i in range(0, 70, 16)])
    ub = torch.maximum(q[:, None] * kmax, q[:, None] * kmin).sum(-1)
    s = q @ k.T
    for p in range(5):
        assert (s[:, p * 16:(p + 1) * 16].max(1).values <= ub[:, p] + 1e-6).all()


def random_model() -> Decoder:
    torch.manual_seed(0)
    return Decoder(Config()).eval()


def run_frames(m: Decoder, frames: int, **kw: object) -> tuple[torch.Tensor, lcp.Session]:
    s = lcp.Session(m, lcp.Options(**kw))  # type: ignore[arg-type]
    r = s.stream()
    g = torch.Generator().manual_seed(1)
    out = []
    rng = np.random.default_rng(1)
    base = rng.integers(0, 255, (96, 128), dtype=np.uint8)
    for t in range(frames):
        luma = np.clip(base.astype(int) + rng.integers(-2, 3, base.shape), 0, 255).astype(np.uint8)
        out.append(r.step(luma, torch.randn(64, m.c.feat_dim, generator=g) * (1 + 0.1 * t))[0])
    return torch.stack(out), s


def test_ratio_one_is_full_attention_exactly_and_lower_ratios_are_not() -> None:
    m = random_model()
    full, _ = run_frames(m, 5)
    one, s1 = run_frames(m, 5, retrieval="wicsum", ratio=1.0)
    assert torch.equal(full, one)
    assert s1.retrieval is not None and retrieval.summary(s1.retrieval.stats, "wicsum")["kv_bytes_ratio"] == 1.0
    low, s3 = run_frames(m, 5, retrieval="wicsum", ratio=0.3)
    assert not torch.equal(full, low)
    assert s3.retrieval is not None
    sm = retrieval.summary(s3.retrieval.stats, "wicsum")
    assert 0 < sm["kv_bytes_ratio"] < 1 and 0 < sm["recall_mean"] < 1
    # The anchors ran at the same per-row budget: the oracle holds at least WiCSum's mass.
    assert retrieval.summary(s3.retrieval.stats, "oracle")["recall_mean"] >= sm["recall_mean"] - 1e-9
    assert s3.retrieval.stats.tokens["oracle"] == s3.retrieval.stats.tokens["wicsum"]


def test_anchor_sessions_run_with_frame_reuse() -> None:
    m = random_model()
    full, _ = run_frames(m, 4, reuse=True)
    for kind in ("oracle", "quest", "random"):
        lo, s = run_frames(m, 4, retrieval=kind, ratio=0.5)
        assert lo.shape == full.shape and torch.isfinite(lo).all()
        assert s.retrieval is not None and s.retrieval.stats.steps > 0
    with pytest.raises(ValueError):
        lcp.Session(m, lcp.Options(retrieval="topk"))


def test_runner_resv_json_keys(vtest_avi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = random_model()
    monkeypatch.setattr(train, "load", lambda: (m, {"mean": torch.zeros(96), "std": torch.full((96,), 3.0)}))
    r = run.run([vtest_avi], 2, 20, 7)["resv"]
    for k in ("ratio", "recall_mean", "recall_p10", "kv_bytes_ratio", "tokens_ratio", "top1_agreement", "kl_mean",
              "selection_ops_per_step", "attention_ops_saved_per_step", "selection_cost_ratio",
              "oracle_tokens_for_recall95", "anchors", "met", "targets"):
        assert k in r, k
    assert set(r["anchors"]) == {"oracle", "quest", "random"}
    assert 0 <= r["recall_mean"] <= 1 and 0 < r["kv_bytes_ratio"] <= 1 and r["decode_steps"] > 0
    recs = resv_bench.records([resv_bench.run_segment(m, {"mean": torch.zeros(96), "std": torch.full((96,), 3.0)},
                                                      vtest_avi, 0, 2)] * 5, 2)
    names = {x["name"].split(":")[0] for x in recs}
    assert {"resv/wicsum-r0.7", "resv/oracle-r0.7", "resv/quest-r0.7", "resv/random-r0.7", "resv/wicsum-r1.0"} <= names
    for x in recs:
        assert x["ours_spread"]["n"] == 5 and x["ours_spread"]["min"] <= x["ours"] <= x["ours_spread"]["max"]
        assert x["met"] in (None, True, False) and (x["target"] is None) == (x["met"] is None)
