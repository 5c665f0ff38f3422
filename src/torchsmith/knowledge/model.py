"""The knowledge base's value objects: frozen dataclasses, each naming the source keys behind it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

GpuKind = Literal["desktop", "laptop", "workstation", "datacenter", "embedded"]
SourceStatus = Literal["verified-binary", "primary", "build-script", "secondary", "unverified"]
FactStatus = Literal["verified-binary", "build-script", "secondary", "unverified"]

GPU_KINDS: tuple[str, ...] = GpuKind.__args__  # type: ignore[attr-defined]
SOURCE_STATUSES: tuple[str, ...] = SourceStatus.__args__  # type: ignore[attr-defined]
FACT_STATUSES: tuple[str, ...] = FactStatus.__args__  # type: ignore[attr-defined]

# Platforms as the knowledge base keys them: "<os>-<cpu arch>".
PLATFORMS: tuple[str, ...] = (
    "linux-x86_64",
    "linux-aarch64",
    "windows-x86_64",
    "macos-arm64",
    "macos-x86_64",
)


@dataclass(frozen=True)
class Source:
    key: str
    title: str
    url: str
    date: str
    status: SourceStatus
    note: str | None = None


@dataclass(frozen=True)
class GpuModel:
    name: str  # as NVML / nvidia-smi print it
    compute_capability: str  # "12.0"
    architecture: str  # "Blackwell"
    kind: GpuKind
    source: str
    aliases: tuple[str, ...] = ()

    @property
    def sm(self) -> str:
        """The SASS target of this GPU: "sm_120" for 12.0."""
        return "sm_" + self.compute_capability.replace(".", "")


@dataclass(frozen=True)
class CudaToolkit:
    version: str  # "12.8"
    full_version: str | None  # "12.8.93": the build the target list was read from
    min_driver_linux: str | None  # GA release minimum; None when no source gives it
    min_driver_windows: str | None  # None from 13.0 on: NVIDIA prints N/A
    sm_targets: tuple[str, ...]  # ("sm_50", ..., "sm_120") that its nvcc can compile for
    max_gcc_major: int
    max_clang_major: int
    msc_ver_min: int
    msc_ver_max: int
    sources: tuple[str, ...]

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    def min_driver(self, os_name: str) -> str | None:
        """The release's minimum driver on ``os_name`` (Windows' or Linux's; None if not known)."""
        return self.min_driver_windows if os_name == "windows" else self.min_driver_linux


@dataclass(frozen=True)
class ArchSuffix:
    """Arch-specific ("a": sm_90a) or family-specific ("f": sm_100f) code: from which compute
    capability it exists, and the first CUDA whose nvcc emits it."""

    suffix: str  # "a" | "f"
    first_cc: str  # "9.0"
    min_cuda: str  # "12.0"
    sources: tuple[str, ...]
    # the CMake versions whose CMAKE_CUDA_ARCHITECTURES takes it, as specifier sets (any of them)
    cmake: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceBuildRange:
    """The CUDA toolkits a source build of one torch minor accepts (CMake floor to newest CI)."""

    torch: str  # minor: "2.15"
    cuda_min: str  # "12.6": cmake/public/cuda.cmake's minimum, or the oldest CI toolkit
    cuda_max: str  # "13.2": the newest toolkit the release's CI built with
    status: FactStatus
    sources: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class DriverFloor:
    cuda_major: int
    linux: str
    windows: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class WheelArchs:
    """The GPU code in one torch wheel variant for one OS and CPU architecture."""

    sass: tuple[str, ...]  # "sm_75", ...: cubins for the whole library
    ptx: tuple[str, ...]  # "compute_37", ...: PTX the driver can JIT for newer GPUs
    source: tuple[str, ...]
    status: FactStatus = "build-script"
    extra: tuple[str, ...] = ()  # arch-specific cubins of a few kernels: "sm_90a", "sm_121a"


