"""Audit findings on build's options: a target interpreter without torch, -o without --emit or
with --dry-run, and what --dry-run --clean would remove."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from torchsmith.build.config import make_config
from torchsmith.build.detect import detect_project
from torchsmith.build.options import BuildOptions
from torchsmith.build.preflight import preflight
from torchsmith.build.tree import TreeFacts
from torchsmith.cli import main
from torchsmith.knowledge import Knowledge
from torchsmith.probe.model import Finding, Probe, TorchInfo

from .conftest import GB, PROJECTS, copy_project

SCATTER = detect_project(PROJECTS / "scatter_like")
CMAKE = detect_project(PROJECTS / "cuda_cmake")
TORCH_TREE = detect_project(PROJECTS / "pytorch_skeleton")


@pytest.fixture(autouse=True)
def _private_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHSMITH_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setenv("TORCHSMITH_LOG_DIR", str(tmp_path / "logs"))


def _torch_findings(project: object, probe: Probe, kb: Knowledge) -> list[Finding]:
    config = make_config(project, probe, kb, BuildOptions(targets=("9.0",)))  # type: ignore[arg-type]
    tree = TreeFacts(path=config.project.path, disk_free_bytes=500 * GB)
    found = preflight(config, tree, probe, kb)
    return [f for f in found if f.subject == "torch" and f.category == "missing-build-dependency"]


# -- 1. the target interpreter has no torch -----------------------------------------------------


def test_extension_for_an_interpreter_without_torch_is_an_error(h200: Probe, kb: Knowledge) -> None:
    probe = dataclasses.replace(h200, torch=None)
    (f,) = _torch_findings(SCATTER, probe, kb)
    assert f.severity == "error"
    assert "has no torch" in f.message
    assert probe.python is not None
    assert f'torchsmith install --python "{probe.python.executable}"' in f.fix


def test_a_broken_torch_is_an_error_too(h200: Probe, kb: Knowledge) -> None:
    broken = TorchInfo("2.8.0", "", error="torch 2.8.0 is recorded as installed but no torch")
    (f,) = _torch_findings(SCATTER, dataclasses.replace(h200, torch=broken), kb)
    assert f.severity == "error"
    assert "no usable torch" in f.message


def test_no_torch_finding_where_torch_is_there_or_not_needed(h200: Probe, kb: Knowledge) -> None:
    assert _torch_findings(SCATTER, h200, kb) == []  # the recorded probe has a CUDA torch
    no_torch = dataclasses.replace(h200, torch=None)
    assert _torch_findings(CMAKE, no_torch, kb) == []  # plain CMake+CUDA: no torch needed
    assert _torch_findings(TORCH_TREE, no_torch, kb) == []  # PyTorch itself


def test_no_torch_finding_when_the_probe_of_the_interpreter_failed(
    h200: Probe, kb: Knowledge
) -> None:
    """A failed probe knows nothing about torch: it says so itself, not 'no torch'."""
    assert h200.python is not None
    failed = dataclasses.replace(h200.python, error="no answer after 30s")
    probe = dataclasses.replace(h200, python=failed, torch=None)
    assert _torch_findings(SCATTER, probe, kb) == []


@pytest.fixture
def no_torch_python(tmp_path: Path) -> str:
    """A real interpreter without torch: a fresh venv (no system site-packages)."""
    venv = tmp_path / "venv-no-torch"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    exe = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    return str(exe)


def test_build_stops_before_running_for_an_interpreter_without_torch(
    tmp_path: Path, no_torch_python: str, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = copy_project("tinyext", tmp_path)
    argv = ["build", str(tree), "--python", no_torch_python, "--cc", "9.0", "--cache", "none"]
    assert main([*argv, "--dry-run", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["blocked"] is True
    assert any(f["subject"] == "torch" and f["severity"] == "error" for f in data["findings"])
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 3
    assert "has no torch" in err
    assert "torchsmith install --python" in err
    assert "--force" in err
    assert not (tree / "build").exists()
    assert not (tree / "dist").exists()


# -- 2. and 3. -o is where --emit writes --------------------------------------------------------


def test_dry_run_with_emit_and_output_is_refused_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = copy_project("tinyext", tmp_path)
    out = tmp_path / "out.sh"
    code = main(["build", str(tree), "--cc", "9.0", "--emit", "bash", "-o", str(out), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ")
    assert "--dry-run" in err.splitlines()[0]
    assert not out.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="--emit bash is refused on Windows")
def test_dry_run_with_emit_prints_the_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = copy_project("tinyext", tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["build", str(tree), "--cc", "9.0", "--emit", "bash", "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("#!")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_build_output_without_emit_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = copy_project("tinyext", tmp_path)
    out = tmp_path / "out.sh"
    code = main(["build", str(tree), "--dry-run", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ")
    assert "--emit" in err.splitlines()[0]
    assert not out.exists()


def test_review_output_without_emit_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "b.sh"
    script.write_text("export TORCH_CUDA_ARCH_LIST=9.0\npython setup.py install\n")
    out = tmp_path / "out.sh"
    code = main(["review", str(script), "--cc", "9.0", "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.startswith("error: ")
    assert "--emit" in captured.err.splitlines()[0]
    assert captured.out == ""  # refused before the review
    assert not out.exists()


# -- 4. --dry-run --clean shows what would go --------------------------------------------------


def _tree_with_build_outputs(tmp_path: Path) -> Path:
    tree = copy_project("tinyext", tmp_path)
    temp = tree / "build" / "temp.linux-x86_64-cpython-311"
    temp.mkdir(parents=True)
    (temp / "tinyext.o").write_bytes(b"\0" * 2048)
    return tree


def test_dry_run_clean_lists_what_would_be_removed_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = _tree_with_build_outputs(tmp_path)
    code = main(["build", str(tree), "--cc", "9.0", "--clean", "--dry-run", "--json"])
    data = json.loads(capsys.readouterr().out)["data"]
    assert code == 0
    assert [e["path"] for e in data["clean"]["entries"]] == ["build"]
    assert data["clean"]["entries"][0]["bytes"] >= 2048
    assert (tree / "build" / "temp.linux-x86_64-cpython-311" / "tinyext.o").is_file()


def test_dry_run_clean_lists_what_would_be_removed_human(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = _tree_with_build_outputs(tmp_path)
    assert main(["build", str(tree), "--cc", "9.0", "--clean", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would remove 1 entry" in out
    assert "build/" in out
    assert (tree / "build" / "temp.linux-x86_64-cpython-311" / "tinyext.o").is_file()


def test_dry_run_without_clean_has_no_clean_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = _tree_with_build_outputs(tmp_path)
    assert main(["build", str(tree), "--cc", "9.0", "--dry-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["data"]["clean"] is None


def _stale_cmake_tree(tmp_path: Path, *, proven: bool) -> Path:
    """A CMake tree configured with Make for sm_80: CMake refuses the Ninja generator the build
    asks for in it (a stale cache; the arch alone the configure's -D would replace); `proven`:
    its cache names the source folder, which proves build/ a CMake build directory that
    `torchsmith clean` removes."""
    tree = copy_project("cuda_cmake", tmp_path)
    (tree / "build").mkdir()
    lines = ["CMAKE_CUDA_ARCHITECTURES:STRING=80", "CMAKE_GENERATOR:INTERNAL=Unix Makefiles"]
    if proven:
        lines.append(f"CMAKE_HOME_DIRECTORY:INTERNAL={tree}")
    (tree / "build" / "CMakeCache.txt").write_text("\n".join(lines) + "\n")
    return tree


def _dry_run_clean(tree: Path, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    argv = ["build", str(tree), "--cc", "9.0", "--cache", "none", "--clean", "--dry-run", "--json"]
    assert main(argv) == 0
    data: dict = json.loads(capsys.readouterr().out)["data"]  # type: ignore[type-arg]
    assert "stale-build-cache" in [f["category"] for f in data["findings"]]
    return data


def test_dry_run_clean_unblocks_a_stale_cache_it_removes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _dry_run_clean(_stale_cmake_tree(tmp_path, proven=True), capsys)
    assert [e["path"] for e in data["clean"]["entries"]] == ["build"]
    others = [f for f in data["findings"] if f["severity"] == "error"]
    others = [f for f in others if f["category"] != "stale-build-cache"]
    assert data["blocked"] is bool(others)


def test_dry_run_clean_still_blocks_on_a_stale_cache_it_keeps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Clean keeps a build/ it cannot prove is an output: the build would stop after it."""
    data = _dry_run_clean(_stale_cmake_tree(tmp_path, proven=False), capsys)
    assert data["clean"]["entries"] == []
    assert [k["path"] for k in data["clean"]["kept"]] == ["build"]
    assert data["blocked"] is True


def test_dry_run_clean_says_the_stale_cache_stops_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = _stale_cmake_tree(tmp_path, proven=True)
    data = _dry_run_clean(tree, capsys)
    argv = ["build", str(tree), "--cc", "9.0", "--cache", "none", "--clean", "--dry-run"]
    assert main(argv) == 0
    shown = "--clean removes the stale cache first" in capsys.readouterr().out
    assert shown is (not data["blocked"])
    if not data["blocked"]:  # this machine: nvcc and a host compiler, nothing else stops it
        assert shown
