"""``torchsmith kb show``: every GPU the knowledge base has, architectures, and --json."""

from __future__ import annotations

import json

import pytest

from torchsmith.cli import main


def show(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["kb", "show", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize(
    ("what", "expected"),
    [
        ("AMD Instinct MI300X", "LLVM target gfx942"),  # the planner resolves it the same way
        ("gfx942", "AMD Instinct MI300X"),
        ("Intel Arc B580", "Intel GPU, Intel Arc B-series"),
        ("sm_90", "GPUs: NVIDIA GH200, NVIDIA H200, NVIDIA H100"),
        ("compute_120", "CUDA toolkits that can target sm_120: CUDA 12.8 or newer"),
        ("sm_90a", "arch-specific"),
        ("9.0", "sm_90: compute capability 9.0"),  # no CUDA 9.0 here: the compute capability
        ("RTX 4090", "[primary]"),  # the source's status is not eaten as Rich markup
    ],
)
def test_show_finds_it(capsys: pytest.CaptureFixture[str], what: str, expected: str) -> None:
    code, out = show(capsys, what)
    assert code == 0, out
    assert expected in " ".join(out.split())


def test_cuda_version_that_is_also_a_compute_capability(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = show(capsys, "12.0")
    assert code == 0
    assert out.startswith("CUDA 12.0:")
    assert "kb show sm_120" in " ".join(out.split())


def test_unknown_drivers_say_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = show(capsys, "13.0")
    assert code == 0
    flat = " ".join(out.split())
    assert "on Windows unknown (not in the knowledge base)" in flat
    assert "N/A" not in out
    assert "?" not in out


def test_an_arch_never_suggests_gpu_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = show(capsys, "sm_1000")
    assert code == 2
    assert "not an architecture the knowledge base knows" in out
    assert "GTX" not in out


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kb", "show", "sm_120", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "torchsmith/kb"
    data = doc["data"]
    assert data["kind"] == "architecture"
    assert "NVIDIA GeForce RTX 5090" in data["facts"]["gpus"]
    assert "12.8" in data["facts"]["cuda_toolkits"]
    assert main(["kb", "show", "MI300X", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert (data["kind"], data["facts"]["gfx"]) == ("amd_gpu", "gfx942")
    assert main(["kb", "show", "no such thing", "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False
    assert doc["error"]["exit_code"] == 2
