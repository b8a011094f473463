"""vrex: the LCP layer of V-Rex for PyTorch models (`vrex.enable(model)`), and the builtin model."""
from __future__ import annotations

from typing import Any

__all__ = ["enable"]


def enable(model: Any, **options: Any) -> Any:
    """Binds @model's KV cache to vrex KV blocks; returns the Session (see vrex.lcp)."""
    from . import lcp  # the HAL extension is needed only from here on

    return lcp.enable(model, **options)
