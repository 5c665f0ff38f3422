"""``torchsmith verify`` end to end on the real CPU torch, a broken copy of it, and bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from torchsmith.cli import main
from torchsmith.errors import UsageError
from torchsmith.probe.model import DriverInfo, GpuInfo
from torchsmith.verify import VerifyReport, run_verify

from .conftest import torch_python

pytestmark = pytest.mark.integration

NO_GPU = lambda: ((), DriverInfo(None, None, "none", "no driver"))  # noqa: E731
AN_RTX = lambda: (  # noqa: E731
    (GpuInfo(0, "NVIDIA GeForce RTX 4090", compute_capability="8.9"),),
    DriverInfo("580.95.05", "13.0", "nvml"),
)


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict[str, object]]:
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


def test_cpu_torch_reports_cpu_only_with_the_plan_fix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("torchsmith.verify.runner._live_gpus", NO_GPU)
    code, doc = _json(capsys, ["verify", "--python", str(torch_python()), "--json"])
    data = doc["data"]
    assert isinstance(data, dict)
    assert code == 0
    assert data["ok"] is True
    names = {c["name"]: c["passed"] for c in data["checks"]}
    assert names == {
        "shared libraries": True,
        "import torch": True,
        "cpu matmul": True,  # all a CPU build can prove: that it computes (audit: it ran nothing)
        "cuda build": None,
    }
    (finding,) = data["findings"]
    assert finding["category"] == "cpu-only-torch"
    assert "torchsmith plan" in finding["fix"]


def test_cpu_torch_on_a_gpu_machine_fails() -> None:
    report = run_verify(torch_python(), gpu_probe=AN_RTX)
    assert isinstance(report, VerifyReport)
    assert not report.ok
    assert [(f.category, f.severity) for f in report.findings] == [("cpu-only-torch", "error")]
    assert report.driver_version == "580.95.05"


def test_deleted_core_library_found_before_import(torch_copy: Path) -> None:
    (torch_copy / "lib" / "libtorch_cpu.so").unlink()
    report = run_verify(torch_python(), gpu_probe=NO_GPU)
    assert not report.ok
    assert report.torch_location == str(torch_copy)
    static = report.checks[0]
    assert (static.name, static.passed) == ("shared libraries", False)
    assert "libtorch_cpu.so" in static.detail
    missing = [f for f in report.findings if f.category == "missing-runtime-library"]
    assert missing
    assert missing[0].subject == "libtorch_cpu.so"
    assert missing[0].severity == "error"
    imported = next(c for c in report.checks if c.name == "import torch")
    assert imported.passed is False
    assert "libtorch_cpu.so" in imported.detail


def test_hanging_target_gives_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("import time\ntime.sleep(60)\n")
    (fake / "version.py").write_text("__version__ = '2.13.0+cpu'\ncuda = None\n")
    monkeypatch.setenv("PYTHONPATH", str(fake.parent))
    report = run_verify(torch_python(), timeout_s=3, gpu_probe=NO_GPU)
    assert not report.ok
    assert report.error is not None
    assert "no answer after 3s" in report.error
    assert "import torch" in report.error


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--python", "/nonexistent/python"], "no such file"),
        (["--python", sys.executable], "no torch installed"),
    ],
)
def test_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code = main(["verify", *argv])
    err = capsys.readouterr().err
    assert code == 3
    assert message in err
    assert "Traceback" not in err


def test_routes_decided_from_torch_archs_before_any_kernel() -> None:
    from torchsmith.probe.model import ArchSet, TorchInfo  # noqa: PLC0415
    from torchsmith.verify.runner import _routes  # noqa: PLC0415

    torch = TorchInfo("2.11.0+cu130", "/x", cuda="13.0", archs=ArchSet(sass=("sm_120",)))
    routes = _routes(torch)
    assert routes["12.0"]["kind"] == "sass"
    assert routes["9.0"]["ok"] is False
    ptx = TorchInfo("2.11.0+cu130", "/x", cuda="13.0", archs=ArchSet(ptx=("compute_80",)))
    assert _routes(ptx)["9.0"]["kind"] == "ptx"
    assert _routes(TorchInfo("2.13.0+cpu", "/x")) == {}


def test_crashing_target_gives_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("import os\nos._exit(139)\n")
    (fake / "version.py").write_text("__version__ = '2.13.0+cpu'\ncuda = None\n")
    monkeypatch.setenv("PYTHONPATH", str(fake.parent))
    report = run_verify(torch_python(), gpu_probe=NO_GPU)
    assert not report.ok
    assert report.error is not None
    assert "exit status 139" in report.error


def _categories(report: VerifyReport) -> list[tuple[str, str]]:
    return [(f.category, f.severity) for f in report.findings if f.category != "cpu-only-torch"]


@pytest.mark.parametrize("how", ["deleted", "symlink loop"])
def test_missing_core_library_is_said_once_without_an_extension_guess(
    torch_copy: Path, how: str
) -> None:
    """The import fails because of what the static check named: no second finding that blames an
    extension (explain reads "libc10.so: cannot open shared object file" as an ABI mismatch)."""
    lib = torch_copy / "lib" / "libc10.so"
    lib.unlink()
    if how == "symlink loop":
        lib.symlink_to("libc10.so")
    report = run_verify(torch_python(), gpu_probe=NO_GPU)
    assert _categories(report) == [("missing-runtime-library", "error")]
    assert report.findings[0].subject == "libc10.so"
    assert "download.pytorch.org/whl/cpu" in report.findings[0].fix
    imported = next(c for c in report.checks if c.name == "import torch")
    assert imported.detail.startswith("ImportError: libc10.so: cannot open shared object file")


def test_deleted_extension_module_is_named_with_the_exception_line(torch_copy: Path) -> None:
    for c_ext in torch_copy.glob("_C*.so"):
        c_ext.unlink()
    report = run_verify(torch_python(), gpu_probe=NO_GPU)
    assert not report.ok
    static, imported = report.checks[:2]
    assert (static.name, static.passed) == ("shared libraries", False)
    # the exception's first line, not the last line of torch's advice under it
    assert imported.detail == "ImportError: Failed to load PyTorch C extensions:"
    assert _categories(report) == [("missing-runtime-library", "error")]
    assert "torch/_C*.so is missing" in report.findings[0].message
    assert "--index-url https://download.pytorch.org/whl/cpu" in report.findings[0].fix


def test_garbage_extension_module_fails_the_static_check(torch_copy: Path) -> None:
    (c_ext,) = torch_copy.glob("_C*.so")
    c_ext.unlink()
    c_ext.write_text("garbage\n")
    report = run_verify(torch_python(), gpu_probe=NO_GPU)
    static = report.checks[0]
    assert (static.name, static.passed) == ("shared libraries", False)
    assert static.detail == f"damaged: {c_ext.name}"
    assert _categories(report) == [("missing-runtime-library", "error")]
    assert "is not an ELF file" in report.findings[0].message


@pytest.mark.parametrize("value", ["nan", "inf", "1e20", "0", "-5", "86401", "soon"])
def test_a_timeout_that_is_not_a_positive_number_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code = main(["verify", "--python", str(torch_python()), "--timeout", value])
    err = capsys.readouterr().err
    assert code == 2
    (line,) = [line for line in err.splitlines() if line.startswith("Error:")]
    assert f"'--timeout': {value}: must be a positive number of seconds, at most 86400" in line
    assert "internal error" not in err
    with pytest.raises(UsageError, match="positive number of seconds"):
        run_verify(torch_python(), timeout_s=float(value) if value != "soon" else -1.0)


def test_failed_verify_envelope_carries_the_report(
    capsys: pytest.CaptureFixture[str], torch_copy: Path
) -> None:
    """A failed check is verify's answer (envelope.py): ok true, the report's own ok false,
    exit status 1; ok false is kept for a verify that could not run."""
    (torch_copy / "lib" / "libc10.so").unlink()
    code, doc = _json(capsys, ["verify", "--python", str(torch_python()), "--json"])
    assert code == 1
    assert doc["ok"] is True
    assert "error" not in doc
    data = doc["data"]
    assert isinstance(data, dict)
    assert data["ok"] is False
    assert data["findings"][0]["subject"] == "libc10.so"
