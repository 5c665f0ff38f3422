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
def test_script_on_cpu_torch_stops_after_import(tmp_path: Path) -> None:
    out = tmp_path / "state.json"
    subprocess.run(
        [str(torch_python()), "-B", str(SCRIPTS / "verify_target.py"), str(out), "{}"],
        check=True,
        timeout=120,
    )
    state = json.loads(out.read_text())
    assert state["done"] is True
    assert state["cuda_built"] is None
    assert [c["name"] for c in state["checks"]] == ["import torch"]
