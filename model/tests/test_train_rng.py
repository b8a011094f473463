"""Training's initial weights must not depend on whether the feature cache was warm.

A cold cache encodes the clips inside train.Data, and building the encoder (tfjs.load) draws from
torch's global RNG, which train() seeded for the decoder's initialisation: a cold `--reproduce`
then started from other weights (max diff 0.261 against the shipped set, session 13).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from vrex import footage, task, tfjs, train


def cold_features(clip: task.Clip, path: Path) -> np.ndarray:
    """What a cold cache does to the RNG (builds the real encoder), with small synthetic tokens."""
    tfjs.load(footage.encoder_dir(), footage.ENCODER_LAYER)
    rng = np.random.default_rng(len(clip.key))
    return rng.standard_normal((6, 64, footage.FEAT_DIM)).astype(np.float32)


def test_building_data_on_a_cold_cache_leaves_the_global_rng_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    clip = task.CLIPS[0]
    torch.manual_seed(train.SEED)
    cold_features(clip, Path("unused"))
    moved = torch.get_rng_state()
    torch.manual_seed(train.SEED)
    before = torch.get_rng_state()
    assert not torch.equal(moved, before), "the encoder no longer draws: this test exercises nothing"

    monkeypatch.setattr(task, "features", cold_features)
    train.Data({c.key: Path("unused") for c in task.CLIPS}, 4, torch.Generator().manual_seed(train.SEED))
    assert torch.equal(torch.get_rng_state(), before)
