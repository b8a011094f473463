"""TF.js layers model (model.json + weights.bin) -> torch module.

Supports the layer kinds of Keras' MobileNetV2 (what nsfwjs ships): InputLayer, ZeroPadding2D,
Conv2D, DepthwiseConv2D, BatchNormalization, ReLU (with max_value), Add. The graph is interpreted
in topological order up to a chosen output layer, so any intermediate feature map can be taken.
Tensors are NCHW inside torch; TF kernels are transposed once at load time.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

SUPPORTED = {"InputLayer", "ZeroPadding2D", "Conv2D", "DepthwiseConv2D", "BatchNormalization", "ReLU", "Add"}


def dequantize(raw: bytes, spec: dict[str, Any]) -> np.ndarray:
    """One weight from its bytes: uint8/uint16 quantised (value = min + scale * q) or float32."""
    shape = tuple(spec["shape"])
    q = spec.get("quantization")
    if q is None:
        if spec.get("dtype", "float32") != "float32":
            raise ValueError(f"{spec['name']}: unsupported dtype {spec.get('dtype')}")
        return np.frombuffer(raw, dtype="<f4").reshape(shape).copy()
    qtype = {"uint8": np.uint8, "uint16": "<u2"}.get(q["dtype"])
    if qtype is None or "min" not in q:
        raise ValueError(f"{spec['name']}: unsupported quantisation {q}")
    vals = np.frombuffer(raw, dtype=qtype).astype(np.float64)
    return (q["min"] + q["scale"] * vals).astype(np.float32).reshape(shape)


def _nbytes(spec: dict[str, Any]) -> int:
    n = int(np.prod(spec["shape"], dtype=np.int64))
    q = spec.get("quantization")
    return n * ({"uint8": 1, "uint16": 2}[q["dtype"]] if q else 4)


def load_weights(model_json: dict[str, Any], bin_dir: Path) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for group in model_json["weightsManifest"]:
        blob = b"".join((bin_dir / p).read_bytes() for p in group["paths"])
        off = 0
        for spec in group["weights"]:
            n = _nbytes(spec)
            if off + n > len(blob):
                raise ValueError(f"weights file too short at {spec['name']} ({off + n} > {len(blob)} bytes)")
            out[spec["name"]] = dequantize(blob[off : off + n], spec)
            off += n
        if off != len(blob):
            raise ValueError(f"weights file has {len(blob) - off} trailing bytes")
    return out


class TfjsGraph(nn.Module):
    """Interprets the Keras functional graph up to @output (a layer name)."""

    def __init__(self, topology: dict[str, Any], weights: dict[str, np.ndarray], output: str):
        super().__init__()
        layers = topology["model_config"]["config"]["layers"]
        names = [layer["name"] for layer in layers]
        if output not in names:
            raise ValueError(f"no layer named {output!r}")
        self.plan: list[tuple[str, str, dict[str, Any], list[str]]] = []
        self.mods = nn.ModuleDict()
        for layer in layers[: names.index(output) + 1]:
            kind, cfg, name = layer["class_name"], layer["config"], layer["name"]
            if kind not in SUPPORTED:
                raise ValueError(f"layer {name}: unsupported kind {kind}")
            inputs = [n[0] for n in layer["inbound_nodes"][0]] if layer["inbound_nodes"] else []
            self.plan.append((name, kind, cfg, inputs))
            if kind in ("Conv2D", "DepthwiseConv2D"):
                self.mods[name] = _conv(name, kind, cfg, weights)
            elif kind == "BatchNormalization":
                bn = nn.BatchNorm2d(len(weights[f"{name}/moving_mean"]), eps=cfg["epsilon"])
                bn.weight.data = torch.from_numpy(weights[f"{name}/gamma"])
                bn.bias.data = torch.from_numpy(weights[f"{name}/beta"])
                bn.running_mean.data = torch.from_numpy(weights[f"{name}/moving_mean"])
                bn.running_var.data = torch.from_numpy(weights[f"{name}/moving_variance"])
                self.mods[name] = bn
        self.output = output
        self.eval()
        self._fold_batchnorm()

    def _fold_batchnorm(self) -> None:
        """Folds every BN that only follows a conv into that conv (exact in eval mode, and halves
        the passes over memory on this CPU)."""
        users: dict[str, int] = {}
        for _, _, _, inputs in self.plan:
            for i in inputs:
                users[i] = users.get(i, 0) + 1
        kinds = {name: kind for name, kind, _, _ in self.plan}
        plan = []
        alias: dict[str, str] = {}
        for name, kind, cfg, inputs in self.plan:
            inputs = [alias.get(i, i) for i in inputs]
            src = inputs[0] if inputs else ""
            if kind == "BatchNormalization" and kinds.get(src) in ("Conv2D", "DepthwiseConv2D") and users[src] == 1:
                conv, bn = self.mods[src], self.mods[name]
                with torch.no_grad():
                    s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
                    conv.weight.mul_(s.view(-1, 1, 1, 1))
                    bias = bn.bias - bn.running_mean * s
                    if conv.bias is not None:
                        bias = bias + conv.bias * s
                    conv.bias = nn.Parameter(bias)
                del self.mods[name]
                alias[name] = src
                continue
            plan.append((name, kind, cfg, inputs))
        if self.output in alias:
            self.output = alias[self.output]
        self.plan = plan

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """@x: N x 3 x H x W, float in [0, 1] (nsfwjs divides pixels by 255)."""
        vals: dict[str, torch.Tensor] = {}
        for name, kind, cfg, inputs in self.plan:
            a = vals[inputs[0]] if inputs else x
            if kind == "InputLayer":
                y = x
            elif kind == "ZeroPadding2D":
                (t, b), (lft, r) = cfg["padding"]
                y = F.pad(a, (lft, r, t, b))
            elif kind == "ReLU":
                y = torch.relu(a)
                if cfg.get("max_value") is not None:
                    y = torch.clamp(y, max=float(cfg["max_value"]))
            elif kind == "Add":
                y = vals[inputs[0]]
                for other in inputs[1:]:
                    y = y + vals[other]
            else:
                y = self.mods[name](a)
            vals[name] = y
        return vals[self.output]


def _conv(name: str, kind: str, cfg: dict[str, Any], weights: dict[str, np.ndarray]) -> nn.Conv2d:
    if cfg.get("dilation_rate", [1, 1]) != [1, 1] or cfg.get("activation", "linear") != "linear":
        raise ValueError(f"layer {name}: dilation/activation not supported")
    kh, kw = cfg["kernel_size"]
    stride = tuple(cfg["strides"])
    if cfg["padding"] == "same":
        if stride != (1, 1) or kh % 2 == 0 or kw % 2 == 0:
            raise ValueError(f"layer {name}: 'same' padding only for stride 1 and odd kernels")
        pad = (kh // 2, kw // 2)
    elif cfg["padding"] == "valid":
        pad = (0, 0)
    else:
        raise ValueError(f"layer {name}: padding {cfg['padding']}")
    bias = cfg.get("use_bias", False)
    if kind == "Conv2D":
        k = weights[f"{name}/kernel"]  # kh kw in out
        conv = nn.Conv2d(k.shape[2], k.shape[3], (kh, kw), stride, pad, bias=bias)
        conv.weight.data = torch.from_numpy(np.ascontiguousarray(k.transpose(3, 2, 0, 1)))
    else:
        k = weights[f"{name}/depthwise_kernel"]  # kh kw in mult
        cin, mult = k.shape[2], k.shape[3]
        conv = nn.Conv2d(cin, cin * mult, (kh, kw), stride, pad, groups=cin, bias=bias)
        conv.weight.data = torch.from_numpy(np.ascontiguousarray(k.transpose(2, 3, 0, 1).reshape(cin * mult, 1, kh, kw)))
    if bias:
        conv.bias.data = torch.from_numpy(weights[f"{name}/bias"])
    return conv


def load(model_dir: Path, output: str) -> TfjsGraph:
    model_json = json.loads((model_dir / "model.json").read_text())
    return TfjsGraph(model_json["modelTopology"], load_weights(model_json, model_dir), output)
