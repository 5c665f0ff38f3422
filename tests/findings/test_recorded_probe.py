"""The probe `torchsmith doctor --json` recorded on a real H200 machine, read back and re-judged."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from torchsmith.findings import analyze
from torchsmith.probe.io import load_probe
from torchsmith.render.doctor import render_doctor

H200 = Path(__file__).parents[1] / "fixtures" / "h200-linux" / "doctor.json"


def test_the_recorded_h200_probe_reads_back() -> None:
    probe = load_probe(H200)
    assert [(g.name, g.compute_capability) for g in probe.gpus] == [("NVIDIA H200", "9.0")]
    assert probe.driver is not None
    assert (probe.driver.version, probe.driver.cuda_version) == ("580.159.04", "13.0")
    assert probe.torch is not None
    assert (probe.torch.version, probe.torch.cuda) == ("2.11.0+cu130", "13.0")
    assert probe.torch.archs is not None
    assert {"sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"} <= set(probe.torch.archs.sass)
    selected = [t for t in probe.cuda_toolkits if t.selected]
    assert [t.full_version for t in selected] == ["13.0.88"]


def test_it_has_no_error_findings_then_and_now() -> None:
    probe = load_probe(H200)
    assert not [f for f in probe.findings if f.severity == "error"]
    assert not [f for f in analyze(probe) if f.severity in ("error", "warning")]


def test_the_human_view_names_gpu_driver_and_torch() -> None:
    console = Console(record=True, width=100)
    render_doctor(load_probe(H200), console)
    text = console.export_text()
    for word in ("NVIDIA H200", "cc 9.0", "580.159.04", "CUDA 13.0", "2.11.0+cu130", "sm_120"):
        assert word in text
