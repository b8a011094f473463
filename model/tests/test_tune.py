"""Knob freezing on the validation clip: the selection rule (the run itself is vrex.run's code)."""
from __future__ import annotations

from vrex import tune


def row(g: int, a: int, reuse: float, change: float) -> dict[str, object]:
    return {"guard_bits": g, "max_age": a, "reuse_rate": reuse, "accuracy_change": {"mean": change}}


def test_most_reuse_within_tolerance_wins() -> None:
    rows = [row(1, 2, 0.3, 0.0), row(2, 4, 0.5, -0.005), row(6, 4, 0.8, -0.05)]
    assert tune.choose(rows, 0.01) is rows[1]
    assert tune.choose(rows, 0.1) is rows[2]
    worse = [row(2, 4, 0.5, -0.05), row(1, 2, 0.3, -0.03)]
    assert tune.choose(worse, 0.01) is worse[1]  # none within tolerance: the smallest loss
    assert tune.choose([], 0.01) is None


def test_ties_go_to_the_stricter_setting() -> None:
    rows = [row(4, 4, 0.5, 0.0), row(2, 4, 0.5, 0.0), row(2, 2, 0.5, 0.0)]
    assert tune.choose(rows, 0.01) is rows[2]


def test_grid_respects_the_device_zombie_threshold() -> None:
    assert all(1 <= a <= 5 for _, a in tune.GRID)  # lcp.Session refuses max_age above zombie_frames (5)
