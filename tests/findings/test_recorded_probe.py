"""The probe `torchsmith doctor --json` recorded on a real H200 machine, read back and re-judged."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
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


@pytest.mark.parametrize(
    ("value", "hidden"),
    [("", True), ("-1", True), ("1", True), ("NoDevFiles", True), ("0", False), (None, False)],
)
def test_cuda_visible_devices_that_hides_every_gpu(value: str | None, hidden: bool) -> None:
    probe = load_probe(H200)
    probe = replace(probe, host=replace(probe.host, cuda_visible_devices=value))
    found = [f for f in analyze(probe) if f.category == "no-gpu-visible"]
    assert bool(found) == hidden
    if hidden:
        (finding,) = found
        assert finding.severity == "error"  # torch is a CUDA build: is_available() is False
        assert f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU" in finding.message


def test_a_gpu_uuid_prefix_is_a_valid_entry() -> None:
    probe = load_probe(H200)
    (gpu,) = probe.gpus
    assert gpu.uuid
    probe = replace(probe, host=replace(probe.host, cuda_visible_devices=gpu.uuid[:10]))
    assert not [f for f in analyze(probe) if f.category == "no-gpu-visible"]


@pytest.mark.parametrize(
    ("devices", "caps", "expect"),
    [
        (("nvidia0", "nvidiactl"), None, "but no /dev/nvidia-uvm"),
        (
            ("nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidiactl"),
            "utility",
            "leaves out 'compute'",
        ),
        (("nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidiactl"), "compute,utility", None),
        (("nvidia-uvm", "nvidia0", "nvidiactl"), "", None),  # empty: the toolkit's default
        (("nvidia-uvm", "nvidia0", "nvidiactl"), "all", None),
    ],
    ids=["no-uvm", "no-compute", "compute", "empty", "all"],
)
def test_a_container_that_shows_the_gpu_but_cannot_run_cuda(
    devices: tuple[str, ...], caps: str | None, expect: str | None
) -> None:
    probe = load_probe(H200)
    host = replace(
        probe.host, container="docker", nvidia_devices=devices, nvidia_driver_capabilities=caps
    )
    found = [
        f.message for f in analyze(replace(probe, host=host)) if f.category == "no-gpu-visible"
    ]
    assert [expect in m for m in found] == ([True] if expect else [])


def test_outside_a_container_a_missing_uvm_node_is_no_finding() -> None:
    probe = load_probe(H200)
    host = replace(probe.host, container=None, nvidia_devices=("nvidia0", "nvidiactl"))
    assert not [f for f in analyze(replace(probe, host=host)) if f.category == "no-gpu-visible"]


def test_the_recorded_h100_container_reads_its_device_nodes_and_has_no_finding() -> None:
    probe = load_probe(Path(__file__).parents[1] / "fixtures" / "h100-linux" / "doctor.json")
    host = probe.host
    assert host.container == "docker"
    assert host.nvidia_devices is not None
    assert {"nvidia0", "nvidiactl", "nvidia-uvm"} <= set(host.nvidia_devices)
    assert host.nvidia_driver_capabilities == "compute,graphics,utility"
    assert not [f for f in analyze(probe) if f.severity in ("error", "warning")]
