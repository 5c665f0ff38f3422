"""verify --extension: an extension's archs decided against each GPU before any kernel runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchsmith.verify.model import GpuResult, VerifyReport
from torchsmith.verify.runner import _extension

NVCC = "/usr/local/cuda-13.0/bin/nvcc"
KERNEL = "__global__ void add_one(float* x) { x[threadIdx.x] += 1.0f; }\n"


@pytest.fixture(scope="module")
def sm120_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real shared library with SASS for sm_120 and nothing else (the corpus' H200 case)."""
    if shutil.which(NVCC) is None:
        pytest.skip("nvcc 13.0 not installed")
    root = tmp_path_factory.mktemp("ext")
    (root / "k.cu").write_text(KERNEL)
    out = root / "_ext.so"
    subprocess.run(
        [NVCC, "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_120,code=sm_120",
         "-o", str(out), str(root / "k.cu")],
        check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    return out


def _report(cc: str, name: str) -> VerifyReport:
    report = VerifyReport(python=sys.executable, mode="quick")
    report.gpus.append(GpuResult(0, name, cc, "native SASS", "sass"))
    return report


def test_sm120_only_extension_on_an_h200_is_arch_not_compiled(sm120_only: Path) -> None:
    report = _report("9.0", "NVIDIA H200")
    _extension(report, str(sm120_only), sys.executable)
    assert not report.ok
    (finding,) = report.findings
    assert finding.category == "arch-not-compiled"
    assert finding.severity == "error"
    assert "sm_120" in finding.message
    assert "TORCH_CUDA_ARCH_LIST=9.0" in finding.fix


def test_sm120_only_extension_on_an_rtx_5090_passes(sm120_only: Path) -> None:
    report = _report("12.0", "NVIDIA GeForce RTX 5090")
    _extension(report, str(sm120_only), sys.executable)
    assert report.ok
    assert report.findings == []
    assert report.checks[-1].value == "sass"


def test_extension_without_gpus_is_skipped_not_failed(sm120_only: Path) -> None:
    report = VerifyReport(python=sys.executable, mode="quick")
    _extension(report, str(sm120_only), sys.executable)
    assert report.ok
    assert report.checks[-1].passed is None


def test_recorded_h200_run_names_arch_not_compiled() -> None:
    """The real run on the H200 machine (tests/fixtures/h200-linux/verify/README.md)."""
    path = (
        Path(__file__).parents[1] / "fixtures" / "h200-linux" / "verify" / "verify_ext_sm120.json"
    )
    data = json.loads(path.read_text())["data"]
    assert not data["ok"]
    (check,) = [c for c in data["checks"] if c["name"].startswith("extension ")]
    assert (check["passed"], check["value"]) == (False, "none")
    (finding,) = data["findings"]
    assert finding["category"] == "arch-not-compiled"
    assert "TORCH_CUDA_ARCH_LIST=9.0" in finding["fix"]
