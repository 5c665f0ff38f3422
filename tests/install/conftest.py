"""Shared by the install tests: an isolated ledger and snapshot folder, fresh venvs, hashing."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

PYTHON311 = shutil.which("python3.11")


@pytest.fixture(scope="module", autouse=True)
def _isolated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Never write the user's real ledger or cache: one ledger/snapshot dir per test module."""
    base = tmp_path_factory.mktemp("state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCHSMITH_LEDGER", str(base / "ledger.db"))
        patch.setenv("TORCHSMITH_SNAPSHOTS", str(base / "snapshots"))
        yield


def fresh_venv(path: Path) -> Path:
    """A real, new venv (pip and setuptools only) made with the CPython 3.11 torch 2.13.0 needs."""
    if PYTHON311 is None:
        pytest.skip("python3.11 is needed for the torch 2.13.0 CPU wheel")
    subprocess.run([PYTHON311, "-m", "venv", str(path)], check=True, timeout=120)
    return path


def tree_hash(root: Path) -> dict[str, str]:
    """Every file (and symlink target) under ``root``, by relative path, with its sha256."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in [*filenames, *dirnames]:
            path = Path(dirpath, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "link:" + str(path.readlink())
            elif path.is_file():
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


@pytest.fixture(scope="module")
def small_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh_venv(tmp_path_factory.mktemp("small") / "venv")
