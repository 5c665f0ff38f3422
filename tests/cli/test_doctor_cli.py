"""`torchsmith doctor` end to end here: real nvcc, gcc, cmake, ninja and a real CPU torch."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from torchsmith.cli import main

TORCH_VENV = Path(
    os.environ.get("TORCHSMITH_TEST_TORCH_VENV", Path(__file__).parents[2] / ".cache/torch-venv")
)
DATA_KEYS = {
    "host",
    "gpus",
    "driver",
    "cuda_toolkits",
    "compilers",
    "build_tools",
    "python",
    "torch",
    "findings",
}

pytestmark = pytest.mark.integration


def doctor_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["doctor", "--json", *args]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert isinstance(doc, dict)
    return doc


def test_this_machine(capsys: pytest.CaptureFixture[str]) -> None:
    doc = doctor_json(capsys, "--python", sys.executable)
    assert (doc["schema"], doc["schema_version"], doc["ok"]) == ("torchsmith/doctor", 1, True)
    data = doc["data"]
    assert isinstance(data, dict)
    assert set(data) >= DATA_KEYS
    toolkits = {tk["full_version"] for tk in data["cuda_toolkits"]}
    assert "13.0.88" in toolkits
    real = next(tk for tk in data["cuda_toolkits"] if tk["root"].endswith("cuda-13.0"))
    assert {"sm_75", "sm_90", "sm_120"} <= set(real["sm_targets"])
    tools = {t["name"]: t for t in data["compilers"] + data["build_tools"]}
    for name in ("gcc", "cmake", "ninja"):
        assert tools[name]["path"], name
        assert tools[name]["version"], name
    assert data["gpus"] == []
    no_gpu = [f for f in data["findings"] if f["category"] == "no-gpu-visible"]
    assert [f["severity"] for f in no_gpu] == ["info"]
    assert no_gpu[0]["fix"]


@pytest.mark.skipif(not (TORCH_VENV / "bin/python").exists(), reason="no torch venv (scripts/test)")
def test_cpu_torch_venv_reports_cpu_only_torch(capsys: pytest.CaptureFixture[str]) -> None:
    data = doctor_json(capsys, "--python", str(TORCH_VENV))["data"]
    assert isinstance(data, dict)
    assert data["torch"]["version"] == "2.13.0+cpu"
    assert data["torch"]["cuda"] is None
    assert "cpu-only-torch" in {f["category"] for f in data["findings"]}


def test_human_output_names_the_essentials(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--python", sys.executable]) == 0
    out = capsys.readouterr().out
    for word in ("torchsmith doctor", "cuda toolkit", "13.0.88", "gcc", "cmake", "findings"):
        assert word in out


@pytest.mark.parametrize("target", ["/nonexistent/python", "/bin/ls", "{empty_dir}"])
def test_bad_python_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str
) -> None:
    code = main(["doctor", "--python", target.format(empty_dir=tmp_path)])
    err = capsys.readouterr().err
    assert code != 0
    assert err.startswith("error: ")
    assert "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1


def test_bad_python_in_json_mode_is_an_error_envelope(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--json", "--python", "/nonexistent/python"])
    doc = json.loads(capsys.readouterr().out)
    assert code != 0
    assert doc["ok"] is False
    assert doc["error"]["exit_code"] == code
