"""GPU-side results replayed from the script's JSON format (no GPU here)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from torchsmith import envelope
from torchsmith.render.verify import render_verify
from torchsmith.verify.model import VerifyReport
from torchsmith.verify.results import apply_runtime

STATE = json.loads((Path(__file__).parent / "fixtures" / "h200_quick_state.json").read_text())


def _report(state: dict[str, Any]) -> VerifyReport:
    report = VerifyReport(python="/opt/torch/.venv/bin/python", mode="quick")
    apply_runtime(report, state)
    return report


def test_h200_all_pass_with_figures_and_loaded_libraries() -> None:
    report = _report(STATE)
    assert report.ok
    assert report.findings == []
    (gpu,) = report.gpus
    assert (gpu.name, gpu.compute_capability, gpu.route_kind) == ("NVIDIA H200", "9.0", "sass")
    assert gpu.bf16_tflops == 701.4
    assert gpu.peak_bf16_tflops == 989.5
    assert gpu.copy_gbs == 4239.6
    assert gpu.peak_bandwidth_gbs == 4800
    versions = {lib.name: lib.version for lib in report.loaded}
    assert versions["libcudnn.so.9"] == "9"
    assert versions["libcuda.so.580.159.04"] == "580.159.04"
    assert report.driver_version == "580.159.04"
    assert report.import_s == 3.0972


def test_far_below_peak_warns_with_the_datasheet_source() -> None:
    state = copy.deepcopy(STATE)
    for check in state["checks"]:
        if check["name"] == "cuda:0 bf16 matmul TFLOP/s":
            check["value"] = 200.0
    report = _report(state)
    (finding,) = report.findings
    assert finding.severity == "warning"
    assert "20% of the datasheet peak 989.5" in finding.message
    assert finding.source
    assert "h200" in finding.source
    assert report.ok  # slow is a warning, not a failed check


def test_no_code_for_the_gpu_is_arch_not_compiled_and_fails() -> None:
    state = copy.deepcopy(STATE)
    state["gpus"][0]["route"] = {
        "ok": False,
        "kind": "none",
        "route": "no compatible code",
        "detail": "nothing here runs on 9.0: Found: sm_120",
    }
    state["checks"] = [
        *state["checks"][:2],
        {
            "name": "cuda:0 kernels",
            "passed": False,
            "value": None,
            "detail": "skipped",
            "duration_s": 0,
        },
    ]
    report = _report(state)
    assert not report.ok
    assert [f.category for f in report.findings] == ["arch-not-compiled"]
    assert "sm_90" in report.findings[0].fix


def test_ptx_only_is_a_warning() -> None:
    state = copy.deepcopy(STATE)
    state["gpus"][0]["route"] = {"ok": True, "kind": "ptx", "route": "PTX JIT from compute_80"}
    report = _report(state)
    assert [(f.category, f.severity) for f in report.findings] == [("arch-not-compiled", "warning")]


def test_failed_import_runs_explain_on_the_traceback() -> None:
    tb = (
        'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n'
        "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory\n"
    )
    state = {"schema": 1, "checks": [], "import_error": tb}
    report = _report(state)
    assert report.findings[0].category == "missing-runtime-library"


def test_nccl_figures_and_failure() -> None:
    state = copy.deepcopy(STATE)
    state["peer_access"] = [[0, 1, True], [1, 0, True]]
    state["checks"].append(
        {
            "name": "nccl all-reduce GB/s",
            "passed": True,
            "value": 370.5,
            "detail": "",
            "duration_s": 4,
        }
    )
    assert _report(state).nccl_busbw_gbs == 370.5
    state["checks"][-1] = {
        "name": "nccl all-reduce GB/s",
        "passed": False,
        "value": None,
        "detail": "all-reduce did not finish within 60 s",
        "duration_s": 60,
    }
    report = _report(state)
    assert not report.ok
    assert report.findings[-1].category == "distributed-backend-unavailable"


def test_render_and_envelope() -> None:
    report = _report(STATE)
    console = Console(record=True, width=200)
    render_verify(report, console)
    text = console.export_text()
    assert "NVIDIA H200" in text
    assert "71% of datasheet 989.5" in text
    doc = json.loads(envelope.dumps(envelope.wrap("verify", report)))
    assert doc["schema"] == "torchsmith/verify"
    assert doc["data"]["gpus"][0]["bf16_tflops"] == 701.4


def test_cuda_build_without_a_visible_gpu() -> None:
    state = {
        "schema": 1,
        "checks": [
            {"name": "import torch", "passed": True, "value": "2.11.0+cu130", "detail": ""},
            {"name": "cuda available", "passed": False, "value": 0, "detail": "0 device(s)"},
        ],
        "done": True,
    }
    report = _report(state)
    assert not report.ok
    assert [f.category for f in report.findings] == ["no-gpu-visible"]


def test_a_cudnn_loaded_from_elsewhere_is_named(tmp_path: Path) -> None:
    from torchsmith.verify.model import LoadedLibrary  # noqa: PLC0415
    from torchsmith.verify.runner import shadowed_libraries  # noqa: PLC0415

    site = tmp_path / "site-packages"
    (site / "torch" / "lib").mkdir(parents=True)
    (site / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    shipped = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    shipped.write_bytes(b"")
    system = tmp_path / "usr-local-cuda" / "libcudnn.so.9"
    system.parent.mkdir()
    system.write_bytes(b"")
    report = VerifyReport(python="py", mode="quick", torch_location=str(site / "torch"))
    report.loaded = [LoadedLibrary("libcudnn.so.9", str(shipped))]
    assert shadowed_libraries(report) == []
    report.loaded = [LoadedLibrary("libcudnn.so.9", str(system))]
    (finding,) = shadowed_libraries(report)
    assert str(system) in finding.message
    assert "LD_LIBRARY_PATH" in finding.fix


def test_two_h200s_recorded_figures_and_nccl() -> None:
    """Real recording on nvidia-h200-x2: per-GPU figures plausible, NCCL bus bandwidth present."""
    path = Path(__file__).parents[1] / "fixtures" / "2xh200-linux" / "verify_quick.json"
    data = json.loads(path.read_text())["data"]
    assert data["ok"]
    assert [g["compute_capability"] for g in data["gpus"]] == ["9.0", "9.0"]
    for gpu in data["gpus"]:
        assert 0.5 * gpu["peak_bf16_tflops"] < gpu["bf16_tflops"] < gpu["peak_bf16_tflops"]
        assert gpu["copy_gbs"] < gpu["peak_bandwidth_gbs"]
    assert data["nccl_busbw_gbs"] == 258.0


C_EXTENSIONS_TRACEBACK = """\
Traceback (most recent call last):
  File "/tmp/verify_target.py", line 62, in import_torch
    import torch
  File "/venv/lib/python3.11/site-packages/torch/__init__.py", line 1055, in <module>
    raise ImportError(
ImportError: Failed to load PyTorch C extensions:
    It appears that PyTorch has loaded the `torch/_C` folder
    of the PyTorch repository rather than the C extensions which
    are expected in the `torch._C` namespace.
    or by running Python from a different directory.
"""


def test_an_import_failure_no_rule_knows_is_named_by_its_exception_line() -> None:
    """Not by the last line of a message that runs on, nor by explain's catch-all title."""
    for line in ("ImportError: Failed to load PyTorch C extensions:", None):
        state = {"import_error": C_EXTENSIONS_TRACEBACK, "import_error_line": line}
        (finding,) = _report(state).findings
        assert finding.category == "other"
        assert finding.message == (
            "`import torch` failed: ImportError: Failed to load PyTorch C extensions:"
        )
        assert "torchsmith explain" in finding.fix
