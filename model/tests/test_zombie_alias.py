"""The aliasing study end to end (ablations.zombie_by_reference; docs/model.md "Session 14"): its
runs take the C++ runner and give the Python path's blocks and bytes, and the JSON places the aliasing
V-Rex on creation age's curve."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vrex import run

RUNS = "no_refresh,no_refresh_r4,alias_no_zombie,alias_no_zombie_r4,alias_no_zombie_r6,alias_no_zombie_r7"


def study(path: str, vtest_avi: Path, mire: str, capsys: pytest.CaptureFixture[str]) -> dict:
    assert run.main(["--anchors", "--anchor-runs", RUNS, "--no-resv-recall", "--no-control", "--json",
                     "--streams", "1", "--frames", "24", "--warmup", "2", "--workload", "cutback", "--path", path,
                     str(vtest_avi), mire]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_aliasing_study_on_both_paths(vtest_avi: Path, footage_env: dict[str, str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    cpp = study("cpp", vtest_avi, footage_env["VREX_MIRE_PATH"], capsys)
    py = study("python", vtest_avi, footage_env["VREX_MIRE_PATH"], capsys)
    assert cpp["args"]["path"] == "cpp" and py["args"]["path"] == "python"
    for name in RUNS.split(","):
        c, p = cpp["ablations"][name], py["ablations"][name]
        assert c["blocks"] == p["blocks"] and c["device_bytes_by_length"] == p["device_bytes_by_length"], name
        assert c["accuracy"] == p["accuracy"], name
    z = cpp["zombie_by_reference"]
    assert set(z) == {"no_refresh", "no_refresh_r4"}
    assert z["no_refresh"]["control_resident_frames"] == [4, 5, 6, 7]
    assert z["no_refresh"] == py["zombie_by_reference"]["no_refresh"]
    # Creation age at the window stages back what the frames in the window still reference.
    f = z["no_refresh_r4"]["vs_same_residency"]["fetched_per_step"]["mean"]
    assert f < 0 and z["no_refresh_r4"]["same_residency"] == "alias_no_zombie_r4"
    assert cpp["quality"]["no_refresh_r4"]["accuracy_change_vs_alias"]["mean"] == 0.0
