"""Values computed from what a rule read: ``derive = { name = "function:field" }`` in a rule.

``CHECKS`` are the tests a rule's ``unless = ["check:field,field"]`` runs on what it read; a
check that holds vetoes the match.

Functions: ``sm_to_cc`` (sm_120 -> 12.0), ``cuda_int`` (11040 -> 11.4, the form drivers report),
``version_tuples`` (each "(1, 3, 13, 0, 0, 0)" in a text -> 1.3.13, "(2, 0, 0, 0, -1, 4)" ->
2.0.0rc4: the tuples OpenMMLab's digit_version prints), or a lookup table from the rule files,
keyed by the value itself ("format"), or for an arch by "compute_90a" -> "90a", else by its
digits ("compute_120a" -> "120").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from torchsmith.errors import KnowledgeError
from torchsmith.knowledge.model import minor_of

if TYPE_CHECKING:
    from torchsmith.knowledge.base import Knowledge

_DIGITS = re.compile(r"(\d+)")
_ARCH = re.compile(r"(\d+)[a-z]?")  # "compute_90a": "90a", else "90"


def sm_to_cc(value: str) -> str | None:
    found = _DIGITS.search(value)
    if not found or len(found.group(1)) < 2:
        return None
    digits = found.group(1)
    return f"{digits[:-1]}.{digits[-1]}"


def cuda_int(value: str) -> str | None:
    if not value.isdigit():
        return None
    number = int(value)
    return f"{number // 1000}.{(number % 1000) // 10}"


_TUPLE = re.compile(r"\((-?\d{1,6}(?:, ?-?\d{1,6}){2,7})\)")
# mmcv's digit_version(v, length=4): the release padded to four numbers, then a pre-release as
# (-3|-2|-1, n) for a|b|rc n, (-4, 0) for one without a letter (.dev, its number dropped: written
# .dev0), a post-release as (1, n), else (0, 0)
_PRE = {-3: "a", -2: "b", -1: "rc"}


def _tuple_version(found: re.Match[str]) -> str:
    numbers = [int(n) for n in found.group(1).split(",")]
    release, tag = (numbers[:4], numbers[4:]) if len(numbers) == 6 else (numbers, [0, 0])
    if any(n < 0 for n in release):
        return found.group(0)  # not a form this knows: left as it was printed
    while len(release) > 3 and release[-1] == 0:
        release.pop()
    text = ".".join(map(str, release))
    kind, number = tag
    if kind in _PRE:
        return f"{text}{_PRE[kind]}{number}"
    if kind == -4:
        return f"{text}.dev{number}"
    if kind == 1:
        return f"{text}.post{number}"
    return text if kind == 0 else found.group(0)


def version_tuples(value: str) -> str:
    """Each version tuple in ``value`` as the version it stands for (mmcv>=1.3.13, <=1.4.0)."""
    return _TUPLE.sub(_tuple_version, value)


def derive_values(
    derive: Mapping[str, tuple[str, str]],
    values: Mapping[str, str],
    tables: Mapping[str, Mapping[str, str]],
) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, (function, source) in derive.items():
        raw = values.get(source)
        if raw is None:
            continue
        result: str | None
        if function == "sm_to_cc":
            result = sm_to_cc(raw)
        elif function == "cuda_int":
            result = cuda_int(raw)
        elif function == "version_tuples":
            result = version_tuples(raw)
        elif function in tables:
            table = tables[function]
            found = _ARCH.search(raw)
            result = table.get(raw) or (
                (table.get(found.group(0)) or table.get(found.group(1))) if found else None
            )
        else:
            result = None
        if result is not None:
            out[name] = result
    return out


_CC = re.compile(r"(\d+)\.(\d+)")
# Jetson/Tegra GPUs do not run desktop cubins of their major (the guide's Binary Compatibility
# holds between desktop GPUs): TX1 5.3, TX2 6.2, Xavier 7.2, Orin 8.7, Thor 10.1 (renamed 11.0)
_TEGRA = frozenset({"5.3", "6.2", "7.2", "8.7", "10.1"})


def runs_built_cubin(gpu_cc: str, built_cc: str) -> bool:
    """Whether a GPU of ``gpu_cc`` runs code built for ``built_cc`` as it is: CUDA's cubins run on
    later minor revisions of the same major (12.1 runs sm_120; the CUDA C++ Programming Guide,
    "Binary Compatibility")."""
    gpu, built = _CC.fullmatch(gpu_cc), _CC.fullmatch(built_cc)
    if gpu is None or built is None or gpu_cc in _TEGRA:
        return False
    return gpu.group(1) == built.group(1) and int(gpu.group(2)) >= int(built.group(2))


_BUILD = re.compile(r"(cpu|xpu|cu|rocm)(\d+(?:\.\d+)?)?")


def builds_go_together(torch_tag: str, companion_tag: str) -> bool:
    """Whether a companion wheel of local tag ``companion_tag`` (cu126, cpu, rocm6.2) loads with a
    torch of ``torch_tag``: the same kind of build, and for CUDA the same major version (torchvision
    and torchaudio refuse another CUDA major at import), for ROCm the same X.Y."""
    a, b = _BUILD.match(torch_tag), _BUILD.match(companion_tag)
    if a is None or b is None:
        return True  # not a build tag this knows: nothing to say against it
    if a.group(1) != b.group(1):
        return False
    if a.group(1) == "cu":
        return (a.group(2) or "")[:-1] == (b.group(2) or "")[:-1]
    if a.group(1) == "rocm":
        return a.group(2) == b.group(2)
    return True


def release_has_variant(version: str, variant: str) -> bool:
    """Whether torch ``version`` was published as ``variant`` wheels (cu124, rocm6.1), by the
    knowledge base's wheel list for its minor release; a release it does not know, or a kind of
    build its wheel list does not hold at all (xpu), says nothing against it (True)."""
    variant = variant.lower()
    known = _wheel_variants()
    family = _FAMILY.match(variant)
    if known is None or family is None or not any(v.startswith(family.group(0)) for v in known):
        return True
    variants = _release_variants(minor_of(version))
    return variants is None or variant in variants


_FAMILY = re.compile(r"[a-z]+")
_PLATFORMS = (("linux", "x86_64"), ("linux", "aarch64"), ("windows", "x86_64"))


def _knowledge() -> Knowledge | None:
    """The knowledge base (loaded once, on the first check that needs it); None if unreadable."""
    from torchsmith.knowledge import load_knowledge  # noqa: PLC0415 - large, only when asked

    try:
        return load_knowledge()
    except KnowledgeError:
        return None


@lru_cache(maxsize=1)
def _wheel_variants() -> frozenset[str] | None:
    """Every variant the knowledge base lists a wheel of, for any release."""
    kb = _knowledge()
    return None if kb is None else frozenset(w.variant.lower() for w in kb.wheels)


@lru_cache(maxsize=64)
def _release_variants(minor: str) -> frozenset[str] | None:
    kb = _knowledge()
    if kb is None or kb.torch_release(minor) is None:
        return None
    found = {w.variant.lower() for os, arch in _PLATFORMS for w in kb.wheels_for(minor, os, arch)}
    return frozenset(found) or None


def cuda_tag_below(tag: str, version: str) -> bool:
    """Whether a CUDA build tag (cu111) names a CUDA older than ``version`` (11.7); False where
    either does not read as one."""
    pair = _cuda_pair(tag, version)
    return pair is not None and pair[0] < pair[1]


def cuda_tag_at_least(tag: str, version: str) -> bool:
    """Whether a CUDA build tag names ``version`` or newer; False where either does not read."""
    pair = _cuda_pair(tag, version)
    return pair is not None and pair[0] >= pair[1]


def _cuda_pair(tag: str, version: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """(the tag's CUDA, ``version``) as (major, minor) pairs: cu111 is 11.1, cu92 is 9.2."""
    found, wanted = re.fullmatch(r"cu(\d{1,2})(\d)", tag), _CC.fullmatch(version)
    if found is None or wanted is None:
        return None
    return (int(found.group(1)), int(found.group(2))), (int(wanted.group(1)), int(wanted.group(2)))


def offers_at_least(available: str, minimum: str) -> bool:
    """Whether pip's "(from versions: ...)" list ``available`` holds a release at ``minimum`` or
    newer; True (nothing against it) where ``minimum`` does not read as a version."""
    try:
        floor = Version(minimum)
    except InvalidVersion:
        return True
    for item in available.split(","):
        try:
            if Version(item.strip()) >= floor:
                return True
        except InvalidVersion:
            continue
    return False


# name -> (number of fields it reads, the test)
CHECKS: dict[str, tuple[int, Callable[..., bool]]] = {
    "runs_built_cubin": (2, runs_built_cubin),
    "builds_go_together": (2, builds_go_together),
    "release_has_variant": (2, release_has_variant),
    "cuda_tag_below": (2, cuda_tag_below),
    "cuda_tag_at_least": (2, cuda_tag_at_least),
    "offers_at_least": (2, offers_at_least),
}


def vetoed(unless: tuple[tuple[str, tuple[str, ...]], ...], values: Mapping[str, str]) -> bool:
    """Whether one of a rule's ``unless`` checks holds on the values it read (a check whose fields
    were not all read does not hold)."""
    for function, fields in unless:
        if all(f in values for f in fields) and CHECKS[function][1](*(values[f] for f in fields)):
            return True
    return False
