"""The JSON envelope is a contract: these keys and types may only grow, never change."""

from __future__ import annotations

import io
import json

import pytest

from torchsmith import __version__, envelope
from torchsmith.cli import main


def test_success_envelope_shape() -> None:
    doc = envelope.wrap("inspect", {"binaries": []})
    assert list(doc) == ["schema", "schema_version", "torchsmith", "ok", "data"]
    assert doc["schema"] == "torchsmith/inspect"
    assert isinstance(doc["schema_version"], int)
    assert doc["torchsmith"] == __version__
    assert doc["ok"] is True


def test_error_envelope_shape() -> None:
    doc = envelope.wrap_error("plan", "boom", "do this", 3)
    assert list(doc) == ["schema", "schema_version", "torchsmith", "ok", "error"]
    assert doc["error"] == {"message": "boom", "tip": "do this", "exit_code": 3}


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect", "/nonexistent.so"],
        ["plan", "--gpu", "RTX 5070", "--os", "windows", "--python", "3.11"],
        ["explain", "-"],
        ["verify", "--python", "/nonexistent/python"],
        ["install", "--python", "/nonexistent/python"],
    ],
)
def test_every_command_speaks_the_envelope(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("all good\n"))
    code = main([*argv, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == f"torchsmith/{argv[0]}"
    assert doc["schema_version"] == envelope.SCHEMA_VERSIONS[argv[0]]
    assert doc["ok"] is (code == 0)
    assert ("data" in doc) is (code == 0)
