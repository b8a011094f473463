"""The C++ runner's native decoder kernels (model/cpp/native_decoder.cpp: vrex::lcp::NativeDecoder)
against the scripted module they replace (vrex/script.py's StepModule, decoder.py's own methods):
the same embedding and guard hashes, the same blocks (read in place: the scripted cache's rows are
the native pages' rows, K rotated to its frame) and logits within 1e-4 on both
variants (read_layer 0 and -1), fresh-region counts 0/1/3/16 at every frame t = 0 .. window + 2,
questions over their reach or over q_read tokens (blind ones included), ReSV's selector inputs; and
a C++-path stream run with native kernels decides and answers as one with the scripted kernels."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import synthetic
from vrex import cpp_path, decoder, footage, lcp, run, script

pytestmark = pytest.mark.skipif(not cpp_path.available(), reason="_vrexrun not built (libtorch-dev missing)")

TOL = 1e-4  # max |native - scripted| on logits, cache rows, blocks and embeddings (fp32, different sum orders)
COUNTS = (0, 1, 3, 16)  # fresh regions per frame (frame 0 computes all 16: nothing to reuse yet)


def _max_diff(a: np.ndarray, b: torch.Tensor) -> float:
    return float(np.abs(a - b.numpy()).max()) if a.size else 0.0


def _cache_rows(page: np.ndarray, t: int, rope_base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Frame @t's blocks [regions, layers, 2, kv_heads, tokens, head_dim] as attention-cache rows
    [layers, kv_heads, visual, head_dim]: K rotated to position t, V as they are."""
    kv = torch.from_numpy(page).permute(1, 2, 3, 0, 4, 5)  # [L, 2, KVH, R, T, hd]
    L, _, kvh, R, T, hd = kv.shape
    k, v = kv[:, 0].reshape(L, kvh, R * T, hd), kv[:, 1].reshape(L, kvh, R * T, hd)
    cos, sin = decoder.rope_tables(torch.tensor([t]), hd, rope_base)
    return decoder.rotate(k, cos, sin), v


