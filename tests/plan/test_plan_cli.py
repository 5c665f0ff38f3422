"""`torchsmith plan` end to end: what-if flags, probe files, bad input, and the live machine."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from torchsmith import envelope
from torchsmith.cli import main
from torchsmith.probe.model import DriverInfo, GpuInfo, HostInfo, Probe, PythonInfo

TOP_KEYS = {
    "machine",
    "options",
    "recommendation",
    "alternatives",
    "rejected",
    "findings",
    "source_build",
}
REC_KEYS = {"kind", "torch", "variant", "index_url", "commands", "reasons"}


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["plan", "--json", *args]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "torchsmith/plan"
    assert doc["ok"] is True
    data = doc["data"]
    assert isinstance(data, dict)
    assert set(data) == TOP_KEYS
    assert set(data["recommendation"]) >= REC_KEYS
    return data


def h200_probe(python: str = "3.12.3") -> Probe:
    # the facts of the recorded H200 machine (tests/knowledge/fixtures, /work/shared/fixtures)
    return Probe(
        host=HostInfo(os="linux", os_pretty="Ubuntu 24.04.1 LTS", arch="x86_64"),
        gpus=(GpuInfo(index=0, name="NVIDIA H200", compute_capability="9.0"),),
        driver=DriverInfo(version="580.159.04", cuda_version="13.0", source="nvml"),
        python=PythonInfo(
            executable="/usr/bin/python3", version=python, implementation="CPython", bits=64
        ),
    )


def test_what_if_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(
        capsys,
        "--os",
        "windows",
        "--gpu",
        "NVIDIA GeForce RTX 5070 Ti",
        "--driver",
        "581.57",
        "--python",
        "3.13",
        "--cuda-toolkit",
        "12.4",
    )
    rec = data["recommendation"]
    assert isinstance(rec, dict)
    assert rec["kind"] == "wheel"
    assert set(rec["commands"]) == {"uv", "pip"}
    rejected = data["rejected"]
    assert isinstance(rejected, list)
    assert any(r["variant"] == "cu124" and r["category"] == "arch-not-compiled" for r in rejected)


def test_probe_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "probe.json"
    file.write_text(envelope.dumps(envelope.wrap("doctor", h200_probe())))
    data = run_json(capsys, "--probe", str(file))
    machine = data["machine"]
    assert isinstance(machine, dict)
    assert machine["origin"] == "probe-file"
    assert machine["driver"] == "580.159.04"
    rec = data["recommendation"]
    assert isinstance(rec, dict)
    assert (rec["kind"], rec["index_url"]) == ("wheel", None)  # PyPI default serves sm_90


def test_probe_file_with_what_if_override(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "probe.json"
    file.write_text(envelope.dumps(envelope.wrap("doctor", h200_probe())))
    data = run_json(capsys, "--probe", str(file), "--driver", "535.104.05")
    rec = data["recommendation"]
    assert isinstance(rec, dict)
    assert rec["variant"] == "cu126"  # a CUDA 12 line wheel for an R535 driver


def test_garbage_probe_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "probe.json"
    file.write_text("this is not json")
    assert main(["plan", "--probe", str(file)]) == 3
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: ")
    assert "not JSON" in err[0]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--gpu", "RTX 5075", "--os", "linux"], "close matches: NVIDIA GeForce RTX 5070"),
        (["--driver", "five-eighty", "--os", "linux"], "not a driver version"),
        (["--python", "three", "--os", "linux"], "not a Python version"),
        (["--cc", "12", "--os", "linux"], "compute capability"),
        (["--cuda-toolkit", "twelve", "--os", "linux"], "not a CUDA version"),
        (["--torch", "=>2.1", "--os", "linux"], "not a version constraint"),
    ],
)
def test_bad_input_is_one_line_and_non_zero(
    capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    assert main(["plan", *args]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: ")
    assert needle in err[0]
    assert len(err) <= 2


def test_impossible_combination_is_a_plan_not_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "--os", "macos", "--gpu", "RTX 4090")
    rec = data["recommendation"]
    assert isinstance(rec, dict)
    assert rec["kind"] == "none"


def test_rich_view_recommendation_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--os", "linux", "--gpu", "GTX 1080", "--driver", "580.95.05"]) == 0
    out = capsys.readouterr().out
    assert out.index("install torch 2.14.1+cu126") < out.index("rejected")
    assert "arch-not-compiled" in out


@pytest.mark.integration
def test_live_machine(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "--python", sys.executable)
    machine = data["machine"]
    assert isinstance(machine, dict)
    assert machine["origin"] == "live"
    rec = data["recommendation"]
    assert isinstance(rec, dict)
    if not machine["gpus"]:
        assert rec["kind"] == "cpu"
