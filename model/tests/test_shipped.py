"""The committed weights (model/weights/): verified against their manifest, refused with a reason."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from vrex import shipped


@pytest.fixture()
def shipped_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "weights"
    shutil.copytree(shipped.DIR, d)
    monkeypatch.setattr(shipped, "DIR", d)
    return d


def test_the_committed_set_matches_its_manifest() -> None:
    m = shipped.manifest()
    assert m is not None, f"no manifest in {shipped.DIR}"
    assert shipped.mismatch(m["cache_key"].removeprefix("builtin-"), m["key_inputs"]) is None
    blob = torch.load(shipped.DIR / shipped.WEIGHTS)
    assert sum(t.numel() for k, t in blob["state"].items() if k != "codebook") >= m["params"] - blob["codebook"].numel()
    for what in ("command", "seed", "data", "encoder", "cache_key", "key_inputs", "regenerate"):
        assert what in m, what


def test_a_changed_source_is_named(shipped_copy: Path) -> None:
    m = shipped.manifest()
    assert m is not None
    inputs = dict(m["key_inputs"])
    inputs["model/vrex/decoder.py"] = "0" * 64
    why = shipped.mismatch("another-key", inputs)
    assert why is not None and "model/vrex/decoder.py" in why and m["cache_key"] in why


def test_a_corrupt_weights_file_is_refused(shipped_copy: Path) -> None:
    m = shipped.manifest()
    assert m is not None
    data = bytearray((shipped_copy / shipped.WEIGHTS).read_bytes())
    data[len(data) // 2] ^= 1
    (shipped_copy / shipped.WEIGHTS).write_bytes(bytes(data))
    why = shipped.mismatch(m["cache_key"].removeprefix("builtin-"), m["key_inputs"])
    assert why is not None and "sha256" in why


def test_install_copies_the_verified_set(shipped_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "cache" / "builtin-x"
    shipped.install(out)
    assert (out / "weights.pt").read_bytes() == (shipped_copy / shipped.WEIGHTS).read_bytes()
    assert (out / "manifest.json").is_file()


def test_compare_accepts_identical_and_bounded_sets() -> None:
    a = {"w": torch.zeros(3)}
    assert shipped.compare(a, {"w": torch.zeros(3)}, 0.75, 0.75) == (True, shipped.compare(a, a, 0.75, 0.75)[1])
    ok, what = shipped.compare(a, {"w": torch.ones(3)}, 0.75, 0.75 + 2 * shipped.SPREAD)
    assert not ok and "max |weight difference| 1" in what
    assert shipped.compare(a, {"w": torch.full((3,), 1e-6)}, 0.75, 0.75 + shipped.SPREAD / 2)[0]
    assert not shipped.compare(a, {"v": torch.zeros(3)}, 0.75, 0.75)[0]
