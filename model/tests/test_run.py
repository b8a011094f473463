"""The measurement runner end to end on real footage (random-init weights: the plumbing, not the model)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from vrex import run, train
from vrex.decoder import Config, Decoder


def test_runner_keys_and_controls_on_vtest(vtest_avi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    m = Decoder(Config()).eval()
    monkeypatch.setattr(train, "load", lambda: (m, {"mean": torch.zeros(96), "std": torch.full((96,), 3.0)}))
    r = run.run([vtest_avi], 6, 20, 7)
    for obj in (r, r["control_radius0"], r["control_no_fcc"]):
        for k in run.KEYS:
            assert k in obj, k
        assert obj["kl_mean"] >= 0 and obj["kl_p99"] >= obj["kl_mean"] * 0.5
        assert 0 <= obj["top1_agreement"] <= 1 and 0 <= obj["reuse_rate"] < 1
    # vtest.avi is a fixed camera: consecutive frames' fingerprints differ a little, so radius 0
    # finds nothing, and the run with reuse holds fewer blocks than the window baseline.
    assert r["control_radius0"]["reuse_rate"] == 0 and r["control_radius0"]["kl_mean"] == 0
    assert r["control_radius0"]["resident_bytes_ratio_window"] == 1.0
    assert r["reuse_rate"] > 0.3 and r["resident_bytes_ratio_window"] < 1.0
    assert len(r["per_frame"]["kl_mean"]) == r["frames"] == 6


def test_four_streams_leave_out_the_resv_run(vtest_avi: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """5 runs x 4 streams exceed the emulated device's 16 streams: vrex.run (what vrexctl runs) drops
    the resv run instead of failing with EBUSY."""
    import json

    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    clips = [str(vtest_avi)] * 4
    assert run.main(["--json", "--max-frames", "2", *clips]) == 0
    r = json.loads(capsys.readouterr().out)
    assert "resv" not in r and "16 streams" in r["resv_skipped"] and r["streams"] == 4
