"""The measurement runner end to end on real footage (random-init weights: the plumbing, not the model)."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from vrex import footage, run, task


def check_ci(d: dict[str, object]) -> None:
    m, (lo, hi) = d["mean"], d["ci95"]  # type: ignore[misc]
    assert 0.0 <= lo <= m <= hi <= 1.0, d  # type: ignore[operator]


def test_runner_json_keys_on_held_out_clips(vtest_avi: Path, footage_env: dict[str, str],
                                            monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    mire = footage_env["VREX_MIRE_PATH"]
    assert run.main(["--json", "--streams", "2", "--frames", "40", "--warmup", "2", str(vtest_avi), mire]) == 0
    r = json.loads(capsys.readouterr().out)
    acc = r["task"]["accuracy"]
    for k in ("exact", "vrex"):
        check_ci(acc[k])
    for k in ("copy", "most_frequent", "input_blind"):
        check_ci(acc["baselines"][k])
    assert r["questions"] == 2 * 40 * 4
    assert r["exact_cache_tokens_peak"] == 40 * 64
    kv = r["kv_bytes"]
    assert kv["exact_peak"] == 2 * 40 * 16 * kv["block_bytes"]
    assert 0 < kv["vrex_device_peak"] <= kv["vrex_total_peak"] <= kv["exact_peak"]
    pf = r["prefill"]
    assert 0 < pf["flops_floor"] < pf["flops_ratio"] <= 1.0 and pf["time_ratio"]["mean"] > 0
    assert pf["frames_timed"] == 2 * (40 - 2)
    assert set(pf["step_fit"]) == {"fixed_ms", "per_region_ms", "time_floor"}
    q = r["quality"]["vrex"]
    assert q["direction"].startswith("KL(exact || vrex)")
    assert set(q["split"]) == {"reused", "fresh", "event", "static"}
    assert q["split"]["reused"]["questions"] + q["split"]["fresh"]["questions"] == r["questions"]
    # The copy baseline answers with the ground truth of another frame: on footage it is far above chance.
    assert acc["baselines"]["copy"]["mean"] > 0.3
    # vtest.avi and mire-2 are fixed/slow cameras: vrex reuses, radius 0 (bit-identical fingerprints) hardly.
    assert r["reuse_rate"] > 0.2 and r["control_radius0"]["reuse_rate"] < r["reuse_rate"] / 2
    assert len(r["streams"]) == 2 and all(sum(sg[2] for sg in s["segments"]) == 40 for s in r["streams"])
    if r["args"]["path"] == "cpp":  # V-Rex's question read: the same frames reused, fewer keys read
        rr = r["vrex_resv"]
        check_ci(rr["accuracy"])
        assert rr["reuse_rate"] == r["reuse_rate"]
        assert 0 < rr["prefill"]["flops_floor"] < pf["flops_floor"]
        assert rr["prefill"]["flops_floor"] < rr["prefill"]["flops_ratio"] < pf["flops_ratio"]
        assert rr["prefill"]["time_ratio"]["mean"] > 0 and "vrex_resv" in r["quality"]


def test_training_clips_are_refused(footage_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    train_clip = task.clips_of("train")[0].key
    assert run.main(["--json", "--frames", "4", footage_env[f"VREX_{train_clip}_PATH"]]) == 1
    assert "held-out" in capsys.readouterr().err


def test_image_sequences_are_known_by_their_frames_not_their_container(footage_env: dict[str, str],
                                                                         tmp_path: Path) -> None:
    # The PGM sequences are stored as FFV1 in Matroska, whose bytes differ at each encode: a clip
    # known only by its file's sha256 was taken for an unknown (held-out) one, so a training
    # sequence could be scored and MIRE ran at step 1, not its task step 2.
    vcube = Path(footage_env["VREX_VCUBE_PATH"])
    again, cut = tmp_path / "again.mkv", tmp_path / "cut.mkv"
    for out, extra in ((again, []), (cut, ["-frames:v", "40"])):
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(vcube), *extra, "-c:v", "ffv1",
                        "-pix_fmt", "gray", "-f", "matroska", str(out)], check=True)
    assert footage.file_sha256(again) != footage.file_sha256(vcube)
    with pytest.raises(ValueError, match="VCUBE is a train clip"):
        run.identify([again])
    assert run.identify([cut]) == [task.Clip("cut.mkv", 1, "test")]  # other frames: another clip
    assert run.identify([Path(footage_env["VREX_MIRE_PATH"])]) == [task.Clip("MIRE", 2, "test")]


def test_bad_arguments(vtest_avi: Path) -> None:
    assert run.main(["--frames", "1", str(vtest_avi)]) == 2
    assert run.main(["--radius", "40", str(vtest_avi)]) == 2
    assert run.main(["/nonexistent.avi"]) == 2


def test_step_fit_separates_the_fixed_cost_from_the_per_region_cost() -> None:
    fresh = np.array([0, 4, 8, 16, 16, 2])
    step = 0.004 + 0.0005 * fresh
    fit = run.step_fit(fresh, step, 0.012)
    assert abs(fit["fixed_ms"] - 4.0) < 1e-9 and abs(fit["per_region_ms"] - 0.5) < 1e-9
    assert abs(fit["time_floor"] - 4.0 / 12.0) < 1e-9
    assert run.step_fit(np.full(5, 16), step[:5], 0.012)["fixed_ms"] is None  # the exact run: nothing to fit


def test_paired_frames_trims_warmup_and_pairs_with_exact() -> None:
    """timing() and emulation() pair a per-frame field with the exact run's step on the same frames,
    warm-up frames of EACH stream left out, groups by (stream, segment)."""
    plan = [{"seg_of": [0, 0, 0, 1, 1]}, {"seg_of": [0, 0, 1]}]
    exact = [run.Rec(step_s=[1.0, 2.0, 3.0, 4.0, 5.0]), run.Rec(step_s=[6.0, 7.0, 8.0])]
    vrex = [run.Rec(step_s=[0.1, 0.2, 0.3, 0.4, 0.5], emu_s=[9.0, 9.1, 9.2, 9.3, 9.4], flops=[10, 20, 30, 40, 50]),
            run.Rec(step_s=[0.6, 0.7, 0.8], emu_s=[9.5, 9.6, 9.7], flops=[60, 70, 80])]
    recs = {"exact": exact, "vrex": vrex}
    num, den, gr = run.paired_frames(plan, recs, "vrex", "emu_s", 2)
    assert num.tolist() == [9.2, 9.3, 9.4, 9.7]
    assert den.tolist() == [3.0, 4.0, 5.0, 8.0]
    assert gr.tolist() == [0, 1, 1, 10001]
    num, den, _ = run.paired_frames(plan, recs, "vrex", "flops", 0)
    assert num.tolist() == [10, 20, 30, 40, 50, 60, 70, 80] and den.tolist() == [1, 2, 3, 4, 5, 6, 7, 8]
    # A stream shorter than the warm-up contributes nothing.
    num, _, _ = run.paired_frames(plan, recs, "vrex", "step_s", 4)
    assert num.tolist() == [0.5]
    recs["vrex"][1].emu_s.pop()
    with pytest.raises(ValueError, match="lockstep"):
        run.paired_frames(plan, recs, "vrex", "emu_s", 0)


def test_pan_workload_streams_one_rendered_shot_per_clip(vtest_avi: Path, footage_env: dict[str, str],
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """--workload pan: stream s is clip s's rendered camera moves (no cut); ground truth and the FCC's
    luma come from the crops."""
    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    mire = footage_env["VREX_MIRE_PATH"]
    assert run.main(["--json", "--streams", "2", "--frames", "24", "--warmup", "2", "--workload", "pan",
                     "--no-control", "--no-resv-read", str(vtest_avi), mire]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["args"]["workload"] == "pan" and r["questions"] == 2 * 24 * 4
    clips = [{sg[0] for sg in s["segments"]} for s in r["streams"]]
    assert len(clips[0]) == len(clips[1]) == 1
    assert clips[0].pop() == "VTEST#0/pan0" and clips[1].pop().endswith("#1/pan1")
    assert all(s["cuts"] == 0 and len(s["moves"]) == len(s["segments"]) for s in r["streams"])
    check_ci(r["task"]["accuracy"]["vrex"])


def test_vrex_knobs_must_be_options_fields(vtest_avi: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(["--anchors", "--vrex-knobs", '{"guard_bits": 2, "nope": 1}', str(vtest_avi)]) == 1
    assert "not lcp.Options fields: nope" in capsys.readouterr().err
    assert run.main(["--anchors", "--vrex-knobs", "[2]", str(vtest_avi)]) == 1


def test_host_reserve_is_refused_where_it_would_do_nothing(vtest_avi: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The host pool's reservation is the C++ runner's: the Python path's runs would ignore it."""
    assert run.main(["--anchors", "--path", "python", "--host-reserve", "8", "--frames", "4", str(vtest_avi)]) == 1
    assert "C++ path only" in capsys.readouterr().err


