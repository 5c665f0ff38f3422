"""`plan --python PATH`: the commands install into that interpreter, and the plan says what torch
it has now. Real venvs (the real ``venv`` module); the torch in them is a real CPU torch (the test
venv of scripts/test) or a stand-in with the recorded version.py of torch 2.13.0+cpu."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.probe.pyenvs import (
    TORCH_VENV,
    add_dist,
    add_torch,
    fixture_text,
    make_venv,
    python_of,
    site_packages,
)
from torchsmith.cli import main
from torchsmith.knowledge import load_knowledge
from torchsmith.plan.commands import source_commands, wheel_commands
from torchsmith.plan.machine import WhatIf, apply_what_if
from torchsmith.plan.model import MachineFacts, SourceBuild

needs_torch_venv = pytest.mark.skipif(
    not python_of(TORCH_VENV).exists(), reason=f"no CPU torch venv at {TORCH_VENV}"
)


@pytest.fixture(scope="module")
def cpu_torch_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv whose path a shell would split (a space, a quote), with torch 2.13.0+cpu."""
    venv = make_venv(tmp_path_factory.mktemp("envs") / "my envs" / "it's v1")
    site = site_packages(venv)
    add_dist(site, "torch", "2.13.0+cpu")
    add_torch(site, fixture_text("torch-2.13.0+cpu.version.txt"))
    return venv


def _plan(capsys: pytest.CaptureFixture[str], *args: str) -> dict:  # type: ignore[type-arg]
    assert main(["plan", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)["data"]  # type: ignore[no-any-return]


def test_wheel_commands_name_the_target_quoted_for_the_shell(
    cpu_torch_venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # audit: `plan --python venv1` printed `uv pip install torch==...` and `python -m pip install`:
    # pasted, they install into whichever Python is active
    data = _plan(capsys, "--os", "linux", "--python", str(cpu_torch_venv))
    exe = data["machine"]["python_path"]
    assert Path(exe).parent == cpu_torch_venv / "bin"
    commands = data["recommendation"]["commands"]
    assert set(commands) == {"uv", "pip"}
    assert shlex.split(commands["uv"])[:5] == ["uv", "pip", "install", "--python", exe]
    assert shlex.split(commands["pip"])[:4] == [exe, "-m", "pip", "install"]
    assert data["machine"]["torch_installed"] == "2.13.0+cpu"
    conda = _plan(capsys, "--os", "linux", "--python", str(cpu_torch_venv), "--installer", "conda")
    assert shlex.split(conda["recommendation"]["commands"]["conda"])[:3] == [exe, "-m", "pip"]


def test_the_plan_says_what_torch_the_target_has_now(
    cpu_torch_venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--os", "linux", "--python", str(cpu_torch_venv)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "has torch 2.13.0+cpu now: the commands replace it" in out
    args = ["plan", "--os", "linux", "--python", str(cpu_torch_venv), "--torch", "==2.13.0"]
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "has torch 2.13.0+cpu now: already the one recommended" in out


def test_a_source_build_installs_into_the_target_too(
    cpu_torch_venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--os", "linux", "--gpu", "RTX 5070", "--prefer", "source")
    data = _plan(capsys, *args, "--python", str(cpu_torch_venv))
    exe = data["machine"]["python_path"]
    (line,) = data["recommendation"]["commands"].values()
    words = shlex.split(line)
    runs = [words[i + 1 : i + 4] for i, w in enumerate(words) if w == "&&"]
    assert [exe, "-m", "pip"] in runs  # pip install -r requirements.txt
    assert words[-7:] == [exe, "-m", "pip", "install", "--no-build-isolation", "-v", "."]
    assert "python" not in words


@needs_torch_venv
def test_live_plan_for_a_real_torch_venv(capsys: pytest.CaptureFixture[str]) -> None:
    """The audit's own case: the live machine, --python naming a venv with a real CPU torch."""
    data = _plan(capsys, "--python", str(TORCH_VENV))
    assert data["machine"]["origin"] == "live"
    exe = data["machine"]["python_path"]
    assert Path(exe).parent == TORCH_VENV / "bin"
    assert (data["machine"]["torch_installed"] or "").startswith("2.")
    for name, line in data["recommendation"]["commands"].items():
        words = shlex.split(line)
        uv = words[:5] == ["uv", "pip", "install", "--python", exe]
        assert uv or words[:3] == [exe, "-m", "pip"], (name, line)


WINDOWS_PYTHON = "C:\\Users\\Ann Lee\\venvs\\torch (cu129)\\Scripts\\python.exe"


def test_windows_commands_quote_the_target_for_cmd_and_powershell() -> None:
    commands = wheel_commands("2.15.0", None, {}, None, python=WINDOWS_PYTHON, os_name="windows")
    assert commands == {
        "uv, cmd": f'uv pip install --python "{WINDOWS_PYTHON}" torch==2.15.0',
        "uv, PowerShell": f"uv pip install --python '{WINDOWS_PYTHON}' torch==2.15.0",
        "pip, cmd": f'"{WINDOWS_PYTHON}" -m pip install torch==2.15.0',
        "pip, PowerShell": f"& '{WINDOWS_PYTHON}' -m pip install torch==2.15.0",
    }
    bare = "C:\\venv\\Scripts\\python.exe"
    plain = wheel_commands("2.15.0", None, {}, "pip", python=bare, os_name="windows")
    assert plain == {"pip": f"{bare} -m pip install torch==2.15.0"}
    build = SourceBuild("2.15.0", "12.0", "12.8", "13.0", "13.0", None, 14, 20, 1930, 1949)
    source = source_commands(build, "windows", WINDOWS_PYTHON)
    assert f'"{WINDOWS_PYTHON}" -m pip install --no-build-isolation' in source["pip, cmd"]
    assert f"& '{WINDOWS_PYTHON}' -m pip install -r" in source["pip, PowerShell"]
    assert "python -m pip" not in " ".join(source.values())


def test_without_a_target_the_commands_stay_as_they_were() -> None:
    assert wheel_commands("2.15.0", None, {}, None) == {
        "uv": "uv pip install torch==2.15.0",
        "pip": "python -m pip install torch==2.15.0",
    }


def test_another_python_version_is_not_the_probed_ones_torch() -> None:
    facts = MachineFacts(
        os="linux", arch="x86_64", python="3.11", python_path="/v/bin/python",
        torch_installed="2.13.0+cpu",
    )  # fmt: skip
    kb = load_knowledge()
    same = apply_what_if(facts, WhatIf(python="3.11"), kb)
    assert (same.python_path, same.torch_installed) == ("/v/bin/python", "2.13.0+cpu")
    other = apply_what_if(facts, WhatIf(python="3.12"), kb)
    assert (other.python_path, other.torch_installed) == (None, None)


def test_powershell_takes_typographic_quotes_for_single_ones() -> None:
    """review: a path with a right single quote (U+2019) came out inside '...', which
    PowerShell ends at that quote as at '."""
    path = "C:\\Users\\O\u2019Brien\\venv\\Scripts\\python.exe"
    commands = wheel_commands("2.15.0", None, {}, "pip", python=path, os_name="windows")
    assert commands["pip, PowerShell"].startswith("& 'C:\\Users\\O\u2019\u2019Brien\\")
