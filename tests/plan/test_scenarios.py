"""Real-life scenarios through the pure planner, described with what-if facts."""

from __future__ import annotations

import pytest

from torchsmith.knowledge import load_knowledge
from torchsmith.plan.machine import WhatIf, apply_what_if, blank_facts
from torchsmith.plan.model import Plan, PlanOptions
from torchsmith.plan.planner import make_plan
from torchsmith.taxonomy import CATEGORIES

kb = load_knowledge()


def plan(os: str = "linux", options: PlanOptions | None = None, **what: object) -> Plan:
    facts = apply_what_if(blank_facts(os), WhatIf(os=os, **what), kb)  # type: ignore[arg-type]
    result = make_plan(facts, kb, options or PlanOptions())
    for rejection in result.rejected:
        assert rejection.category in CATEGORIES
        assert rejection.reason
    return result


def rejected(p: Plan, variant: str, category: str) -> list[str]:
    return [r.reason for r in p.rejected if r.variant == variant and r.category == category]


def test_rtx5070_windows11_toolkit_12_3_python_3_11() -> None:
    p = plan("windows", gpus=("NVIDIA GeForce RTX 5070",), python="3.11", cuda_toolkits=("12.3",))
    rec = p.recommendation
    assert rec.kind == "wheel"
    assert rec.variant in ("cu128", "cu129", "cu130", "cu132")
    assert rec.index_url == f"https://download.pytorch.org/whl/{rec.variant}"  # Windows PyPI = CPU
    assert "--index-url" in rec.commands["pip"]
    assert "uv pip install" in rec.commands["uv"]
    assert p.source_build is None  # no source build needed
    cats = {f.category for f in p.findings}
    assert "toolkit-too-old-for-arch" in cats  # 12.3 cannot build for sm_120, but wheels don't care
    assert any("not used by the torch wheel" in f.message for f in p.findings)
    assert rejected(p, "cu126", "arch-not-compiled")


def test_rtx5070ti_driver_581_57_toolkit_12_4_python_3_13() -> None:
    p = plan(
        "windows",
        gpus=("NVIDIA GeForce RTX 5070 Ti",),
        driver="581.57",
        python="3.13",
        cuda_toolkits=("12.4",),
    )
    rec = p.recommendation
    assert rec.kind == "wheel"
    assert rec.variant in ("cu128", "cu129", "cu130", "cu132")
    assert kb.python_supported(rec.torch or "", "3.13", "windows") is True
    # cu124 wheels (torch 2.4-2.6) are rejected for the GPU, not the driver
    cu124 = rejected(p, "cu124", "arch-not-compiled")
    assert cu124
    assert "sm_120" in cu124[0]


def test_gtx1080_new_driver_gets_a_variant_with_pascal_code() -> None:
    p = plan("linux", gpus=("NVIDIA GeForce GTX 1080",), driver="580.95.05", python="3.12")
    rec = p.recommendation
    assert rec.kind == "wheel"
    assert rec.variant != "cu130"
    archs = kb.variant_archs(rec.torch or "", rec.variant or "", "linux", "x86_64")
    assert archs is not None
    assert {"sm_60", "sm_61"} & set(archs.sass)
    assert rejected(p, "cu130", "arch-not-compiled")
    assert rec.torch == "2.14.1"  # 2.15 dropped cu126, the last variant with Pascal code


def test_gtx1080_on_windows_gets_sm61() -> None:
    p = plan("windows", gpus=("GTX 1080",), driver="581.57", python="3.12")
    archs = kb.variant_archs(p.recommendation.torch or "", "cu126", "windows", "x86_64")
    assert p.recommendation.variant == "cu126"
    assert archs is not None
    assert "sm_61" in archs.sass


def test_a100_driver_470() -> None:
    p = plan("linux", gpus=("NVIDIA A100-SXM4-80GB",), driver="470.256.02", python="3.10")
    # every CUDA 12/13 wheel is rejected for the driver
    for r in p.rejected:
        if r.variant and r.variant.startswith(("cu12", "cu13")):
            assert r.category in ("driver-too-old", "other"), r
    assert rejected(p, "cu130", "driver-too-old")
    # the old torch that still runs: a cu11x wheel under 11.x minor-version compatibility
    assert p.recommendation.variant == "cu118"
    assert p.recommendation.torch == "2.7.1"
    drv = [f for f in p.findings if f.category == "driver-too-old"]
    assert drv
    assert ">= 580.65.06" in drv[0].message


