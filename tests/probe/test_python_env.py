"""The target interpreter: resolving ``--python`` and probing real interpreters and venvs."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from tests.probe.pyenvs import (
    FIXTURES,
    TORCH_VENV,
    add_torch,
    fixture_text,
    make_venv,
    python_of,
    site_packages,
)
from torchsmith import platforms
from torchsmith.errors import InputError
from torchsmith.probe import python_env
from torchsmith.probe.python_env import (
    MARKER,
    active_python,
    parse_probe_output,
    probe_python_and_torch,
    python_info_from_report,
    resolve_python,
)

needs_torch_venv = pytest.mark.skipif(
    not python_of(TORCH_VENV).exists(), reason=f"no CPU torch venv at {TORCH_VENV}"
)
PYENV = Path("/root/.pyenv/versions")
OTHER_PYTHONS = sorted(PYENV.glob("3.*/bin/python3")) if PYENV.is_dir() else []


def _executable(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


# ---------------------------------------------------------------- resolve_python


def test_missing_path_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or directory") as info:
        resolve_python(str(tmp_path / "nope" / "python"))
    assert info.value.tip
    assert "\n" not in info.value.message


def test_directory_that_is_no_environment_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="directory without a Python interpreter"):
        resolve_python(str(tmp_path))


def test_executable_that_is_not_python_is_an_input_error() -> None:
    with pytest.raises(InputError, match="not a Python interpreter"):
        resolve_python("/bin/ls")


def test_file_that_cannot_be_run_is_an_input_error(tmp_path: Path) -> None:
    plain = tmp_path / "python"
    plain.write_text("not a program", encoding="utf-8")
    with pytest.raises(InputError, match="cannot be run"):
        resolve_python(str(plain))


def test_venv_directory_resolves_to_its_interpreter_without_following_symlinks(
    tmp_path: Path,
) -> None:
    venv = make_venv(tmp_path / "venv")
    resolved = resolve_python(str(venv))
    assert resolved == str(venv / "bin" / "python3")
    assert Path(resolved).is_symlink()  # the venv's own path, not the base interpreter's


def test_relative_interpreter_path_becomes_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_venv(tmp_path / "venv")
    monkeypatch.chdir(tmp_path)
    assert resolve_python("venv/bin/python") == str(tmp_path / "venv" / "bin" / "python")


def test_hanging_interpreter_is_accepted_and_reported_by_the_probe(tmp_path: Path) -> None:
    hang = _executable(tmp_path / "python", "#!/bin/sh\nexec sleep 30\n")
    started = time.monotonic()
    assert resolve_python(str(hang), timeout=0.5) == str(hang)
    python, torch = probe_python_and_torch(str(hang), timeout=0.5)
    assert time.monotonic() - started < 10
    assert python.error is not None
    assert "no answer after 0.5s" in python.error
    assert (python.version, python.bits, torch) == ("unknown", 0, None)


# ---------------------------------------------------------------- active_python


def test_active_venv_wins_over_conda_and_path(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    conda = make_venv(tmp_path / "conda")
    env = {"VIRTUAL_ENV": str(venv), "CONDA_PREFIX": str(conda), "PATH": "/usr/bin"}
    assert active_python(env) == str(venv / "bin" / "python3")


def test_conda_prefix_when_no_venv_is_active(tmp_path: Path) -> None:
    conda = make_venv(tmp_path / "conda")
    assert active_python({"CONDA_PREFIX": str(conda), "PATH": ""}) == str(conda / "bin" / "python3")


def test_stale_virtual_env_falls_back_to_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python3 = _executable(bin_dir / "python3", "#!/bin/sh\n")
    env = {"VIRTUAL_ENV": str(tmp_path / "deleted-venv"), "PATH": str(bin_dir)}
    assert active_python(env) == str(python3)


def test_nothing_active_and_nothing_on_path_is_torchsmiths_own_interpreter() -> None:
    assert active_python({"PATH": ""}) == sys.executable


def test_windows_venv_layout(tmp_path: Path) -> None:
    scripts = tmp_path / "venv" / "Scripts"
    scripts.mkdir(parents=True)
    (scripts / "python.exe").write_bytes(b"MZ")
    with platforms.override("windows"):
        found = active_python({"VIRTUAL_ENV": str(tmp_path / "venv"), "PATH": ""})
    assert found == str(scripts / "python.exe")


def test_windows_conda_layout_has_python_at_the_root(tmp_path: Path) -> None:
    (tmp_path / "python.exe").write_bytes(b"MZ")
    with platforms.override("windows"):
        assert active_python({"CONDA_PREFIX": str(tmp_path)}) == str(tmp_path / "python.exe")


# ---------------------------------------------------------------- probing real targets


@needs_torch_venv
def test_real_cpu_torch_venv() -> None:
    python, torch = probe_python_and_torch(resolve_python(str(TORCH_VENV)))
    assert python.error is None
    assert python.version.startswith("3.11.")
    assert (python.implementation, python.bits, python.free_threaded) == ("CPython", 64, False)
    assert python.env_kind == "venv"
    assert python.env_prefix == str(TORCH_VENV)
    assert python.platform_tag == "linux-x86_64"
    assert python.site_packages == (str(site_packages(TORCH_VENV)),)
    assert torch is not None
    assert torch.error is None
    assert torch.version == "2.13.0+cpu"
    assert torch.location == str(site_packages(TORCH_VENV) / "torch")
    assert (torch.cuda, torch.hip, torch.debug) == (None, None, False)
    assert torch.git_version == "cf30153c4c131c8164ee7798e5022d810682e2cb"
    assert (torch.cudnn, torch.nccl, torch.archs, torch.companions) == (None, None, None, {})


@needs_torch_venv
def test_probe_is_fast() -> None:
    """One interpreter start and a directory walk: well under a second, never torch's import."""
    python = resolve_python(str(TORCH_VENV))
    probe_python_and_torch(python)  # warm the page cache
    started = time.perf_counter()
    probe_python_and_torch(python)
    assert time.perf_counter() - started < 1.0


