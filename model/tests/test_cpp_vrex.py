"""V-Rex of record on the C++ path (vrex::lcp::StreamRunner with refresh, recall, the memory hierarchy
and the position-aware ReSV read: model/cpp/runner.cpp, tiers.cpp) decides, moves memory and answers
as the Python path's anchors.Managed vrex_hierarchy on the same frames; and the comparison fails when
any of those mechanisms is off on the C++ side."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from vrex import anchors, cpp_path, footage, lcp, run

pytestmark = pytest.mark.skipif(not cpp_path.available(), reason="_vrexrun not built (libtorch-dev missing)")

HIERARCHY = {"prefill": "vrex", "memory": "tiers", "resident": 5, "read": "resv_pos", "fetch": 4, "ratio": 0.5,
             "measure_resv": False}
STATS = ("device_bytes_peak", "host_bytes_peak", "total_bytes_peak", "demoted", "fetched", "recalled", "promoted",
         "device_series", "fetched_series", "policy_counters")


def vrex_of_record(**over: Any) -> dict[str, Any]:
    """lcp.Options of anchors' vrex_hierarchy (VREX_REUSE's knobs), with @over."""
    extra = {**HIERARCHY, **over.pop("extra", {})}
    return {"policy": "managed", **anchors.VREX_REUSE, **over, "extra": extra}


@pytest.fixture(scope="module")
def cutback(footage_env: dict[str, str]) -> list[tuple[np.ndarray, torch.Tensor]]:
    """28 frames: vtest 0-11, mire 0-7, then vtest 12-19 (a view that comes back after a cut, past the
    age cap and the 5 resident frames): (luma, encoder features)."""
    out = []
    for path, frames in ((footage_env["VREX_VTEST_AVI"], range(12)), (footage_env["VREX_MIRE_PATH"], range(8)),
                         (footage_env["VREX_VTEST_AVI"], range(12, 20))):
        feats = footage.encode_clip(Path(path), step=1)
        lumas = np.stack(list(footage.frames(Path(path), "gray", run.LUMA_SIZE, None, 1)))
        out.extend((lumas[i], torch.from_numpy(feats[i])) for i in frames)
    return out


def trace(runner: Any, frames: list[tuple[np.ndarray, torch.Tensor]], extra: dict[str, Any],
          back: tuple[int, ...] = (0, 1, 7, 12)) -> dict[str, Any]:
    """Per frame the reused regions and the logits of 4 questions (@back frames back; by default the
    present, 1, 7 and 12: the last two read demoted frames); then the hierarchy's bytes and the
    policy's counters."""
    reused, logits = [], []
    for t, (luma, feats) in enumerate(frames):
        tok = (feats - extra["mean"]) / extra["std"]
        qr = torch.tensor([(3 * t) % 16, (5 * t + 1) % 16, (7 * t + 2) % 16, t % 16])
        qg = torch.tensor([max(0, t - k) for k in back])
        lg, fs = runner.step(luma, tok, qr, qg)
        reused.append(fs.reused_region)
        logits.append(lg)
    st = runner.policy.stats()
    out = {"reused": reused, "logits": logits, "blocks": runner.distinct_blocks(),
           **{k: st.get(k) for k in STATS}}
    runner.close()
    return out


def mismatches(py: dict[str, Any], cpp: dict[str, Any]) -> list[str]:
    bad = [f"frame {t}: reused regions" for t, (a, b) in enumerate(zip(py["reused"], cpp["reused"])) if a != b]
    for t, (a, b) in enumerate(zip(py["logits"], cpp["logits"])):
        if not (torch.allclose(a, b, atol=1e-5) and torch.equal(a.argmax(-1), b.argmax(-1))):
            bad.append(f"frame {t}: answers ({float((a - b).abs().max()):.2e})")
    bad += [k for k in ("blocks", *STATS) if py[k] != cpp[k]]
    return bad