def test_a100_driver_470_pinned_to_new_torch_is_none() -> None:
    p = plan("linux", PlanOptions(torch=">=2.8"), gpus=("A100",), driver="470.256.02")
    assert p.recommendation.kind == "none"
    assert "too old" in p.recommendation.reasons[0]
    assert any(f.severity == "error" and f.category == "driver-too-old" for f in p.findings)


def test_h100_pinned_to_2_1() -> None:
    p = plan("linux", PlanOptions(torch="==2.1.*"), gpus=("NVIDIA H100 80GB HBM3",), python="3.11")
    rec = p.recommendation
    assert rec.torch == "2.1.2"
    assert rec.variant == "cu121"
    assert rec.index_url is None  # the PyPI default of 2.1 is cu121
    assert "torchvision==0.16.*" in rec.commands["pip"]
    assert all(a.torch and a.torch.startswith("2.1.") for a in p.alternatives)


def test_h100_pinned_to_2_1_with_python_3_12_is_none() -> None:
    p = plan("linux", PlanOptions(torch="==2.1.*"), gpus=("H100",), python="3.12")
    assert p.recommendation.kind == "none"
    assert [r.category for r in p.rejected] == ["python-unsupported"]


def test_mac_gets_the_default_wheel() -> None:
    p = plan("macos", python="3.12")
    rec = p.recommendation
    assert rec.kind == "cpu"
    assert rec.index_url is None
    assert rec.torch == kb.newest_release().version
    assert "MPS" in rec.reasons[0]


def test_intel_mac_stops_at_2_2() -> None:
    p = plan("macos", arch="x86_64", python="3.11")
    assert p.recommendation.torch == "2.2.2"


def test_no_gpu_linux_gets_cpu_index() -> None:
    p = plan("linux", gpus=("none",), python="3.12")
    rec = p.recommendation
    assert (rec.kind, rec.variant) == ("cpu", "cpu")
    assert rec.index_url == "https://download.pytorch.org/whl/cpu"


def test_no_gpu_windows_gets_pypi_default() -> None:
    p = plan("windows", python="3.12")
    assert (p.recommendation.kind, p.recommendation.index_url) == ("cpu", None)


def test_jetson_orin() -> None:
    p = plan("linux", arch="arm64", gpus=("Orin (nvgpu)",), python="3.10")
    rec = p.recommendation
    assert rec.kind == "none"
    assert "Jetson" in rec.reasons[0]
    assert all(r.source == ("jetson_pytorch",) for r in p.rejected)
    assert p.source_build is not None
    assert p.source_build.torch_cuda_arch_list == "8.7"
    # JetPack brings the toolkit: the plan says so instead of sending the user to a download
    assert "uses the CUDA of its JetPack release" in rec.reasons[1]


def test_the_jetson_names_users_type_find_their_gpu() -> None:
    p = plan("linux", arch="arm64", gpus=("Jetson Orin",), python="3.10")
    assert p.recommendation.kind == "none"
    assert "Jetson" in p.recommendation.reasons[0]


def test_jetson_thor_runs_the_sbsa_wheels() -> None:
    p = plan("linux", arch="aarch64", gpus=("NVIDIA Thor",), python="3.12", driver="580.65.06")
    assert p.recommendation.kind == "wheel"
    assert p.recommendation.index_url is None  # PyPI aarch64 is a CUDA build since 2.11


def test_dgx_spark_gb10_on_aarch64() -> None:
    p = plan("linux", arch="aarch64", gpus=("NVIDIA GB10",), python="3.12", driver="580.95.05")
    assert p.recommendation.kind == "wheel"
    assert "sm_120" in p.recommendation.reasons[0]


def test_multi_gpu_one_served_by_no_single_wheel() -> None:
    p = plan("linux", gpus=("RTX 5090", "GTX 1080"), driver="580.95.05", python="3.12")
    rec = p.recommendation
    assert rec.kind == "source"
    assert p.source_build is not None
    assert p.source_build.torch_cuda_arch_list == "6.1;12.0"
    assert (p.source_build.toolkit_min, p.source_build.toolkit_max) == ("12.8", "12.9")
    assert any("GTX 1080 alone would be served" in r for r in rec.reasons)
    assert any("RTX 5090 alone would be served" in r for r in rec.reasons)


def test_multi_gpu_both_served() -> None:
    p = plan("linux", gpus=("RTX 4090", "RTX 3090"), driver="580.95.05", python="3.12")
    assert p.recommendation.kind == "wheel"
    assert p.recommendation.index_url is None