def test_fresh_venv_has_no_torch(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    python, torch = probe_python_and_torch(resolve_python(str(venv)))
    assert python.error is None
    assert python.env_kind == "venv"
    assert python.version == "{}.{}.{}".format(*sys.version_info[:3])
    assert torch is None


def test_pythonpath_decides_what_import_torch_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = make_venv(tmp_path / "venv")
    extra = tmp_path / "extra"
    extra.mkdir()
    add_torch(extra, fixture_text("torch-2.7.1+cu126.version.txt"))
    monkeypatch.setenv("PYTHONPATH", str(extra))
    _, torch = probe_python_and_torch(str(python_of(venv)))
    assert torch is not None
    assert (torch.location, torch.version) == (str(extra / "torch"), "2.7.1+cu126")


def test_probe_neither_imports_torch_nor_writes_bytecode(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    torch_dir = add_torch(site_packages(venv), fixture_text("torch-2.11.0+cu130.version.txt"))
    python, torch = probe_python_and_torch(str(python_of(venv)))
    assert python.error is None
    assert torch is not None
    assert torch.error is None  # __init__.py raises when imported
    assert not list(torch_dir.rglob("__pycache__"))
    assert not list(python_env.SCRIPT.parent.glob("__pycache__/target_probe*"))


def test_macos_venv_launcher_variable_is_not_passed_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("__PYVENV_LAUNCHER__", "/somewhere/else/bin/python")
    assert "__PYVENV_LAUNCHER__" not in python_env.child_env()


@pytest.mark.integration
@pytest.mark.parametrize("python", OTHER_PYTHONS, ids=lambda p: p.parts[-3])
def test_script_runs_on_every_python_3(python: Path) -> None:
    info, _ = probe_python_and_torch(str(python))
    assert info.error is None
    assert info.version == python.parts[-3]
    assert info.env_kind == "system"


@pytest.mark.integration
@pytest.mark.skipif(not (PYENV / "2.7.18").is_dir(), reason="no Python 2.7 here")
def test_python_2_is_named_in_the_error() -> None:
    info, torch = probe_python_and_torch(str(PYENV / "2.7.18" / "bin" / "python"))
    assert info.error == "Python 2.7.18 is too old for torchsmith's probe (it needs Python 3.6+)"
    assert torch is None


def test_script_crash_is_reported_with_its_last_line(tmp_path: Path) -> None:
    fake = _executable(tmp_path / "python", "#!/bin/sh\necho 'Fatal: boom' >&2\nexit 1\n")
    info, torch = probe_python_and_torch(str(fake))
    assert info.error == f"the probe script failed in {fake} (exit status 1): Fatal: boom"
    assert torch is None


def test_missing_interpreter_is_reported_not_raised(tmp_path: Path) -> None:
    info, torch = probe_python_and_torch(str(tmp_path / "gone" / "python"))
    assert info.error is not None
    assert "not found" in info.error
    assert torch is None


# ---------------------------------------------------------------- parsing the script's output


def test_32_bit_windows_python_from_its_report() -> None:
    report = json.loads((FIXTURES / "report-win32-py38.json").read_text(encoding="utf-8"))
    stdout = f"noise printed by a .pth file\n{MARKER}{json.dumps(report)}\n"
    info = python_info_from_report(parse_probe_output(stdout), "python.exe")
    assert (info.bits, info.version, info.platform_tag) == (32, "3.8.10", "win32")
    assert info.executable.endswith("Python38-32\\python.exe")
    assert info.site_packages == (
        "C:\\Users\\ana\\AppData\\Local\\Programs\\Python\\Python38-32\\lib\\site-packages",
    )


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        ("", "no probe output"),
        (f"{MARKER}{{not json", "not valid JSON"),
        (f"{MARKER}[1, 2]", "not a JSON object"),
        (f'{MARKER}{{"schema": 99}}', "schema 99"),
    ],
)
def test_unusable_output_is_a_value_error(stdout: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_probe_output(stdout)


def test_report_with_missing_fields_still_builds() -> None:
    info = python_info_from_report({"schema": 1}, "/x/python")
    assert (info.executable, info.version, info.bits, info.env_kind) == (
        "/x/python",
        "unknown",
        0,
        "system",
    )


def test_the_script_is_shipped_next_to_the_module() -> None:
    assert python_env.SCRIPT.is_file()
    assert os.access(python_env.SCRIPT, os.R_OK)
