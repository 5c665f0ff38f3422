"""Which GPUs the build's result must run on, and their compute capabilities (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from torchsmith.build.options import BuildOptions
from torchsmith.errors import UsageError
from torchsmith.knowledge import Knowledge
from torchsmith.knowledge.compat import (
    covers,
    entry_cc,
    parse_cc,
    specific_entry_problem,
    split_entry,
)
from torchsmith.probe.model import Finding, Probe


@dataclass(frozen=True)
class Targets:
    ccs: tuple[str, ...]  # sorted, unique: ("9.0", "12.0")
    gpus: tuple[str, ...]  # labels: "NVIDIA H200 (9.0)", "--cc 12.0"
    origin: str  # "this machine", "--cc/--gpu", "probe files"
    findings: tuple[Finding, ...] = ()
    # the arch-list entries, when some are arch-specific (9.0a) or family-specific (10.0f): asked
    # for by --cc, or kept from an exported TORCH_CUDA_ARCH_LIST for a GPU here; empty: the ccs
    entries: tuple[str, ...] = ()


_CC = re.compile(r"([0-9]{1,2})\.([0-9])([af]?)")


def resolve_targets(
    probe: Probe, kb: Knowledge, options: BuildOptions, fleet: tuple[Probe, ...] = ()
) -> Targets:
    """--cc and --gpu first; then the fleet's probe files; else this machine's NVIDIA GPUs.

    With none of them and no NVIDIA GPU visible: no targets and a no-gpu-visible finding that
    asks for explicit ones (never a silent build for every arch).
    """
    ccs: dict[str, str] = {}  # cc -> what names it: "--cc 9.0a, NVIDIA H100 (9.0)"
    entries: list[str] = []  # 9.0, 9.0a, 12.0: what the arch list holds
    for cc in options.targets:
        m = _CC.fullmatch(cc.strip())
        if not m:
            raise UsageError(
                f"--cc {cc!r} is not a compute capability",
                tip="write it as X.Y, e.g. --cc 12.0 (or 9.0a for arch-specific code)",
            )
        norm = f"{int(m.group(1))}.{m.group(2)}"
        entry = norm + m.group(3)
        if m.group(3):
            _check_specific(cc, entry, kb)
        if entry not in entries:
            entries.append(entry)
            ccs[norm] = f"{ccs[norm]}, {entry}" if norm in ccs else f"--cc {entry}"
    for name in options.gpus:
        model = kb.find_gpu(name)
        if model is None and (kb.find_amd_gpu(name) or kb.find_intel_gpu(name)):
            raise UsageError(
                f"--gpu {name!r} is not an NVIDIA GPU: torchsmith build sets up CUDA builds "
                "(TORCH_CUDA_ARCH_LIST), not ROCm or XPU ones",
                tip="torchsmith plan --gpu NAME gives the prebuilt ROCm or xpu wheel for it",
            )
        if model is None:
            near = kb.suggest_gpus(name)
            raise UsageError(
                f"--gpu {name!r} is not a GPU torchsmith knows",
                tip=(f"did you mean: {', '.join(near)}? " if near else "")
                + "or give its compute capability with --cc X.Y",
            )
        cc = model.compute_capability
        label = f"{model.name} ({cc})"
        if cc in ccs:
            ccs[cc] = ccs[cc] if label in ccs[cc] else f"{ccs[cc]}, {label}"
        else:
            ccs[cc] = label
        if not any(covers(e, cc) for e in entries):  # --cc 9.0a (or 10.0f) --gpu H100 (B300)
            entries.append(cc)
    if ccs:
        return _targets(ccs, "--cc/--gpu", entries)
    if fleet:
        for other in fleet:
            for gpu in _nvidia(other):
                ccs.setdefault(gpu[1], f"{gpu[0]} ({gpu[1]})")
        if ccs:
            return _targets(ccs, "probe files")
        others = [g for p in fleet for g in p.gpus if g.vendor in ("amd", "intel")]
        return Targets((), (), "probe files", (_no_gpu("the probe files list", bool(others)),))
    for name, cc in _nvidia(probe):
        ccs.setdefault(cc, f"{name} ({cc})")
    inherited = options.inherited_value("TORCH_CUDA_ARCH_LIST")
    if ccs:  # an exported 9.0a for a 9.0 GPU here is kept: the user asked for that code
        exported = [e.removesuffix("+PTX") for e in inherited_arch_list(inherited or "")]
        for cc in ccs:
            mine = [e for e in exported if covers(e, cc)]
            entries += list(dict.fromkeys(mine)) if any(e != cc for e in mine) else [cc]
        return _targets(ccs, "this machine", entries)
    if inherited:  # no GPU here: the list the user exported names the GPUs, as --cc would
        for cc in inherited_ccs(inherited):
            ccs.setdefault(cc, cc)
        return _targets(ccs, FROM_ENVIRONMENT)
    others = [g for g in probe.gpus if g.vendor in ("amd", "intel")]
    return Targets((), (), "this machine", (_no_gpu("this machine shows", bool(others)),))


FROM_ENVIRONMENT = "TORCH_CUDA_ARCH_LIST from your environment"


def _check_specific(given: str, entry: str, kb: Knowledge) -> None:
    """Arch-specific code exists from sm_90a on, family-specific from sm_100f (the KB's
    arch_suffix facts, read from ptxas)."""
    problem = specific_entry_problem(entry, kb)
    if problem:
        raise UsageError(
            f"--cc {given!r}: {problem}", tip=f"write it as X.Y: --cc {entry_cc(entry)}"
        )


def inherited_ccs(value: str) -> list[str]:
    """The compute capabilities of a TORCH_CUDA_ARCH_LIST value ("8.6;9.0+PTX", "8.6 9.0a")."""
    return [entry_cc(entry) for entry in inherited_arch_list(value)]


def inherited_arch_list(value: str) -> list[str]:
    """The X.Y entries of a TORCH_CUDA_ARCH_LIST value, normalised, with their +PTX and the
    suffix of an arch-specific 9.0a or family-specific 10.0f (torch keeps both, and so does
    CMake's 90a); names (Ampere) are left out."""
    out = []
    for word in value.replace(";", " ").split():
        ptx = word.endswith("+PTX")
        cc, suffix = split_entry(word)
        try:
            major, minor = parse_cc(cc)
        except ValueError:
            continue
        out.append(f"{major}.{minor}{suffix}" + ("+PTX" if ptx else ""))
    return out


def unread_arch_entries(value: str) -> list[str]:
    """The entries of a TORCH_CUDA_ARCH_LIST value that torchsmith does not read as X.Y, 9.0a
    or 10.0f (names such as Ampere)."""
    return [word for word in value.replace(";", " ").split() if not inherited_arch_list(word)]


def _nvidia(probe: Probe) -> list[tuple[str, str]]:
    return [
        (g.name, g.compute_capability)
        for g in probe.gpus
        if g.vendor == "nvidia" and g.compute_capability
    ]


def _targets(ccs: dict[str, str], origin: str, entries: list[str] | None = None) -> Targets:
    order = sorted(ccs, key=parse_cc)
    listed = sorted(entries or (), key=lambda e: (parse_cc(entry_cc(e)), e))
    specific = tuple(listed) if any(e != entry_cc(e) for e in listed) else ()
    return Targets(tuple(order), tuple(ccs[c] for c in order), origin, entries=specific)


def _no_gpu(where: str, other_vendor: bool = False) -> Finding:
    if other_vendor:  # an AMD or Intel GPU: this builder does CUDA builds only
        return Finding(
            category="no-gpu-visible",
            severity="error",
            message=f"{where} an AMD or Intel GPU and no NVIDIA GPU: torchsmith build sets up "
            "CUDA builds (TORCH_CUDA_ARCH_LIST), not ROCm or XPU ones",
            fix="for this GPU, install the prebuilt ROCm or xpu wheel (torchsmith plan); to build "
            "for NVIDIA GPUs elsewhere, name them: --gpu NAME or --cc X.Y",
            subject="targets",
        )
    return Finding(
        category="no-gpu-visible",
        severity="error",
        message=f"{where} no NVIDIA GPU, so there is no GPU to build for; torchsmith does not "
        "silently build for every arch",
        fix="name the GPUs the result must run on: --gpu 'RTX 5070' or --cc 12.0 "
        "(or --probe FILE from the machine that will run it)",
        subject="targets",
    )
