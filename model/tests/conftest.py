"""Shared fixtures: real footage through scripts/fetch-footage.sh (cached outside the repo)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def footage_env() -> dict[str, str]:
    out = subprocess.run([str(ROOT / "scripts" / "fetch-footage.sh")], capture_output=True, text=True, check=True)
    return dict(line.split("=", 1) for line in out.stdout.split())


@pytest.fixture(scope="session")
def vtest_avi(footage_env: dict[str, str]) -> Path:
    return Path(footage_env["VREX_VTEST_AVI"])
