"""Standalone scripts: bash passes shellcheck and builds the CUDA test project in `env -i bash`;
PowerShell and cmd match golden files and survive the quoting tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.build.configs import cmake_config, commit_all, copy_project
from torchsmith import platforms
from torchsmith.build.drivers import CPP_EXT_PARALLEL, parallel_extension_steps
from torchsmith.build.model import BuildConfig, Project, Step
from torchsmith.build.scripts import cmd_quote, emit_script, shell_command, write_script
from torchsmith.errors import InputError, UsageError
from torchsmith.util.shellwords import ps_quote

GOLDEN = Path(__file__).parent / "golden"
NVCC = Path("/usr/local/cuda-13.0/bin/nvcc")
CUDA_WIN = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.9"
SHELLCHECK = Path(sys.executable).parent / "shellcheck"


def windows_config() -> BuildConfig:
    tree = "C:\\Users\\Ann Lee\\src\\my ext & co (test)"
    return BuildConfig(
        project=Project(tree, "cpp_extension", "setup.py", name="my_ext", build_dir="build"),
        python="C:\\Users\\Ann Lee\\venvs\\torch (cu129)\\Scripts\\python.exe",
        profile="fast",
        arch_list=("8.6", "12.0+PTX"),
        cuda_home=CUDA_WIN,
        cuda_version="12.9",
        host_compiler="cl.exe",
        jobs=8,
        nvcc_threads=2,
        cache="none",
        launcher=None,
        env={
            "CUDA_HOME": CUDA_WIN,
            "TORCH_CUDA_ARCH_LIST": "8.6;12.0+PTX",
            "MAX_JOBS": "8",
            "NVCC_APPEND_FLAGS": "--threads 2 -DNAME=100% -DQ='x'",
        },
        cmake_args=(),
        steps=(
            Step(
                "build",
                (
                    "C:\\Users\\Ann Lee\\venvs\\torch (cu129)\\Scripts\\python.exe",
                    "setup.py",
                    "build_ext",
                    "--inplace",
                    "-DFLAG=a&b|c^d%PATH%",
                ),
                tree,
                env={"DISTUTILS_USE_SDK": "1"},
            ),
        ),
    )


VCVARS = (
    "C:\\Program Files\\Microsoft Visual Studio\\2022\\Community"
    "\\VC\\Auxiliary\\Build\\vcvars64.bat"
)


@pytest.mark.parametrize("vcvars", [None, VCVARS], ids=["plain", "vcvars"])
@pytest.mark.parametrize("shell", ["powershell", "cmd"])
def test_windows_scripts_match_golden(shell: str, vcvars: str | None) -> None:
    text = emit_script(replace(windows_config(), vcvars=vcvars), shell)  # type: ignore[arg-type]
    name = "windows" if vcvars is None else "windows-vcvars"
    golden = GOLDEN / f"{name}.{'ps1' if shell == 'powershell' else 'cmd'}"
    if os.environ.get("TORCHSMITH_UPDATE_GOLDEN"):
        golden.write_bytes(text.encode())
    assert text == golden.read_bytes().decode()


def test_a_vcvars_build_calls_it_once_and_bash_refuses_it() -> None:
    vcvars = (
        "C:\\Program Files\\Microsoft Visual Studio\\2022\\Community"
        "\\VC\\Auxiliary\\Build\\vcvars64.bat"
    )
    config = replace(windows_config(), vcvars=vcvars)
    cmd_text = emit_script(config, "cmd")
    assert cmd_text.count(f'call "{vcvars}" >nul') == 1
    assert cmd_text.index('call "') < cmd_text.index("checking tools")  # cl.exe comes from it
    assert "where /q cl.exe ||" in cmd_text
    ps = emit_script(config, "powershell")
    line = "& cmd.exe /d /u /c ('call \"' + '" + vcvars + "' + '\" && set > \"' + $VsSet + '\"')"
    assert ps.count(line) == 1
    assert "Get-Content -LiteralPath $VsSet -Encoding Unicode" in ps
    assert ps.index("Visual Studio environment") < ps.index("checking tools")
    with pytest.raises(UsageError, match=r"vcvars64\.bat"):
        emit_script(config, "bash")


def test_powershell_puts_the_callers_environment_and_folder_back() -> None:
    lines = emit_script(windows_config(), "powershell").split("\r\n")
    body = lines.index("try {")
    assert lines[body - 3].startswith("foreach ($Item in [Environment]::GetEnvironmentVariables()")
    finally_at = lines.index("} finally {")
    restore = "\n".join(lines[finally_at:])
    assert "SetEnvironmentVariable($Name, $null)" in restore
    assert "Set-Location -LiteralPath $SavedLocation" in restore
    # every $env: assignment and Set-Location happen inside the try
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("$env:", "Set-Location -LiteralPath '")):
            assert body < i < finally_at, line
    assert "exit 1" not in "\n".join(lines[body:finally_at])  # failures throw to the finally


def test_powershell_quoting() -> None:
    assert ps_quote("C:\\Program Files\\CUDA\\v12.9") == "'C:\\Program Files\\CUDA\\v12.9'"
    assert ps_quote("it's $HOME `n") == "'it''s $HOME `n'"
    assert ps_quote("a\u2019b") == "'a\u2019\u2019b'"
    text = emit_script(windows_config(), "powershell")
    assert "$env:CUDA_HOME = 'C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.9'" in text
    assert "$env:NVCC_APPEND_FLAGS = '--threads 2 -DNAME=100% -DQ=''x'''" in text
    assert "'-DFLAG=a&b|c^d%PATH%'" in text


def test_cmd_quoting() -> None:
    assert cmd_quote("setup.py") == "setup.py"
    assert cmd_quote(CUDA_WIN) == f'"{CUDA_WIN}"'
    assert cmd_quote("a&b|c^d%PATH%") == '"a&b|c^d%%PATH%%"'
    assert cmd_quote("-DARCHS=86;120") == '"-DARCHS=86;120"'
    assert cmd_quote("") == '""'
    with pytest.raises(UsageError):
        cmd_quote('say "hi"')
    text = emit_script(windows_config(), "cmd")
    assert "set \"NVCC_APPEND_FLAGS=--threads 2 -DNAME=100%% -DQ='x'\"" in text
    assert '"-DFLAG=a&b|c^d%%PATH%%"' in text
    # Log lines carry no character cmd would act on.
    for line in text.splitlines():
        if ("call :log" in line or "call :fail" in line) and "%*" not in line:
            message = line.split("call :", 1)[1]
            message = message.split(" & exit")[0]
            assert not set(message) & set('&|<>^%"()'), line


def test_a_fix_command_with_a_quoted_program_reads_in_cmd_and_in_powershell() -> None:
    """A command in a fix (the wheel left in the tree, nvcc --version) starts with a path: cmd
    runs a quoted one as it is; PowerShell needs `&` before it, which cmd refuses."""
    python = "C:\\Program Files\\Python312\\python.exe"
    with platforms.override("windows"):
        assert shell_command(("C:\\py\\python.exe", "-m", "pip", "install", "a.whl")) == (
            "C:\\py\\python.exe -m pip install a.whl"
        )
        assert shell_command((python, "-m", "pip", "install", "C:\\b d\\x.whl")) == (
            f'"{python}" -m pip install "C:\\b d\\x.whl" (in PowerShell: '
            f"& '{python}' -m pip install 'C:\\b d\\x.whl')"
        )
    with platforms.override("linux"):
        assert shell_command(("/o p/python", "-m", "pip")) == "'/o p/python' -m pip"
    with platforms.override("windows"):  # review: ' and $ are PowerShell's even inside " quotes
        said = shell_command(("C:\\O'Neil\\python.exe", "-m", "pip", "install", "C:\\c$d\\x.whl"))
        assert said.endswith(
            "(in PowerShell: & 'C:\\O''Neil\\python.exe' -m pip install 'C:\\c$d\\x.whl')"
        )


def test_bad_env_name_refused() -> None:
    config = replace(windows_config(), env={"BAD NAME": "1"})
    with pytest.raises(UsageError):
        emit_script(config, "bash")


def test_bash_quoting_round_trips(tmp_path: Path) -> None:
    weird = 'it\'s a $HOME `x` & (y) %z% \\ "q"'
    config = replace(
        windows_config(),
        project=Project(str(tmp_path), "cmake", "cmake", name="w"),
        cuda_home=None,
        env={"WEIRD": weird},
        steps=(Step("show", ("bash", "-c", 'printf "%s" "$WEIRD" > out.txt'), str(tmp_path)),),
    )
    script = tmp_path / "build.sh"
    script.write_text(emit_script(config, "bash"))
    subprocess.run(["bash", str(script)], check=True, cwd=tmp_path, capture_output=True)
    assert (tmp_path / "out.txt").read_text() == weird


@pytest.mark.slow
def test_bash_script_passes_shellcheck_and_builds_alone(tmp_path: Path) -> None:
    if not NVCC.exists() or not shutil.which("cmake") or not shutil.which("ninja"):
        pytest.skip("nvcc 13.0, cmake and ninja are needed")
    base = tmp_path / "my projects"
    base.mkdir()
    tree = copy_project("tinycuda", base)
    config = cmake_config(tree, ("8.0",), env={"CUDAFLAGS": "-DTS_NOTE=100%"})
    config = replace(config, project=replace(config.project, build_dir="build"))
    script = tmp_path / "build me.sh"
    script.write_text(emit_script(config, "bash"))
    check = subprocess.run(
        [str(SHELLCHECK), "--severity=style", str(script)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout
    (tree / ".gitignore").write_text("build/\n")
    commit_all(tree)  # the clean step removes build/ only where git says nothing in it is kept
    (tree / "build").mkdir()
    (tree / "build" / "stale.txt").write_text("old")
    log = tmp_path / "script.log"
    done = subprocess.run(
        # A fresh shell with nothing inherited but a plain PATH (bash's own default PATH here
        # ends in "." and makes cmake 3.25 lose its CMAKE_ROOT).
        [
            "env",
            "-i",
            "PATH=/usr/local/bin:/usr/bin:/bin",
            f"TORCHSMITH_LOG={log}",
            "TORCHSMITH_CLEAN=1",
            "bash",
            str(script),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tree / "build" / "stale.txt").exists()
    assert list((tree / "build").glob("libtinycuda*"))
    lines = log.read_text().splitlines()
    assert any(line.endswith("build finished") for line in lines)
    assert lines[0][:4].isdigit()
    assert "T" in lines[0].split()[0]


def test_bash_script_stops_at_a_failing_step(tmp_path: Path) -> None:
    config = replace(
        windows_config(),
        project=Project(str(tmp_path), "cmake", "cmake", name="w"),
        cuda_home=None,
        env={},
        steps=(
            Step("first", ("false",), str(tmp_path)),
            Step("second", ("touch", "second"), str(tmp_path)),
        ),
    )
    script = tmp_path / "s.sh"
    script.write_text(emit_script(config, "bash"))
    done = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert "FAILED: step first (exit status 1)" in done.stdout
    assert not (tmp_path / "second").exists()


def test_write_script_for_build_emit(tmp_path: Path) -> None:
    out = tmp_path / "build.sh"
    text = write_script(windows_config(), "bash", out)
    assert out.read_text() == text
    assert os.access(out, os.X_OK)
    assert write_script(windows_config(), "cmd", None).startswith("@echo off")
    with pytest.raises(InputError):
        write_script(windows_config(), "bash", tmp_path / "missing" / "dir" / "x.sh")


def test_an_absolute_build_dir_inside_the_tree_gets_its_clean_step() -> None:
    # detection gives the build directory as an absolute path: the script still offers to clean
    # it (inside the tree), and says so only then
    config = windows_config()
    inside = replace(config.project, build_dir=config.project.path + "\\build")
    text = emit_script(replace(config, project=inside), "powershell")
    assert "TORCHSMITH_CLEAN" in text.splitlines()[3]
    assert "my ext & co (test)\\build" in text
    outside = replace(config.project, build_dir="D:\\elsewhere\\build")
    text = emit_script(replace(config, project=outside), "powershell")
    assert "TORCHSMITH_CLEAN" not in text


def test_a_posix_build_dir_differing_in_case_is_not_the_trees() -> None:
    # on Linux /a/Proj and /a/proj are different folders: no clean step for the other one
    config = windows_config()
    project = replace(config.project, path="/a/Proj", build_dir="/a/proj/build")
    assert "TORCHSMITH_CLEAN" not in emit_script(replace(config, project=project), "bash")


def test_a_script_checks_for_torchsmiths_driver_first(tmp_path: Path) -> None:
    """Audit: a parallel extension build's script ran torchsmith's driver from where it was
    installed, so on another machine it failed midway; it now stops first and says why."""

    steps = parallel_extension_steps(str(tmp_path), sys.executable, jobs=2)
    config = replace(
        windows_config(),
        project=Project(str(tmp_path), "cpp_extension", "setuptools", name="ext"),
        cuda_home=None,
        env={},
        steps=steps,
    )
    text = emit_script(config, "bash")
    assert f"[ -f {CPP_EXT_PARALLEL} ]" in text
    moved = text.replace(str(CPP_EXT_PARALLEL), str(tmp_path / "gone" / "cpp_ext_parallel.py"))
    script = tmp_path / "s.sh"
    script.write_text(moved)
    done = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert "torchsmith's parallel extension build driver" in done.stdout
    for shell in ("powershell", "cmd"):
        assert "parallel extension build driver" in emit_script(config, shell)  # type: ignore[arg-type]


def _clean_with_script(tree: Path, scratch: Path) -> subprocess.CompletedProcess[str]:
    """Run the bash script of a do-nothing build of ``tree`` with TORCHSMITH_CLEAN=1."""
    config = replace(
        windows_config(),
        project=Project(str(tree), "cmake", "cmake", name="p", build_dir="build"),
        cuda_home=None,
        env={},
        steps=(Step("noop", ("true",), str(tree)),),
    )
    script = scratch / "s.sh"
    script.write_text(emit_script(config, "bash"))
    return subprocess.run(
        ["env", f"PATH={os.environ['PATH']}", "TORCHSMITH_CLEAN=1", "bash", str(script)],
        cwd=scratch,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_scripts_clean_step_spares_what_git_tracks(tmp_path: Path) -> None:
    """Re-audit: a script written before build/ existed kept `rm -rf build`; at run time it now
    checks with git first and stops where build/ holds tracked or not-ignored files."""
    tree = tmp_path / "proj"
    (tree / "build").mkdir(parents=True)
    (tree / "build" / "ci.sh").write_text("#!/bin/sh\n")
    commit_all(tree)
    done = _clean_with_script(tree, tmp_path)
    assert done.returncode == 1
    assert "holds files git tracks" in done.stdout
    assert (tree / "build" / "ci.sh").exists()


def test_the_scripts_clean_step_needs_git_to_list_the_tree(tmp_path: Path) -> None:
    """Review: with git unable to read the tree (not installed, 'dubious ownership'), the guard
    was skipped and rm -rf ran; now nothing is removed unless git lists the build folder."""
    tree = tmp_path / "plain"
    (tree / "build").mkdir(parents=True)
    (tree / "build" / "notes.txt").write_text("mine\n")
    done = _clean_with_script(tree, tmp_path)
    assert done.returncode == 1
    assert "git cannot list" in done.stdout
    assert (tree / "build" / "notes.txt").exists()


def test_the_cmd_clean_step_reads_what_git_listed() -> None:
    """Re-review: the cmd block wrote git's listing to a temp file named with %RANDOM% three
    times; in a ( ) block each is another number, so findstr read nothing and rmdir ran."""
    text = emit_script(windows_config(), "cmd")
    block = text[text.index('if "%TORCHSMITH_CLEAN%"=="1"') :].split("\r\n)", 1)[0]
    assert "%RANDOM%" not in block
    assert "rev-parse --is-inside-work-tree" in block
    assert "| findstr /r . >nul && (call :fail" in block
    ps = emit_script(windows_config(), "powershell")
    assert "ReparsePoint" in ps  # 5.1's Remove-Item -Recurse would empty a junction's target
