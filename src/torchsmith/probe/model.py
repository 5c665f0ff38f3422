"""The probe: everything torchsmith knows about a machine, as plain frozen dataclasses.

``Probe`` serialises to the ``data`` of ``torchsmith doctor --json`` (a *probe file*) and is
read back with :func:`torchsmith.probe.io.load_probe`. Every section that could not be
collected says why in ``error`` rather than being silently empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from torchsmith.taxonomy import Category, Severity

PROBE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Finding:
    """One problem (or notable fact) with a concrete fix."""

    category: Category
    severity: Severity
    message: str
    fix: str
    subject: str | None = None  # what it is about: "gpu 0", "torch", "nvcc", ...
    source: str | None = None  # where the fact behind it comes from (URL or KB source key)
    path: str | None = None  # the file it is about, where it is about one (a stale CMakeCache.txt)


@dataclass(frozen=True)
class HostInfo:
    os: Literal["linux", "windows", "macos"]
    os_pretty: str  # "Ubuntu 24.04.1 LTS", "Windows 11 Pro (build 26100)", "macOS 15.1"
    os_version: str | None = None  # "24.04", "10.0.26100", "15.1"
    os_build: str | None = None  # Windows build number, macOS build, Linux kernel release
    arch: str = "x86_64"  # normalised: x86_64, aarch64, arm64 is reported as aarch64
    cpu_model: str | None = None
    cores_physical: int | None = None
    cores_logical: int | None = None
    cores_performance: int | None = None  # P-cores where the OS tells (hybrid CPUs)
    cores_efficiency: int | None = None
    ram_total_bytes: int | None = None
    ram_available_bytes: int | None = None
    disk_path: str | None = None  # where a build would go (the working directory)
    disk_free_bytes: int | None = None
    wsl: bool = False
    container: str | None = None  # "docker", "podman", "lxc", "kubernetes", "container" or None
    cuda_visible_devices: str | None = None  # the variable as set (None: not set)
    nvidia_driver_capabilities: str | None = None  # NVIDIA_DRIVER_CAPABILITIES (containers)
    nvidia_devices: tuple[str, ...] | None = None  # /dev/nvidia* on Linux: nvidiactl, nvidia-uvm...
    error: str | None = None


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    vendor: Literal["nvidia", "amd", "intel", "apple"] = "nvidia"
    compute_capability: str | None = None  # "9.0", "12.0"; None for non-NVIDIA
    memory_total_bytes: int | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    mig_mode: str | None = None  # "Enabled" / "Disabled" / None (not supported)
    source: str = "nvml"  # nvml, nvidia-smi-xml, nvidia-smi-csv, lspci, sysfs, system_profiler, ...
    gfx: str | None = None  # AMD: the LLVM target the ROCm runtime reports ("gfx1100")


@dataclass(frozen=True)
class DriverInfo:
    version: str | None  # "580.159.04"
    cuda_version: str | None  # highest CUDA the driver supports, "13.0"
    source: str  # nvml, nvidia-smi-xml, /proc/driver/nvidia/version, ...
    error: str | None = None  # why the driver could not be read, when it could not


@dataclass(frozen=True)
class CudaToolkitInfo:
    root: str
    version: str | None  # "13.0"
    full_version: str | None = None  # "13.0.88"
    nvcc: str | None = None
    found_via: tuple[str, ...] = ()  # "CUDA_HOME", "PATH", "/usr/local/cuda-*", "pip", ...
    sm_targets: tuple[str, ...] = ()  # from nvcc --list-gpu-code: "sm_75", ...
    compute_targets: tuple[str, ...] = ()  # from nvcc --list-gpu-arch: "compute_75", ...
    selected: bool = False  # the one a build would pick
    selected_reason: str | None = None
    headers: bool | None = None  # include/cuda_runtime.h present (None: root not readable)
    error: str | None = None


@dataclass(frozen=True)
class ToolInfo:
    name: str  # gcc, g++, clang, msvc, cmake, ninja, ccache, sccache, git
    path: str | None
    version: str | None
    details: dict[str, str] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class PythonInfo:
    executable: str
    version: str  # "3.11.7"
    implementation: str  # "CPython", "PyPy"
    bits: int  # 64 or 32
    free_threaded: bool = False
    env_kind: str = "system"  # venv, conda, system
    env_prefix: str | None = None
    platform_tag: str | None = None  # sysconfig.get_platform(): linux-x86_64, win-amd64
    site_packages: tuple[str, ...] = ()
    error: str | None = None
    timed_out_s: float | None = None  # the probe got no answer within this many seconds (a hang)


@dataclass(frozen=True)
class ArchSet:
    """GPU code found in a set of binaries: SASS (sm_XY[a|f]) and PTX (compute_XY[a|f])."""

    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    files: tuple[str, ...] = ()  # which binaries were read
    error: str | None = None


@dataclass(frozen=True)
class TorchInfo:
    version: str  # "2.11.0+cu130"
    location: str
    cuda: str | None = None  # torch.version.cuda, None for CPU builds
    hip: str | None = None
    git_version: str | None = None
    debug: bool | None = None
    cudnn: str | None = None  # version of the cuDNN it ships or depends on
    nccl: str | None = None
    companions: dict[str, str] = field(default_factory=dict)  # torchvision, torchaudio, triton...
    archs: ArchSet | None = None  # what its CUDA libraries contain
    sources: dict[str, str] = field(default_factory=dict)  # where cudnn/nccl versions were read
    error: str | None = None


@dataclass(frozen=True)
class ProbeMeta:
    schema_version: int = PROBE_SCHEMA_VERSION
    torchsmith: str = ""
    created: str = ""  # ISO 8601 UTC
    duration_s: float = 0.0
    section_seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class RocmDevice:
    """One AMD GPU as the ROCm stack sees it (KFD topology or rocminfo)."""

    gfx: str  # "gfx1100"
    pci_bus_id: str | None = None  # "0000:03:00.0" when the source gives it
    name: str | None = None  # rocminfo's Marketing Name


@dataclass(frozen=True)
class RocmInfo:
    """The ROCm side of an AMD machine (Linux): what the runtime sees and who may use it."""

    devices: tuple[RocmDevice, ...] = ()
    source: str = "kfd-topology"  # kfd-topology, rocminfo
    runtime_version: str | None = None  # /opt/rocm/.info/version: "6.4.1-120"
    kfd_present: bool = False  # /dev/kfd exists
    user_groups: tuple[str, ...] | None = None  # the probing user's groups; None: unknown
    hsa_override: str | None = None  # HSA_OVERRIDE_GFX_VERSION in the environment


@dataclass(frozen=True)
class SyclDevice:
    """One line of ``sycl-ls``: which runtime (level_zero, opencl) sees which device."""

    backend: str  # "level_zero" (also "ext_oneapi_level_zero"), "opencl", ...
    device_type: str  # "gpu", "cpu", "acc", "fpga"
    name: str  # "Intel(R) Arc(TM) A770 Graphics"


@dataclass(frozen=True)
class XpuInfo:
    """What Intel's SYCL runtime sees (``sycl-ls``); the xpu wheels use its Level Zero GPUs."""

    devices: tuple[SyclDevice, ...] = ()
    source: str = "sycl-ls"


@dataclass(frozen=True)
class Probe:
    host: HostInfo
    gpus: tuple[GpuInfo, ...] = ()
    driver: DriverInfo | None = None
    cuda_toolkits: tuple[CudaToolkitInfo, ...] = ()
    compilers: tuple[ToolInfo, ...] = ()
    build_tools: tuple[ToolInfo, ...] = ()
    python: PythonInfo | None = None
    torch: TorchInfo | None = None
    findings: tuple[Finding, ...] = ()
    meta: ProbeMeta = field(default_factory=ProbeMeta)
    rocm: RocmInfo | None = None
    xpu: XpuInfo | None = None

    def build_tool(self, name: str) -> ToolInfo | None:
        """The first build tool of this name that was found (has a path): the one builds run."""
        return next((t for t in self.build_tools if t.name == name and t.path), None)
