"""TF.js -> torch converter: a tiny quantised graph against a NumPy reference, and the real nsfwjs."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from vrex import footage, tfjs


def quantise(w: np.ndarray) -> tuple[bytes, dict[str, float], np.ndarray]:
    lo, hi = float(w.min()), float(w.max())
    scale = (hi - lo) / 255 or 1.0
    q = np.round((w - lo) / scale).astype(np.uint8)
    return q.tobytes(), {"min": lo, "scale": scale, "dtype": "uint8"}, (lo + scale * q.astype(np.float64)).astype(np.float32)


def layer(name: str, kind: str, inputs: list[str], **cfg: object) -> dict[str, object]:
    return {"name": name, "class_name": kind, "config": {"name": name, **cfg},
            "inbound_nodes": [[[i, 0, 0, {}] for i in inputs]] if inputs else []}


def tiny_model(tmp: Path, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """pad -> conv 3x3/2 valid -> BN -> ReLU6 -> depthwise 3x3 same -> conv 1x1 (+bias) -> add."""
    shapes = {"c1/kernel": (3, 3, 3, 4), "bn/gamma": (4,), "bn/beta": (4,), "bn/moving_mean": (4,),
              "bn/moving_variance": (4,), "dw/depthwise_kernel": (3, 3, 4, 1), "pw/kernel": (1, 1, 4, 4),
              "pw/bias": (4,)}
    blobs, specs, ref = [], [], {}
    for name, shape in shapes.items():
        w = rng.normal(size=shape).astype(np.float32)
        if name.endswith("variance"):
            w = np.abs(w) + 0.5
        raw, q, deq = quantise(w)
        blobs.append(raw)
        specs.append({"name": name, "shape": list(shape), "dtype": "float32", "quantization": q})
        ref[name] = deq
    layers = [
        layer("in", "InputLayer", []),
        layer("pad", "ZeroPadding2D", ["in"], padding=[[0, 1], [0, 1]]),
        layer("c1", "Conv2D", ["pad"], kernel_size=[3, 3], strides=[2, 2], padding="valid", use_bias=False),
        layer("bn", "BatchNormalization", ["c1"], epsilon=1e-3),
        layer("relu", "ReLU", ["bn"], max_value=6),
        layer("dw", "DepthwiseConv2D", ["relu"], kernel_size=[3, 3], strides=[1, 1], padding="same", use_bias=False),
        layer("pw", "Conv2D", ["dw"], kernel_size=[1, 1], strides=[1, 1], padding="valid", use_bias=True),
        layer("add", "Add", ["pw", "relu"]),
    ]
    model = {"modelTopology": {"model_config": {"config": {"layers": layers}}},
             "weightsManifest": [{"paths": ["w.bin"], "weights": specs}]}
    (tmp / "model.json").write_text(json.dumps(model))
    (tmp / "w.bin").write_bytes(b"".join(blobs))
    return ref


def ref_conv(x: np.ndarray, k: np.ndarray, stride: int) -> np.ndarray:
    """NHWC valid convolution by loops: x [H, W, Ci], k [kh, kw, Ci, Co]."""
    kh, kw, _, co = k.shape
    ho, wo = (x.shape[0] - kh) // stride + 1, (x.shape[1] - kw) // stride + 1
    out = np.zeros((ho, wo, co), np.float64)
    for i in range(ho):
        for j in range(wo):
            patch = x[i * stride : i * stride + kh, j * stride : j * stride + kw]
            out[i, j] = np.tensordot(patch, k, axes=([0, 1, 2], [0, 1, 2]))
    return out


def ref_forward(x: np.ndarray, w: dict[str, np.ndarray]) -> np.ndarray:
    a = np.pad(x, ((0, 1), (0, 1), (0, 0)))
    a = ref_conv(a, w["c1/kernel"], 2)
    a = (a - w["bn/moving_mean"]) / np.sqrt(w["bn/moving_variance"] + 1e-3) * w["bn/gamma"] + w["bn/beta"]
    relu = np.clip(a, 0, 6)
    p = np.pad(relu, ((1, 1), (1, 1), (0, 0)))
    dw = np.zeros_like(relu)
    for ch in range(relu.shape[2]):
        dw[..., ch] = ref_conv(p[..., ch : ch + 1], w["dw/depthwise_kernel"][:, :, ch : ch + 1, :], 1)[..., 0]
    pw = ref_conv(dw, w["pw/kernel"], 1) + w["pw/bias"]
    return pw + relu


def test_tiny_graph_matches_numpy_reference(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    ref_w = tiny_model(tmp_path, rng)
    g = tfjs.load(tmp_path, "add")
    x = rng.uniform(size=(9, 9, 3)).astype(np.float32)
    got = g(torch.from_numpy(x).permute(2, 0, 1)[None]).detach()[0].permute(1, 2, 0).numpy()
    want = ref_forward(x.astype(np.float64), {k: v.astype(np.float64) for k, v in ref_w.items()})
    assert got.shape == want.shape == (4, 4, 4)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_intermediate_output_and_bad_inputs(tmp_path: Path) -> None:
    tiny_model(tmp_path, np.random.default_rng(1))
    assert tfjs.load(tmp_path, "relu")(torch.rand(1, 3, 9, 9)).shape == (1, 4, 4, 4)
    with pytest.raises(ValueError, match="no layer named"):
        tfjs.load(tmp_path, "nope")
    (tmp_path / "w.bin").write_bytes((tmp_path / "w.bin").read_bytes() + b"\0")
    with pytest.raises(ValueError, match="trailing"):
        tfjs.load(tmp_path, "add")


def test_dequantise_uint8() -> None:
    spec = {"name": "w", "shape": [3], "dtype": "float32", "quantization": {"min": -1.0, "scale": 0.5, "dtype": "uint8"}}
    np.testing.assert_array_equal(tfjs.dequantize(bytes([0, 2, 255]), spec), np.array([-1.0, 0.0, 126.5], np.float32))


@pytest.fixture(scope="module")
def nsfwjs_dir() -> Path:
    return footage.encoder_dir()


def test_nsfwjs_features_shape_and_determinism(nsfwjs_dir: Path) -> None:
    g = tfjs.load(nsfwjs_dir, footage.ENCODER_LAYER)
    x = torch.rand(2, 3, footage.INPUT_SIZE, footage.INPUT_SIZE, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        a, b = g(x), tfjs.load(nsfwjs_dir, footage.ENCODER_LAYER)(x)
    assert a.shape == (2, footage.FEAT_DIM, footage.GRID, footage.GRID)
    assert torch.equal(a, b)


def test_nsfwjs_classifier_calls_street_footage_neutral(nsfwjs_dir: Path, vtest_avi: Path) -> None:
    """The converted backbone + the package's dense head must classify a plaza frame as 'Neutral'
    (class 2 of Drawing, Hentai, Neutral, Porn, Sexy): a wrong transpose or dequantisation breaks it."""
    model_json = json.loads((nsfwjs_dir / "model.json").read_text())
    w = tfjs.load_weights(model_json, nsfwjs_dir)
    g = tfjs.load(nsfwjs_dir, "out_relu")
    frame = next(footage.frames(vtest_avi, "rgb24", (224, 224)))
    with torch.no_grad():
        f = g(torch.from_numpy(frame.copy()).permute(2, 0, 1)[None].float() / 255.0)
    x = f.mean((2, 3)).numpy()  # 7x7 average pool + flatten
    for name, act in (("dense_1", "relu"), ("dense_2", "relu"), ("dense_3", "softmax")):
        x = x @ w[f"{name}/kernel"] + w[f"{name}/bias"]
        x = np.maximum(x, 0) if act == "relu" else np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    assert x.shape == (1, 5)
    assert int(x.argmax()) == 2, x
