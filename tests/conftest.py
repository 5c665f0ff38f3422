"""Shared by every test: no test writes the user's own ledger or snapshot cache."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def _private_ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point TORCHSMITH_LEDGER at a file of this test session.

    Tests that read the ledger back set their own path (per test or, for install, per module).
    """
    path = tmp_path_factory.mktemp("ledger") / "ledger.sqlite"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCHSMITH_LEDGER", str(path))
        patch.setenv("TORCHSMITH_SNAPSHOTS", str(path.parent / "snapshots"))
        yield
