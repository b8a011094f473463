"""A run placed on creation age's curve (vrex/on_curve.py, ablations.zombie_by_reference) on per-step
series whose answer is known: the chord that brackets the run's traffic is the one used, not the
curve's ends; the figures are paired, so noise common to every run leaves the CI at the answer."""
from __future__ import annotations

import numpy as np
import pytest

from vrex import ablations, on_curve

SEGS = [[40, 40], [30, 50]]
# Creation age at 4..7 resident frames (mean device bytes, blocks staged a step): bytes up, traffic down.
CURVE = {"alias_no_zombie_r4": (10.0, 8.0), "alias_no_zombie": (20.0, 4.0), "alias_no_zombie_r6": (30.0, 2.0),
         "alias_no_zombie_r7": (40.0, 1.0)}


def stream_stats(dev: float, fet: float, noise: np.ndarray | None = None) -> list[dict]:
    steps = [sum(s) for s in SEGS]
    e = np.zeros(sum(steps)) if noise is None else noise
    parts = np.split(dev + e, np.cumsum(steps)[:-1])
    return [{"device_series": list(p), "fetched_series": [fet] * len(p), "device_bytes_peak": int(dev),
             "fetched": int(fet * len(p))} for p in parts]


def stats(run: tuple[float, float], noise: np.ndarray | None = None) -> dict[str, list[dict]]:
    out = {n: stream_stats(d, f, noise) for n, (d, f) in CURVE.items()}
    out["no_refresh"] = stream_stats(*run, noise)
    return out


def test_the_chord_that_brackets_the_traffic_places_the_run() -> None:
    # 1.5 blocks a step lies between 6 (2.0) and 7 (1.0) resident frames: creation age needs 35 bytes
    # there; the run holds 22. At 22 bytes (between 5 and 6 frames) creation age stages 3.6 a step.
    z = ablations.zombie_by_reference(stats((22.0, 1.5)), SEGS, resident=5, reps=200)["no_refresh"]
    assert z["control"] == list(CURVE) and z["control_resident_frames"] == [4, 5, 6, 7]
    assert z["chord_at_equal_traffic"] == ["alias_no_zombie_r6", "alias_no_zombie_r7"]
    assert z["chord_at_equal_bytes"] == ["alias_no_zombie", "alias_no_zombie_r6"]
    assert not z["extrapolated"] and not z["extrapolated_bytes"]
    saved = z["device_bytes_saved_at_equal_traffic"]
    assert saved["mean"] == pytest.approx(13.0) and saved["ci95"] == pytest.approx([13.0, 13.0])
    assert z["device_bytes_saved_at_equal_traffic_rel"]["mean"] == pytest.approx(13.0 / 35.0)
    assert z["fetched_saved_at_equal_bytes"]["mean"] == pytest.approx(2.1)
    assert z["fetched_saved_at_equal_bytes_rel"]["mean"] == pytest.approx(2.1 / 3.6)
    # Against creation age at its own resident frames (5): 2 bytes more, 2.5 stagings a step fewer.
    assert z["same_residency"] == "alias_no_zombie"
    assert z["vs_same_residency"]["device_bytes"]["mean"] == pytest.approx(2.0)
    assert z["vs_same_residency"]["fetched_per_step"]["mean"] == pytest.approx(-2.5)


def test_common_noise_cancels_in_the_paired_figures() -> None:
    # Every run sees the same per-step swings of device bytes: the bootstrap resamples the same
    # segments for all of them, so the saved bytes stay 13 in every replicate.
    noise = np.random.default_rng(1).normal(0.0, 20.0, sum(sum(s) for s in SEGS))
    z = ablations.zombie_by_reference(stats((22.0, 1.5), noise), SEGS, resident=5, reps=300)["no_refresh"]
    assert z["device_bytes_saved_at_equal_traffic"]["ci95"] == pytest.approx([13.0, 13.0])
    lo, hi = z["device_bytes_mean"]["ci95"]
    assert hi - lo > 1.0  # the run's own bytes do vary


def test_past_the_curve_the_end_chord_is_extended_and_flagged() -> None:
    z = ablations.zombie_by_reference(stats((45.0, 0.5)), SEGS, resident=5, reps=50)["no_refresh"]
    assert z["extrapolated"] and z["extrapolated_bytes"]
    assert z["chord_at_equal_traffic"] == ["alias_no_zombie_r6", "alias_no_zombie_r7"]
    assert z["device_bytes_saved_at_equal_traffic"]["mean"] == pytest.approx(45.0 - 45.0)
    y, j = on_curve.on_curve(np.array([9.0]), np.array([[8.0], [4.0], [2.0]]), np.array([[10.0], [20.0], [30.0]]))
    assert j[0] == 0 and y[0] == pytest.approx(7.5)


def test_a_run_missing_its_same_residency_control_is_left_out() -> None:
    s = stats((22.0, 1.5))
    del s["alias_no_zombie"]
    assert ablations.zombie_by_reference(s, SEGS, resident=5, reps=20) == {}
    s["no_refresh_r4"] = stream_stats(10.0, 3.0)
    z = ablations.zombie_by_reference(s, SEGS, resident=5, reps=20)
    assert set(z) == {"no_refresh_r4"} and z["no_refresh_r4"]["same_residency"] == "alias_no_zombie_r4"


def test_at_another_resident_the_curve_holds_each_resident_frame_once() -> None:
    # At --resident 6 alias_no_zombie is creation age at 6 frames: alias_no_zombie_r6 would repeat it.
    z = ablations.zombie_by_reference(stats((22.0, 1.5)), SEGS, resident=6, reps=20)["no_refresh"]
    assert z["control"] == ["alias_no_zombie_r4", "alias_no_zombie", "alias_no_zombie_r7"]
    assert z["control_resident_frames"] == [4, 6, 7] and z["same_residency"] == "alias_no_zombie"
