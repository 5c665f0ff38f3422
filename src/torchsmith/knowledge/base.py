"""The query API over the validated knowledge base."""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Iterable
from typing import TypeVar

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from torchsmith.knowledge import gpunames
from torchsmith.knowledge.compat import arch_cc, specific_entry_problem
from torchsmith.knowledge.loader import Parsed
from torchsmith.knowledge.model import (
    AmdGpu,
    ArchSuffix,
    CudaToolkit,
    DriverFloor,
    GpuModel,
    IntelGpu,
    MpsRequirement,
    RocmArchs,
    Source,
    SourceBuildRange,
    TorchRelease,
    Wheel,
    WheelArchs,
    XpuSupport,
    minor_of,
    variant_cuda,
)

T = TypeVar("T")

ARCH_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "x86-64": "x86_64"}
OS_ALIASES = {
    "win": "windows",
    "win32": "windows",
    "darwin": "macos",
    "mac": "macos",
    "osx": "macos",
}


def norm_arch(arch: str) -> str:
    a = arch.strip().lower()
    return ARCH_ALIASES.get(a, a)


def norm_os(os_name: str) -> str:
    o = os_name.strip().lower()
    return OS_ALIASES.get(o, o)


def platform_key(platform: str) -> str:
    """ "linux" → "linux-x86_64", "macos" → "macos-arm64", "windows-amd64" → "windows-x86_64"."""
    text = platform.strip().lower().replace("_amd64", "-amd64")
    os_part, _, arch_part = text.partition("-")
    os_name = norm_os(os_part)
    if not arch_part:
        arch_part = "arm64" if os_name == "macos" else "x86_64"
    arch = norm_arch(arch_part)
    if os_name == "macos" and arch == "aarch64":
        arch = "arm64"
    return f"{os_name}-{arch}"


