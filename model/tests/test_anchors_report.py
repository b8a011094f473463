"""anchors_report.equal_accuracy: the device KV an anchor needs to come within V-Rex's CI of the full
cache, from records of the same streams at several budgets (synthetic records: no run needed)."""
from __future__ import annotations

from typing import Any

import pytest

from vrex import anchors_report


def record(budget: int, anchors: dict[str, tuple[int, float]], exact: float = 0.85, questions: int = 100) -> dict[str, Any]:
    """An anchors record at @budget: @anchors name -> (device bytes, mean accuracy change)."""
    def ch(m: float) -> dict[str, Any]:
        return {"mean": m, "ci95": [m - 0.01, m + 0.01]}

    a: dict[str, Any] = {"full_cache": {"device_bytes_peak": 1000, "accuracy_change": None},
                         "vrex_hierarchy": {"device_bytes_peak": 40, "accuracy_change": {"mean": -0.005, "ci95": [-0.009, -0.001]}}}
    a.update({n: {"device_bytes_peak": b, "accuracy_change": ch(m)} for n, (b, m) in anchors.items()})
    return {"anchors": a, "anchors_setup": {"budget_blocks_per_stream": budget}, "questions": questions,
            "task": {"accuracy": {"exact": {"mean": exact}}}}


def test_the_first_budget_within_vrex_ci_is_reported_and_a_flat_anchor_is_not_reached() -> None:
    main = record(84, {"rekv": (30, -0.2), "dtd": (20, -0.3)})
    sweeps = [record(640, {"rekv": (200, -0.005), "dtd": (20, -0.3)}), record(164, {"rekv": (60, -0.02), "dtd": (20, -0.31)})]
    e = anchors_report.equal_accuracy(main, sweeps)
    assert e["threshold"] == -0.009
    rekv = e["anchors"]["rekv"]
    assert [p["budget"] for p in rekv["points"]] == [84, 164, 640]  # sorted by budget
    assert rekv["reached"]["budget"] == 640 and rekv["x_vrex"] == 5.0  # -0.02 at 164 is outside V-Rex's CI
    assert e["anchors"]["dtd"]["reached"] is None and e["anchors"]["dtd"]["x_vrex"] is None
    text = anchors_report.equal_accuracy_lines(e)
    assert "not reached up to budget 640" in text and "5.0x V-Rex" in text


def test_a_sweep_on_other_streams_is_refused() -> None:
    with pytest.raises(ValueError, match="same streams"):
        anchors_report.equal_accuracy(record(84, {"rekv": (30, -0.2)}), [record(164, {"rekv": (60, 0.0)}, exact=0.80)])
