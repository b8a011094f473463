"""The pan workload (vrex/workloads.py): camera motion through a crop window, deterministic by seed."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vrex import workloads


def centres(win: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Window centres in grid px of the window (the FCC's unit: 128 columns across the window)."""
    cx = (win[:, 1] + win[:, 3] / 2) * workloads.PAN_GRID / win[:, 3]
    cy = (win[:, 2] + win[:, 4] / 2) * workloads.PAN_GRID / win[:, 4]
    return cx, cy


def test_pan_windows_move_as_their_segments_say() -> None:
    w, h, n_src = 768, 576, 795
    win, segs, moves = workloads.pan_windows(w, h, n_src, 400, np.random.default_rng(5))
    again, segs2, moves2 = workloads.pan_windows(w, h, n_src, 400, np.random.default_rng(5))
    assert np.array_equal(win, again) and segs == segs2 and moves == moves2  # deterministic by seed
    assert win.shape == (400, 5)
    assert [s.start for s in segs] == list(np.cumsum([0] + [s.length for s in segs[:-1]]))
    assert sum(s.length for s in segs) == 400 and set(moves) == set(workloads.PAN_MOVES)
    src, x0, y0, ww, hh = win.T
    assert (x0 >= 0).all() and (y0 >= 0).all() and (x0 + ww <= w).all() and (y0 + hh <= h).all()
    assert (np.abs(np.diff(src)) == 1).all() and src.min() >= 0 and src.max() < n_src  # one shot, no cut
    lo, hi = workloads.PAN_SCALE
    assert (ww >= round(lo * w) - 1).all() and (ww <= round(hi * w) + 1).all()
    seen = {m: 0 for m in workloads.PAN_MOVES}
    for s, m in zip(segs, moves):
        part = win[s.start:s.start + s.length]
        if len(part) < 2:
            continue
        cx, cy = centres(part.astype(float))
        step = np.hypot(np.diff(cx), np.diff(cy))
        sizes = np.unique(part[:, 3])
        if m == "hold":
            assert len(sizes) == 1 and (step < 0.05).all(), (s, step)
        elif m == "zoom":
            assert len(sizes) > 1 or sizes[0] in (round(lo * w), round(hi * w))
        else:
            # rounding to source px and bounces off an edge aside, the speed is the move's
            med = float(np.median(step))
            assert (0.3 <= med <= 1.7) if m == "slow" else (1.8 <= med <= 4.2), (m, s, step)
            assert len(sizes) == 1
        seen[m] += 1
    assert all(seen.values()), seen


def test_pan_windows_refuse_an_empty_stream() -> None:
    with pytest.raises(ValueError, match="pan"):
        workloads.pan_windows(320, 240, 100, 0, np.random.default_rng(0))


def test_render_crops_the_window_and_caches(vtest_avi: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rendered luma is the window's content: a window shifted by 16 px shows the same pixels 16
    px (scaled to the luma grid) to the side; a second render comes from the cache."""
    import vrex.footage as footage
    real = footage.encoder_dir()  # the shared encoder; the pan cache goes to tmp_path
    monkeypatch.setattr(footage, "encoder_dir", lambda: real)
    monkeypatch.setenv("VREX_CACHE", str(tmp_path))
    win = np.array([[3, 100, 50, 512, 384], [3, 116, 50, 512, 384]])
    feats, luma = workloads.render(vtest_avi, 1, win, (256, 192))
    assert feats.shape == (2, 64, footage.FEAT_DIM) and luma.shape == (2, 192, 256)
    # 16 source px of a 512 px window = 8 luma px: frame 1 = frame 0 moved left by 8 columns
    a, b = luma[0].astype(int), luma[1].astype(int)
    assert np.abs(a[:, 8:] - b[:, :-8]).mean() < 1.0 < np.abs(a - b).mean()
    cached = list((tmp_path / "model" / "features" / "pan").glob("*.npy"))
    assert len(cached) == 2
    f2, l2 = workloads.render(vtest_avi, 1, win, (256, 192))
    assert np.array_equal(f2, feats) and np.array_equal(l2, luma)
