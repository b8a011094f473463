"""The task: clip split, edited streams, questions, ground truth, baselines and the bootstrap CIs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from vrex import task


def test_clips_are_held_out_by_clip() -> None:
    keys = {s: {c.key for c in task.clips_of(s)} for s in task.SPLITS}
    assert keys["train"] and keys["val"] and keys["test"]
    assert not (keys["train"] & keys["val"]) and not (keys["train"] & keys["test"]) and not (keys["val"] & keys["test"])
    with pytest.raises(ValueError, match="unknown split"):
        task.clips_of("dev")


def test_edited_stream_cuts_and_revisits() -> None:
    rng = np.random.default_rng(0)
    segs = task.edited_stream({"A": 300, "B": 100}, 400, rng)
    assert sum(s.length for s in segs) == 400
    assert all(16 <= s.length <= 64 for s in segs[:-1])
    assert all(0 <= s.start and s.start + s.length <= {"A": 300, "B": 100}[s.clip] for s in segs)
    assert all(a.clip != b.clip for a, b in zip(segs, segs[1:]))  # every segment boundary is a cut
    assert {s.clip for s in segs} == {"A", "B"} and len(segs) >= 6  # comes back to both clips
    assert task.cut_frames(segs) == set(np.cumsum([s.length for s in segs])[:-1].tolist())
    idx = task.stream_frames(segs)
    assert len(idx) == 400 and idx[0] == ("A" if segs[0].clip == "A" else "B", segs[0].start)


def test_questions_ask_the_present_and_the_past() -> None:
    qt, qr, qg = task.questions(300, 4, np.random.default_rng(1))
    assert len(qt) == 1200 and (qt == np.repeat(np.arange(300), 4)).all()
    assert ((qr >= 0) & (qr < 16)).all()
    k = qt - qg
    assert (k >= 0).all() and (qg >= 0).all()
    assert 0.2 < (k == 0).mean() < 0.35  # P_PRESENT, plus frame 0
    assert k.max() > 150  # the past reaches back across the whole stream (log-uniform)
    assert (k[qt == 0] == 0).all()


def test_codes_are_the_nearest_centroid_of_the_region_vector() -> None:
    gen = torch.Generator().manual_seed(0)
    feats = torch.randn(5, 64, 8, generator=gen)
    mean, std = torch.zeros(8), torch.ones(8)
    rv = task.region_vectors(feats, mean, std)
    cent = task.kmeans(rv.reshape(-1, 8), 6, 5, gen)
    c = task.codes(feats, mean, std, cent)
    assert c.shape == (5, 16)
    # Brute force: the centroid of highest cosine with the mean of the region's 4 tokens.
    for f in range(5):
        for r in range(16):
            v = feats[f, r * 4 : r * 4 + 4].mean(0)
            cos = torch.nn.functional.cosine_similarity(v[None], cent)
            assert c[f, r] == cos.argmax()


def test_baselines_copy_most_frequent_and_input_blind() -> None:
    code = np.array([[1] * 16, [2] * 16, [3] * 16, [3] * 16])
    code[:, 5] = 7
    base = task.Baselines.fit(np.array([0, 0, 5, 5, 5]), np.array([9, 9, 7, 7, 1]), 10)
    assert base.most_frequent == 7 and base.per_region[0] == 9 and base.per_region[5] == 7
    qt, qr, qg = np.array([2, 3, 3]), np.array([0, 0, 5]), np.array([2, 0, 1])
    p = base.predict(code, qt, qr, qg)
    assert p["copy"].tolist() == [2, 3, 7]  # present: the previous frame; past: the code now
    assert p["most_frequent"].tolist() == [7, 7, 7]
    assert p["input_blind"].tolist() == [9, 9, 7]


def test_bootstrap_ci_covers_the_mean_and_shrinks_with_data() -> None:
    rng = np.random.default_rng(0)
    small = rng.random(40) < 0.7
    big = rng.random(4000) < 0.7
    m1, lo1, hi1 = task.bootstrap_ci(small.astype(float), np.arange(40) // 4)
    m2, lo2, hi2 = task.bootstrap_ci(big.astype(float), np.arange(4000) // 4)
    assert lo1 <= m1 <= hi1 and lo2 <= m2 <= hi2
    assert hi2 - lo2 < (hi1 - lo1) / 3
    assert abs(m2 - 0.7) < 0.03
    # Ratio of sums: groups resampled whole.
    m, lo, hi = task.bootstrap_ci(np.array([1.0, 2, 3, 4]), np.array([0, 0, 1, 1]), ratio_of=np.array([2.0, 2, 2, 2]))
    assert m == pytest.approx(10 / 8) and lo <= m <= hi and lo >= 3 / 4 and hi <= 7 / 4
