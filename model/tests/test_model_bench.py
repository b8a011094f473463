"""The model-in-the-loop bench entry (vrex.model_bench): record keys, targets and the met/missed verdict."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vrex import model_bench

KEYS = {"name", "ours", "baseline", "unit", "ratio", "target", "target_on", "target_sense", "met", "notes",
        "ours_spread", "kind"}


def ci(m: float) -> dict[str, Any]:
    return {"mean": m, "ci95": [m - 0.01, m + 0.01]}


def rep(exact: float, vrex: float, kv: float, time: float, reuse: float, reuse0: float) -> dict[str, Any]:
    """A run.run result with the fields model_bench reads."""
    return {"task": {"accuracy": {"exact": ci(exact), "vrex": ci(vrex), "baselines": {"copy": ci(0.5)}}},
            "quality": {"vrex": {"accuracy_change": ci(vrex - exact), "mean": ci(0.02)},
                        "control_radius0": {"mean": ci(0.001)}},
            "kv_bytes": {"ratio": kv}, "prefill": {"time_ratio": ci(time), "flops_ratio": 0.5, "flops_floor": 0.3,
                                                   "exact_step_ms_mean": 20.0},
            "reuse_rate": reuse, "control_radius0": {"reuse_rate": reuse0}, "weights": "w",
            "args": {"radius": 20, "guard_bits": 2, "max_age": 4, "streams": 2, "frames": 200, "questions_per_frame": 4},
            "exact_cache_tokens_peak": 12800}


def by_what(recs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"].split(": ", 1)[1]: r for r in recs}


def test_records_keys_targets_and_verdicts() -> None:
    reps = [rep(0.8, 0.8 - d, 0.4 + d, 0.7, 0.6, 0.1) for d in (0.0, 0.0025, 0.005, 0.0075, 0.01)]
    recs = model_bench.records("clips", reps, [1, 2, 3, 4, 5])
    for r in recs:
        assert KEYS <= set(r), r["name"]
        s = r["ours_spread"]
        assert s["n"] == 5 and s["min"] <= r["ours"] == s["median"] <= s["max"]
        assert (r["target"] is None) == (r["met"] is None)
        json.dumps(r)
    w = by_what(recs)
    change = w["task accuracy change, vrex - exact"]
    assert change["ours"] == pytest.approx(-0.005) and change["target_sense"] == "at_least" and change["met"] is True
    kv = w["KV bytes vs the exact (whole, growing) cache, peak"]
    assert kv["ours"] == pytest.approx(0.405) and kv["met"] is True
    lost = w["reuse lost by the radius-0 control (control: fingerprint radius 0)"]
    assert lost["ours"] == pytest.approx(1 - 0.1 / 0.6) and lost["met"] is True


def test_verdict_flips_with_the_median() -> None:
    bad = [rep(0.8, 0.7, 0.6, 0.9, 0.5, 0.45) for _ in range(5)]
    w = by_what(model_bench.records("c", bad, list(range(5))))
    assert w["task accuracy change, vrex - exact"]["met"] is False
    assert w["KV bytes vs the exact (whole, growing) cache, peak"]["met"] is False
    assert w["reuse lost by the radius-0 control (control: fingerprint radius 0)"]["met"] is False  # loses 10 %
    assert model_bench.radius0_loss(rep(0.5, 0.5, 1.0, 1.0, 0.0, 0.0)) == 0.0  # no reuse: nothing to lose


def test_smoke_run_writes_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real path (run.run on the test clips) with seeded random weights: one repeat, 8 frames."""
    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    out = tmp_path / "model.jsonl"
    assert model_bench.main(["--mode=smoke", f"--out={out}"]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(recs) == len(model_bench.METRICS) + 2
    for r in recs:
        assert KEYS <= set(r) and r["ours_spread"]["n"] == 1
    w = by_what(recs)
    assert 0 <= w["share of regions whose KV is reused"]["ours"] <= 1
    assert w["step CPU time vs exact KV"]["ours"] > 0


def anchors_rep(vrex_change: float, device: float) -> dict[str, Any]:
    """A run.run --anchors result (after ablations.report) with the fields anchors_bench reads."""
    def row(change: float, dev: float, flops: float) -> dict[str, Any]:
        return {"accuracy_change": ci(change), "device_ratio": dev, "prefill": {"flops_ratio": flops}}

    return {"args": {"streams": 1, "frames": 160}, "weights": "w", "exact_cache_tokens_peak": 10240,
            "anchors_setup": {"budget_blocks_per_stream": 84, "resident_frames": 5, "fetch_blocks_per_question": 4},
            "anchors": {"full_cache": row(0.0, 1.0, 1.0), "vrex_hierarchy": row(vrex_change, device, 0.55),
                        "streaming_llm": row(-0.2, 0.03, 1.0)},
            "ablations": {"no_resv": row(-0.2, 0.03, 0.55)},
            "resv": {"recall_mean": 0.99, "kv_bytes_ratio": 0.004, "quest": {"recall_mean": 0.01}}}


def test_anchors_records_judge_vrex_only() -> None:
    from vrex import anchors_bench

    recs = anchors_bench.records([anchors_rep(-0.005, 0.03), anchors_rep(0.0, 0.04), anchors_rep(-0.02, 0.06)],
                                 [1, 2, 3], model_bench.record)
    w = {r["name"]: r for r in recs}
    for r in recs:
        assert KEYS <= set(r) and r["ours_spread"]["n"] == 3
    assert "anchors/anchors.full_cache: task accuracy change vs the full cache" not in w
    acc = w["anchors/anchors.vrex_hierarchy: task accuracy change vs the full cache"]
    assert acc["ours"] == pytest.approx(-0.005) and acc["met"] is True
    assert w["anchors/anchors.vrex_hierarchy: device KV peak vs the full cache"]["met"] is True  # median 0.04
    assert w["anchors/anchors.vrex_hierarchy: visual prefill FLOPs vs exact"]["met"] is False
    assert w["anchors/anchors.streaming_llm: task accuracy change vs the full cache"]["met"] is None
    assert w["anchors/ablations.no_resv: device KV peak vs the full cache"]["target"] is None
    assert w["anchors/resv: attention-mass recall on the past questions"]["met"] is True
    assert w["anchors/resv: recall minus Quest's at the same bytes (control: Quest page bounds)"]["met"] is True


def test_anchors_equal_accuracy_point_runs_at_its_budget_and_is_recorded_against_vrex() -> None:
    from vrex import ablations, anchors_bench, run

    runs = {k: v for k, v in run.RUNS.items() if k != "control_radius0"}
    runs.update(ablations.runs(anchors_bench.BUDGET, anchors_bench.RESIDENT, anchors_bench.RATIO))
    eq = anchors_bench.equal_accuracy_runs(len(runs) + 1)
    assert set(eq) == {"rekv@164", "quest@164", "random@164"}
    fetch = anchors_bench.EQUAL_ACCURACY_BUDGET - anchors_bench.RESIDENT * 16
    assert all(kw["extra"]["fetch"] == fetch == 84 for kw in eq.values())
    devices = [kw["extra"]["device"] for kw in [*runs.values(), *eq.values()] if "extra" in kw]
    assert len(devices) == len(set(devices))  # each run on its own emulated device
    reps = []
    for change, dev in ((0.0, 0.03), (-0.004, 0.04)):
        r = anchors_rep(change, dev)
        r["anchors"]["vrex_hierarchy"]["device_bytes_peak"] = 100
        r["equal_accuracy"] = {"rekv": {"budget": 164, "accuracy_change": ci(change), "device_bytes_peak": 170}}
        reps.append(r)
    w = {r["name"]: r for r in anchors_bench.records(reps, [1, 2], model_bench.record)}
    acc = w["anchors/equal_accuracy.rekv: task accuracy change vs the full cache at 164 blocks/stream"]
    assert acc["ours_spread"]["min"] == pytest.approx(-0.004) and acc["ours_spread"]["max"] == 0.0
    assert w["anchors/equal_accuracy.rekv: device KV peak vs V-Rex's at 164 blocks/stream"]["ours"] == pytest.approx(1.7)
