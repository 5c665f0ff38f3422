"""The explain command: JSON shape, exit codes, stdin, probe context."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from torchsmith import envelope
from torchsmith.cli import main
from torchsmith.probe.model import GpuInfo, HostInfo, Probe

KILLED = "c++: fatal error: Killed signal terminated program cc1plus\n"


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_json_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "build.log"
    log.write_text("ok\n" + KILLED + "ninja: build stopped: subcommand failed.\n")
    assert main(["explain", "--json", str(log)]) == 0
    doc = _json(capsys)
    assert doc["schema"] == "torchsmith/explain"
    assert doc["ok"] is True
    data = doc["data"]
    assert isinstance(data, dict)
    assert data["healthy"] is False
    (top,) = data["diagnoses"]
    assert top["category"] == "compile-oom"
    assert top["rule"] == "memory.compiler-killed"
    assert top["line"] == 2
    assert top["evidence"] == [KILLED.strip()]
    assert {"explanation", "fix", "source", "count", "values"} <= set(top)


def test_healthy_exit_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "ok.log"
    log.write_text("Successfully installed torch-2.8.0\n")
    assert main(["explain", str(log)]) == 0
    assert "OK" in capsys.readouterr().out


def test_stdin_dash(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    fake = io.TextIOWrapper(io.BytesIO(KILLED.encode()))
    monkeypatch.setattr("sys.stdin", fake)
    assert main(["explain", "--json", "-"]) == 0
    data = _json(capsys)["data"]
    assert isinstance(data, dict)
    assert data["diagnoses"][0]["file"] == "-"


def test_missing_file_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "/nonexistent/build.log"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: /nonexistent/build.log: no such file")
    assert "Traceback" not in err


def test_binary_file_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "x.bin"
    junk.write_bytes(b"\0\1\2\3" * 1000)
    assert main(["explain", "--json", str(junk)]) == 3
    doc = _json(capsys)
    assert doc["ok"] is False


def test_probe_file_tailors_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    probe = Probe(
        host=HostInfo(os="linux", os_pretty="Ubuntu 24.04", ram_total_bytes=32 * 2**30),
        gpus=(GpuInfo(index=0, name="NVIDIA GeForce RTX 5090", compute_capability="12.0"),),
    )
    probe_file = tmp_path / "probe.json"
    probe_file.write_text(envelope.dumps(envelope.wrap("doctor", probe)))
    log = tmp_path / "build.log"
    log.write_text(KILLED)
    assert main(["explain", "--json", "--probe", str(probe_file), str(log)]) == 0
    data = _json(capsys)["data"]
    assert isinstance(data, dict)
    # 32 GB: (32 - 4 GB kept) // 5 GB per CUDA compile job, build's own budget (build.toml)
    assert "MAX_JOBS=5" in data["diagnoses"][0]["fix"]
    assert "RTX 5090" in str(data["context"])


def test_garbage_probe_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "probe.json"
    bad.write_text("{not json")
    log = tmp_path / "build.log"
    log.write_text(KILLED)
    assert main(["explain", "--probe", str(bad), str(log)]) == 3
    assert capsys.readouterr().err.startswith("error: ")


def test_probe_and_here_exclude_each_other(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_text(KILLED)
    assert main(["explain", "--here", "--probe", "p.json", str(log)]) == 2


def test_a_log_cut_inside_a_traceback_is_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "cut.log"
    log.write_text('Traceback (most recent call last):\n  File "main.py", line 9, in <module>\n')
    assert main(["explain", str(log)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("incomplete no known problem found in 2 line(s)")
    assert f"{log} ends inside a Python traceback at line 2" in out
    assert "torchsmith explain run.log" in out
    assert main(["explain", "--json", str(log)]) == 0
    data = _json(capsys)["data"]
    assert isinstance(data, dict)
    assert data["healthy"] is False
    assert data["inputs"][0]["traceback_cut_at"] == 2
