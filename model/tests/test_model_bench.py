"""The model-in-the-loop bench entry (vrex.model_bench): record keys, targets and the met/missed verdict."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vrex import model_bench

KEYS = {"name", "ours", "baseline", "unit", "ratio", "target", "target_on", "target_sense", "met", "notes",
        "ours_spread", "kind"}


def rep(prefill: float, resident: float, kl: float, top1: float, reuse: float, reuse0: float) -> dict[str, Any]:
    """A run.run result with the fields model_bench reads."""
    return {"prefill_ms_ratio": prefill, "resident_bytes_ratio_window": resident, "kl_mean": kl,
            "top1_agreement": top1, "reuse_rate": reuse, "prefill_tokens_ratio": 1 - reuse,
            "prefill_wall_ms_ratio": prefill, "control_radius0": {"reuse_rate": reuse0, "kl_mean": kl / 2},
            "window_frames": 4, "radius": 20, "guard_hamming": 2, "guard_max_age": 4, "streams": 4, "frames": 40,
            "exact_prefill_ms_mean": 70.0}


def by_what(recs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"].split(": ", 1)[1]: r for r in recs}


def test_records_keys_targets_and_verdicts() -> None:
    # Medians: prefill 0.5 (target <= 0.4: missed), resident 0.3 (<= 0.5: met), KL 0.01 (met), top-1 0.9
    # (>= 0.95: missed), radius-0 loss 1 - 0.1/0.6 (>= 0.2: met).
    reps = [rep(0.5 + d, 0.3 + d, 0.01 + d / 10, 0.9 + d, 0.6, 0.1) for d in (-0.02, -0.01, 0.0, 0.01, 0.02)]
    recs = model_bench.records("clip-x4", reps, [0, 1, 2, 3, 4])
    for r in recs:
        assert KEYS <= set(r), r["name"]
        assert r["name"].startswith("model/clip-x4: ")
        s = r["ours_spread"]
        assert s["n"] == 5 and s["min"] <= r["ours"] == s["median"] <= s["max"]
        assert (r["target"] is None) == (r["met"] is None)
        json.dumps(r)
    w = by_what(recs)
    expect = {"prefill CPU time vs exact KV": (0.4, "at_most", False, 0.5),
              "resident KV bytes vs same-window exact baseline": (0.5, "at_most", True, 0.3),
              "KL of the logits vs exact KV": (0.05, "at_most", True, 0.01),
              "top-1 agreement of the logits vs exact KV": (0.95, "at_least", False, 0.9),
              "reuse lost by the radius-0 control (control: fingerprint radius 0)": (0.2, "at_least", True, 5 / 6)}
    for what, (target, sense, met, median) in expect.items():
        r = w[what]
        assert (r["target"], r["target_sense"], r["met"]) == (target, sense, met), what
        assert r["ours"] == pytest.approx(median)
    assert w["share of regions whose KV is reused"]["target"] is None


def test_verdict_flips_with_the_median() -> None:
    good = [rep(0.3, 0.6, 0.2, 0.99, 0.5, 0.45) for _ in range(5)]
    w = by_what(model_bench.records("c", good, list(range(5))))
    assert w["prefill CPU time vs exact KV"]["met"] is True
    assert w["resident KV bytes vs same-window exact baseline"]["met"] is False
    assert w["KL of the logits vs exact KV"]["met"] is False
    assert w["top-1 agreement of the logits vs exact KV"]["met"] is True
    assert w["reuse lost by the radius-0 control (control: fingerprint radius 0)"]["met"] is False  # loses 10 %
    assert model_bench.radius0_loss(rep(0.3, 0.3, 0.0, 1.0, 0.0, 0.0)) == 0.0  # no reuse: nothing to lose


def test_smoke_run_writes_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real path (run.run on footage) with seeded random weights: one repeat, 3 frames, 4 streams."""
    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    out = tmp_path / "model.jsonl"
    assert model_bench.main(["--mode=smoke", f"--out={out}"]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(recs) == len(model_bench.METRICS) + 2
    for r in recs:
        assert KEYS <= set(r) and r["ours_spread"]["n"] == 1
    w = by_what(recs)
    assert 0 <= w["share of regions whose KV is reused"]["ours"] <= 1
    assert w["prefill CPU time vs exact KV"]["ours"] > 0


def test_cpp_records_and_missing_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = [{"frames": 60, "exact_prefill_ms_mean": 16.0, "prefill_ms_ratio": x, "reuse_rate": 0.68}
            for x in (0.41, 0.39, 0.42, 0.45, 0.40)]
    recs = model_bench.cpp_records(runs)
    assert recs[0]["ours"] == pytest.approx(0.41) and recs[0]["met"] is False and recs[0]["target"] == 0.4
    assert recs[0]["ours_spread"]["min"] == pytest.approx(0.39) and recs[1]["met"] is None
    assert model_bench.cpp_records([dict(r, prefill_ms_ratio=0.3) for r in runs])[0]["met"] is True
    monkeypatch.setenv("VREX_LCP_BENCH", "/nonexistent/vrex-lcp-bench")
    assert model_bench.cpp_runs(Path("unused.avi")) is None
