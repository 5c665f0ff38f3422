"""The build configuration: what a build will run, as plain frozen values.

A :class:`BuildConfig` is a pure function of (project, probe, knowledge base, options): nothing
here touches the machine. The runner executes its ``steps`` with ``env`` laid over the caller's
environment; the ledger stores it (``to_jsonable``) so two attempts can be compared field by
field; review compares someone else's configuration against one; script emission writes it out
as a standalone bash/PowerShell/cmd script.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from torchsmith.probe.model import Finding

ProjectKind = Literal["pytorch", "torchvision", "torchaudio", "cpp_extension", "cmake"]
Profile = Literal["fast", "portable", "debug"]
CacheKind = Literal["none", "sccache", "ccache"]


@dataclass(frozen=True)
class Project:
    """A source tree torchsmith knows how to build."""

    path: str  # absolute
    kind: ProjectKind
    # How the tree is built: "setup.py" (python setup.py / pip), "pyproject" (PEP 517 through
    # pip --no-build-isolation), "cmake" (configure + build with CMake).
    build_system: Literal["setup.py", "pyproject", "cmake"]
    name: str | None = None
    version: str | None = None
    uses_ninja: bool = True  # False where the project turns ninja off (torch-scatter)
    build_dir: str | None = None  # where its build outputs go ("build", "build/cmake")
    notes: tuple[str, ...] = ()
    # SASS archs the project's own build script adds with -gencode whatever TORCH_CUDA_ARCH_LIST
    # says (causal-conv1d, flash-attention): ("sm_75", "sm_80", ...).
    fixed_archs: tuple[str, ...] = ()
    # the setup writes nvcc arch flags of its own (-gencode, --generate-code, -arch), literal or
    # built from TORCH_CUDA_ARCH_LIST as xformers does: torch may then not read that list itself
    own_arch_flags: bool = False
    # the setup builds its CUDA part only when torch sees a GPU, unless this variable is 1
    # (FORCE_CUDA: torch-scatter, detectron2, pytorch3d): no GPU visible at build time (a
    # container build, CI, CUDA_VISIBLE_DEVICES) silently gives a build without CUDA
    force_cuda_var: str | None = None


@dataclass(frozen=True)
class Step:
    """One command of the build, run in ``cwd`` with the config's env plus ``env``."""

    name: str  # "configure", "build", "install", "compile", ...
    argv: tuple[str, ...]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Choice:
    """One decided setting and why: shown before the build, stored in the ledger."""

    key: str  # "TORCH_CUDA_ARCH_LIST", "CUDA_HOME", "MAX_JOBS", "launcher", ...
    value: str
    reason: str


@dataclass(frozen=True)
class BuildConfig:
    project: Project
    python: str  # the target interpreter the build runs with
    profile: Profile
    arch_list: tuple[str, ...]  # TORCH_CUDA_ARCH_LIST entries: "9.0", "12.0", "12.0+PTX"
    cuda_home: str | None
    cuda_version: str | None
    host_compiler: str | None
    jobs: int  # parallel compile jobs (MAX_JOBS / ninja -j / build_ext --parallel)
    nvcc_threads: int  # nvcc --threads per compile (archs compiled in parallel)
    cache: CacheKind
    launcher: str | None  # path of sccache/ccache used as compiler launcher
    env: dict[str, str]  # every environment variable the build sets, in full
    cmake_args: tuple[str, ...]  # -D entries and generator, for CMake projects
    steps: tuple[Step, ...]
    choices: tuple[Choice, ...] = ()  # the reasons, in display order
    gpus: tuple[str, ...] = ()  # the GPUs the result must run on ("NVIDIA H200 (9.0)")
    findings: tuple[Finding, ...] = ()  # what configuration itself found (no GPU visible...)
    # Windows: the Visual Studio environment script (vcvars64.bat) every step runs inside; the
    # runner imports its environment once, and the scripts call it once
    vcvars: str | None = None
