"""The executor on real builds: a CMake+CUDA project (nvcc 13.0) and the ledger it records in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.build.configs import NVCC, cmake_config, copy_project
from torchsmith.build.runner import check_archs, run_build, sass_name
from torchsmith.ledger import Ledger

needs_cuda = pytest.mark.skipif(
    not Path(NVCC).exists() or shutil.which("cmake") is None or shutil.which("ninja") is None,
    reason="needs nvcc 13.0, cmake and ninja",
)


def test_sass_name() -> None:
    assert [sass_name(t) for t in ("9.0", "12.0+PTX", "9.0a", "8.6")] == [
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
