"""What ``inspect DIR`` could not read, or read as damaged, is counted and said; never hidden."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from torchsmith.binaries import targets
from torchsmith.binaries.targets import inspect_target
from torchsmith.cli import main

from .conftest import Built


@pytest.fixture
def tree(built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A good binary, a truncated one, and a file and a folder that cannot be opened.

    Permissions are simulated (the tests may run as root, which reads anything).
    """
    root = tmp_path / "tree"
    (root / "locked").mkdir(parents=True)
    shutil.copy(built["libmix.so"], root / "libmix.so")
    data = built["libmix.so"].read_bytes()
    (root / "cut.so").write_bytes(data[: len(data) // 2])
    (root / "secret.so").write_bytes(data)
    real_open = Path.open
    real_walk = os.walk

    def open_(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == "secret.so":
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    def walk(
        top: Path, onerror: Callable[[OSError], None] | None = None, **kwargs: Any
    ) -> Iterator[tuple[str, list[str], list[str]]]:
        for dirpath, dirnames, filenames in real_walk(top, onerror=onerror, **kwargs):
            if "locked" in dirnames and onerror is not None:
                dirnames.remove("locked")
                locked = str(Path(dirpath, "locked"))
                onerror(PermissionError(13, "Permission denied", locked))
            yield dirpath, dirnames, filenames

    monkeypatch.setattr(Path, "open", open_)
    monkeypatch.setattr(targets.os, "walk", walk)
    return root


def test_unreadable_and_damaged_are_counted(tree: Path) -> None:
    report = inspect_target(str(tree))
    assert report.unreadable == ("locked (permission denied)", "secret.so (permission denied)")
    assert len(report.damaged) == 1
    assert report.damaged[0].startswith("cut.so (truncated ELF")
    assert "2 paths could not be read: locked (permission denied), secret.so" in report.notes[0]
    assert report.notes[1].startswith("1 file is damaged: cut.so (truncated ELF")
    assert [b.path for b in report.binaries] == ["cut.so", "libmix.so"]


def test_human_and_json_say_so(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tree)]) == 0
    out = capsys.readouterr().out
    assert "2 paths could not be read" in out
    assert "1 file is damaged" in out
    assert "without GPU code" not in out  # the damaged file is not passed off as one
    assert main(["inspect", str(tree), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert any("1 file is damaged" in n for n in data["notes"])
    assert len(data["unreadable"]) == 2


def test_empty_target_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", ""]) == 2
    err = capsys.readouterr().err
    assert "TARGET is empty" in err
