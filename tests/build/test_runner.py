"""The executor on real builds: a CMake+CUDA project (nvcc 13.0) and the ledger it records in."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from tests.build.configs import NVCC, cmake_config, copy_project
from torchsmith.build.model import Step
from torchsmith.build.runner import (
    check_archs,
    parse_set_output,
    run_build,
    visual_studio_env,
)
from torchsmith.knowledge.compat import entry_sm, sm_entry
from torchsmith.ledger import Ledger

needs_cuda = pytest.mark.skipif(
    not Path(NVCC).exists() or shutil.which("cmake") is None or shutil.which("ninja") is None,
    reason="needs nvcc 13.0, cmake and ninja",
)


def test_entry_sm_and_back() -> None:
    assert [sm_entry(entry_sm(t)) for t in ("9.0", "10.0f", "12.0a")] == ["9.0", "10.0f", "12.0a"]
    assert [entry_sm(t) for t in ("9.0", "12.0+PTX", "9.0a", "8.6")] == [
        "sm_90",
        "sm_120",
        "sm_90a",
        "sm_86",
    ]


def test_check_archs_names_what_is_missing() -> None:
    findings = check_archs(("9.0", "12.0"), ("sm_90",), (), has_outputs=True)
    assert [(f.category, f.severity, f.subject) for f in findings] == [
        ("arch-not-compiled", "error", "sm_120")
    ]
    assert check_archs(("9.0",), ("sm_90",), (), has_outputs=True) == ()
    # a portable 9.0a build: CMake's 90-virtual leaves no sm_90, and sm_90a serves the GPU
    assert check_archs(("9.0a", "9.0+PTX"), ("sm_90a",), ("compute_90",), has_outputs=True) == ()
    (missing,) = check_archs(("9.0+PTX",), ("sm_80",), (), has_outputs=True)[:1]
    assert "no SASS for sm_90" in missing.message
    extra = check_archs(("9.0",), ("sm_80", "sm_90"), (), has_outputs=True)
    assert [f.severity for f in extra] == ["info"]


@pytest.mark.integration
@pytest.mark.slow
@needs_cuda
def test_cmake_cuda_build_holds_exactly_the_target_sass(tmp_path: Path) -> None:
    tree = copy_project("tinycuda", tmp_path)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    config = cmake_config(tree, ("9.0", "12.0"))
    result = run_build(config, ledger=ledger, log_dir=tmp_path / "logs", command=["build"])
    assert result.status == "succeeded", Path(result.log_path).read_text()[-2000:]
    assert result.sass == ("sm_90", "sm_120")
    assert result.findings == ()
    assert any(a.path.endswith("libtinycuda.so") for a in result.artifacts)
    assert result.peak_rss_bytes > 0
    attempt = ledger.get(result.attempt_id or -1)
    assert attempt.status == "succeeded"
    assert sorted(attempt.archs) == ["sm_120", "sm_90"]
    log = Path(result.log_path).read_text()
    assert "[5/5]" in log or "Linking" in log


@pytest.mark.integration
@needs_cuda
def test_failed_build_is_explained_and_recorded(tmp_path: Path) -> None:
    tree = copy_project("tinycuda", tmp_path)
    (tree / "kernel.cu").write_text((tree / "kernel.cu").read_text() + "\nthis is not C++;\n")
    ledger = Ledger(tmp_path / "ledger.sqlite")
    result = run_build(cmake_config(tree, ("9.0",)), ledger=ledger, log_dir=tmp_path / "logs")
    assert result.status == "failed"
    assert result.exit_code not in (0, None)
    assert [s.name for s in result.steps] == ["configure", "build"]
    assert ledger.get(result.attempt_id or -1).status == "failed"


@pytest.mark.integration
@needs_cuda
def test_a_configure_cmake_refuses_is_explained(tmp_path: Path) -> None:
    # torchsmith's GPU run forced --cc 10.0f through CMake 4.0.0: configure failed and the result
    # named no cause. 86-PTX (TORCH_CUDA_ARCH_LIST's +PTX written CMake's way) fails every CMake.
    tree = copy_project("tinycuda", tmp_path)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    result = run_build(cmake_config(tree, ("86-PTX",)), ledger=ledger, log_dir=tmp_path / "logs")
    assert result.status == "failed"
    assert [s.name for s in result.steps] == ["configure"]
    assert result.diagnoses, Path(result.log_path).read_text()[-2000:]
    assert result.diagnoses[0].rule == "deps.cmake-cuda-arch-value"
    assert result.diagnoses[0].values["value"] == "86-PTX"


# What cmd's `set` prints (cmd /u: UTF-16LE, CRLF), the shape vcvars64.bat leaves it in: a
# Windows-only tool, so the cmd.exe below is a stand-in that prints exactly that.
VS_SET = (
    "ALLUSERSPROFILE=C:\\ProgramData\r\n"
    "INCLUDE=C:\\Program Files\\Microsoft Visual Studio\\2022\\Community\\VC\\Tools\\MSVC\\"
    "14.44.35207\\include;\r\n"
    "Path={bin};C:\\Users\\José\\AppData\\Local\\Programs\\Python\\Python311\r\n"
    "VSCMD_VER=17.14.10\r\n"
)


def _fake_cmd(tmp_path: Path, text: str, status: int = 0) -> Path:
    bin_dir = tmp_path / "msvc bin"
    bin_dir.mkdir()
    cl = bin_dir / "cl.exe"
    cl.write_text("#!/bin/sh\n")
    cl.chmod(0o755)
    payload = tmp_path / "set.utf16"
    payload.write_bytes(text.format(bin=bin_dir).encode("utf-16-le"))
    cmd = tmp_path / "cmd.exe"
    cmd.write_text(f"#!/bin/sh\ncat '{payload}'\nexit {status}\n")
    cmd.chmod(0o755)
    return bin_dir


def test_the_visual_studio_environment_is_read_once_from_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = _fake_cmd(tmp_path, VS_SET)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    env, problem = visual_studio_env("C:\\VS\\vcvars64.bat")
    assert problem is None
    assert env["PATH"].startswith(str(bin_dir))
    assert env["PATH"].endswith("José\\AppData\\Local\\Programs\\Python\\Python311")
    assert env["VSCMD_VER"] == "17.14.10"
    assert parse_set_output("=C:=C:\\x\r\nno equals\r\nA=b=c\r\n") == {"A": "b=c"}


def test_vcvars_that_fails_or_sets_no_compiler_is_a_clear_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_cmd(tmp_path, "Path=C:\\Windows\r\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    env, problem = visual_studio_env("C:\\VS\\vcvars64.bat")
    assert env == {}
    assert problem is not None
    assert "no cl.exe is on the PATH it set" in problem


def test_a_build_whose_vcvars_cannot_run_fails_before_any_step(tmp_path: Path) -> None:
    tree = copy_project("tinycuda", tmp_path)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    config = cmake_config(tree, ("9.0",))
    config = dataclasses.replace(config, vcvars="C:\\no such\\vcvars64.bat")
    result = run_build(config, ledger=ledger, log_dir=tmp_path / "logs", command=["build"])
    assert result.status == "failed"
    assert result.steps == ()
    assert result.reason is not None
    assert "Visual Studio environment" in result.reason
    assert ledger.get(result.attempt_id or -1).status == "failed"


def test_the_steps_run_in_the_visual_studio_environment_and_find_its_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # vcvars puts Visual Studio's own tools (cl.exe, its cmake and ninja) on PATH: a step named
    # by a bare program name must be found there, with the variables vcvars set
    bin_dir = _fake_cmd(tmp_path, "Path={bin}\r\nVSMARK=from vcvars\r\n")
    tool = bin_dir / "vstool"
    tool.write_text('#!/bin/sh\nprintf "%s" "$VSMARK" > seen.txt\n')
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    tree = tmp_path / "tree"
    tree.mkdir()
    config = dataclasses.replace(
        cmake_config(copy_project("tinycuda", tmp_path), ("9.0",)),
        vcvars="C:\\VS\\vcvars64.bat",
        steps=(Step("build", ("vstool",), str(tree)),),
    )
    result = run_build(config, ledger=None, log_dir=tmp_path / "logs")
    assert result.status == "succeeded", result.reason
    assert (tree / "seen.txt").read_text() == "from vcvars"


def test_a_vcvars_problem_is_written_to_the_log_the_result_names(tmp_path: Path) -> None:
    config = dataclasses.replace(
        cmake_config(copy_project("tinycuda", tmp_path), ("9.0",)), vcvars="C:\\none\\vcvars64.bat"
    )
    result = run_build(config, ledger=None, log_dir=tmp_path / "logs")
    assert "Visual Studio environment" in Path(result.log_path).read_text()
