"""A target interpreter that hangs: plan, verify and inspect stop it in time, exit 4 (a hung tool,
README) with one line naming it; and ``plan --gpu none`` refuses a GPU beside it."""

from __future__ import annotations

import json
import stat
import sys
import time
from pathlib import Path

import pytest

from torchsmith.binaries import targets
from torchsmith.cli import main
from torchsmith.errors import InputError
from torchsmith.probe import python_env
from torchsmith.probe.model import PythonInfo
from torchsmith.util.cmd import CommandTimeoutError
from torchsmith.verify import run_verify

SHORT_S = 0.5


def _executable(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def hang(tmp_path: Path) -> Path:
    """An "interpreter" that never answers."""
    return _executable(tmp_path / "hang.sh", "#!/bin/sh\nexec sleep 30\n")


@pytest.fixture
def slow_probe(tmp_path: Path) -> Path:
    """A real Python to the check that it is one, which hangs on anything else."""
    return _executable(
        tmp_path / "python",
        f'#!/bin/sh\ncase "$2" in *torchsmith-python-ok*) exec {sys.executable} "$@";; esac\n'
        "exec sleep 30\n",
    )


@pytest.fixture
def short_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """What plan and inspect wait for an interpreter (they have no --timeout)."""
    monkeypatch.setattr(python_env, "VERIFY_TIMEOUT_S", SHORT_S)
    monkeypatch.setattr(python_env, "PROBE_TIMEOUT_S", SHORT_S)


def _error(capsys: pytest.CaptureFixture[str]) -> list[str]:
    lines = capsys.readouterr().err.strip().splitlines()
    assert [ln.split(":", 1)[0] for ln in lines] == ["error", "tip"]
    return lines


# ---------------------------------------------------------------- the library


def test_resolve_python_raises_for_a_hang_only_when_asked(hang: Path) -> None:
    assert python_env.resolve_python(str(hang), timeout=SHORT_S) == str(hang)  # doctor's way
    with pytest.raises(CommandTimeoutError) as caught:
        python_env.resolve_python(str(hang), timeout=SHORT_S, hang_is_error=True)
    assert caught.value.exit_code == 4
    assert caught.value.message == f"--python {hang}: no answer after 0.5s (hanging?); stopped it"
    assert caught.value.tip is not None
    assert "-c pass" in caught.value.tip


def test_python_error_tells_a_hang_from_a_bad_interpreter(slow_probe: Path) -> None:
    info, torch = python_env.probe_python_and_torch(str(slow_probe), timeout=SHORT_S)
    assert torch is None
    hung = python_env.python_error("py", info, tip="do this")
    assert isinstance(hung, CommandTimeoutError)
    assert (hung.message, hung.tip) == (
        "--python py: no answer after 0.5s (hanging?); stopped it",
        "do this",
    )
    assert info.timed_out_s == SHORT_S  # the hang is a field of its own, not read from the text
    bad = python_env.python_error("py", PythonInfo("py", "unknown", "unknown", 0, error="broken"))
    assert type(bad) is InputError
    assert bad.message == "--python py: broken"
    # an error that merely reads like a hang (a script printing those words) is no hang
    said = PythonInfo("py", "unknown", "unknown", 0, error="no answer after 3s from x (hanging?)")
    assert type(python_env.python_error("py", said)) is InputError


# ---------------------------------------------------------------- verify


def test_verify_honours_timeout_for_the_interpreter(
    hang: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    assert main(["verify", "--python", str(hang), "--timeout", "0.5"]) == 4
    assert time.monotonic() - started < 5
    error, tip = _error(capsys)
    assert error == f"error: --python {hang}: no answer after 0.5s (hanging?); stopped it"
    assert "raise --timeout" in tip


def test_verify_default_waits_at_most_the_probe_timeout(hang: Path) -> None:
    with pytest.raises(CommandTimeoutError, match=r"no answer after 0\.5s"):
        run_verify(hang, timeout_s=SHORT_S)  # the runtime's timeout, under PROBE_TIMEOUT_S


def test_verify_a_probe_that_hangs_is_a_hung_tool(
    slow_probe: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", "--python", str(slow_probe), "--timeout", "0.5", "--json"]) == 4
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"]["exit_code"] == 4
    assert "no answer after 0.5s" in doc["error"]["message"]


# ---------------------------------------------------------------- plan


@pytest.mark.usefixtures("short_waits")
def test_plan_refuses_a_hanging_interpreter(hang: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--python", str(hang)]) == 4
    error, _ = _error(capsys)
    assert error == f"error: --python {hang}: no answer after 0.5s (hanging?); stopped it"
    assert capsys.readouterr().out == ""  # no recommendation for "Python ?"


@pytest.mark.usefixtures("short_waits")
def test_plan_what_if_refuses_an_interpreter_whose_probe_hangs(
    slow_probe: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--os", "linux", "--python", str(slow_probe)]) == 4
    assert "no answer after 0.5s" in _error(capsys)[0]


@pytest.mark.usefixtures("short_waits")
@pytest.mark.parametrize(
    "argv",
    [
        ["build", str(Path(__file__).parent / "build" / "projects" / "tinyext"), "--dry-run"],
        ["install", "--dry-run"],
    ],
    ids=["build", "install"],
)
def test_build_and_install_refuse_a_hanging_interpreter(
    argv: list[str], hang: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # build planned with it ("preflight: nothing found") and would have run it; install waited
    assert main([*argv, "--python", str(hang)]) == 4
    error, _ = _error(capsys)
    assert "(hanging?)" in error


@pytest.mark.parametrize(
    ("args", "contradicts"),
    [
        (["--gpu", "none", "--gpu", "RTX 4090"], "--gpu 'RTX 4090'"),
        (["--gpu", "RTX 4090", "--gpu", "None"], "--gpu 'RTX 4090'"),
        (["--gpu", "cpu", "--cc", "8.9"], "--cc 8.9"),
    ],
)
def test_plan_refuses_no_gpu_beside_a_gpu(
    args: list[str], contradicts: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--os", "linux", *args]) == 2
    assert contradicts in _error(capsys)[0]


def test_plan_gpu_none_alone_still_plans(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--os", "linux", "--gpu", "none", "--python", "3.12", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


# ---------------------------------------------------------------- inspect


@pytest.mark.usefixtures("short_waits")
def test_inspect_names_a_hanging_interpreter_in_one_line(
    hang: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "torch", "--python", str(hang)]) == 4
    error, tip = _error(capsys)
    assert error == f"error: --python {hang}: no answer after 0.5s (hanging?); stopped it"
    assert "--timeout" not in tip


def test_inspect_a_package_lookup_that_hangs_is_one_whole_line(
    slow_probe: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(targets, "PACKAGE_TIMEOUT_S", SHORT_S)
    assert main(["inspect", "torch", "--python", str(slow_probe)]) == 4
    error, tip = _error(capsys)
    assert error == (
        f"error: {slow_probe}: no answer after 0.5s looking up package 'torch'; stopped it"
    )
    assert "--timeout" not in tip


def test_inspect_a_file_does_not_run_python(
    hang: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    binary = tmp_path / "empty.so"
    binary.write_bytes(b"\x7fELF")
    main(["inspect", str(binary), "--python", str(hang)])  # its verdict on the file is not ours
    assert time.monotonic() - started < 5
    assert "hanging" not in capsys.readouterr().err