def _hash_bits_agree(native: np.ndarray, scripted: torch.Tensor, k0: torch.Tensor, planes: torch.Tensor,
                     regions: int) -> bool:
    """Equal hashes, except for bits whose projection is within float rounding of 0 (either sign is right)."""
    kvh, n, hd = k0.shape
    per = k0.double().view(kvh, regions, n // regions, hd).permute(1, 0, 2, 3).reshape(regions, -1)
    proj = per @ planes.double().t()
    ambiguous = (proj.abs() < 1e-4).to(torch.int64) * torch.pow(2, torch.arange(planes.shape[0]))
    diff = native.astype(np.int64) ^ scripted.numpy()
    return bool(((diff & ~ambiguous.sum(1).numpy()) == 0).all())


@pytest.mark.parametrize("read_layer", [0, -1])
def test_native_kernels_equal_the_scripted_methods(read_layer: int, tmp_path: Path) -> None:
    m = synthetic.decoder(read_layer)
    c = m.c
    path = script.export(m, tmp_path / "step.pt")
    sm = torch.jit.load(str(path))
    nat = cpp_path._vrexrun.NativeDecoder(str(path))  # type: ignore[union-attr]
    n, frames = c.visual, c.window + 3
    block_shape = (c.layers, 2, c.kv_heads, c.tokens_per_region, c.head_dim)
    x = synthetic.tokens(frames, seed=7)
    rng = np.random.default_rng(3)
    checked = {k: 0 for k in COUNTS}
    for stream in range(len(COUNTS)):
        cap = frames * n
        ck, cv = torch.zeros(c.layers, c.kv_heads, cap, c.head_dim), torch.zeros(c.layers, c.kv_heads, cap, c.head_dim)
        pages = np.full((frames, c.regions) + block_shape, np.nan, np.float32)  # the native side's blocks
        s_blocks: list[torch.Tensor] = []  # per region, the block the frame holds (scripted / native copies)
        n_blocks: list[np.ndarray] = []
        for t in range(frames):
            z = x[t]
            with torch.no_grad():
                vis, hashes, _ = sm.prepare(z)  # (and the layer-0 keys, for refresh)
                k0 = sm.d.layer0_keys(vis)
            nvis, nhash = nat.prepare(z.numpy())
            assert _max_diff(nvis, vis) <= TOL, f"embedding, frame {t}"
            assert _hash_bits_agree(nhash, hashes, k0, sm.planes, c.regions), f"guard hashes, frame {t}"
            count = c.regions if t == 0 else COUNTS[(t + stream) % len(COUNTS)]
            fresh = sorted(rng.choice(c.regions, count, replace=False).tolist())
            checked[count] += 1
            # Fresh regions get new blocks (garbage until written); the others keep the block they had.
            for r in fresh:
                garbage = torch.full(block_shape, float("nan"))
                if t == 0:
                    s_blocks.append(garbage)
                    n_blocks.append(garbage.numpy().copy())
                else:
                    s_blocks[r], n_blocks[r] = garbage, garbage.numpy().copy()
            with torch.no_grad():
                sm.prefill(z, vis, fresh, list(s_blocks), ck, cv, t)
            pages[t] = np.stack(n_blocks)
            nat.prefill(z.numpy(), nvis, fresh, pages, t)
            for r in range(c.regions):
                n_blocks[r] = pages[t, r].copy()
            rows = slice(t * n, (t + 1) * n)
            pk, pv = _cache_rows(pages[t], t, c.rope_base)
            assert _max_diff(pk.numpy(), ck[:, :, rows]) <= TOL, f"K rows, frame {t}, fresh {fresh}"
            assert _max_diff(pv.numpy(), cv[:, :, rows]) <= TOL, f"V rows, frame {t}, fresh {fresh}"
            for r in fresh:
                assert _max_diff(pages[t, r], s_blocks[r]) <= TOL, f"block {r}, frame {t}"
            # Questions over their reach, then over q_read tokens (the last question blind: all -1).
            q_region = torch.from_numpy(rng.integers(0, c.regions, 5))
            q_target = torch.from_numpy(rng.integers(0, t + 1, 5))
            q_read = torch.from_numpy(rng.integers(0, (t + 1) * n, (5, 12)))
            q_read[:, 8:] = -1
            q_read[4] = -1
            for read in (None, q_read):
                with torch.no_grad():
                    want = sm.ask(ck, cv, t, q_region, q_target, read)
                got = nat.ask(pages, t, q_region.numpy(), q_target.numpy(), None if read is None else read.numpy())
                assert _max_diff(got, want) <= TOL, f"logits, frame {t}, q_read {read is not None}"
                assert np.array_equal(got.argmax(-1), want.argmax(-1).numpy())
            assert not want[4].any() and not got[4].any(), "a blind question's logits are 0"
            # ReSV's inputs (the runner's selector): query, reach frames, position weights.
            with torch.no_grad():
                sq, sf, sw = sm.selector(q_region, q_target, t)
            nq_, nf_, nw_ = nat.selector(q_region.numpy(), q_target.numpy(), t)
            assert _max_diff(nq_, sq) <= TOL and np.array_equal(nf_, sf.numpy()) and _max_diff(nw_, sw) <= TOL
    assert all(checked[k] >= 1 for k in COUNTS), checked


def test_native_kernels_refuse_bad_input(tmp_path: Path) -> None:
    m = synthetic.decoder()
    c = m.c
    nat = cpp_path._vrexrun.NativeDecoder(str(script.export(m, tmp_path / "step.pt")))  # type: ignore[union-attr]
    pages = np.zeros((1, c.regions, c.layers, 2, c.kv_heads, c.tokens_per_region, c.head_dim), np.float32)
    with pytest.raises(ValueError, match="q_read: one row per question, tokens of frames 0 .. t"):
        nat.ask(pages, 0, np.array([1]), np.array([0]), np.array([[c.visual]]))
    with pytest.raises(ValueError, match="fewer than t \\+ 1 frames"):
        nat.ask(pages, 1, np.array([1]), np.array([0]))
    with pytest.raises(ValueError, match="question regions 0 .. regions - 1 about frames 0 .. t"):
        nat.ask(pages, 0, np.array([16]), np.array([0]))
    z = np.zeros((c.visual, c.feat_dim), np.float32)
    vis = nat.embed(z)
    with pytest.raises(ValueError, match="fresh regions ascending"):
        nat.prefill(z, vis, [3, 1], pages, 0)


def test_a_native_cpp_stream_decides_and_answers_as_the_scripted_one(vtest_avi: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    """The runner with RunnerOptions::kernels native against scripted, on exact, vrex and vrex's ReSV
    read: the same reuse decisions every frame, logits within 1e-4, the same answers."""
    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    torch.set_num_threads(1)
    model, extra = run.load_model()
    feats = torch.from_numpy(footage.encode_clip(vtest_avi, step=1))[:20]
    lumas = np.stack(list(footage.frames(vtest_avi, "gray", run.LUMA_SIZE, None, 1)))[:20]
    module = cpp_path.scripted(model, str(tmp_path))
    for opts in (lcp.Options(policy="exact"), lcp.Options(policy="vrex"),
                 lcp.Options(policy="vrex", extra={"read": "resv", "ratio": 0.5})):
        nat = cpp_path.Session(model, opts, module, kernels="native").stream()
        scr = cpp_path.Session(model, opts, module, kernels="scripted").stream()
        reused = 0
        for t in range(len(feats)):
            tok = (feats[t] - extra["mean"]) / extra["std"]
            q = (torch.tensor([t % 16, (3 * t) % 16, (7 * t) % 16]), torch.tensor([t, t // 2, max(0, t - 5)]))
            ln, fn = nat.step(lumas[t], tok, *q)
            ls, fs = scr.step(lumas[t], tok, *q)
            assert fn.reused_region == fs.reused_region, f"{opts.policy} {opts.extra} frame {t}"
            assert float((ln - ls).abs().max()) <= TOL, f"{opts.policy} {opts.extra} frame {t}"
            assert torch.equal(ln.argmax(-1), ls.argmax(-1))
            assert fn.flops == fs.flops
            reused += fn.reused
        assert nat.distinct_blocks() == scr.distinct_blocks()
        assert (reused > 0) == (opts.policy == "vrex")
        nat.close()
        scr.close()
    with pytest.raises(ValueError, match="kernels"):
        cpp_path.Session(model, lcp.Options(policy="exact"), module, kernels="blas")
