"""Plan for AMD (ROCm wheels), Intel (xpu wheels) and Apple (MPS) from accelerators.toml.

Facts behind the expectations: the RX 7900 XTX is gfx1100 and the RX 6700 XT gfx1031 (LLVM
AMDGPU processor table); PYTORCH_ROCM_ARCH of the rocm wheels (pytorch .ci/docker/manywheel
build.sh copies); ROCm wheels are Linux x86_64 only; xpu wheels from 2.5 on Linux and Windows,
Data Center GPU Max on Linux only (PyTorch "Getting Started on Intel GPU"); MPS needs macOS 12.3
and Apple silicon.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from torchsmith.errors import UsageError
from torchsmith.knowledge import load_knowledge
from torchsmith.knowledge.model import gfx_to_hsa, hsa_to_gfx
from torchsmith.plan.machine import WhatIf, apply_what_if, blank_facts
from torchsmith.plan.model import GpuTarget, Plan, PlanOptions
from torchsmith.plan.planner import make_plan
from torchsmith.taxonomy import CATEGORIES

from .test_certain_facts import _sentence_problems

kb = load_knowledge()


def plan(os: str, gpu: str, torch: str | None = None, arch: str | None = None) -> Plan:
    facts = apply_what_if(blank_facts(os), WhatIf(os=os, gpus=(gpu,), arch=arch), kb)
    p = make_plan(facts, kb, PlanOptions(torch=torch))
    for r in p.rejected:
        assert r.category in CATEGORIES
    for text in (*p.recommendation.reasons, *(r.reason for r in p.rejected)):
        assert not _sentence_problems(text), text
    return p


def test_gfx_versions_round_trip() -> None:
    assert gfx_to_hsa("gfx1100") == "11.0.0"
    assert gfx_to_hsa("gfx90a") == "9.0.10"
    assert hsa_to_gfx(90010) == "gfx90a"
    assert hsa_to_gfx(110001) == "gfx1101"
    assert hsa_to_gfx("10.3.0") == "gfx1030"


def test_rx_7900_xtx_on_linux_gets_a_rocm_wheel_from_its_index() -> None:
    p = plan("linux", "Radeon RX 7900 XTX")
    rec = p.recommendation
    assert rec.kind == "wheel"
    assert rec.variant is not None
    assert rec.variant.startswith("rocm")
    assert rec.index_url == f"https://download.pytorch.org/whl/{rec.variant}"
    assert "--index-url https://download.pytorch.org/whl/rocm" in rec.commands["pip"]
    archs = kb.rocm_gfx(rec.torch or "", rec.variant)
    assert archs is not None
    assert "gfx1100" in archs.gfx
    assert p.machine.gpus[0].gfx == "gfx1100"


def test_rx_7900_xtx_on_windows_says_why_none_fits() -> None:
    p = plan("windows", "Radeon RX 7900 XTX")
    assert p.recommendation.kind == "none"
    assert "Linux x86_64 only" in p.recommendation.reasons[0]


def test_mi300x_with_torch_2_3_is_arch_not_compiled() -> None:
    p = plan("linux", "AMD Instinct MI300X", "==2.3.*")
    assert p.recommendation.kind == "none"
    assert {r.category for r in p.rejected if r.variant} == {"arch-not-compiled"}
    assert any("gfx942" in r.reason for r in p.rejected)


def test_mi300x_newest_is_served() -> None:
    p = plan("linux", "MI300X")
    assert p.recommendation.kind == "wheel"
    assert (p.recommendation.variant or "").startswith("rocm")


def test_unlisted_rdna2_board_is_served_through_hsa_override() -> None:
    p = plan("linux", "AMD Radeon RX 6700 XT")
    rec = p.recommendation
    assert rec.kind == "wheel"
    assert any("HSA_OVERRIDE_GFX_VERSION=10.3.0" in r for r in rec.reasons)


def test_rdna4_before_its_first_rocm_build_is_rejected() -> None:
    p = plan("linux", "RX 9070 XT", "==2.5.*")
    assert p.recommendation.kind == "none"
    assert any(r.category == "arch-not-compiled" and "gfx1201" in r.reason for r in p.rejected)


def test_intel_arc_b580_gets_the_xpu_wheel() -> None:
    for os in ("linux", "windows"):
        rec = plan(os, "Intel(R) Arc(TM) B580 Graphics").recommendation
        assert rec.variant == "xpu"
        assert rec.index_url == "https://download.pytorch.org/whl/xpu"


def test_intel_before_2_5_has_no_xpu_wheel() -> None:
    p = plan("linux", "Intel Arc A770", "==2.4.*")
    assert p.recommendation.kind == "none"
    assert any("start with torch 2.5" in r.reason for r in p.rejected)


def test_battlemage_needs_torch_2_6_which_first_supported_the_arc_b_series() -> None:
    p = plan("linux", "Intel(R) Arc(TM) B580 Graphics", "<2.7")
    assert (p.recommendation.torch, p.recommendation.variant) == ("2.6.0", "xpu")
    assert any(r.torch == "2.5.1" and "from torch 2.6 on" in r.reason for r in p.rejected)
    # an Alchemist board has no such floor
    assert plan("linux", "Arc A770", "==2.5.*").recommendation.variant == "xpu"


def test_data_center_max_on_windows_is_not_supported() -> None:
    p = plan("windows", "Intel Data Center GPU Max 1550")
    assert p.recommendation.kind == "none"
    assert any("on linux only" in r.reason for r in p.rejected)


def test_mac_arm64_names_the_mps_requirement() -> None:
    p = plan("macos", "none")
    assert any("MPS" in r and "12.3" in r for r in p.recommendation.reasons)


def test_intel_mac_says_mps_needs_apple_silicon() -> None:
    p = plan("macos", "none", "==2.2.*", arch="x86_64")
    assert any("Apple silicon" in r for r in p.recommendation.reasons)


def test_an_apple_gpu_name_plans_for_a_mac_on_apple_silicon() -> None:
    facts = apply_what_if(blank_facts("linux"), WhatIf(gpus=("Apple M2",)), kb)
    assert (facts.os, facts.arch) == ("macos", "aarch64")
    assert [(g.name, g.vendor) for g in facts.gpus] == [("Apple M2", "apple")]
    p = make_plan(facts, kb, PlanOptions())
    assert (p.recommendation.kind, p.recommendation.variant) == ("cpu", "cpu")
    assert any("MPS" in r and "12.3" in r for r in p.recommendation.reasons)
    tiers = apply_what_if(blank_facts("linux"), WhatIf(gpus=("m3 max gpu",)), kb)
    assert tiers.gpus[0].name == "Apple M3 Max"


def test_tesla_m_names_stay_nvidia_and_a_bare_m4_is_not_taken_for_apple() -> None:
    for name, cc in (("M60", "5.2"), ("M40", "5.2")):
        facts = apply_what_if(blank_facts("linux"), WhatIf(gpus=(name,)), kb)
        assert facts.os == "linux"
        assert (facts.gpus[0].vendor, facts.gpus[0].compute_capability) == ("nvidia", cc)
    with pytest.raises(UsageError, match="unknown GPU"):
        apply_what_if(blank_facts("linux"), WhatIf(gpus=("M4",)), kb)  # Tesla M4 or Apple M4?


def test_an_apple_gpu_off_macos_runs_torch_on_the_cpu_and_says_why() -> None:
    p = plan("linux", "Apple M1 Pro")
    assert p.machine.arch == "aarch64"
    assert p.recommendation.variant == "cpu"
    assert any("only through MPS on macOS" in r for r in p.recommendation.reasons)


def test_an_amd_gpu_of_unknown_gfx_says_how_to_find_it() -> None:
    from torchsmith.plan.model import GpuTarget, MachineFacts  # noqa: PLC0415

    facts = MachineFacts(
        os="linux", arch="x86_64", gpus=(GpuTarget("AMD Rembrandt [Radeon 680M]", None, "amd"),)
    )
    rec = make_plan(facts, kb, PlanOptions()).recommendation
    assert rec.kind == "none"
    assert "rocminfo" in rec.reasons[0]
    assert not _sentence_problems(rec.reasons[0])


def test_a_gfx_target_works_as_a_gpu_name() -> None:
    p = plan("linux", "gfx942")
    assert p.machine.gpus[0].gfx == "gfx942"
    assert (p.recommendation.variant or "").startswith("rocm")


def test_polaris_and_rdna1_have_no_rocm_wheel_and_no_override() -> None:
    # gfx803 (RX 580) and gfx1010 (RX 5700 XT) are in no PYTORCH_ROCM_ARCH list, and no built
    # target of their own family exists to pose as (RDNA 1 is not RDNA 2's gfx1030)
    for name, gfx in (("RX 580", "gfx803"), ("RX 5700 XT", "gfx1010"), ("RX 5500 XT", "gfx1012")):
        p = plan("linux", name)
        assert p.recommendation.kind == "none", name
        text = " ".join(p.recommendation.reasons)
        assert f"PYTORCH_ROCM_ARCH={gfx}" in text
        assert "HSA_OVERRIDE_GFX_VERSION" not in text
        assert "arch-not-compiled" in {r.category for r in p.rejected}
        assert not _sentence_problems(text)


def test_iris_xe_is_known_and_told_it_is_not_an_xpu_gpu() -> None:
    for os in ("windows", "linux"):
        p = plan(os, "Intel Iris Xe Graphics")
        assert p.recommendation.kind == "none"
        assert "the CPU wheel is what runs there" in p.recommendation.reasons[0]
        reasons = [
            r.reason
            for r in p.rejected
            if r.variant == "xpu" and "xpu wheels start with torch 2.5" not in r.reason
        ]
        assert reasons
        assert all("is not among the GPUs PyTorch's xpu wheels support" in r for r in reasons)
        assert not any(_sentence_problems(r) for r in reasons)


def test_an_integrated_gpu_beside_an_arc_board_does_not_block_it() -> None:
    # the Windows sycl-ls fixture's machine: UHD Graphics 770 (CPU) and an Arc A770
    facts = apply_what_if(
        blank_facts("windows"),
        WhatIf(os="windows", gpus=("Arc A770", "UHD Graphics 770")),
        kb,
    )
    rec = make_plan(facts, kb, PlanOptions()).recommendation
    assert rec.variant == "xpu"
    assert any("UHD Graphics 770 is not supported" in r for r in rec.reasons)


def test_an_unserved_amd_igpu_beside_a_served_board_is_hidden_not_overridden() -> None:
    # Ryzen 7000 desktops show their iGPU (gfx1036) to ROCm next to the Radeon board; a
    # process-wide HSA_OVERRIDE_GFX_VERSION=10.3.0 would make the gfx1100 board pose as gfx1030
    board = GpuTarget("AMD Radeon RX 7900 XTX", None, "amd", "gfx1100")
    igpu = GpuTarget("AMD Radeon Graphics", None, "amd", "gfx1036")
    rec = make_plan(replace(blank_facts("linux"), gpus=(board, igpu)), kb, PlanOptions())
    reasons = " ".join(rec.recommendation.reasons)
    assert rec.recommendation.kind == "wheel"
    assert "HIP_VISIBLE_DEVICES" in reasons
    assert "HSA_OVERRIDE_GFX_VERSION=" not in reasons
    assert not _sentence_problems(reasons)
    # where the served board is itself the stand-in, one override serves both
    rdna2 = (
        GpuTarget("AMD Radeon RX 6800", None, "amd", "gfx1030"),
        GpuTarget("AMD Radeon RX 6700 XT", None, "amd", "gfx1031"),
    )
    both = make_plan(replace(blank_facts("linux"), gpus=rdna2), kb, PlanOptions())
    assert any("HSA_OVERRIDE_GFX_VERSION=10.3.0" in r for r in both.recommendation.reasons)


def test_an_intel_mac_on_a_python_newer_than_its_last_torch_is_told_which_pythons() -> None:
    facts = apply_what_if(
        blank_facts("macos"), WhatIf(os="macos", arch="x86_64", python="3.13"), kb
    )
    rec = make_plan(facts, kb, PlanOptions()).recommendation
    assert rec.kind == "none"
    assert rec.reasons[0].startswith("torch 2.2.2 is the newest release with macos-x86_64 wheels")
    assert "3.12" in rec.reasons[0]


def test_where_no_build_can_use_the_gpu_the_cpu_wheel_commands_are_given() -> None:
    rec = plan("windows", "Radeon RX 7900 XTX").recommendation
    assert rec.kind == "none"
    assert set(rec.commands) == {"uv, CPU only", "pip, CPU only"}
    assert "--index-url" not in rec.commands["pip, CPU only"]  # Windows' PyPI torch is the CPU one


def test_a_jetson_plans_for_aarch64_linux_and_refuses_another_platform() -> None:
    facts = apply_what_if(blank_facts("linux"), WhatIf(gpus=("Jetson Orin",)), kb)
    assert (facts.os, facts.arch) == ("linux", "aarch64")
    with pytest.raises(UsageError, match="aarch64 Linux board"):
        apply_what_if(blank_facts("linux"), WhatIf(gpus=("Jetson Orin",), arch="x86_64"), kb)


def test_a_mac_plan_names_the_wheel_without_a_cpu_tag() -> None:
    from rich.console import Console  # noqa: PLC0415

    from torchsmith.render.plan import render_plan  # noqa: PLC0415

    console = Console(record=True, width=200)
    render_plan(plan("macos", "Apple M2"), console)
    text = console.export_text()
    assert "install torch 2." in text
    assert "+cpu" not in text
