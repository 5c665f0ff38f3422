"""CUDA binary-compatibility rules, as pure functions of arch lists and compute capabilities.

- A cubin for sm_XY runs on a GPU of compute capability X.Z when Z >= Y (same major only).
- Arch-specific cubins (sm_90a, sm_100a, sm_121a) run only on exactly that GPU; family cubins
  (sm_100f) on that major from that minor up. Neither is counted for whole-library coverage here:
  wheels carry them for a few kernels only.
- PTX for compute_XY can be JIT-compiled by the driver for any GPU of capability >= X.Y.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchsmith.knowledge.base import Knowledge

_ARCH = re.compile(r"^(?:sm|compute)_(\d+?)(\d)([af]?)$")


def split_entry(entry: str) -> tuple[str, str]:
    """A TORCH_CUDA_ARCH_LIST entry as (compute capability, a/f suffix): '9.0a+PTX' ->
    ('9.0', 'a'), '12.0' -> ('12.0', ''). Not checked: parse_cc the first part to check it."""
    base = entry.removesuffix("+PTX")
    return (base[:-1], base[-1]) if base[-1:] in ("a", "f") else (base, "")


def entry_cc(entry: str) -> str:
    """The compute capability a TORCH_CUDA_ARCH_LIST entry runs on: '9.0a+PTX' -> '9.0'."""
    return split_entry(entry)[0]


def entry_sm(entry: str) -> str:
    """The SASS name of a TORCH_CUDA_ARCH_LIST entry: '9.0a+PTX' -> 'sm_90a', '12.0' -> 'sm_120'."""
    cc, suffix = split_entry(entry.strip())
    major, minor = parse_cc(cc)
    return f"sm_{major}{minor}{suffix}"


def sm_entry(sm: str) -> str:
    """The TORCH_CUDA_ARCH_LIST spelling of a SASS name: 'sm_90a' -> '9.0a' (entry_sm's inverse)."""
    parsed = arch_cc(sm)
    if parsed is None:
        raise ValueError(f"not an arch name: {sm!r}")
    major, minor, variant = parsed
    return f"{major}.{minor}{variant}"


def parse_cc(cc: str) -> tuple[int, int]:
    """ "12.0" → (12, 0); raises ValueError when malformed."""
    m = re.fullmatch(r"(\d{1,2})\.(\d)", cc.strip())
    if not m:
        raise ValueError(f"compute capability {cc!r} is not of the form X.Y")
    return int(m.group(1)), int(m.group(2))


def arch_cc(arch: str) -> tuple[int, int, str] | None:
    """ "sm_120" → (12, 0, ""); "compute_90a" → (9, 0, "a"); None when it is not an arch name."""
    m = _ARCH.match(arch)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), m.group(3)


def sm_of(cc: str) -> str:
    major, minor = parse_cc(cc)
    return f"sm_{major}{minor}"


def cc_of(arch: str) -> str | None:
    parsed = arch_cc(arch)
    return None if parsed is None else f"{parsed[0]}.{parsed[1]}"


@dataclass(frozen=True)
class Coverage:
    """How (or whether) a set of archs serves one GPU."""

    ok: bool
    via: str | None  # the sm_XY or compute_XY entry that serves it
    jit: bool = False  # served only through PTX JIT (slow first start, needs a new enough driver)


def coverage(sass: tuple[str, ...], ptx: tuple[str, ...], cc: str) -> Coverage:
    """Whole-library coverage: the one runs-on rule of ``binaries.archs``, plain archs only."""
    from torchsmith.binaries.archs import runs_on  # noqa: PLC0415 (one rule, one place)

    parse_cc(cc)  # the knowledge base's strict X.Y form
    plain_sass = tuple(a for a in sass if (p := arch_cc(a)) is not None and not p[2])
    plain_ptx = tuple(a for a in ptx if (p := arch_cc(a)) is not None and not p[2])
    verdict = runs_on(plain_sass, plain_ptx, cc)
    return Coverage(ok=verdict.ok, via=verdict.arch, jit=verdict.kind == "ptx")


def driver_at_least(driver: str, floor: str) -> bool:
    """Whether NVIDIA driver ``driver`` ("581.57", "580.159.04") is at least ``floor`` ("580")."""

    def key(version: str) -> tuple[int, ...]:
        parts = [int(p) for p in re.findall(r"\d+", version)[:3]]
        return tuple(parts + [0] * (3 - len(parts)))

    return key(driver) >= key(floor)


def describe_archs(sass: tuple[str, ...], ptx: tuple[str, ...] = ()) -> str:
    """ "sm_50…sm_90" style summary for messages (full list when short)."""
    items = sorted(sass, key=_arch_sort_key)
    if len(items) > 4:
        text = f"{items[0]}…{items[-1]}"
    elif len(items) > 1:
        text = f"{', '.join(items[:-1])} and {items[-1]}"
    else:
        text = "".join(items)
    if ptx:
        text += " + PTX " + ", ".join(sorted(ptx, key=_arch_sort_key))
    return text or "no GPU code"


def _arch_sort_key(arch: str) -> tuple[int, int, str]:
    parsed = arch_cc(arch)
    return parsed if parsed is not None else (0, 0, arch)


def arch_list_tokens(value: str) -> list[str]:
    """The entries of an arch list as it is written: TORCH_CUDA_ARCH_LIST ("8.6;9.0+PTX",
    "8.6 9.0") or CMAKE_CUDA_ARCHITECTURES ("86-real;90"), split at ';', ',' and spaces."""
    return [token for token in re.split(r"[;\s,]+", value.strip()) if token]


def torch_cuda_arch_list(ccs: list[str], ptx: bool = False) -> str:
    """TORCH_CUDA_ARCH_LIST for these compute capabilities: "8.6;12.0" (+PTX on the last one)."""
    uniq = sorted(set(ccs), key=parse_cc)
    if ptx and uniq:
        uniq[-1] += "+PTX"
    return ";".join(uniq)


def specific_kind(suffix: str) -> str:
    """What an a/f suffix makes of an entry: 'arch-specific' (9.0a) or 'family-specific'."""
    return "arch-specific" if suffix == "a" else "family-specific"


def specific_entry_problem(entry: str, kb: Knowledge) -> str | None:
    """Why an arch-list entry's a/f suffix cannot exist for its compute capability, if so."""
    cc, suffix = split_entry(entry)
    known = kb.arch_suffix(suffix) if suffix else None
    if known is None or parse_cc(cc) >= parse_cc(known.first_cc):
        return None
    return (
        f"{specific_kind(suffix)} code exists from compute capability {known.first_cc} on (no nvcc "
        f"has compute_{cc.replace('.', '')}{suffix})"
    )


def covers(entry: str, cc: str) -> bool:
    """Whether an arch-list entry's SASS runs on a GPU of this compute capability: its own X.Y
    (9.0 and 9.0a on 9.0), and a family-specific X.Yf on the later minors of its major too
    (10.0f on 10.3), as this module's docstring has it."""
    own, suffix = split_entry(entry)
    if own == cc:
        return True
    if suffix != "f":
        return False
    (major, minor), (gpu_major, gpu_minor) = parse_cc(own), parse_cc(cc)
    return major == gpu_major and minor <= gpu_minor
