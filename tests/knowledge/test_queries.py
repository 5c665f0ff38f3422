"""The query API the planner and doctor use."""

from __future__ import annotations

import pytest

from torchsmith.knowledge import load_knowledge
from torchsmith.knowledge.compat import coverage, driver_at_least, torch_cuda_arch_list

kb = load_knowledge()


@pytest.mark.parametrize(
    ("name", "cc", "kind"),
    [
        ("NVIDIA GeForce RTX 5070", "12.0", "desktop"),
        ("GeForce RTX 5070", "12.0", "desktop"),  # older drivers print no "NVIDIA "
        ("rtx 5070 ti", "12.0", "desktop"),
        ("NVIDIA GeForce RTX 4090 Laptop GPU", "8.9", "laptop"),
        ("NVIDIA GeForce RTX 2080 with Max-Q Design", "7.5", "laptop"),
        ("NVIDIA H200", "9.0", "datacenter"),
        ("NVIDIA H100 80GB HBM3", "9.0", "datacenter"),
        ("NVIDIA H100 PCIe", "9.0", "datacenter"),
        ("Tesla V100-SXM2-16GB", "7.0", "datacenter"),
        ("Tesla V100-PCIE-32GB", "7.0", "datacenter"),
        ("NVIDIA A100-SXM4-80GB", "8.0", "datacenter"),
        ("NVIDIA A100 80GB PCIe", "8.0", "datacenter"),
        ("NVIDIA A100-PCIE-40GB", "8.0", "datacenter"),
        ("Quadro RTX 6000", "7.5", "workstation"),
        ("NVIDIA RTX 6000 Ada Generation", "8.9", "workstation"),
        ("NVIDIA RTX A6000", "8.6", "workstation"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "12.0", "workstation"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0", "datacenter"),
        ("Orin (nvgpu)", "8.7", "embedded"),
        ("Jetson Orin Nano", "8.7", "embedded"),
        ("NVIDIA Thor", "11.0", "embedded"),
        ("NVIDIA GB10", "12.1", "workstation"),
        ("DGX Spark", "12.1", "workstation"),
        ("NVIDIA B200", "10.0", "datacenter"),
        ("NVIDIA GB300", "10.3", "datacenter"),
        ("NVIDIA B300 SXM6 AC", "10.3", "datacenter"),
        ("NVIDIA GeForce GTX 1080", "6.1", "desktop"),
        ("NVIDIA GeForce GTX 1060 6GB", "6.1", "desktop"),
        ("NVIDIA TITAN X (Pascal)", "6.1", "desktop"),
        ("GeForce GTX TITAN X", "5.2", "desktop"),
        ("NVIDIA GeForce GTX 970", "5.2", "desktop"),
        ("NVIDIA TITAN RTX", "7.5", "desktop"),
        ("Tesla T4", "7.5", "datacenter"),
        ("Tesla K80", "3.7", "datacenter"),
    ],
)
def test_find_gpu(name: str, cc: str, kind: str) -> None:
    gpu = kb.find_gpu(name)
    assert gpu is not None, name
    assert (gpu.compute_capability, gpu.kind) == (cc, kind)
    assert gpu.source in kb.sources


def test_laptop_variant_not_listed_falls_back_to_the_desktop_part() -> None:
    gpu = kb.find_gpu("NVIDIA GeForce RTX 4070 Ti SUPER Laptop GPU")
    assert gpu is not None
    assert (gpu.compute_capability, gpu.kind) == ("8.9", "laptop")


@pytest.mark.parametrize("name", ["", "NVIDIA", "Radeon RX 7900 XTX", "NVIDIA GeForce RTX 5075"])
def test_unknown_gpus(name: str) -> None:
    assert kb.find_gpu(name) is None


def test_suggest_gpus() -> None:
    assert "NVIDIA GeForce RTX 5070" in kb.suggest_gpus("RTX 5075")
    assert kb.suggest_gpus("NVIDIA GeForce GTX 1090")[0] == "NVIDIA GeForce GTX 1080"
    assert len(kb.suggest_gpus("RTX", limit=3)) <= 3


def test_every_gpu_name_finds_itself() -> None:
    for gpu in kb.gpus:
        found = kb.find_gpu(gpu.name)
        assert found is not None
        assert found.compute_capability == gpu.compute_capability
        for alias in gpu.aliases:
            assert kb.find_gpu(alias) == gpu, alias


def test_toolkit() -> None:
    tk = kb.toolkit("12.8.93")
    assert tk is not None
    assert tk == kb.toolkit("12.8")
    assert (tk.min_driver_linux, tk.min_driver_windows) == ("570.26", "570.65")
    assert "sm_120" in tk.sm_targets
    assert "sm_103" not in tk.sm_targets
    assert (tk.max_gcc_major, tk.max_clang_major, tk.msc_ver_min, tk.msc_ver_max) == (
        14,
        19,
        1910,
        1949,
    )
    assert kb.toolkit("12.7") is None
    assert kb.toolkit("twelve") is None


def test_toolkits_ascending_and_sm_changes() -> None:
    versions = [t.version for t in kb.toolkits]
    assert versions[0] == "11.7"
    assert versions[-1] == "13.5"
    assert versions == sorted(versions, key=lambda v: tuple(map(int, v.split("."))))
    t126, t130 = kb.toolkit("12.6"), kb.toolkit("13.0")
    assert t126 is not None
    assert t130 is not None
    assert "sm_61" in t126.sm_targets
    assert "sm_61" not in t130.sm_targets
    assert "sm_120" not in t126.sm_targets
    assert "sm_110" in t130.sm_targets
    assert "sm_101" not in t130.sm_targets
    assert t130.min_driver_windows is None  # NVIDIA prints N/A from 13.0 on


def test_toolkits_for_names_the_range_on_both_sides() -> None:
    # sm_61 is too new for nothing here and too old for CUDA 13.0 (it dropped sm_50..sm_72)
    assert [t.version for t in kb.toolkits_for(["sm_61"])][-1] == "12.9"
    assert kb.toolkits_for_text(["sm_61"]) == "CUDA 11.7 to 12.9"
    assert kb.toolkits_for_text(["sm_61"], have="13.0.88") == (
        "CUDA 11.7 to 12.9 (CUDA 13.0 dropped sm_61)"
    )
    assert kb.toolkits_for_text(["sm_120"], have="12.4") == "CUDA 12.8 or newer"
    assert kb.toolkits_for_text(["sm_30"]).startswith("no CUDA toolkit torchsmith knows")
    assert kb.toolkits_for_text(["sm_61"], have="garbage") == "CUDA 11.7 to 12.9"


def test_toolkit_130_targets_match_the_local_nvcc() -> None:
    # `nvcc --list-gpu-code` of /usr/local/cuda 13.0 (V13.0.88), recorded
    listed = "sm_75 sm_80 sm_86 sm_87 sm_88 sm_89 sm_90 sm_100 sm_110 sm_103 sm_120 sm_121"
    tk = kb.toolkit("13.0")
    assert tk is not None
    assert set(tk.sm_targets) == set(listed.split())


@pytest.mark.parametrize(
    ("cuda", "os_name", "floor"),
    [
        ("12.8", "linux", "525.60.13"),
        ("12.1", "windows", "527.41"),
        ("13.0", "linux", "580.65.06"),
        ("13.2.1", "windows", "580"),
        ("11.8", "linux", "450.80.02"),
        ("12.8", "macos", None),
        ("10.2", "linux", None),
    ],
)
def test_driver_floor(cuda: str, os_name: str, floor: str | None) -> None:
    assert kb.driver_floor(cuda, os_name) == floor


def test_torch_release_forms() -> None:
    r = kb.torch_release("2.11.0+cu130")
    assert r is not None
    assert r.version == "2.11.0"
    assert r == kb.torch_release("2.11")
    latest = kb.torch_release("2.14")
    assert latest is not None
    assert latest.version == "2.14.1"
    assert kb.torch_release("2.99.0") is None
    assert kb.torch_release("banana") is None


def test_releases_cover_2_0_to_newest_on_pypi() -> None:
    versions = [r.version for r in kb.releases]
    assert versions[0] == "2.0.0"
    assert versions[-1] == "2.15.0"
    assert len(versions) == 28


@pytest.mark.parametrize(
    ("torch", "vision", "audio"),
    [
        ("2.0.1", "0.15", "2.0"),
        ("2.6", "0.21", "2.6"),
        ("2.11.0", "0.26", "2.11"),
        ("2.13.0", "0.28", "2.11"),  # torchaudio 2.11 is the last release, for every later torch
        ("2.15.0", "0.29", "2.11"),  # no torchvision 0.30: 0.29.2 shipped with torch 2.15
    ],
)
def test_companions(torch: str, vision: str, audio: str) -> None:
    assert kb.companions(torch) == {"torchvision": vision, "torchaudio": audio}
    assert kb.companions("1.13") == {}


@pytest.mark.parametrize(
    ("torch", "platform", "variant"),
    [
        ("2.0.0", "linux", "cu117"),
        ("2.7.1", "linux-x86_64", "cu126"),
        ("2.8.0", "linux", "cu128"),
        ("2.10.0", "linux-aarch64", "cpu"),
        ("2.11.0", "linux-aarch64", "cu130"),
        ("2.11.0", "windows", "cpu"),
        ("2.14.1", "linux", "cu130"),
        ("2.15.0", "linux-arm64", "cu132"),
        ("2.15.0", "macos", "cpu"),
    ],
)
def test_pypi_default(torch: str, platform: str, variant: str) -> None:
    assert kb.pypi_default(torch, platform) == variant


def test_variant_archs() -> None:
    cu126 = kb.variant_archs("2.8.0", "cu126", "linux", "x86_64")
    assert cu126 is not None
    assert "sm_120" not in cu126.sass
    assert "sm_50" in cu126.sass
    cu128 = kb.variant_archs("2.8.0", "cu128", "linux", "amd64")
    assert cu128 is not None
    assert {"sm_70", "sm_100", "sm_120"} <= set(cu128.sass)
    win = kb.variant_archs("2.8.0", "cu128", "windows", "x86_64")
    assert win is not None
    assert "sm_70" not in win.sass
    cu118w = kb.variant_archs("2.3.1", "cu118", "windows", "x86_64")
    assert cu118w is not None
    assert cu118w.ptx == ("compute_37",)
    aarch = kb.variant_archs("2.13.0", "cu130", "linux", "arm64")
    assert aarch is not None
    assert "sm_110" in aarch.sass
    assert "sm_75" not in aarch.sass
    for sass in (kb.variant_archs(v, "cu130", "linux", "x86_64") for v in ("2.9", "2.14.1")):
        assert sass is not None
        assert not set(sass.sass) & {"sm_50", "sm_60", "sm_61", "sm_70"}
    assert kb.variant_archs("2.15.0", "cu126", "linux", "x86_64") is None  # not built
    assert kb.variant_archs("2.15.0", "cu130", "linux", "x86_64") is None  # archs unknown
    assert kb.wheel("2.15.0", "cu130", "linux", "x86_64") is not None  # but it exists


def test_cu126_never_carries_blackwell_and_cu128_always_does() -> None:
    for wheel in kb.wheels:
        if wheel.archs is None:
            continue
        if wheel.variant == "cu126":
            assert "sm_120" not in wheel.archs.sass
            assert "sm_100" not in wheel.archs.sass
        if wheel.variant in ("cu128", "cu129", "cu130", "cu132") and wheel.arch == "x86_64":
            assert {"sm_100", "sm_120"} <= set(wheel.archs.sass), wheel


@pytest.mark.parametrize(
    ("torch", "python", "platform", "ok"),
    [
        ("2.11.0", "3.14t", "linux", True),
        ("2.11.0", "3.14.2", "windows", True),
        ("2.15.0", "3.10", "linux", False),
        ("2.15.0", "3.15", "linux", True),
        ("2.5.1", "3.13", "linux", True),
        ("2.5.1", "3.13", "windows", False),  # 3.13 was Linux x86_64 only in 2.5
        ("2.1.2", "3.12", "linux", False),
        ("2.2.0", "3.12", "macos", True),
        ("2.2.0", "3.11", "macos-x86_64", True),
        ("2.3.0", "3.11", "macos-x86_64", None),  # no Intel-mac wheels from 2.3
        ("2.99.0", "3.11", "linux", None),
    ],
)
def test_python_supported(torch: str, python: str, platform: str, ok: bool | None) -> None:
    assert kb.python_supported(torch, python, platform) is ok


@pytest.mark.parametrize(
    ("sass", "ptx", "cc", "ok", "jit"),
    [
        (("sm_60",), (), "6.1", True, False),  # same major, newer minor
        (("sm_61",), (), "6.0", False, False),  # not backwards
        (("sm_90",), (), "12.0", False, False),  # no cross-major SASS
        (("sm_120",), (), "12.1", True, False),  # GB10 runs sm_120 cubins
        (("sm_90a", "sm_100a"), (), "10.0", False, False),  # arch-specific do not count
        (("sm_50",), ("compute_37",), "8.6", True, True),  # PTX JIT
        ((), ("compute_90",), "8.9", False, False),  # PTX only runs forward
    ],
)
def test_coverage(
    sass: tuple[str, ...], ptx: tuple[str, ...], cc: str, ok: bool, jit: bool
) -> None:
    result = coverage(sass, ptx, cc)
    assert (result.ok, result.jit) == (ok, jit)


def test_torch_cuda_arch_list() -> None:
    assert torch_cuda_arch_list(["12.0", "8.6", "12.0"]) == "8.6;12.0"
    assert torch_cuda_arch_list(["8.6"], ptx=True) == "8.6+PTX"


@pytest.mark.parametrize(
    ("driver", "floor", "ok"),
    [
        ("581.57", "580", True),
        ("580.159.04", "580.65.06", True),
        ("580.65.06", "580.65.06", True),
        ("570.124.06", "580.65.06", False),
        ("470.82.01", "525.60.13", False),
    ],
)
def test_driver_at_least(driver: str, floor: str, ok: bool) -> None:
    assert driver_at_least(driver, floor) is ok
