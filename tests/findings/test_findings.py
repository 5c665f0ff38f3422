"""Doctor's checks on probes of real machine shapes (values from recorded outputs)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from torchsmith.findings import analyze
from torchsmith.knowledge.build_facts import load_build_facts
from torchsmith.probe.model import (
    ArchSet,
    CudaToolkitInfo,
    DriverInfo,
    Finding,
    GpuInfo,
    HostInfo,
    Probe,
    PythonInfo,
    ToolInfo,
    TorchInfo,
)

GIB = 1024**3
SM_13_0 = tuple(f"sm_{a}" for a in (75, 80, 86, 87, 88, 89, 90, 100, 110, 103, 120, 121))
# SASS of torch 2.11.0+cu130's libtorch_cuda.so, from the H200 recording (cuobjdump_elf.txt).
TORCH_211_SASS = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")

HOST = HostInfo(
    os="linux",
    os_pretty="Ubuntu 24.04.3 LTS",
    arch="x86_64",
    cores_physical=16,
    cores_logical=16,
    ram_total_bytes=128 * GIB,
    disk_free_bytes=500 * GIB,
)
PYTHON = PythonInfo("/venv/bin/python", "3.12.3", "CPython", 64, env_kind="venv")
H200 = GpuInfo(0, "NVIDIA H200", compute_capability="9.0", memory_total_bytes=141 * GIB)
RTX5070 = GpuInfo(0, "NVIDIA GeForce RTX 5070", compute_capability="12.0")
DRIVER_580 = DriverInfo("580.159.04", "13.0", "nvml")
TK_130 = CudaToolkitInfo(
    "/usr/local/cuda-13.0",
    "13.0",
    "13.0.88",
    "/usr/local/cuda-13.0/bin/nvcc",
    found_via=("PATH", "/usr/local/cuda"),
    sm_targets=SM_13_0,
    selected=True,
)
TORCH_211 = TorchInfo(
    "2.11.0+cu130",
    "/venv/lib/python3.12/site-packages/torch",
    cuda="13.0",
    companions={"torchvision": "0.26.0+cu130"},
    archs=ArchSet(sass=TORCH_211_SASS),
)
GCC_13 = ToolInfo("gcc", "/usr/bin/gcc", "13.3.0")

H200_MACHINE = Probe(
    host=HOST,
    gpus=(H200,),
    driver=DRIVER_580,
    cuda_toolkits=(TK_130,),
    compilers=(GCC_13,),
    python=PYTHON,
    torch=TORCH_211,
)


def categories(findings: tuple[Finding, ...], severity: str | None = None) -> set[str]:
    return {f.category for f in findings if severity is None or f.severity == severity}


def test_the_h200_machine_is_healthy() -> None:
    findings = analyze(H200_MACHINE)
    assert categories(findings, "error") == set()
    assert categories(findings, "warning") == set()


def test_no_gpu_and_cpu_torch_is_info_not_error() -> None:
    probe = replace(
        H200_MACHINE,
        gpus=(),
        driver=DriverInfo(None, None, "nvidia-smi", error="nvidia-smi not found"),
        torch=TorchInfo("2.13.0+cpu", "/t/torch"),
    )
    findings = analyze(probe)
    by_cat = {f.category: f for f in findings}
    assert by_cat["no-gpu-visible"].severity == "info"
    assert by_cat["cpu-only-torch"].severity == "info"
    assert "nvidia-smi" in by_cat["no-gpu-visible"].fix


def test_cpu_torch_on_a_gpu_machine_is_an_error() -> None:
    probe = replace(H200_MACHINE, torch=TorchInfo("2.13.0+cpu", "/t/torch"))
    found = [f for f in analyze(probe) if f.category == "cpu-only-torch"]
    assert [f.severity for f in found] == ["error"]
    assert "NVIDIA H200" in found[0].message


def test_cu126_torch_on_an_rtx_5070_lacks_kernels() -> None:
    cu126 = TorchInfo(
        "2.7.1+cu126",
        "/t/torch",
        cuda="12.6",
        archs=ArchSet(sass=("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")),
    )
    probe = replace(H200_MACHINE, gpus=(RTX5070,), torch=cu126)
    errors = [f for f in analyze(probe) if f.severity == "error"]
    assert [f.category for f in errors] == ["arch-not-compiled"]
    assert "sm_120" in errors[0].message
    assert "no kernel image" in errors[0].message


def test_the_wheel_hint_fits_the_driver_and_pins_the_build() -> None:
    # an RTX 5070 on driver 570 (CUDA 12.8): a cu13x wheel would need driver 580, so the hint is a
    # cu128 build, pinned with its local label (pip takes "==2.11.0" as met by any 2.11.0 build)
    cu126 = TorchInfo(
        "2.7.1+cu126", "/t/torch", cuda="12.6", archs=ArchSet(sass=("sm_80", "sm_86", "sm_90"))
    )
    driver = DriverInfo("570.124.06", "12.8", "nvml")
    probe = replace(H200_MACHINE, gpus=(RTX5070,), torch=cu126, driver=driver)
    (error,) = [f for f in analyze(probe) if f.category == "arch-not-compiled"]
    assert '+cu128" --index-url https://download.pytorch.org/whl/cu128' in error.fix
    assert "cu13" not in error.fix


def test_an_old_driver_is_pointed_at_wheels_that_exist() -> None:
    # driver 535 reports CUDA 12.2: there are no cu122 wheels, but every cu12x build runs on it
    probe = replace(H200_MACHINE, driver=DriverInfo("535.104.05", "12.2", "nvml"))
    (error,) = [f for f in analyze(probe) if f.category == "driver-too-old"]
    assert "a cu12x build, CUDA 12.x runs on it" in error.fix
    assert "CUDA 12.2;" not in error.fix


def test_ptx_only_route_is_a_warning() -> None:
    ptx = TorchInfo("2.3.0", "/t/torch", cuda="12.1", archs=ArchSet(ptx=("compute_90",)))
    probe = replace(H200_MACHINE, gpus=(RTX5070,), torch=ptx)
    found = [f for f in analyze(probe) if f.category == "arch-not-compiled"]
    assert [f.severity for f in found] == ["warning"]


def test_driver_of_an_older_cuda_major_is_too_old() -> None:
    probe = replace(H200_MACHINE, driver=DriverInfo("550.54.14", "12.4", "nvml"))
    found = [f for f in analyze(probe) if f.category == "driver-too-old"]
    assert [f.severity for f in found] == ["error"]
    assert "550.54.14" in found[0].message


def test_driver_of_an_older_minor_runs_with_a_warning() -> None:
    torch = replace(TORCH_211, version="2.8.0+cu128", cuda="12.8", companions={})
    probe = replace(H200_MACHINE, driver=DriverInfo("550.54.14", "12.4", "nvml"), torch=torch)
    found = [f for f in analyze(probe) if f.category == "driver-too-old"]
    assert [f.severity for f in found] == ["warning"]


def test_companion_built_for_another_cuda() -> None:
    torch = replace(TORCH_211, companions={"torchvision": "0.26.0+cu128"})
    found = [f for f in analyze(replace(H200_MACHINE, torch=torch)) if f.subject == "torchvision"]
    assert found
    assert {f.category for f in found} == {"companion-version-mismatch"}


def test_companion_of_another_release_is_an_error() -> None:
    torch = replace(TORCH_211, companions={"torchvision": "0.20.1+cu130"})
    found = [
        f
        for f in analyze(replace(H200_MACHINE, torch=torch))
        if f.category == "companion-version-mismatch"
    ]
    assert [f.severity for f in found] == ["error"]


def test_old_toolkit_cannot_target_blackwell() -> None:
    sm_12_3 = tuple(f"sm_{a}" for a in (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90))
    tk = replace(TK_130, root="/usr/local/cuda-12.3", version="12.3", sm_targets=sm_12_3)
    probe = replace(H200_MACHINE, gpus=(RTX5070,), cuda_toolkits=(tk,), torch=None)
    found = [f for f in analyze(probe) if f.category == "toolkit-too-old-for-arch"]
    assert len(found) == 1
    assert "sm_120" in found[0].message


def test_a_toolkit_too_new_for_pascal_names_the_toolkits_that_can() -> None:
    gtx1080 = GpuInfo(0, "NVIDIA GeForce GTX 1080", compute_capability="6.1")
    probe = replace(H200_MACHINE, gpus=(gtx1080,), torch=None)
    (found,) = [f for f in analyze(probe) if f.category == "toolkit-too-old-for-arch"]
    assert "sm_61" in found.message
    assert "CUDA 11.7 to 12.9 (CUDA 13.0 dropped sm_61)" in (found.fix or "")


def test_toolkit_major_differs_from_torch() -> None:
    tk = replace(TK_130, version="12.4", full_version="12.4.131", sm_targets=())
    found = [
        f
        for f in analyze(replace(H200_MACHINE, cuda_toolkits=(tk,)))
        if f.category == "toolkit-torch-cuda-mismatch"
    ]
    assert [f.severity for f in found] == ["warning"]


def test_nvcc_on_path_differs_from_cuda_home() -> None:
    home = replace(
        TK_130, root="/opt/cuda-12.4", version="12.4", found_via=("CUDA_HOME",), selected=True
    )
    path = replace(TK_130, selected=False)
    found = [
        f
        for f in analyze(replace(H200_MACHINE, cuda_toolkits=(home, path)))
        if "nvcc on PATH" in f.message
    ]
    assert len(found) == 1
    assert "CUDA_HOME" in found[0].message


WIN_CUDA = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v13.0"


@pytest.mark.parametrize(
    ("os_name", "root", "fix"),
    [
        ("linux", "/usr/local/cuda-13.0", "export CUDA_HOME=/usr/local/cuda-13.0"),
        (
            "windows",
            WIN_CUDA,
            f'set "CUDA_HOME={WIN_CUDA}" (PowerShell: $env:CUDA_HOME="{WIN_CUDA}")',
        ),
    ],
)
def test_a_toolkit_without_headers_points_at_the_whole_one(
    os_name: str, root: str, fix: str
) -> None:
    # a bin/nvcc wrapper's parent picked over the toolkit it runs (as /usr/local on this machine)
    wrapper = replace(TK_130, root="/usr/local", nvcc="/usr/local/bin/nvcc", headers=False)
    whole = replace(TK_130, root=root, selected=False, headers=True)
    probe = replace(H200_MACHINE, host=replace(HOST, os=os_name), cuda_toolkits=(wrapper, whole))
    found = [f for f in analyze(probe) if "has no CUDA headers" in f.message]
    assert [f.fix for f in found] == [fix]


def test_gcc_newer_than_nvcc_allows() -> None:
    probe = replace(H200_MACHINE, compilers=(ToolInfo("gcc", "/usr/bin/gcc", "16.1.0"),))
    found = [f for f in analyze(probe) if f.category == "unsupported-host-compiler"]
    assert len(found) == 1
    assert "gcc 16.1.0" in found[0].message


def test_msvc_outside_the_accepted_range() -> None:
    msvc = ToolInfo("msvc", "C:/VS/cl.exe", "14.50.35717", details={"msc_ver": "1950"})
    tk = replace(TK_130, version="13.0")
    probe = replace(
        H200_MACHINE,
        host=replace(HOST, os="windows", os_pretty="Windows 11 Pro"),
        cuda_toolkits=(tk,),
        compilers=(msvc,),
    )
    found = [f for f in analyze(probe) if f.category == "unsupported-host-compiler"]
    assert len(found) == 1


@pytest.mark.parametrize(("bits", "expect"), [(32, True), (64, False)])
def test_32_bit_python(bits: int, expect: bool) -> None:
    probe = replace(H200_MACHINE, python=replace(PYTHON, bits=bits))
    assert ("python-unsupported" in categories(analyze(probe), "error")) is expect


def test_small_machine_gets_resource_notes() -> None:
    host = replace(HOST, ram_total_bytes=16 * GIB, disk_free_bytes=10 * GIB)
    found = analyze(replace(H200_MACHINE, host=host))
    oom = [f for f in found if f.category == "compile-oom"]
    assert oom
    assert "MAX_JOBS=2" in oom[0].fix
    assert any(f.subject == "disk" for f in found)
    # the same budget `torchsmith build` and `review` use: (16 GB - 4 kept free) // 5 GB per job
    assert load_build_facts().jobs_that_fit(16, cuda=True) == 2


def test_no_toolkit_on_a_gpu_machine_says_wheels_need_none() -> None:
    found = [
        f
        for f in analyze(replace(H200_MACHINE, cuda_toolkits=()))
        if f.category == "cuda-toolkit-not-found"
    ]
    assert [f.severity for f in found] == ["info"]
    assert "need only the driver" in found[0].fix


def test_mac_with_cpu_torch_is_not_flagged() -> None:
    mac = Probe(
        host=HostInfo(os="macos", os_pretty="macOS 15.1", arch="aarch64"),
        gpus=(GpuInfo(0, "Apple M3 Pro", vendor="apple"),),
        python=PYTHON,
        torch=TorchInfo("2.13.0", "/t/torch"),
    )
    found = analyze(mac)
    assert "cpu-only-torch" not in categories(found)
    assert any("MPS" in f.fix for f in found if f.category == "no-gpu-visible")


def test_findings_are_sorted_errors_first() -> None:
    probe = replace(
        H200_MACHINE, torch=TorchInfo("2.13.0+cpu", "/t/torch"), python=replace(PYTHON, bits=32)
    )
    severities = [f.severity for f in analyze(probe)]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)