@pytest.fixture(scope="module")
def record(cutback: list[tuple[np.ndarray, torch.Tensor]], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The Python path's vrex_hierarchy on the stream, and what a C++ run needs."""
    mp = pytest.MonkeyPatch()
    mp.setenv("VREX_MODEL_WEIGHTS", "random")
    torch.set_num_threads(1)
    model, extra = run.load_model()
    module = cpp_path.scripted(model, str(tmp_path_factory.mktemp("script")))
    py = trace(lcp.Session(model, lcp.Options(**vrex_of_record())).stream(), cutback, extra)
    yield model, extra, module, py
    mp.undo()


def cpp_trace(record: Any, cutback: list[tuple[np.ndarray, torch.Tensor]], kernels: str = "native",
              back: tuple[int, ...] = (0, 1, 7, 12), **opts: Any) -> dict[str, Any]:
    model, extra, module, _ = record
    return trace(cpp_path.Session(model, lcp.Options(**opts), module, kernels=kernels).stream(), cutback, extra,
                 back)


@pytest.mark.parametrize("kernels", cpp_path.KERNELS)
def test_cpp_vrex_of_record_equals_the_python_path(record: Any, cutback: list[tuple[np.ndarray, torch.Tensor]],
                                                   kernels: str) -> None:
    """With the native kernels and with the scripted module's methods."""
    py = record[3]
    cpp = cpp_trace(record, cutback, kernels, **vrex_of_record())
    assert mismatches(py, cpp) == [], {k: (py[k], cpp[k]) for k in mismatches(py, cpp)}
    # Every mechanism was exercised, not only computation: refreshed reuse, the recall of the view
    # that came back (its 16 regions at least), demotion, and reads staging demoted blocks back.
    pc = cpp["policy_counters"]
    assert pc["reused"] > 300 and pc["installed"] == pc["reused"] + pc["recalled"]
    assert cpp["recalled"] >= 16 and any(all(r) for r in cpp["reused"][20:23])
    assert cpp["demoted"] >= 16 * (len(cutback) - 5) and cpp["fetched"] > cpp["recalled"]
    assert cpp["device_bytes_peak"] < cpp["total_bytes_peak"] and cpp["blocks"] == 4 * 16


@pytest.mark.parametrize("off", ["refresh", "recall", "hierarchy", "fetch"])
def test_the_comparison_fails_when_a_mechanism_is_off(record: Any, cutback: list[tuple[np.ndarray, torch.Tensor]],
                                                      off: str) -> None:
    """The C++ run with one mechanism off against the Python path's V-Rex of record: refresh
    (aliasing), recall, the hierarchy (the whole cache pinned, ReSV's selection read), or the
    read's fetch of demoted blocks (fetch 0: the device's blocks only)."""
    opts = {"refresh": vrex_of_record(refresh=False), "recall": vrex_of_record(recall=False),
            "hierarchy": {**vrex_of_record(), "policy": "vrex", "extra": {"read": "resv", "ratio": 0.5}},
            "fetch": vrex_of_record(extra={"fetch": 0})}[off]
    bad = mismatches(record[3], cpp_trace(record, cutback, **opts))
    assert bad, f"{off} off went unnoticed"


# Zombie release by use (coldness `use`): a question 3 frames back asks about a block still on the
# device while its reach holds demoted ones, so the read's selection runs and keeps it warm.
USE_BACK = (0, 3, 7, 12)


@pytest.fixture(scope="module")
def record_use(record: Any, cutback: list[tuple[np.ndarray, torch.Tensor]]) -> dict[str, Any]:
    model, extra, _, _ = record
    opts = vrex_of_record(extra={"coldness": "use"})
    return trace(lcp.Session(model, lcp.Options(**opts)).stream(), cutback, extra, USE_BACK)


def test_cpp_zombie_release_by_use_equals_the_python_path(record: Any, record_use: dict[str, Any],
                                                         cutback: list[tuple[np.ndarray, torch.Tensor]]) -> None:
    cpp = cpp_trace(record, cutback, back=USE_BACK, **vrex_of_record(extra={"coldness": "use"}))
    assert mismatches(record_use, cpp) == [], {k: (record_use[k], cpp[k]) for k in mismatches(record_use, cpp)}


def test_zombie_release_by_use_is_seen_by_the_comparison(record: Any, record_use: dict[str, Any],
                                                         cutback: list[tuple[np.ndarray, torch.Tensor]]) -> None:
    """The C++ run with references alone (zombie: with refresh, creation age) against the Python path's
    use rule on the same questions: the warm blocks show in the device bytes and the demotions."""
    cpp = cpp_trace(record, cutback, back=USE_BACK, **vrex_of_record(extra={"coldness": "zombie"}))
    bad = mismatches(record_use, cpp)
    assert "device_series" in bad and "demoted" in bad, bad


def test_cpp_creation_age_at_the_window_equals_the_python_path(record: Any,
                                                              cutback: list[tuple[np.ndarray, torch.Tensor]]) -> None:
    """fifo with resident frames = the window (the no_zombie_r4 control): the C++ hierarchy staged frame 0
    for the window at frame 4 (an off-by-one in KvTiers::stage_window), the Python one did not."""
    model, extra, _, _ = record
    opts = vrex_of_record(extra={"coldness": "fifo", "resident": 4})
    py = trace(lcp.Session(model, lcp.Options(**opts)).stream(), cutback, extra, USE_BACK)
    cpp = cpp_trace(record, cutback, back=USE_BACK, **opts)
    assert mismatches(py, cpp) == [], {k: (py[k], cpp[k]) for k in mismatches(py, cpp)}


DISK_STATS = ("spilled", "disk_bytes_peak", "host_bytes_peak", "total_bytes_peak", "demoted", "fetched", "recalled",
              "device_series", "fetched_series")


def disk_trace(runner: Any, frames: list[tuple[np.ndarray, torch.Tensor]], extra: dict[str, Any]) -> dict[str, Any]:
    st = runner.policy  # the stats of both paths' policies name the hierarchy's counters alike
    out = trace(runner, frames, extra)
    s = st.stats()
    return {**out, **{k: s.get(k) for k in DISK_STATS}}


HOST_LIMITS = (24, 40)


@pytest.fixture(scope="module")
def record_disk(record: Any, cutback: list[tuple[np.ndarray, torch.Tensor]],
                tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, dict[str, Any]]]:
    """The Python path's V-Rex of record with each host limit of HOST_LIMITS (the disk tier below)."""
    model, extra, _, _ = record
    disk = tmp_path_factory.mktemp("spill")
    runs = {}
    for hb in HOST_LIMITS:
        opts = vrex_of_record(extra={"host_blocks": hb, "disk_dir": str(disk)})
        runs[hb] = disk_trace(lcp.Session(model, lcp.Options(**opts)).stream(), cutback, extra)
    return disk, runs