def test_the_summary_names_the_visual_engine_time_frame_by_frame(vtest_avi: Path, footage_env: dict[str, str],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(["--no-control", "--no-resv-read", "--streams", "1", "--frames", "12", "--warmup", "2",
                     "--path", "cpp", "--kernels", "native", str(vtest_avi)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("visual engine time ratio"))
    counts = [int(m) for m in re.findall(r"(\d+) at [0-9.]+ ms", line)]
    assert sum(counts) == 12 - 2, line


def test_the_copy_engine_is_left_out_of_the_engine_and_counted_in_beside_it(
        vtest_avi: Path, footage_env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    mire = footage_env["VREX_MIRE_PATH"]
    assert run.main(["--anchors", "--anchor-runs", "vrex_hierarchy", "--no-resv-recall", "--no-control",
                     "--no-resv-read", "--json", "--streams", "2", "--frames", "24", "--warmup", "2",
                     "--workload", "cutback", "--path", "cpp", "--kernels", "native", str(vtest_avi), mire]) == 0
    e = json.loads(capsys.readouterr().out)["vrex_hierarchy"]["prefill"]["engine"]
    parts, counted = e["parts"], e["copy_engine_counted"]
    assert parts["dma_move"]["ms_per_frame"] > 0  # the hierarchy demotes: its copies ran on the engine
    dma = parts["dma_move"]["ms_per_frame"] + parts["dma_read"]["ms_per_frame"]
    assert counted["ms_mean"] == pytest.approx(e["ms_mean"] + dma, rel=1e-6)
    assert counted["visual"]["ms_mean"] == pytest.approx(e["visual"]["ms_mean"] + parts["dma_move"]["ms_per_frame"],
                                                         rel=1e-6)
    assert counted["time_ratio"]["mean"] > e["time_ratio"]["mean"]
    assert counted["visual"]["time_ratio"]["mean"] > e["visual"]["time_ratio"]["mean"]
    # V-Rex's frames by the regions they computed: all of them, and a frame computing none runs no prefill.
    by = e["visual"]["by_fresh_regions"]
    assert sum(b["frames"] for b in by.values()) == 2 * (24 - 2)
    assert all(b["ms_mean"] > 0 for b in by.values())
    assert "0" in by and "1" in by and by["0"]["prefill_ms_mean"] < by["1"]["prefill_ms_mean"] / 10


@pytest.mark.parametrize("path", ["cpp", "python"])
def test_a_run_frees_its_streams_when_it_returns(path: str, vtest_avi: Path, footage_env: dict[str, str],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A runner and its policy refer to each other: left to the cyclic collector, their streams stay
    taken after run() returns, and a later run in the process found its device's 16 streams busy."""
    import gc

    from vrex import cpp_path, lcp

    gc.collect()
    gc.disable()
    try:
        assert run.main(["--anchors", "--anchor-runs", "no_refresh", "--no-resv-recall", "--no-control", "--json",
                         "--streams", "1", "--frames", "6", "--warmup", "2", "--path", path, str(vtest_avi),
                         footage_env["VREX_MIRE_PATH"]]) == 0
        alive = [o for o in gc.get_objects() if type(o) in (lcp.StreamRunner, cpp_path.StreamRunner)]
    finally:
        gc.enable()
    capsys.readouterr()
    assert alive == []


def _untimed(d: object) -> object:
    """@d without what a step's clock measured (and the arguments, which name the block)."""
    timed = ("time", "ms", "step_fit", "engine", "emulation", "clock", "args")
    if isinstance(d, dict):
        return {k: _untimed(v) for k, v in d.items() if not any(w in k for w in timed)}
    if isinstance(d, list):
        return [_untimed(v) for v in d]
    return d


def test_step_order_by_frame_rotates_the_runs_every_frame_and_stream() -> None:
    got = list(run.step_order(["exact", "vrex"], [], [2, 1], 1))
    assert got == [("exact", 0, 0), ("vrex", 0, 0), ("vrex", 1, 0), ("exact", 1, 0), ("vrex", 0, 1), ("exact", 0, 1)]


@pytest.mark.parametrize("block", [2, 3, 7, 40])
def test_step_order_by_block_keeps_each_stream_in_frame_order_and_the_meter_ahead(block: int) -> None:
    """Every step once; each run's steps of a stream in frame order; a run feeding the reuse meter
    (anchors.ReuseMeter) has stepped every stream's frames before t when a reader steps frame t."""
    runs, frames = ["exact", "timechat_dtd", "vrex", "vrex_hierarchy"], [11, 9, 11]
    got = list(run.step_order(runs, ["vrex_hierarchy"], frames, block))
    assert sorted(got) == sorted((n, si, t) for n in runs for si, f in enumerate(frames) for t in range(f))
    for n in runs:
        for si in range(len(frames)):
            assert [t for m, s, t in got if (m, s) == (n, si)] == list(range(frames[si]))
    done: set[tuple[int, int]] = set()
    for n, si, t in got:
        if n == "vrex_hierarchy":
            done.add((si, t))
        elif n == "timechat_dtd":
            assert all((s, f) in done for s, fs in enumerate(frames) for f in range(min(t, fs)))
    # A block's steps go run by run: one unbroken stretch of steps per run and block.
    firsts = [got[i][0] for i in range(0, len(got)) if i == 0 or got[i][0] != got[i - 1][0]]
    assert len(firsts) == len(runs) * -(-max(frames) // block)


@pytest.mark.parametrize("path,runs", [("cpp", "vrex_hierarchy"), ("python", "timechat_dtd,vrex_hierarchy")])
def test_a_run_block_changes_the_order_of_the_steps_not_what_they_decide(
        path: str, runs: str, vtest_avi: Path, footage_env: dict[str, str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """--run-block lets each run step through a block of frames in a row; the DTD run reads V-Rex's
    reuse rate as it goes (anchors.ReuseMeter), so V-Rex runs first in every block. A block of 7 in
    24 frames leaves a short last block."""
    common = ["--anchors", "--anchor-runs", runs, "--no-resv-recall", "--no-control", "--no-resv-read", "--json",
              "--streams", "2", "--frames", "24", "--warmup", "2", "--workload", "cutback", "--path", path,
              str(vtest_avi), footage_env["VREX_MIRE_PATH"]]
    out = []
    for block in ("1", "7"):
        assert run.main([*common, "--run-block", block]) == 0
        out.append(json.loads(capsys.readouterr().out))
    assert out[0]["args"]["block"] == 1 and out[1]["args"]["block"] == 7
    assert out[0]["args"]["path"] == out[1]["args"]["path"] == path
    assert _untimed(out[0]) == _untimed(out[1])
    assert out[1]["vrex_hierarchy"]["prefill"]["frames_timed"] == 2 * (24 - 2)
    assert run.main([*common, "--run-block", "0"]) == 2
