"""The planner's inputs and result, as frozen dataclasses (rendered by render/plan.py or --json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from torchsmith.probe.model import Finding
from torchsmith.taxonomy import Category

Origin = Literal["live", "probe-file", "what-if"]
Installer = Literal["uv", "pip", "conda"]
Prefer = Literal["wheel", "source"]
RecommendationKind = Literal["wheel", "source", "cpu", "none"]


@dataclass(frozen=True)
class GpuTarget:
    """One GPU the plan must serve."""

    name: str
    compute_capability: str | None  # None for non-NVIDIA GPUs
    vendor: Literal["nvidia", "amd", "intel", "apple"] = "nvidia"
    architecture: str | None = None
    kind: str | None = None  # desktop, laptop, workstation, datacenter, embedded
    source: str | None = None  # KB source key when the compute capability came from the KB

    @property
    def sm(self) -> str | None:
        cc = self.compute_capability
        return None if cc is None else "sm_" + cc.replace(".", "")

    @property
    def gfx(self) -> str | None:
        """An AMD GPU's LLVM target ("gfx1100"); None for other vendors or when unknown."""
        return self.architecture if self.vendor == "amd" else None

    @property
    def jetson(self) -> bool:
        """A Jetson GPU that runs JetPack's CUDA (Thor is SBSA: it runs server wheels)."""
        return self.kind == "embedded" and self.compute_capability in ("5.3", "6.2", "7.2", "8.7")


@dataclass(frozen=True)
class MachineFacts:
    """Everything the planner needs to know about a machine; from a probe, a file or flags."""

    os: Literal["linux", "windows", "macos"]
    arch: str  # x86_64, aarch64 (arm64 on macOS is aarch64 too)
    gpus: tuple[GpuTarget, ...] = ()
    driver: str | None = None  # "580.159.04"; None when unknown
    python: str | None = None  # "3.11" or "3.13t"; None when unknown
    cuda_toolkits: tuple[str, ...] = ()  # installed toolkits: "12.4", "13.0"
    gcc_major: int | None = None
    msc_ver: int | None = None
    cmake: str | None = None  # the cmake first on PATH: "3.25.1"; None when unknown
    origin: Origin = "live"
    notes: tuple[str, ...] = ()  # what could not be probed, and similar
    # the interpreter --python named (absolute): the plan's commands install into it, not into
    # whichever Python is active where they are pasted
    python_path: str | None = None
    torch_installed: str | None = None  # the torch the planned-for Python has now: "2.13.0+cpu"


@dataclass(frozen=True)
class PlanOptions:
    torch: str | None = None  # a version constraint: "==2.6.*", ">=2.4,<2.8"
    prefer: Prefer = "wheel"
    installer: Installer | None = None  # None: show uv and pip
    ptx: bool = False  # add +PTX to TORCH_CUDA_ARCH_LIST for a source build


@dataclass(frozen=True)
class Recommendation:
    kind: RecommendationKind
    torch: str | None  # "2.15.0"
    variant: str | None  # "cu130", "cpu", "rocm7.2"; None for source builds and none
    index_url: str | None  # None: the default PyPI index
    commands: dict[str, str] = field(default_factory=dict)  # installer -> command line
    reasons: tuple[str, ...] = ()
    min_driver: str | None = None  # the driver this choice needs on this OS
    companions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Rejection:
    torch: str
    variant: str | None  # None when the whole release is rejected (e.g. Python)
    category: Category
    reason: str
    source: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceBuild:
    """The input a source build of torch needs for this machine's GPUs."""

    torch: str  # the release to build
    torch_cuda_arch_list: str  # "6.1" or "8.6;12.0" (+PTX only when asked)
    toolkit_min: str  # lowest CUDA toolkit whose nvcc targets every GPU (and the torch supports)
    toolkit_max: str  # highest such toolkit the knowledge base knows that torch was released with
    toolkit: str  # the one to use
    installed_toolkit_ok: bool | None  # None: no toolkit installed / unknown
    gcc_max_major: int
    clang_max_major: int
    msc_ver_min: int
    msc_ver_max: int
    sources: tuple[str, ...] = ()
    accepts: str | None = None  # "12.6-13.2": the toolkits the release's source build accepts

    @property
    def toolkit_span(self) -> str:
        """The toolkits that can build it: "12.6 to 12.9" as min and max joined by a dash."""
        if self.toolkit_min == self.toolkit_max:
            return self.toolkit_min
        return f"{self.toolkit_min}–{self.toolkit_max}"

    def host_compilers(self, os_name: str) -> str:
        """The host compilers nvcc accepts for this build, on the OS it runs on."""
        if os_name == "windows":
            return f"MSVC _MSC_VER {self.msc_ver_min}–{self.msc_ver_max}"
        return f"gcc <= {self.gcc_max_major}, clang <= {self.clang_max_major}"


@dataclass(frozen=True)
class Plan:
    machine: MachineFacts
    options: PlanOptions
    recommendation: Recommendation
    alternatives: tuple[Recommendation, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    findings: tuple[Finding, ...] = ()
    source_build: SourceBuild | None = None
