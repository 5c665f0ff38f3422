"""GPU architecture names and the rule for which code runs on which GPU.

Names: SASS (a cubin, native machine code) is ``sm_XY``, PTX (virtual ISA the driver JIT-compiles)
is ``compute_XY``; ``XY`` is the compute capability without its dot (``sm_86`` is 8.6, ``sm_120``
is 12.0). A suffix narrows where the code runs:

- none: SASS runs on the same major with an equal or higher minor; PTX JIT-compiles on any equal or
  newer GPU. "A cubin generated for a certain compute capability is supported to run on any GPU with
  the same major revision and same or higher minor revision" (NVIDIA, Blackwell Compatibility Guide,
  https://docs.nvidia.com/cuda/blackwell-compatibility-guide/ §1.2).
- ``a`` (arch-specific, CUDA 12.0+): only on exactly that compute capability, SASS and PTX alike.
- ``f`` (family-specific, CUDA 12.9+): on the same family, i.e. the same major with an equal or
  higher minor (``sm_100f`` runs on 10.0 and 10.3, not on 11.0 or 12.0); the same holds for
  ``compute_XYf`` PTX. Source: "NVIDIA Blackwell and NVIDIA CUDA 12.9 Introduce Family-Specific
  Architecture Features", https://developer.nvidia.com/blog/nvidia-blackwell-and-nvidia-cuda-12-9-introduce-family-specific-architecture-features/

The CUDA runtime uses a compatible cubin when the binary has one and JIT-compiles PTX only
otherwise (CUDA C++ Best Practices Guide, "Building for Maximum Compatibility").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

ArchKind = Literal["sass", "ptx"]
Variant = Literal["", "a", "f"]
Route = Literal["sass", "ptx", "none", "unknown"]  # unknown: code that could not be listed

NO_KERNEL_IMAGE = "no kernel image is available for execution on the device"

_ARCH_RE = re.compile(r"^(sm|compute)_(\d{2,3})([af]?)$")
_CC_RE = re.compile(r"^(?:(?:sm|compute)_)?(?:(\d{1,2})\.(\d)|(\d{2,3}))([af]?)$")
_VARIANT_RANK = {"": 0, "f": 1, "a": 2}


@dataclass(frozen=True, order=True)
class Arch:
    """One GPU code target: ``number`` is the compute capability without its dot (90, 120)."""

    number: int
    variant: Variant = ""
    kind: ArchKind = "sass"

    @property
    def major(self) -> int:
        return self.number // 10

    @property
    def minor(self) -> int:
        return self.number % 10

    @property
    def name(self) -> str:
        prefix = "sm" if self.kind == "sass" else "compute"
        return f"{prefix}_{self.number}{self.variant}"

    @property
    def compute_capability(self) -> str:
        return f"{self.major}.{self.minor}"

    def __str__(self) -> str:
        return self.name


def parse_arch(text: str) -> Arch:
    """``sm_90a`` / ``compute_120f`` → Arch; raises ValueError for anything else."""
    match = _ARCH_RE.match(text.strip().lower())
    if not match:
        raise ValueError(f"not a GPU architecture name: {text!r} (expected sm_XY or compute_XY)")
    prefix, number, variant = match.groups()
    kind: ArchKind = "sass" if prefix == "sm" else "ptx"
    return Arch(int(number), variant, kind)  # type: ignore[arg-type]


def parse_compute_capability(text: str) -> tuple[int, int]:
    """``12.0``, ``sm_120``, ``compute_120``, ``120``, ``8.6`` → (major, minor).

    A trailing ``a``/``f`` is accepted and ignored: a GPU has a plain compute capability.
    Raises ValueError for anything else.
    """
    match = _CC_RE.match(text.strip().lower())
    if not match:
        raise ValueError(f"not a compute capability: {text!r} (expected e.g. 12.0, sm_120 or 120)")
    major, minor, packed, _variant = match.groups()
    if packed is not None and int(packed) < 20:  # "12" means 12.x to a person, 1.2 to nvcc
        raise ValueError(f"not a compute capability: {text!r} (ambiguous; write e.g. 12.0)")
    if packed is not None:
        return int(packed) // 10, int(packed) % 10
    return int(major), int(minor)


def format_compute_capability(cc: tuple[int, int]) -> str:
    return f"{cc[0]}.{cc[1]}"


def sort_key(name: str) -> tuple[int, int, int, str]:
    """Order by architecture number, then plain < f < a; unparsable names sort last."""
    try:
        arch = parse_arch(name)
    except ValueError:
        return (1 << 30, 0, 0, name)
    return (arch.number, _VARIANT_RANK[arch.variant], 0 if arch.kind == "sass" else 1, name)


def sort_archs(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(names), key=sort_key))


def sass_runs_on(arch: Arch, cc: tuple[int, int]) -> bool:
    """Whether a cubin for ``arch`` runs natively on a GPU of compute capability ``cc``."""
    major, minor = cc
    if arch.variant == "a":
        return (arch.major, arch.minor) == cc
    return arch.major == major and arch.minor <= minor


def ptx_jits_on(arch: Arch, cc: tuple[int, int]) -> bool:
    """Whether PTX for ``arch`` can be JIT-compiled by the driver for a GPU of ``cc``."""
    if arch.variant == "a":
        return (arch.major, arch.minor) == cc
    if arch.variant == "f":
        return arch.major == cc[0] and arch.minor <= cc[1]
    return (arch.major, arch.minor) <= cc


@dataclass(frozen=True)
class RunsOn:
    """Whether GPU code runs on one compute capability, and how."""

    ok: bool
    route: str  # "native SASS sm_90" / "PTX JIT from compute_90 (slow first run)" / "no ..."
    detail: str
    compute_capability: str
    kind: Route = "none"
    arch: str | None = None  # the cubin or PTX the driver would use


def _preference(arch: Arch) -> tuple[int, int]:
    # The closest match: the highest compatible number; at equal number a > f > plain.
    return (arch.number, _VARIANT_RANK[arch.variant])


def runs_on(
    sass: Iterable[str], ptx: Iterable[str], compute_capability: str, lto: Iterable[str] = ()
) -> RunsOn:
    """Decide whether code with these SASS and PTX archs runs on a GPU of ``compute_capability``.

    ``compute_capability`` is anything :func:`parse_compute_capability` accepts; arch names that do
    not parse are ignored. ``lto`` (LTO IR, ``lto_90``) never runs as it is: without SASS or PTX
    that does, the verdict says to device-link it. Raises ValueError for a bad compute capability.
    """
    cc = parse_compute_capability(compute_capability)
    cc_text = format_compute_capability(cc)
    cubins = [a for a in _parse_all(sass, "sass") if sass_runs_on(a, cc)]
    ptxs = [a for a in _parse_all(ptx, "ptx") if ptx_jits_on(a, cc)]
    if cubins:
        best = max(cubins, key=_preference)
        others = sorted((a.name for a in cubins if a != best), key=sort_key)
        detail = f"a cubin built for {best.name} runs natively on compute capability {cc_text}"
        if others:
            detail += f" (also compatible: {', '.join(others)})"
        return RunsOn(True, f"native SASS {best.name}", detail, cc_text, "sass", best.name)
    if ptxs:
        best = max(ptxs, key=_preference)
        detail = (
            f"no cubin for {cc_text}; the driver JIT-compiles {best.name} PTX on first use "
            "(slow first run, cached afterwards in ~/.nv/ComputeCache)"
        )
        return RunsOn(
            True, f"PTX JIT from {best.name} (slow first run)", detail, cc_text, "ptx", best.name
        )
    lto_archs = sort_archs(lto)
    if lto_archs and not sort_archs([*sass, *ptx]):
        return RunsOn(
            False,
            "LTO IR only: it must be device-linked (nvlink / nvcc -dlink) before it can run",
            _lto_only(lto_archs, cc),
            cc_text,
        )
    return RunsOn(
        False,
        f"no compatible code → '{NO_KERNEL_IMAGE}'",
        _why_not(sass, ptx, cc),
        cc_text,
    )


def _lto_only(lto: tuple[str, ...], cc: tuple[int, int]) -> str:
    sm = f"sm_{cc[0]}{cc[1]}"
    detail = (
        f"LTO IR ({', '.join(lto)}) is not code a GPU runs: device-link it into SASS for {sm} "
        f"first (nvcc -dlto -arch={sm} when linking, nvcc -dlink, or nvlink)"
    )
    numbers = [int(m.group(1)) for a in lto if (m := re.match(r"lto_(\d+)", a))]
    if numbers and min(numbers) > cc[0] * 10 + cc[1]:
        detail += f"; but LTO IR links only into SASS of its own arch or newer, not {sm}"
    return detail


def _why_not(sass: Iterable[str], ptx: Iterable[str], cc: tuple[int, int]) -> str:
    cc_text = format_compute_capability(cc)
    have = sort_archs([*sass, *ptx])
    if not have:
        return "the binaries hold no GPU code at all"
    return (
        f"nothing here runs on {cc_text}: SASS needs the same major ({cc[0]}.x) with minor <= "
        f"{cc[1]} (and 'a' cubins exactly {cc_text}); PTX needs compute_XY <= {cc_text}. "
        f"Found: {', '.join(have)}"
    )


def _parse_all(names: Iterable[str], kind: ArchKind) -> list[Arch]:
    out: list[Arch] = []
    for name in names:
        try:
            arch = parse_arch(name)
        except ValueError:
            continue
        if arch.kind == kind:
            out.append(arch)
    return out
