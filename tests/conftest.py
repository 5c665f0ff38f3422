"""Shared by every test: no test writes the user's own ledger."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_ledger(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point TORCHSMITH_LEDGER at a fresh file; tests that read it set their own path too."""
    path = tmp_path_factory.mktemp("ledger") / "ledger.sqlite"
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(path))
    return path