@dataclass(frozen=True)
class Wheel:
    """One variant of one torch minor on one platform (download.pytorch.org/whl/<variant>)."""

    torch: str  # minor: "2.11"
    variant: str  # "cu130", "cpu", "rocm6.4"
    os: str  # linux, windows
    arch: str  # x86_64, aarch64
    archs: WheelArchs | None  # None: the wheel exists but its archs are not established
    status: FactStatus
    sources: tuple[str, ...]

    @property
    def cuda(self) -> str | None:
        """The CUDA version of a cuXYZ variant: "cu128" → "12.8"; None otherwise."""
        return variant_cuda(self.variant)

    @property
    def index_url(self) -> str:
        return index_url(self.variant)


@dataclass(frozen=True)
class Companions:
    torch: str  # minor
    torchvision: str
    torchaudio: str
    sources: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class TorchRelease:
    version: str  # "2.11.0"
    date: str
    requires_python: str
    python: dict[str, tuple[str, ...]]  # platform -> ("3.10", "3.11", ..., "3.14t")
    pypi_default: dict[str, str]  # platform -> variant of the PyPI wheel
    sources: tuple[str, ...]
    companions: Companions | None = None
    variants: tuple[str, ...] = field(default=())  # every variant on the PyTorch index

    @property
    def minor(self) -> str:
        return minor_of(self.version)


def minor_of(version: str) -> str:
    parts = version.split("+", maxsplit=1)[0].split(".")
    return ".".join(parts[:2])


def variant_cuda(variant: str) -> str | None:
    if not variant.startswith("cu") or not variant[2:].isdigit() or len(variant) < 5:
        return None
    digits = variant[2:]
    return f"{digits[:-1]}.{digits[-1]}"


def index_url(variant: str) -> str:
    return f"https://download.pytorch.org/whl/{variant}"


@dataclass(frozen=True)
class AmdGpu:
    name: str  # "AMD Radeon RX 7900 XTX"
    gfx: str  # LLVM target: "gfx1100"
    consumer: bool  # a Radeon board (ROCm lists few of them)
    sources: tuple[str, ...]
    aliases: tuple[str, ...] = ()

    @property
    def hsa_version(self) -> str:
        """The gfx target as HSA_OVERRIDE_GFX_VERSION writes it: gfx1100 -> 11.0.0."""
        return gfx_to_hsa(self.gfx)


@dataclass(frozen=True)
class RocmArchs:
    """The gfx targets (PYTORCH_ROCM_ARCH) of one torch minor's rocm wheels."""

    torch: str
    variants: tuple[str, ...]
    gfx: tuple[str, ...]
    status: FactStatus
    sources: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class IntelGpu:
    name: str
    family: str
    os: tuple[str, ...]  # where the xpu wheels support it
    sources: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    torch_min: str | None = None  # the first torch whose xpu wheels support it; None: all


@dataclass(frozen=True)
class XpuSupport:
    torch_min: str  # "2.5"
    os: tuple[str, ...]
    status: FactStatus
    sources: tuple[str, ...]


@dataclass(frozen=True)
class MpsRequirement:
    macos_min: str  # "12.3"
    arch: str  # "aarch64"
    sources: tuple[str, ...]


def gfx_to_hsa(gfx: str) -> str:
    """gfx1100 -> 11.0.0, gfx90a -> 9.0.10, gfx1030 -> 10.3.0 (major, minor, stepping in hex)."""
    digits = gfx.removeprefix("gfx")
    major, minor, step = digits[:-2], digits[-2], digits[-1]
    return f"{int(major)}.{int(minor, 16)}.{int(step, 16)}"


def hsa_to_gfx(version: int | str) -> str | None:
    """KFD's gfx_target_version (110000, 90010) or "11.0.0" -> gfx1100 / gfx90a."""
    if isinstance(version, str):
        parts = version.split(".")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            return None
        major, minor, step = (int(p) for p in parts)
    else:
        major, minor, step = version // 10000, (version // 100) % 100, version % 100
    if major <= 0 or minor > 15 or step > 15:
        return None
    return f"gfx{major}{minor:x}{step:x}"