def test_kepler_is_served_only_by_old_cu118_wheels() -> None:
    p = plan("linux", gpus=("Tesla K80",), driver="470.256.02", python="3.10")
    assert (p.recommendation.torch, p.recommendation.variant) == ("2.7.1", "cu118")


def test_volta_on_linux_after_2_11_needs_cu126() -> None:
    p = plan(
        "linux", PlanOptions(torch="==2.11.*"), gpus=("Tesla V100-SXM2-16GB",), driver="580.95.05"
    )
    assert p.recommendation.variant == "cu126"
    assert rejected(p, "cu128", "arch-not-compiled")  # sm_70 dropped from cu128 in 2.11


def test_rtx5070_pinned_to_2_6_is_none_with_reason() -> None:
    p = plan("linux", PlanOptions(torch="==2.6.*"), gpus=("RTX 5070",), python="3.12")
    assert p.recommendation.kind == "none"
    assert any("12.8" in r for r in p.recommendation.reasons)


def test_cc_12_with_torch_2_1_is_none_not_a_crash() -> None:
    p = plan("linux", PlanOptions(torch="==2.1.*"), ccs=("12.0",))
    assert p.recommendation.kind == "none"
    assert "a source build does not help" in p.recommendation.reasons[-1]


def test_macos_with_an_nvidia_gpu_is_none() -> None:
    p = plan("macos", gpus=("RTX 4090",))
    assert p.recommendation.kind == "none"
    assert "macOS has no CUDA" in p.recommendation.reasons[0]


def test_prefer_source_for_rtx5070() -> None:
    p = plan(
        "linux",
        PlanOptions(prefer="source", ptx=True),
        gpus=("RTX 5070",),
        python="3.12",
        cuda_toolkits=("13.0",),
    )
    rec = p.recommendation
    assert rec.kind == "source"
    assert p.source_build is not None
    assert p.source_build.torch_cuda_arch_list == "12.0+PTX"
    assert p.source_build.toolkit == "13.0"  # the installed one fits
    assert p.source_build.installed_toolkit_ok is True
    assert p.source_build.gcc_max_major == 15
    assert 'TORCH_CUDA_ARCH_LIST="12.0+PTX"' in rec.commands["pip"]
    assert p.alternatives  # the wheels still work


def test_python_too_new_for_newest_torch_is_a_finding() -> None:
    p = plan("linux", gpus=("RTX 4090",), python="3.10", driver="580.95.05")
    assert p.recommendation.torch == "2.14.1"
    assert any(f.category == "python-unsupported" for f in p.findings)


def test_unknown_driver_is_said() -> None:
    p = plan("linux", gpus=("RTX 4090",), python="3.12")
    assert any("driver version is unknown" in f.message for f in p.findings)


def test_installer_conda_and_uv_only() -> None:
    p = plan("linux", PlanOptions(installer="conda"), gpus=("RTX 4090",))
    assert list(p.recommendation.commands) == ["conda"]
    p = plan("linux", PlanOptions(installer="uv"), gpus=("RTX 4090",))
    assert list(p.recommendation.commands) == ["uv"]


def test_no_release_matches() -> None:
    p = plan("linux", PlanOptions(torch="==3.0.*"))
    assert p.recommendation.kind == "none"
    assert "no torch release matches" in p.recommendation.reasons[0]


@pytest.mark.parametrize(
    "cc",
    ["3.5", "5.2", "6.0", "7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "10.3", "12.0", "12.1"],
)
def test_every_common_cc_gets_an_answer_with_a_new_driver(cc: str) -> None:
    p = plan("linux", ccs=(cc,), driver="580.95.05", python="3.10")
    assert p.recommendation.kind in ("wheel", "source")


def test_a_variant_the_driver_supports_natively_is_preferred() -> None:
    # Driver 581.57 (Windows) supports CUDA 13.0: cu130 first, cu132 only as an alternative.
    p = plan("windows", gpus=("NVIDIA GeForce RTX 5070",), python="3.11", driver="581.57")
    assert p.recommendation.variant == "cu130"
    assert "cu132" in {a.variant for a in p.alternatives}


def test_the_pypi_default_under_minor_version_compatibility_says_so() -> None:
    p = plan("linux", gpus=("NVIDIA H200",), python="3.12", driver="580.159.04")
    rec = p.recommendation
    assert (rec.torch, rec.variant, rec.index_url) == ("2.15.0", "cu132", None)
    assert any("minor-version compatibility" in r for r in rec.reasons)