@pytest.mark.parametrize("host_blocks", HOST_LIMITS)
def test_cpp_disk_tier_equals_the_python_path(record: Any, record_disk: tuple[Path, dict[int, dict[str, Any]]],
                                              cutback: list[tuple[np.ndarray, torch.Tensor]], host_blocks: int) -> None:
    """The disk tier below host memory on both paths (one C++ KvTiers: the Python path drives it
    through hierarchy.py, the runner directly): beyond @host_blocks host copies the same blocks spill
    at the same steps, and the answers, the read's staging and every byte peak are the same. Against
    the other limit's Python run the comparison sees the difference (it is not vacuous)."""
    model, extra, module, _ = record
    disk, py_runs = record_disk
    opts = vrex_of_record(extra={"host_blocks": host_blocks, "disk_dir": str(disk)})
    cpp = disk_trace(cpp_path.Session(model, lcp.Options(**opts), module).stream(), cutback, extra)
    py = py_runs[host_blocks]
    bad = mismatches(py, cpp) + [k for k in DISK_STATS if py[k] != cpp[k]]
    assert bad == [], {k: (py.get(k), cpp.get(k)) for k in bad}
    assert cpp["spilled"] > 0 and cpp["disk_bytes_peak"] > 0
    other = py_runs[sum(HOST_LIMITS) - host_blocks]
    assert [k for k in DISK_STATS if other[k] != cpp[k]], "another host limit went unnoticed"
    assert not list(disk.iterdir())  # the spill files have no names


def test_cpp_runner_on_a_hardware_1_0_device_equals_the_python_path(
        record: Any, cutback: list[tuple[np.ndarray, torch.Tensor]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A hardware 1.0 board (the emulation as 1.0: no lookups by tier or with candidates, no region
    motion): the C++ runner fits its policy to the device when it opens, so it decides every frame
    as the Python path's policy does after its first refused batch -- untiered, nearest only -- and
    both count those frames. Without the runner's fit_device() its first tiered batch is refused."""
    model, extra, _, _ = record
    monkeypatch.setenv("VREX_EMU_HW_VERSION", "1.0")
    py = trace(lcp.Session(model, lcp.Options(**vrex_of_record())).stream(), cutback, extra)
    cpp = cpp_trace(record, cutback, **vrex_of_record())
    assert mismatches(py, cpp) == [], {k: (py[k], cpp[k]) for k in mismatches(py, cpp)}
    assert cpp["policy_counters"]["hw_1_0_frames"] >= len(cutback) - 1
    assert cpp["recalled"] >= 16  # recall still finds the view that came back, through the nearest entry
    assert record[3]["policy_counters"]["hw_1_0_frames"] == 0


def test_every_option_reaches_the_cpp_runner() -> None:
    """A field of lcp.Options the C++ path does not hand to the runner ran as its default there:
    the SHIE ablations' `tiered` and `recall_candidates`, and `host_slots`, did until session 12."""
    assert {f.name for f in dataclasses.fields(lcp.Options)} == set(cpp_path.OPTIONS)


@pytest.mark.parametrize("knobs", [{"tiered": False, "recall_candidates": 1}, {"host_slots": 16}],
                         ids=["nearest_only", "host_slots"])
def test_cpp_shie_query_knobs_equal_the_python_path(record: Any, cutback: list[tuple[np.ndarray, torch.Tensor]],
                                                   knobs: dict[str, Any]) -> None:
    """The session-10 SHIE query (untiered, nearest entry only: ablations' shie_nearest_only), and a
    host tier of 16 blocks, on both paths: the same decisions, answers and bytes, and not V-Rex of
    record's (a knob the runner dropped would give the default run)."""
    model, extra, _, _ = record
    opts = vrex_of_record(**knobs)
    py = trace(lcp.Session(model, lcp.Options(**opts)).stream(), cutback, extra)
    cpp = cpp_trace(record, cutback, **opts)
    assert mismatches(py, cpp) == [], {k: (py[k], cpp[k]) for k in mismatches(py, cpp)}
    assert mismatches(record[3], cpp), f"{knobs} changed nothing"
