"""doctor and plan on an AMD machine (RX 7900 XTX) and an Intel machine (Arc A770), from the
recorded and written fixtures in tests/fixtures/amd-rx7900xtx and tests/fixtures/intel-arc-a770
(their READMEs say which is which)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from torchsmith.findings import analyze
from torchsmith.knowledge import load_knowledge
from torchsmith.plan.machine import facts_from_probe
from torchsmith.plan.model import PlanOptions
from torchsmith.plan.planner import make_plan
from torchsmith.probe.machine_reader import ReplayMachine
from torchsmith.probe.model import GpuInfo, HostInfo, Probe, RocmInfo, TorchInfo
from torchsmith.probe.rocm import (
    KFD_NODES,
    attach_gfx,
    groups_of_process,
    parse_kfd_properties,
    parse_rocminfo,
    probe_rocm,
)
from torchsmith.probe.xpu import parse_sycl_ls, probe_xpu
from torchsmith.util.cmd import CommandResult

FIXTURES = Path(__file__).parent.parent / "fixtures"
AMD = FIXTURES / "amd-rx7900xtx"
INTEL = FIXTURES / "intel-arc-a770"
kb = load_knowledge()

_STATUS = "Name:\tpython\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n"
STATUS_IN_RENDER = _STATUS + "Groups:\t4 27 109 1000 \n"
STATUS_NO_GROUPS = _STATUS + "Groups:\t4 27 1000 \n"
GROUP_FILE = (
    "root:x:0:\nadm:x:4:syslog,ana\nsudo:x:27:ana\nvideo:x:44:\nrender:x:109:ana\nana:x:1000:\n"
)


def amd_sysfs(status: str = STATUS_IN_RENDER) -> dict[str, str]:
    files = {
        f"{KFD_NODES}/{node}/properties": (AMD / "kfd/nodes" / node / "properties").read_text()
        for node in ("0", "2")
    }
    files |= {
        "/dev/kfd": "",
        "/opt/rocm/.info/version": "6.2.4-139\n",
        "/proc/self/status": status,
        "/etc/group": GROUP_FILE,
    }
    return files


def amd_probe(status: str = STATUS_IN_RENDER, torch_hip: str | None = None) -> Probe:
    rocm = probe_rocm(ReplayMachine(files=amd_sysfs(status)))
    pci = GpuInfo(
        index=0,
        name="AMD Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]",
        vendor="amd",
        pci_bus_id="0000:09:00.0",
        source="pci-sysfs",
    )
    torch = (
        TorchInfo(version="2.8.0+rocm6.4", location="/venv/lib/torch", hip=torch_hip)
        if torch_hip
        else None
    )
    return Probe(
        host=HostInfo(os="linux", os_pretty="Ubuntu 24.04.1 LTS"),
        gpus=attach_gfx((pci,), rocm),
        rocm=rocm,
        torch=torch,
    )


def test_kfd_properties_name_the_gfx_target() -> None:
    props = parse_kfd_properties((AMD / "kfd/nodes/2/properties").read_text())
    assert props["gfx_target_version"] == 110000
    rocm = probe_rocm(ReplayMachine(files=amd_sysfs()))
    assert rocm is not None
    assert [(d.gfx, d.pci_bus_id) for d in rocm.devices] == [("gfx1100", "0000:09:00.0")]
    assert rocm.runtime_version == "6.2.4-139"
    assert rocm.user_groups == ("ana", "adm", "sudo", "render")


def test_recorded_rocminfo_names_the_gpu_agent() -> None:
    devices = parse_rocminfo((AMD / "rocminfo.txt").read_text())
    assert [(d.gfx, d.name, d.pci_bus_id) for d in devices] == [
        ("gfx1100", "Radeon RX 7900 XTX", "0000:09:00.0")
    ]


def test_rocminfo_is_the_fallback_without_sysfs() -> None:
    text = (AMD / "rocminfo.txt").read_text()
    m = ReplayMachine(
        files={"/dev/kfd": ""},
        commands={("rocminfo",): CommandResult(("rocminfo",), 0, text, "", 0.1)},
    )
    rocm = probe_rocm(m)
    assert rocm is not None
    assert rocm.source == "rocminfo"
    assert rocm.devices[0].gfx == "gfx1100"


def test_no_rocm_at_all_is_none() -> None:
    assert probe_rocm(ReplayMachine(files={})) is None


def test_groups_resolve_names() -> None:
    assert groups_of_process(STATUS_NO_GROUPS, GROUP_FILE) == ("ana", "adm", "sudo")


def test_doctor_on_the_amd_machine_is_quiet_when_all_is_well() -> None:
    probe = amd_probe()
    assert probe.gpus[0].gfx == "gfx1100"
    findings = analyze(probe, kb)
    assert not [f for f in findings if f.severity == "error"]


def test_doctor_names_the_missing_render_group() -> None:
    findings = analyze(amd_probe(STATUS_NO_GROUPS), kb)
    hit = [f for f in findings if f.category == "no-gpu-visible" and "render" in f.message]
    assert hit
    assert "usermod -aG render,video" in hit[0].fix


def test_doctor_names_rocm_runtime_vs_wheel() -> None:
    findings = analyze(amd_probe(torch_hip="6.4.43482-0f2d60242"), kb)
    assert any(
        f.category == "toolkit-torch-cuda-mismatch" and "ROCm 6.4" in f.message for f in findings
    )


def test_doctor_suggests_hsa_override_for_an_unlisted_rdna2_board() -> None:
    probe = amd_probe()
    gpu = dataclasses.replace(probe.gpus[0], name="AMD Radeon RX 6700 XT", gfx="gfx1031")
    findings = analyze(dataclasses.replace(probe, gpus=(gpu,)), kb)
    hit = [f for f in findings if f.category == "arch-not-compiled"]
    assert hit
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in hit[0].fix
    set_probe = dataclasses.replace(
        probe,
        gpus=(gpu,),
        rocm=dataclasses.replace(probe.rocm or RocmInfo(), hsa_override="10.3.0"),
    )
    assert [f.severity for f in analyze(set_probe, kb) if f.category == "arch-not-compiled"] == [
        "info"
    ]


def test_doctor_says_to_hide_an_unserved_igpu_beside_the_board() -> None:
    # the recorded RX 7900 XTX machine plus a Ryzen 7000 iGPU (gfx1036) as ROCm shows it
    probe = amd_probe()
    igpu = dataclasses.replace(probe.gpus[0], index=1, name="AMD Radeon Graphics", gfx="gfx1036")
    findings = analyze(dataclasses.replace(probe, gpus=(probe.gpus[0], igpu)), kb)
    (hit,) = [f for f in findings if f.category == "arch-not-compiled"]
    assert hit.severity == "warning"
    assert "gfx1036" in hit.message
    assert "HIP_VISIBLE_DEVICES" in (hit.fix or "")
    assert "HSA_OVERRIDE_GFX_VERSION=" not in (hit.fix or "")


def test_plan_from_the_amd_probe_picks_a_rocm_wheel() -> None:
    facts = facts_from_probe(amd_probe(), kb, "probe-file")
    assert facts.gpus[0].vendor == "amd"
    assert facts.gpus[0].gfx == "gfx1100"
    rec = make_plan(facts, kb, PlanOptions()).recommendation
    assert rec.kind == "wheel"
    assert (rec.variant or "").startswith("rocm")


# -- Intel ----------------------------------------------------------------------------------


def test_sycl_ls_both_formats() -> None:
    linux = parse_sycl_ls((INTEL / "sycl-ls_no_level_zero.txt").read_text())
    assert [(d.backend, d.device_type, d.name) for d in linux] == [
        ("opencl", "cpu", "Intel(R) Core(TM) i9-10900X CPU @ 3.70GHz"),
        ("opencl", "gpu", "Intel(R) Arc(TM) A770 Graphics"),
    ]
    windows = parse_sycl_ls((INTEL / "sycl-ls_windows.txt").read_text())
    zero = [d.name for d in windows if d.backend == "level_zero"]
    assert zero == ["Intel(R) UHD Graphics 770", "Intel(R) Arc(TM) A770 Graphics"]


def intel_probe(fixture: str, os: str = "linux") -> Probe:
    text = (INTEL / fixture).read_text()
    m = ReplayMachine(commands={("sycl-ls",): CommandResult(("sycl-ls",), 0, text, "", 0.2)})
    pci = GpuInfo(index=0, name="Intel DG2 [Arc A770]", vendor="intel", source="pci-sysfs")
    return Probe(
        host=HostInfo(os=os, os_pretty="test"),  # type: ignore[arg-type]
        gpus=(pci,),
        xpu=probe_xpu(m),
    )


def test_doctor_names_a_missing_level_zero_runtime() -> None:
    findings = analyze(intel_probe("sycl-ls_no_level_zero.txt"), kb)
    hit = [f for f in findings if f.category == "missing-runtime-library"]
    assert hit
    assert "Level Zero" in hit[0].message
    assert hit[0].severity == "error"
    ok = analyze(intel_probe("sycl-ls_windows.txt", "windows"), kb)
    assert not [f for f in ok if f.category == "missing-runtime-library"]


def test_plan_from_the_intel_probe_picks_the_xpu_wheel() -> None:
    for fixture, os in (("sycl-ls_no_level_zero.txt", "linux"), ("sycl-ls_windows.txt", "windows")):
        facts = facts_from_probe(intel_probe(fixture, os), kb, "probe-file")
        assert [g.vendor for g in facts.gpus] == ["intel"]
        rec = make_plan(facts, kb, PlanOptions()).recommendation
        assert rec.variant == "xpu"


# -- Apple ----------------------------------------------------------------------------------


def test_doctor_says_mps_needs_macos_12_3_and_apple_silicon() -> None:
    old = Probe(
        host=HostInfo(os="macos", os_pretty="macOS 12.1", os_version="12.1", arch="aarch64")
    )
    assert any("12.3" in f.message for f in analyze(old, kb))
    new = Probe(
        host=HostInfo(os="macos", os_pretty="macOS 15.1", os_version="15.1", arch="aarch64")
    )
    assert not any("MPS" in f.message for f in analyze(new, kb))
    intel = Probe(host=HostInfo(os="macos", os_pretty="macOS 13", os_version="13.6", arch="x86_64"))
    assert any("Apple silicon" in f.message for f in analyze(intel, kb))
