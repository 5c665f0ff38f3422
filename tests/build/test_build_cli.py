"""``torchsmith build`` end to end: the CLI on real trees (a real probe, real nvcc)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.build.configs import NVCC, commit_all, copy_project
from torchsmith.cli import main
from torchsmith.knowledge import load_knowledge
from torchsmith.ledger import Ledger

PROJECTS = Path(__file__).parent / "projects"
needs_cuda = pytest.mark.skipif(
    not Path(NVCC).exists() or shutil.which("cmake") is None or shutil.which("ninja") is None,
    reason="needs nvcc 13.0, cmake and ninja",
)


@pytest.fixture(autouse=True)
def _private_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setenv("TORCHSMITH_LOG_DIR", str(tmp_path / "logs"))


def test_not_a_project_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    code = main(["build", str(tmp_path), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 3
    assert err.startswith("error: ")
    assert "Traceback" not in err


def test_unknown_use_flag_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = copy_project("pytorch_skeleton", tmp_path)
    code = main(["build", str(tree), "--cc", "9.0", "--set", "USE_DISTRIBUTD=0", "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2
    assert "USE_DISTRIBUTD" in err.splitlines()[0]


@pytest.mark.integration
@needs_cuda
def test_dry_run_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = copy_project("tinycuda", tmp_path)
    code = main(["build", str(tree), "--cc", "9.0", "--cache", "none", "--dry-run", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["schema"] == "torchsmith/build"
    assert [s["name"] for s in data["data"]["config"]["steps"]] == ["configure", "build"]
    assert not (tree / "build").exists()
    assert Ledger(Path(os.environ["TORCHSMITH_LEDGER"])).list() == []


@pytest.mark.integration
@pytest.mark.slow
@needs_cuda
def test_build_for_two_archs_holds_exactly_their_sass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = copy_project("tinycuda", tmp_path)
    argv = ["build", str(tree), "--cc", "9.0", "--cc", "12.0", "--cache", "none", "--json"]
    code = main(argv)
    data = json.loads(capsys.readouterr().out)["data"]
    assert code == 0, data
    assert data["status"] == "succeeded"
    assert data["sass"] == ["sm_90", "sm_120"]
    assert data["findings"] == []
    assert Path(data["log_path"]).exists()
    attempt = Ledger(Path(os.environ["TORCHSMITH_LEDGER"])).get(data["attempt_id"])
    assert attempt.status == "succeeded"
    assert attempt.kind == "build"


def _configure_with_make(tree: Path) -> None:
    """Configure ``tree`` into build/ by hand with CMake's Makefile generator, as a user might
    have before: a build directory CMake refuses the Ninja generator in."""
    done = subprocess.run(
        ["cmake", "-S", str(tree), "-B", str(tree / "build"), "-G", "Unix Makefiles",
         f"-DCMAKE_CUDA_COMPILER={NVCC}", "-DCMAKE_CUDA_ARCHITECTURES=90-real"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.integration
@pytest.mark.slow
@needs_cuda
def test_another_arch_rebuilds_a_plain_cmake_project_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Audit: `build . --cc 8.0` then `--cc 8.6` stopped at stale-build-cache, though the
    configure step passes CMAKE_CUDA_ARCHITECTURES with -D, which CMake takes into its cache."""
    tree = copy_project("tinycuda", tmp_path)
    assert main(["build", str(tree), "--cc", "9.0", "--cache", "none", "--json"]) == 0
    capsys.readouterr()
    code = main(["build", str(tree), "--cc", "12.0", "--cache", "none"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "replace them: CMAKE_CUDA_ARCHITECTURES: cached 90-real, requested 120-real" in out
    assert "GPU code: SASS sm_120 (targets: 12.0)" in out
    code = main(["build", str(tree), "--cc", "9.0", "--cache", "none", "--json"])
    data = json.loads(capsys.readouterr().out)["data"]
    assert code == 0, data
    assert data["sass"] == ["sm_90"]  # rebuilt for the arch asked, nothing of the one before


@pytest.mark.integration
@pytest.mark.slow
@needs_cuda
def test_stale_cache_is_caught_then_clean_rebuilds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A build directory CMake would refuse (another generator): preflight names it and stops
    the build, the attempt is recorded as blocked; --clean removes the build outputs (never a
    source) and the rebuild holds sm_120."""
    tree = copy_project("tinycuda", tmp_path)
    sources = sorted(p.relative_to(tree) for p in tree.rglob("*") if p.is_file())
    _configure_with_make(tree)
    code = main(["build", str(tree), "--cc", "12.0", "--cache", "none"])
    captured = capsys.readouterr()
    assert code == 3
    assert "stale-build-cache" in captured.out
    assert "CMAKE_GENERATOR: cached Unix Makefiles, requested Ninja" in captured.err
    assert f"torchsmith clean --yes {tree}" in captured.err  # the tree named: run from anywhere
    code = main(["build", str(tree), "--cc", "12.0", "--cache", "none", "--clean", "--json"])
    data = json.loads(capsys.readouterr().out)["data"]
    assert code == 0, data
    assert data["sass"] == ["sm_120"]
    assert all((tree / s).is_file() for s in sources)
    ledger = Ledger(Path(os.environ["TORCHSMITH_LEDGER"]))
    assert [(a.status, a.exit_code) for a in ledger.list(kind="build")] == [
        ("succeeded", 0),
        ("blocked", 3),
    ]


@pytest.mark.integration
def test_emit_writes_a_script_and_builds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = copy_project("tinycuda", tmp_path)
    out = tmp_path / "build.sh"
    code = main(
        ["build", str(tree), "--cc", "12.0", "--cache", "none", "--emit", "bash", "-o", str(out)]
    )
    assert code == 0
    text = out.read_text()
    assert text.startswith("#!")
    assert "120" in text
    assert not (tree / "build").exists()
    assert Ledger(Path(os.environ["TORCHSMITH_LEDGER"])).list() == []


def test_unreachable_shared_cache_is_one_line_before_building(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = copy_project("tinycuda", tmp_path)
    code = main(["build", str(tree), "--cc", "9.0", "--cache-url", "redis://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code != 0
    assert err.startswith("error: ")
    assert "Traceback" not in err
    assert not (tree / "build").exists()


@pytest.mark.integration
@needs_cuda
def test_clean_waits_for_the_options_to_be_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Audit: `build --clean --cc 9.x` removed the build directory, then refused the option."""
    tree = copy_project("tinycuda", tmp_path)
    output = tree / "build" / "CMakeCache.txt"
    output.parent.mkdir()
    output.write_text(f"CMAKE_HOME_DIRECTORY:INTERNAL={tree}\n")
    code = main(["build", str(tree), "--cc", "9.x", "--cache", "none", "--clean"])
    assert code == 2, capsys.readouterr().err
    assert output.exists()


@pytest.mark.integration
@needs_cuda
def test_emit_has_no_clean_step_for_a_build_dir_with_tracked_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Audit: TORCHSMITH_CLEAN=1 ran `rm -rf build` and took a tracked build/ci.sh with it."""
    tree = copy_project("tinycuda", tmp_path)
    (tree / "build").mkdir()
    (tree / "build" / "ci.sh").write_text("#!/bin/sh\n")
    commit_all(tree)
    code = main(["build", str(tree), "--cc", "9.0", "--cache", "none", "--emit", "bash"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "TORCHSMITH_CLEAN" not in captured.out
    assert "rm -rf" not in captured.out
    assert "no clean step" in captured.err


@pytest.mark.integration
@needs_cuda
def test_emit_with_json_is_an_envelope(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Audit: `--emit bash --json` printed the bash script where JSON was asked for."""
    tree = copy_project("tinycuda", tmp_path)
    code = main(["build", str(tree), "--cc", "9.0", "--cache", "none", "--emit", "bash", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["data"]["shell"] == "bash"
    assert doc["data"]["script"].startswith("#!/usr/bin/env bash")


@pytest.mark.integration
@needs_cuda
def test_emit_says_what_preflight_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Audit: --emit wrote a script whose configure this machine's CMake refuses, without a word."""
    tree = copy_project("tinycuda", tmp_path)
    cmake = subprocess.run(["cmake", "--version"], capture_output=True, text=True, check=True)
    takes = load_knowledge().cmake_takes("f", cmake.stdout.split()[2])
    code = main(["build", str(tree), "--cc", "10.0f", "--cache", "none", "--emit", "bash"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "100f-real" in captured.out
    assert ("warning: preflight: TORCH_CUDA_ARCH_LIST entry 10.0f" in captured.err) is (not takes)
    code = main(
        ["build", str(tree), "--cc", "10.0f", "--cache", "none", "--emit", "bash", "--json"]
    )
    found = json.loads(capsys.readouterr().out)["data"]["preflight"]
    assert bool(found) is (not takes)


@pytest.mark.integration
@needs_cuda
def test_a_failed_cmake_build_is_a_result_not_an_internal_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review: a failed build with no install step left through an exception the install guard
    raised for builds that do install: exit 70, no result."""
    tree = copy_project("tinycuda", tmp_path)
    (tree / "kernel.cu").write_text("this is not CUDA\n")
    code = main(["build", str(tree), "--cc", "9.0", "--cache", "none", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert doc["ok"] is True
    assert doc["data"]["status"] == "failed"


@pytest.mark.integration
@needs_cuda
def test_a_stale_cache_clean_keeps_still_blocks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review: --clean lifted the stale-cache blocker even where clean removed nothing (a build
    folder git neither tracks nor ignores), so the build ran on the stale cache."""
    tree = copy_project("tinycuda", tmp_path)
    commit_all(tree)
    _configure_with_make(tree)
    code = main(["build", str(tree), "--cc", "12.0", "--cache", "none", "--clean"])
    err = capsys.readouterr().err
    assert code == 3
    assert "after --clean" in err
    assert (tree / "build" / "CMakeCache.txt").exists()
    (attempt,) = Ledger(Path(os.environ["TORCHSMITH_LEDGER"])).list(kind="build")
    assert attempt.result["status"] == "blocked"
    assert attempt.result["reason"].startswith("blocked by preflight after --clean")
