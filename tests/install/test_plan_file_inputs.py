"""`install --plan FILE` and `install --rollback`: what they would drop is refused, not ignored,
and a plan written for another OS or Python is refused like a probe of another machine."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from torchsmith import platforms
from torchsmith.cli import main

pytestmark = pytest.mark.integration
PROBE = Path(__file__).parents[1] / "fixtures" / "h200-linux" / "doctor.json"
HERE = platforms.current_os()
ELSEWHERE = "windows" if HERE != "windows" else "linux"


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    errors = [ln for ln in captured.err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, captured.err
    assert "torch==" not in captured.out  # refused before anything was planned
    return errors[0]


def write_plan(capsys: pytest.CaptureFixture[str], path: Path, *argv: str) -> Path:
    gpu = [] if {"--gpu", "--cc"} & set(argv) else ["--gpu", "none"]
    assert main(["plan", "--json", *gpu, *argv]) == 0
    path.write_text(capsys.readouterr().out)
    return path


@pytest.fixture
def plan_here(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    """A plan for this OS and the Python of the interpreter the tests run in."""
    return write_plan(capsys, tmp_path / "plan.json", "--os", HERE, "--python", sys.executable)


def test_a_plan_for_this_target_still_installs(
    capsys: pytest.CaptureFixture[str], plan_here: Path
) -> None:
    code = main(["install", "--dry-run", "--plan", str(plan_here), "--python", sys.executable])
    assert code == 0, capsys.readouterr().err
    assert "+cpu" in capsys.readouterr().out


@pytest.mark.parametrize(
    "given",
    [
        ["--gpu", "RTX 4090"],
        ["--cc", "8.9"],
        ["--driver", "550.54"],
        ["--torch", "==2.6.*"],
        ["--probe", str(PROBE)],
        ["--cuda-toolkit", "12.4"],
    ],
)
def test_a_plan_file_refuses_the_plan_inputs(
    capsys: pytest.CaptureFixture[str], plan_here: Path, given: list[str]
) -> None:
    # audit: `install --plan plan.json --gpu "RTX 4090" --torch "==2.6.*"` planned the file's
    # torch 2.x+cpu, exit 0, and said nothing of the options it dropped
    argv = ["install", "--dry-run", "--plan", str(plan_here), "--python", sys.executable]
    assert main([*argv, *given]) == 2
    error = one_error(capsys)
    assert f"takes no {given[0]}" in error
    assert str(plan_here) in error


def test_a_plan_file_names_every_input_it_would_drop_in_json(
    capsys: pytest.CaptureFixture[str], plan_here: Path
) -> None:
    argv = ["install", "--json", "--dry-run", "--plan", str(plan_here), "--python", sys.executable]
    assert main([*argv, "--gpu", "RTX 4090", "--torch", "==2.6.*"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False
    assert doc["error"]["exit_code"] == 2
    assert "takes no --gpu, --torch" in doc["error"]["message"]


@pytest.mark.parametrize(
    "given",
    [
        ["--plan", "plan.json"],
        ["--with", "torchvision"],
        ["--index-url", "http://127.0.0.1:9/simple"],
        ["--find-links", "/tmp"],
        ["--installer", "pip"],
        ["--no-verify"],
        ["--force"],
        ["--gpu", "none"],
        ["--torch", "==2.6.*"],
        ["--probe", str(PROBE)],
    ],
)
def test_rollback_refuses_what_it_does_not_use(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    given: list[str],
) -> None:
    # --rollback restores a snapshot: a plan, companions, sources or installer were dropped unsaid
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "empty.db"))
    assert main(["install", "--rollback", "--dry-run", *given]) == 2
    error = one_error(capsys)
    assert "--rollback" in error
    assert f"takes no {given[0]}" in error


def test_rollback_still_takes_its_own_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "empty.db"))
    argv = ["install", "--rollback", "--dry-run", "--json", "--python", sys.executable]
    assert main(argv) == 3  # nothing recorded: past the option check, to the ledger
    assert "left to roll back" in json.loads(capsys.readouterr().out)["error"]["message"]


def test_a_plan_for_another_os_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # audit: a plan for Windows (RTX 5070, Python 3.10) planned torch +cu132 for a Linux venv
    plan = write_plan(
        capsys, tmp_path / "win.json", "--os", ELSEWHERE, "--python", "3.10", "--gpu", "RTX 5070"
    )
    code = main(["install", "--dry-run", "--plan", str(plan), "--python", sys.executable])
    assert code == 2  # as a --probe of another machine
    assert f"describes a {ELSEWHERE} machine" in one_error(capsys)


def test_a_plan_for_another_python_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    other = f"3.{sys.version_info.minor - 1}"
    plan = write_plan(capsys, tmp_path / "py.json", "--os", HERE, "--python", other)
    code = main(["install", "--dry-run", "--plan", str(plan), "--python", sys.executable])
    assert code == 2
    error = one_error(capsys)
    assert f"is for Python {other}" in error
    assert f"(Python 3.{sys.version_info.minor}" in error


def test_a_plan_without_a_machine_is_not_checked(
    capsys: pytest.CaptureFixture[str], plan_here: Path
) -> None:
    doc = json.loads(plan_here.read_text())
    del doc["data"]["machine"]
    plan_here.write_text(json.dumps(doc))
    code = main(["install", "--dry-run", "--plan", str(plan_here), "--python", sys.executable])
    assert code == 0, capsys.readouterr().err


def test_a_probe_plans_for_the_interpreter_install_changes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # the probe's Python is the probed machine's: with no --python/--venv, install changes the
    # active interpreter, so the plan is for that one (a 3.8 in the probe chose torch 2.4.1)
    def planned(probe: Path) -> str:
        assert main(["install", "--dry-run", "--probe", str(probe), "--json"]) == 0
        return str(json.loads(capsys.readouterr().out)["data"]["torch"])

    data = json.loads(PROBE.read_text())
    data["data"]["python"]["version"] = "3.8.10"
    old = tmp_path / "py38.json"
    old.write_text(json.dumps(data))
    assert planned(old) == planned(PROBE)


def test_a_plan_read_from_a_pipe(plan_here: Path) -> None:
    # `--plan /dev/stdin` (or <(...)) reads only once: the audit's second read found it empty
    import subprocess  # noqa: PLC0415

    argv = ["install", "--plan", "/dev/stdin", "--dry-run", "--python", sys.executable]
    proc = subprocess.run(
        [sys.executable, "-m", "torchsmith", *argv],
        input=plan_here.read_bytes(),
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
