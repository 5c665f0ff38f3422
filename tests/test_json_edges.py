"""``--json`` at its edges: paths that are not UTF-8, and usage errors Click reports itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchsmith import envelope
from torchsmith.cli import main


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    """The real CLI in a child process, so stdout is the bytes a consumer reads."""
    argv = [sys.executable, "-m", "torchsmith", *(os.fspath(a) for a in args)]
    return subprocess.run(argv, capture_output=True, timeout=60, check=False)


def test_explain_of_a_non_utf8_path_is_utf8_json(tmp_path: Path) -> None:
    log = tmp_path / os.fsdecode(b"d\xff") / "l.log"  # a directory whose name is not UTF-8
    log.parent.mkdir()
    log.write_bytes(b"hello\n")
    done = run_cli("explain", log, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout.decode("utf-8"))  # strict: raw surrogate bytes would fail
    assert doc["ok"] is True
    assert str(log) in json.dumps(doc, ensure_ascii=False)  # the same path reads back


def test_error_envelope_of_a_missing_non_utf8_path_is_utf8_json(tmp_path: Path) -> None:
    missing = tmp_path / os.fsdecode(b"x\xff.log")
    done = run_cli("explain", missing, "--json")
    assert done.returncode == 3, done.stderr
    doc = json.loads(done.stdout.decode("utf-8"))
    assert doc["ok"] is False
    assert doc["error"]["exit_code"] == 3
    assert doc["error"]["message"].startswith(str(missing))


def test_dumps_keeps_non_ascii_text_readable() -> None:
    doc = envelope.wrap_error("explain", "/tmp/日志/x\udcff.log: no such file", "检查路径", 3)
    text = envelope.dumps(doc)
    assert "日志" in text  # not \\u escapes
    assert "检查路径" in text
    assert "\\udcff" in text
    assert json.loads(text.encode("utf-8").decode("utf-8")) == doc


@pytest.mark.parametrize(
    ("argv", "schema", "in_message"),
    [
        (["plan", "--os", "bogus"], "torchsmith/plan", "'--os'"),
        (["kb", "show"], "torchsmith/kb", "Missing argument 'WHAT'"),
        (["verify", "--timeout", "-1"], "torchsmith/verify", "'--timeout'"),
        (["bogus"], "torchsmith/error", "No such command 'bogus'"),
    ],
)
def test_usage_error_under_json_prints_the_error_envelope(
    capsys: pytest.CaptureFixture[str], argv: list[str], schema: str, in_message: str
) -> None:
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert code == 2
    doc = json.loads(captured.out)
    assert list(doc) == ["schema", "schema_version", "torchsmith", "ok", "error"]
    assert doc["schema"] == schema
    assert doc["ok"] is False
    assert doc["error"]["exit_code"] == 2
    assert in_message in doc["error"]["message"]
    assert "\n" not in doc["error"]["message"]
    assert "Usage: torchsmith" in captured.err  # the human text still goes to stderr


def test_usage_error_under_json_in_the_real_cli() -> None:
    done = run_cli("plan", "--os", "bogus", "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout.decode("utf-8"))["error"]["exit_code"] == 2
    assert b"Usage: torchsmith plan" in done.stderr


def test_usage_error_without_json_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--os", "bogus"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert "Usage: torchsmith plan" in captured.err
    assert "Error: Invalid value for '--os'" in captured.err
