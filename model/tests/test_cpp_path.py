"""The two paths of `vrexctl run --model builtin` (vrex/run.py --path cpp|python) make the same reuse
decisions and give the same answers and accuracies on the same frames: one policy (model/cpp), one
decoder definition (decoder.py, scripted for libtorch by vrex/script.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from vrex import cpp_path, footage, lcp, run

pytestmark = pytest.mark.skipif(not cpp_path.available(), reason="_vrexrun not built (libtorch-dev missing)")


def test_scripted_step_decides_and_answers_as_the_python_step(vtest_avi: Path, monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    torch.set_num_threads(1)
    model, extra = run.load_model()
    feats = torch.from_numpy(footage.encode_clip(vtest_avi, step=1))[:24]
    lumas = np.stack(list(footage.frames(vtest_avi, "gray", run.LUMA_SIZE, None, 1)))[:24]
    module = cpp_path.scripted(model, str(tmp_path))
    for policy in ("exact", "vrex"):
        opts = lcp.Options(policy=policy)
        py, cpp = lcp.Session(model, opts).stream(), cpp_path.Session(model, opts, module).stream()
        reused = 0
        for t in range(len(feats)):
            tok = (feats[t] - extra["mean"]) / extra["std"]
            q = (torch.tensor([t % 16, (3 * t) % 16]), torch.tensor([t, t // 2]))
            lp, fp = py.step(lumas[t], tok, *q)
            lc, fc = cpp.step(lumas[t], tok, *q)
            assert fc.reused_region == fp.reused_region, f"{policy} frame {t}"
            assert torch.allclose(lc, lp, atol=1e-4), f"{policy} frame {t}: {(lc - lp).abs().max()}"
            assert torch.equal(lc.argmax(-1), lp.argmax(-1))
            assert fc.flops == fp.flops and fc.emu_s > 0 and fc.step_s >= fc.emu_s
            reused += fc.reused
        assert cpp.distinct_blocks() == py.distinct_blocks() and cpp.cache_tokens() == py.cache_tokens()
        assert (reused > 0) == (policy == "vrex")  # the comparison covered reuse, not only computation
        py.close()
        cpp.close()


def test_the_motion_gate_decides_the_same_on_both_paths(vtest_avi: Path, monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    """lcp.Options.motion_gate runs on the C++ runner (the device's region motion from begin_frame, the
    C++ policy's gate) and decides as the Python path, which drives the same policy: a still shot, a
    pan of 2 FCC grid px a frame, still again. Without a guard (32 bits) and with every fingerprint
    within the radius, the gate alone keeps the pan's regions from reusing; without it they reuse."""
    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    torch.set_num_threads(1)
    model, extra = run.load_model()
    feats = torch.from_numpy(footage.encode_clip(vtest_avi, step=1))[:14]
    first = next(iter(footage.frames(vtest_avi, "gray", run.LUMA_SIZE, None, 1)))
    # Luma is twice the FCC's grid: 4 luma px a frame is 2 grid px (32 in 1/16 px) in every region.
    shift = [0] * 4 + [4 * (t - 3) for t in range(4, 9)] + [20] * 5
    lumas = [np.ascontiguousarray(np.roll(first, -s, axis=1)) for s in shift]
    module = cpp_path.scripted(model, str(tmp_path))
    reused: dict[str, list[list[bool]]] = {}
    for name, gate in (("gate", 0), ("off", None)):
        opts = lcp.Options(radius=31, guard_bits=32, max_age=0, motion_gate=gate)
        py, cpp = lcp.Session(model, opts).stream(), cpp_path.Session(model, opts, module).stream()
        reused[name] = []
        for t in range(len(feats)):
            tok = (feats[t] - extra["mean"]) / extra["std"]
            q = (torch.tensor([t % 16]), torch.tensor([t]))
            lp, fp = py.step(lumas[t], tok, *q)
            lc, fc = cpp.step(lumas[t], tok, *q)
            assert fc.reused_region == fp.reused_region, f"{name} frame {t}"
            assert torch.allclose(lc, lp, atol=1e-4), f"{name} frame {t}: {(lc - lp).abs().max()}"
            reused[name].append(fc.reused_region)
        if gate is not None:
            assert py.policy.core.counters["gated"] > 0
        py.close()
        cpp.close()
    pan, still = range(4, 9), [t for t in range(1, 14) if t not in range(4, 9)]
    assert not any(any(reused["gate"][t]) for t in pan), "the pan's regions moved: none reuses"
    assert all(all(reused["gate"][t]) for t in still), "still frames reuse everywhere"
    assert all(all(reused["off"][t]) for t in still)
    assert sum(sum(reused["off"][t]) for t in pan) > 0, "without the gate the pan reuses"


def test_both_paths_give_the_same_accuracies(vtest_avi: Path, footage_env: dict[str, str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    clips = [vtest_avi, Path(footage_env["VREX_MIRE_PATH"])]
    o = lcp.Options()
    res = {p: run.run(clips, 1, 24, 4, o.radius, o.guard_bits, o.max_age, warmup=4, path=p) for p in run.PATHS}
    c, p = res["cpp"], res["python"]
    assert c["args"]["path"] == "cpp" and p["args"]["path"] == "python"
    for k in ("exact", "vrex", "control_radius0"):
        assert c["task"]["accuracy"][k] == p["task"]["accuracy"][k], k
    assert c["reuse_rate"] == p["reuse_rate"] > 0
    assert c["kv_bytes"] == p["kv_bytes"]
    assert c["quality"]["vrex"]["top1_agreement"] == p["quality"]["vrex"]["top1_agreement"]
    assert c["prefill"]["flops_ratio"] == p["prefill"]["flops_ratio"]
    assert 0 < c["emulation"]["ratio_to_exact_step"]["mean"] < 1


def test_the_cpp_path_refuses_python_plugin_policies(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    model, _ = run.load_model()
    module = cpp_path.scripted(model, str(tmp_path))
    with pytest.raises(ValueError, match="C\\+\\+ path runs"):
        cpp_path.Session(model, lcp.Options(policy="managed"), module)
    with pytest.raises(ValueError, match="path must be"):
        run.run([], 1, 2, 1, 20, 1, 2, warmup=0, path="rust")


def test_cpp_runner_refuses_bad_input_with_context(vtest_avi: Path, monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    """The runner's API takes plain arrays (no torch type in its header): shapes and questions are
    checked there, each error saying what was wrong."""
    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    model, _ = run.load_model()
    c = model.c
    r = cpp_path.Session(model, lcp.Options(policy="exact"), cpp_path.scripted(model, str(tmp_path))).stream().r
    luma = np.zeros((96, 128), dtype=np.uint8)
    tok = np.zeros((c.visual, c.feat_dim), dtype=np.float32)
    none = np.zeros(0, dtype=np.int64)
    with pytest.raises(ValueError, match=r"tokens must be \[64, 96\], not 6080 values"):
        r.step(luma, tok[:, :95], none, none)
    with pytest.raises(ValueError, match="tokens must be a 2-D array"):
        r.step(luma, tok.reshape(-1), none, none)
    with pytest.raises(ValueError, match="2 question regions but 1 targets"):
        r.step(luma, tok, np.array([1, 2]), np.array([0]))
    with pytest.raises(ValueError, match="question regions must be 0..15"):
        r.step(luma, tok, np.array([16]), np.array([0]))
    with pytest.raises(ValueError, match="question targets must be frames 0..0"):
        r.step(luma, tok, np.array([1]), np.array([1]))
    logits, st = r.step(luma, tok, np.array([1, 2]), np.array([0, 0]))  # nothing was consumed by the refusals
    assert logits.shape == (2, c.codes) and st["reused"] == 0 and r.cache_tokens() == c.visual
    r.close()


def test_resv_read_hashes_once_and_reads_only_the_selection(vtest_avi: Path, monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    """vrex_resv (the C++ runner's ReSV read): the same reuse decisions as vrex (a question never
    changes the visual KV); each frame's 64 keys and each question's query hashed exactly once; a
    question about the past reads the selected blocks, not the 5 x 64 keys of its reach; a
    question whose reach is only the current frame reads exactly what vrex reads (equal logits)."""
    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    torch.set_num_threads(1)
    model, extra = run.load_model()
    c = model.c
    feats = torch.from_numpy(footage.encode_clip(vtest_avi, step=1))[:20]
    lumas = np.stack(list(footage.frames(vtest_avi, "gray", run.LUMA_SIZE, None, 1)))[:20]
    module = cpp_path.scripted(model, str(tmp_path))
    plain = cpp_path.Session(model, lcp.Options(policy="vrex"), module).stream()
    sess = cpp_path.Session(model, lcp.Options(policy="vrex", extra={"read": "resv", "ratio": 0.5}), module)
    resv = sess.stream()
    for t in range(len(feats)):
        tok = (feats[t] - extra["mean"]) / extra["std"]
        qr = torch.tensor([t % 16, (5 * t) % 16])
        qg = torch.tensor([t, max(0, t - 6)])
        lp, fp = plain.step(lumas[t], tok, qr, qg)
        lr, st = resv.r.step(lumas[t], tok.numpy(), qr.numpy(), qg.numpy())
        assert list(st["reused_region"]) == fp.reused_region, f"frame {t}"
        assert st["hashed"] == c.visual + len(qr)
        if t == 0:  # both questions can only read frame 0: nothing to select, the same keys as vrex
            assert st["question_keys"] == 2 * c.visual and st["selected_blocks"] == 0 and st["weighed"] == 0
            assert torch.allclose(torch.from_numpy(lr), lp, atol=1e-5)
        elif t >= 8:
            # Present question: ReSV over frames t-2, t-1, plus the current frame; the question 6
            # frames back: ReSV over its 5 past frames only. vrex reads 3 x 64 + 5 x 64 keys.
            assert st["weighed"] == 7 * c.visual
            assert 2 <= st["selected_blocks"] <= 7 * c.regions
            assert st["question_keys"] == c.visual + c.tokens_per_region * st["selected_blocks"] < 8 * c.visual
    # Reading the selection is an approximation of reading the reach: measured, not assumed, in vrex.run.
    plain.close()
    resv.close()
    with pytest.raises(ValueError, match="question read"):
        cpp_path.Session(model, lcp.Options(policy="vrex", extra={"read": "all"}), module)