def _vkey(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


class Knowledge:
    def __init__(self, parsed: Parsed) -> None:
        self.sources: dict[str, Source] = parsed.sources
        self.gpus: tuple[GpuModel, ...] = tuple(parsed.gpus)
        # oldest first: every "first/last toolkit that can" question relies on the order
        self.toolkits: tuple[CudaToolkit, ...] = tuple(
            sorted(parsed.toolkits, key=lambda t: _vkey(t.version))
        )
        self.floors: tuple[DriverFloor, ...] = tuple(parsed.floors)
        self.releases: tuple[TorchRelease, ...] = tuple(parsed.releases)
        self.wheels: tuple[Wheel, ...] = tuple(parsed.wheels)
        self.source_builds: tuple[SourceBuildRange, ...] = tuple(parsed.source_builds)
        self.arch_suffixes: tuple[ArchSuffix, ...] = tuple(parsed.arch_suffixes)
        self.amd_gpus: tuple[AmdGpu, ...] = tuple(parsed.amd_gpus)
        self.rocm_archs: tuple[RocmArchs, ...] = tuple(parsed.rocm_archs)
        self.intel_gpus: tuple[IntelGpu, ...] = tuple(parsed.intel_gpus)
        self.xpu: tuple[XpuSupport, ...] = tuple(parsed.xpu)
        self.mps: MpsRequirement | None = parsed.mps
        self._amd_index: dict[str, AmdGpu] = {}
        for amd in self.amd_gpus:
            for label in (amd.name, *amd.aliases):
                self._amd_index.setdefault(_vendor_key(label), amd)
        self._intel_index: dict[str, IntelGpu] = {}
        for intel in self.intel_gpus:
            for label in (intel.name, *intel.aliases):
                self._intel_index.setdefault(_vendor_key(label), intel)
        self._gpu_index: dict[str, GpuModel] = {}
        for gpu in self.gpus:
            for label in (gpu.name, *gpu.aliases):
                self._gpu_index.setdefault(gpunames.normalize(label), gpu)
        self._wheel_index = {(w.torch, w.variant, w.os, w.arch): w for w in self.wheels}

    # -- GPUs ------------------------------------------------------------------------------
    def find_gpu(self, name: str) -> GpuModel | None:
        key = gpunames.normalize(name)
        if not key:
            return None
        found = self._gpu_index.get(key)
        if found is not None:
            return found
        desktop = gpunames.without_laptop(key)
        if desktop and desktop in self._gpu_index:
            base = self._gpu_index[desktop]
            return dataclasses.replace(base, name=name.strip(), kind="laptop", aliases=())
        # Unknown trailing words ("NVIDIA B300 SXM6 AC"): the longest known prefix that still
        # names a model number.
        tokens = key.split()
        for n in range(len(tokens) - 1, 0, -1):
            prefix = " ".join(tokens[:n])
            if prefix in self._gpu_index and re.search(r"\d", prefix):
                return self._gpu_index[prefix]
        # A family name shorter than every model's ("RTX PRO 6000" for the RTX PRO 6000
        # Blackwell editions): taken when all the models it starts share one compute capability.
        if re.search(r"\d", key):
            models = {id(m): m for k, m in self._gpu_index.items() if k.startswith(key + " ")}
            if len({m.compute_capability for m in models.values()}) == 1:
                first = next(iter(models.values()))
                return dataclasses.replace(first, name=name.strip(), aliases=())
        return None

    def suggest_gpus(self, name: str, limit: int = 5) -> list[str]:
        key = gpunames.normalize(name)
        names = {gpunames.normalize(g.name): g.name for g in self.gpus}
        keys = list(self._gpu_index)
        out: list[str] = []
        for match in difflib.get_close_matches(key, keys, n=limit * 2, cutoff=0.5):
            label = self._gpu_index[match].name
            if label not in out:
                out.append(label)
        numbers = re.findall(r"\d{2,}", key)
        if numbers:
            for k, label in names.items():
                if all(n in k for n in numbers) and label not in out:
                    out.append(label)
        return out[:limit]

    # -- CUDA toolkits ----------------------------------------------------------------------
    def toolkit(self, version: str) -> CudaToolkit | None:
        m = re.match(r"^\s*(\d+)\.(\d+)", version)
        if not m:
            return None
        key = f"{int(m.group(1))}.{int(m.group(2))}"
        return next((t for t in self.toolkits if t.version == key), None)

    def toolkits_for(self, sms: Iterable[str]) -> tuple[CudaToolkit, ...]:
        """The known toolkits whose nvcc compiles for every one of these sm_XY (sm_90a and
        sm_100f included), oldest first."""
        wanted = set(sms)
        return tuple(t for t in self.toolkits if all(self.emits(t, sm) for sm in wanted))

    def emits(self, toolkit: CudaToolkit, sm: str) -> bool:
        """Whether a known toolkit's nvcc compiles for sm_XY, sm_XYa or sm_XYf."""
        return self.emits_target(toolkit.sm_targets, toolkit.version, sm)

    def emits_target(self, sm_targets: Iterable[str], version: str | None, sm: str) -> bool:
        """Whether an nvcc with these plain SASS targets (its --list-gpu-code, which names no
        a/f variant) compiles for ``sm``: sm_XYa / sm_XYf also need a compute capability the
        suffix exists for and a CUDA new enough for it (arch_suffix); an unknown version is
        taken to be new enough."""
        targets = set(sm_targets)
        if sm in targets:
            return True
        parsed = arch_cc(sm)
        if parsed is None or not parsed[2] or f"sm_{parsed[0]}{parsed[1]}" not in targets:
            return False
        entry = f"{parsed[0]}.{parsed[1]}{parsed[2]}"
        known = self.arch_suffix(parsed[2])
        if known is None or specific_entry_problem(entry, self):
            return False
        given = tuple(int(x) for x in re.findall(r"\d+", version or "")[:2])
        return not given or given >= _vkey(known.min_cuda)

    def arch_introduced(self, sm: str) -> tuple[CudaToolkit, CudaToolkit] | None:
        """(before, first): the toolkit release just before the first one that targets sm_XY.

        A driver older than ``before``'s minimum shipped before any CUDA could target the
        architecture, so it cannot run such a GPU at all. None when the first toolkit that
        targets it is the oldest known (the architecture came before the data).
        """
        able = self.toolkits_for([sm])
        if not able or able[0] is self.toolkits[0]:
            return None
        at = self.toolkits.index(able[0])
        return self.toolkits[at - 1], able[0]

    def toolkits_for_text(self, sms: Iterable[str], have: str | None = None) -> str:
        """Which toolkits can compile for these targets, as words: "CUDA 11.7 to 12.9".

        An arch can be too new for an old toolkit and too old for a new one (CUDA 13.0 dropped
        sm_50 to sm_72), so this names the range, and with ``have`` (a toolkit that cannot) says
        which side of the range it is on.
        """
        wanted = sorted(set(sms))
        able = self.toolkits_for(wanted)
        if not able:
            return f"no CUDA toolkit torchsmith knows can compile for {', '.join(wanted)}"
        first, last = able[0].version, able[-1].version
        newest = last == self.toolkits[-1].version
        span = f"CUDA {first} or newer" if newest else f"CUDA {first} to {last}"
        given = re.match(r"\s*(\d+)\.(\d+)", have or "")
        if given and not newest and (int(given[1]), int(given[2])) > _vkey(last):
            later = next(t.version for t in self.toolkits if _vkey(t.version) > _vkey(last))
            return f"{span} (CUDA {later} dropped {', '.join(wanted)})"
        return span

    # -- AMD, Intel, Apple ---------------------------------------------------------------
    def find_amd_gpu(self, name: str) -> AmdGpu | None:
        """An AMD GPU by product name or alias, or by its gfx target ("gfx1100")."""
        key = _vendor_key(name)
        if not key:
            return None
        found = self._amd_index.get(key) or _bracketed(name, self._amd_index)
        if found is not None:
            return found
        gfx = name.strip().lower()
        return next((g for g in self.amd_gpus if g.gfx == gfx), None)

    def find_intel_gpu(self, name: str) -> IntelGpu | None:
        key = _vendor_key(name)
        return (self._intel_index.get(key) or _bracketed(name, self._intel_index)) if key else None

    def rocm_gfx(self, torch_version: str, variant: str) -> RocmArchs | None:
        minor = minor_of(torch_version)
        return next(
            (r for r in self.rocm_archs if r.torch == minor and variant in r.variants), None
        )

    def xpu_support(self, torch_version: str, os: str) -> XpuSupport | None:
        """The xpu entry that covers this torch on this OS, if any."""
        v = _vkey(minor_of(torch_version))
        return next((x for x in self.xpu if os in x.os and v >= _vkey(x.torch_min)), None)

    def arch_suffix(self, suffix: str) -> ArchSuffix | None:
        """What the KB knows of arch-specific ("a") or family-specific ("f") code."""
        return next((a for a in self.arch_suffixes if a.suffix == suffix), None)

    def cmake_takes(self, suffix: str, cmake_version: str) -> bool | None:
        """Whether this CMake's CMAKE_CUDA_ARCHITECTURES takes an a/f entry (90a-real, 100f-real);
        None where the KB does not say or the version does not parse."""
        known = self.arch_suffix(suffix)
        # the leading release (Visual Studio's CMake says 3.29.5-msvc4); a nightly's date patch
        # (4.1.20250601-g1234abc) says nothing about which fixes it has
        found = re.match(r"(\d+)\.(\d+)\.(\d+)(-?rc\d+)?(?![\d.])", cmake_version.strip())
        if known is None or not known.cmake or found is None or int(found.group(3)) >= 20000000:
            return None
        version = Version(found.group(0))
        return any(SpecifierSet(s).contains(version, prereleases=True) for s in known.cmake)

    def cmake_firsts(self, suffix: str) -> tuple[str, ...]:
        """The first CMake of each range that takes an a/f entry ("3.31.8", "4.0.2"): the >=
        floor of each specifier set (the loader requires one)."""
        known = self.arch_suffix(suffix)
        found = (re.search(r">=\s*([\d.]*\d)", s) for s in (known.cmake if known else ()))
        return tuple(m.group(1) for m in found if m)

    def source_build_range(self, torch_version: str) -> SourceBuildRange | None:
        """The CUDA toolkits a source build of this torch (any patch of its minor) accepts."""
        minor = minor_of(torch_version)
        return next((r for r in self.source_builds if r.torch == minor), None)

    def driver_floor(self, cuda_version: str, os: str) -> str | None:
        m = re.match(r"^\s*(\d+)", cuda_version)
        if not m:
            return None
        major = int(m.group(1))
        floor = next((f for f in self.floors if f.cuda_major == major), None)
        if floor is None:
            return None
        os_name = norm_os(os)
        if os_name == "linux":
            return floor.linux
        if os_name == "windows":
            return floor.windows
        return None

    # -- torch releases ---------------------------------------------------------------------
    def torch_release(self, version: str) -> TorchRelease | None:
        text = version.strip().split("+")[0]
        if not re.fullmatch(r"\d+\.\d+(\.\d+)?", text):
            return None
        if text.count(".") == 1:
            same = [r for r in self.releases if r.minor == text]
            return same[-1] if same else None
        wanted = _vkey(text)
        return next((r for r in self.releases if _vkey(r.version) == wanted), None)

    def companions(self, torch_version: str) -> dict[str, str]:
        release = self.torch_release(torch_version)
        if release is None or release.companions is None:
            return {}
        return {
            "torchvision": release.companions.torchvision,
            "torchaudio": release.companions.torchaudio,
        }

    def wheel(self, torch_version: str, variant: str, os: str, arch: str) -> Wheel | None:
        minor = minor_of(torch_version)
        return self._wheel_index.get((minor, variant.lower(), norm_os(os), norm_arch(arch)))

    def wheels_for(self, torch_version: str, os: str, arch: str) -> list[Wheel]:
        minor = minor_of(torch_version)
        os_name, arch_name = norm_os(os), norm_arch(arch)
        return [
            w for w in self.wheels if w.torch == minor and w.os == os_name and w.arch == arch_name
        ]

    def variant_archs(
        self,
        torch_version: str,
        variant: str,
        os: str,
        arch: str,
    ) -> WheelArchs | None:
        wheel = self.wheel(torch_version, variant, os, arch)
        return None if wheel is None else wheel.archs

    def pypi_default(self, torch_version: str, platform: str) -> str | None:
        release = self.torch_release(torch_version)
        if release is None:
            return None
        return release.pypi_default.get(platform_key(platform))

    def python_supported(self, torch_version: str, python: str, platform: str) -> bool | None:
        """Whether that torch ships wheels for that CPython on that platform; None if unknown."""
        release = self.torch_release(torch_version)
        m = re.fullmatch(r"\s*(3)\.(\d+)(?:\.\d+)?(t?)\s*", python)
        if release is None or m is None:
            return None
        tag = f"{m.group(1)}.{m.group(2)}{m.group(3)}"
        tags = release.python.get(platform_key(platform))
        if tags is None:
            return None
        return tag in tags

    def floors_sources(self, cuda_version: str) -> tuple[str, ...]:
        """The source keys behind :meth:`driver_floor` for that CUDA version."""
        m = re.match(r"^\s*(\d+)", cuda_version)
        major = int(m.group(1)) if m else -1
        floor = next((f for f in self.floors if f.cuda_major == major), None)
        return () if floor is None else floor.sources

    def variant_min_driver(self, variant: str, os: str) -> str | None:
        """The lowest driver that runs a cuXYZ wheel (its major line's compatibility floor)."""
        cuda = variant_cuda(variant)
        return None if cuda is None else self.driver_floor(cuda, os)

    def requires_python(self, torch_version: str) -> SpecifierSet | None:
        release = self.torch_release(torch_version)
        return None if release is None else SpecifierSet(release.requires_python)

    def newest_release(self) -> TorchRelease:
        return self.releases[-1]

    def latest_patches(self) -> list[TorchRelease]:
        """The newest patch release of every minor, newest minor first."""
        by_minor: dict[str, TorchRelease] = {}
        for release in self.releases:
            by_minor[release.minor] = release
        return sorted(by_minor.values(), key=lambda r: _vkey(r.version), reverse=True)


_VENDOR_WORDS = {"amd", "ati", "radeon", "instinct", "intel", "r", "graphics", "gpu", "corporation"}


def _bracketed(name: str, index: dict[str, T]) -> T | None:
    """The PCI database's "Navi 31 [Radeon RX 7900 XT/7900 XTX]": try each bracketed name."""
    m = re.search(r"\[([^\]]+)\]", name)
    if not m:
        return None
    first, *others = m[1].split("/")
    prefix = first.rsplit(" ", 1)[0] + " " if " " in first else ""
    for alt in (first, *(prefix + o if " " not in o else o for o in others)):
        found = index.get(_vendor_key(alt))
        if found is not None:
            return found
    return None


def _vendor_key(name: str) -> str:
    """An AMD or Intel product name without its vendor and brand words: "rx 7900 xtx"."""
    text = re.sub(r"\((?:r|tm)\)|[®™]", " ", name.lower())
    return " ".join(t for t in gpunames.normalize(text).split() if t not in _VENDOR_WORDS)


def parse_version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None
