"""The builtin model's weights as committed in model/weights/: builtin.pt and manifest.json.

Training costs about 4 minutes of CPU and its float results depend on the machine's vector unit, so
the repository carries one trained set: a fresh machine installs it into the cache instead of
training, and every machine runs the demo's model step on the same weights. The set applies only
to the tree that trained it: its manifest records the cache key of vrex/train.py (the training
sources, the encoder's weights and the train/val clips) and each of those inputs' sha256, so when
the key differs (say decoder.py was edited) the cause is named and the caller trains and caches
as before. `make model-ship` (python3 -m vrex.train --ship) rewrites the set for the current tree;
`make model-reproduce` (--reproduce) retrains from scratch and compares with it.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import footage

DIR = Path(__file__).resolve().parent.parent / "weights"
WEIGHTS = "builtin.pt"
MANIFEST = "manifest.json"
# Validation accuracy a retrained set may differ by (another CPU's float rounding) and still count
# as the same model; the demo's task accuracies carry 95 % intervals wider than this.
SPREAD = 0.01


def manifest() -> dict[str, Any] | None:
    path = DIR / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else None


def mismatch(key: str, inputs: dict[str, str]) -> str | None:
    """Why the shipped set does not apply to cache key @key (None when it does)."""
    m = manifest()
    if m is None:
        return f"no shipped weights in {DIR}"
    # The cache's manifests name their directory (builtin-<key>).
    if m.get("cache_key") == f"builtin-{key}":
        got = footage.file_sha256(DIR / WEIGHTS) if (DIR / WEIGHTS).is_file() else "missing"
        if got != m.get("weights_sha256"):
            return f"{DIR / WEIGHTS} has sha256 {got}, its manifest says {m.get('weights_sha256')}"
        return None
    shipped = m.get("key_inputs", {})
    changed = [k for k in sorted(set(inputs) | set(shipped)) if inputs.get(k) != shipped.get(k)]
    return (f"they were trained for cache key {m.get('cache_key')}, this tree's is builtin-{key}; "
            f"changed since: {', '.join(changed) or 'the key recipe'}")


def install(out_dir: Path) -> None:
    """Copies the verified set into the cache directory @out_dir (weights.pt + manifest.json)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DIR / WEIGHTS, out_dir / "weights.tmp")
    (out_dir / "weights.tmp").replace(out_dir / "weights.pt")
    m = manifest()
    assert m is not None
    m["installed_from"] = str(DIR)
    (out_dir / "manifest.json").write_text(json.dumps(m, indent=1) + "\n")


def ship(out_dir: Path, inputs: dict[str, str]) -> Path:
    """Writes the cached set in @out_dir to model/weights/ with the inputs' hashes."""
    m = json.loads((out_dir / "manifest.json").read_text())
    m.pop("installed_from", None)
    DIR.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(out_dir / "weights.pt", DIR / WEIGHTS)
    m["weights_sha256"] = footage.file_sha256(DIR / WEIGHTS)
    m["key_inputs"] = inputs
    m["spread"] = {"val_accuracy": SPREAD}
    m["regenerate"] = "make model-ship (python3 -m vrex.train --ship), then commit model/weights/"
    (DIR / MANIFEST).write_text(json.dumps(m, indent=1) + "\n")
    return DIR / WEIGHTS


def compare(state_a: dict[str, Any], state_b: dict[str, Any], acc_a: float, acc_b: float) -> tuple[bool, str]:
    """Whether a retrained set (b) reproduces the shipped one (a): bitwise, or within SPREAD."""
    keys = sorted(set(state_a) | set(state_b))
    if set(state_a) != set(state_b):
        return False, f"different tensors: {sorted(set(state_a) ^ set(state_b))}"
    diff = max(float((state_a[k].double() - state_b[k].double()).abs().max()) for k in keys)
    same = diff == 0.0
    ok = same or abs(acc_a - acc_b) <= SPREAD
    what = "bitwise identical" if same else f"max |weight difference| {diff:.3g}"
    return ok, f"{what}; validation accuracy shipped {acc_a:.4f}, retrained {acc_b:.4f} (spread {SPREAD})"


def reproduce() -> int:
    """Retrains from scratch (in a scratch directory) and compares with the shipped set."""
    import torch

    from . import task, train  # train imports this module

    paths = task.clip_paths()
    key = train.cache_key(paths)
    m = manifest()
    why = mismatch(key, train.key_inputs(paths))
    if m is None or why is not None:
        print(f"train: cannot reproduce the shipped weights: {why}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="vrex-reproduce-") as tmp:
        again = train.train(Path(tmp), paths)
        a = torch.load(DIR / WEIGHTS)
        b = torch.load(Path(tmp) / "weights.pt")
    ok, what = compare(a["state"], b["state"], m["val"]["accuracy"]["model"], again["val"]["accuracy"]["model"])
    print(f"train: reproduce {'PASS' if ok else 'FAIL'}: {what}")
    return 0 if ok else 1
