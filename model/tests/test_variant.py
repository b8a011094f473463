"""The deep model variant (decoder.VARIANTS): the answer reads the deepest layer, so reused deeper-layer
KV computed from an older frame answers with that frame's content even when layer 0 is refreshed."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import vrex
from vrex import anchors, train
from vrex.decoder import VARIANTS, Config, Decoder

from synthetic import decoder, luma, streamed_and_reference, tokens


def make(variant: str) -> Decoder:
    return decoder(VARIANTS[variant])


def test_variants_read_layer_zero_or_the_deepest() -> None:
    assert make("builtin").read_layer == 0 and make("deep").read_layer == Config().layers - 1
    with pytest.raises(ValueError, match="layer 0 or the deepest"):
        Decoder(Config(), read_layer=1)


def test_deep_streaming_equals_its_full_sequence_reference() -> None:
    """Decoder.step and Decoder.forward stay one definition for the deep variant (values of the
    deepest layer = features, the answer read there), over 7 frames, past and present questions."""
    m = make("deep")
    x = tokens(7)
    r = vrex.enable(m, policy="exact").stream()
    rng = np.random.default_rng(0)

    def questions(t: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.from_numpy(rng.integers(0, 16, 2)), torch.tensor([t, int(rng.integers(0, t + 1))])

    got, want, _ = streamed_and_reference(m, r, x, questions)
    assert torch.allclose(got, want, atol=1e-4)
    # The deepest layer's values hold the frame's features (as layer 0's do).
    assert torch.allclose(r.views[6][5][3, 1], m.value0(x[6])[:, 20:24], atol=1e-6)


def test_refresh_protects_the_builtin_answer_but_not_the_deep_one() -> None:
    """A near-identical frame whose every region the guard lets through, reused with layer 0
    refreshed: the builtin (reads layer 0) answers as exact; the deep variant reads the reused
    deepest layer, i.e. the old frame's features, and does not."""
    x = tokens(1)[0]
    y = x + 0.3 * tokens(1, seed=2)[0]  # the features moved; the guard is off (32 bits)
    q = (torch.arange(16), torch.ones(16, dtype=torch.long))
    out = {}
    for variant in VARIANTS:
        m = make(variant)
        ex = vrex.enable(m, policy="exact").stream()
        rf = vrex.enable(m, guard_bits=32, refresh=True).stream()
        for r in (ex, rf):
            r.step(luma(0), x, torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long))
        le, _ = ex.step(luma(0), y, *q)
        lr, fs = rf.step(luma(0), y, *q)
        assert fs.reused == 16 and fs.tokens == 0
        deep = m.c.layers - 1
        assert torch.equal(rf.views[1][5][deep], rf.views[0][5][deep])  # the deepest layer: frame 0's
        out[variant] = float((lr - le).abs().max())
    assert out["builtin"] < 1e-5
    assert out["deep"] > 1e-2


def test_the_deep_variant_has_its_own_weights_and_knobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--variant deep trains into a cache directory of its own (never takes the shipped builtin set)
    and runs V-Rex with the knobs frozen for it; an unknown variant is refused."""
    with pytest.raises(ValueError, match="no model variant"):
        train.weights_path(variant="wide")
    trained: list[tuple[str, str]] = []

    def fake_train(out_dir: Path, paths: dict[str, Path], variant: str = "builtin") -> dict[str, object]:
        trained.append((out_dir.name, variant))
        (out_dir / "weights.pt").write_bytes(b"x")
        return {}

    encoder, clips = train.footage.encoder_dir(), train.task.clip_paths()
    monkeypatch.setattr(train.footage, "encoder_dir", lambda: encoder)
    monkeypatch.setattr(train.task, "clip_paths", lambda keys=None: clips)
    monkeypatch.setattr(train.footage, "cache_root", lambda: tmp_path)
    monkeypatch.setattr(train, "train", fake_train)
    deep = train.weights_path(variant="deep")
    key = train.cache_key(clips)
    assert deep.parent.name.startswith("deep-") and key not in deep.parent.name
    assert trained == [(deep.parent.name, "deep")]
    assert train.weights_path(variant="deep") == deep and len(trained) == 1  # cached: trained once
    assert set(anchors.REUSE) == set(VARIANTS)
    v, alias = anchors.REUSE["deep"]
    assert v["refresh"] and not alias["refresh"]
    assert {k: x for k, x in alias.items() if k != "refresh"} == {k: x for k, x in v.items() if k != "refresh"}
    assert anchors.REUSE["builtin"] == (anchors.VREX_REUSE, anchors.ALIAS_REUSE)
