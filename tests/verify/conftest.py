"""Targets for verify: the real CPU torch venv, and copies of its torch broken on purpose.

The shared venv is never modified: a copy's files are hard links (or copies across filesystems)
in a tmp dir put first on PYTHONPATH, and only the copy's directory entries are deleted.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

TORCH_VENV = Path(
    os.environ.get("TORCHSMITH_TEST_TORCH_VENV")
    or Path(__file__).resolve().parents[2] / ".cache" / "torch-venv"
)


def torch_python() -> Path:
    exe = TORCH_VENV / "bin" / "python"
    if not exe.exists():
        pytest.skip(f"no CPU torch venv at {TORCH_VENV} (./scripts/test builds it)")
    return exe


def torch_site() -> Path:
    found = sorted(TORCH_VENV.glob("lib/python3*/site-packages/torch"))
    if not found:
        pytest.skip("the CPU torch venv holds no torch")
    return found[0].parent


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


@pytest.fixture
def torch_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the venv's torch, first on PYTHONPATH; yields the copy's torch directory."""
    torch_python()
    site = tmp_path / "site"
    shutil.copytree(torch_site() / "torch", site / "torch", copy_function=_link_or_copy)
    monkeypatch.setenv("PYTHONPATH", str(site))
    return site / "torch"
