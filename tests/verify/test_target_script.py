"""The runtime script's correctness checks, run for real on the CPU torch (CUDA sync stubbed).

No GPU here: the checks are handed the CPU device, which exercises their arithmetic, tolerances,
SDPA backend probing and result recording exactly as on a GPU, minus the device.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .conftest import torch_python

SCRIPTS = Path(__file__).resolve().parents[2] / "src" / "torchsmith" / "verify" / "scripts"
HARNESS = """
import sys
sys.path.insert(0, {scripts!r})
import verify_target as vt
import torch
torch.cuda.synchronize = lambda *a, **k: None
vt.OUT = {out!r}
cpu = torch.device("cpu")
for mode in ("fp32", "tf32", "fp16", "bf16"):
    vt.check("matmul " + mode, vt.matmul_check, torch, cpu, mode)
vt.check("conv", vt.conv_check, torch, cpu)
vt.check("sdpa", vt.sdpa_check, torch, cpu)
vt.check("raises", lambda: 1 / 0)
"""


@pytest.mark.integration
def test_correctness_checks_on_cpu_torch(tmp_path: Path) -> None:
    out = tmp_path / "state.json"
    code = HARNESS.format(scripts=str(SCRIPTS), out=str(out))
    subprocess.run([str(torch_python()), "-B", "-c", code], check=True, timeout=120)
    checks = {c["name"]: c for c in json.loads(out.read_text())["checks"]}
    for mode in ("fp32", "tf32", "fp16", "bf16"):
        assert checks["matmul " + mode]["passed"] is True, checks["matmul " + mode]
    assert checks["conv"]["passed"] is False  # CPU torch: no cuDNN
    assert "math" in checks["sdpa"]["value"]
    assert checks["raises"]["passed"] is False
    assert checks["raises"]["detail"].startswith("ZeroDivisionError")


@pytest.mark.integration
@pytest.mark.slow
def test_all_reduce_ranks_spawn_and_report_bus_bandwidth(tmp_path: Path) -> None:
    """The multi-GPU path's process handling, with gloo on CPU standing in for NCCL on GPUs."""
    out = tmp_path / "state.json"
    code = (
        f"import sys\nsys.path.insert(0, {str(SCRIPTS)!r})\nimport verify_target as vt\n"
        f"import torch\nvt.OUT = {str(out)!r}\n"
        "if __name__ == '__main__':\n"
        "    vt.check('all-reduce', vt.nccl_check, torch, 2, False, 60.0, 'gloo')\n"
    )
    script = tmp_path / "run_allreduce.py"
    script.write_text(code)
    subprocess.run([str(torch_python()), "-B", str(script)], check=True, timeout=120)
    (check,) = json.loads(out.read_text())["checks"]
    assert check["passed"] is True, check
    assert check["value"] > 0
    assert "GLOO" in check["detail"]
    assert "over 2 ranks" in check["detail"]
