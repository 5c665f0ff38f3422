"""Which GPUs the build's result must run on, and their compute capabilities (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from torchsmith.build.options import BuildOptions
from torchsmith.errors import UsageError
from torchsmith.knowledge import Knowledge
from torchsmith.knowledge.compat import entry_cc, parse_cc
from torchsmith.probe.model import Finding, Probe


@dataclass(frozen=True)
class Targets:
    ccs: tuple[str, ...]  # sorted, unique: ("9.0", "12.0")
    gpus: tuple[str, ...]  # labels: "NVIDIA H200 (9.0)", "--cc 12.0"
    origin: str  # "this machine", "--cc/--gpu", "probe files"
    findings: tuple[Finding, ...] = ()
    # arch-specific (9.0a) or family-specific (10.0f) entries asked for by --cc, or kept from an
    # exported TORCH_CUDA_ARCH_LIST for a GPU here; each stands for its X.Y in the arch list
    specific: tuple[str, ...] = ()


def resolve_targets(
    probe: Probe, kb: Knowledge, options: BuildOptions, fleet: tuple[Probe, ...] = ()
) -> Targets:
    """--cc and --gpu first; then the fleet's probe files; else this machine's NVIDIA GPUs.

    With none of them and no NVIDIA GPU visible: no targets and a no-gpu-visible finding that
    asks for explicit ones (never a silent build for every arch).
    """
    ccs: dict[str, str] = {}  # cc -> first label
    specific: dict[str, str] = {}  # cc -> its 9.0a or 10.0f entry
    for cc in options.targets:
        read = inherited_arch_list(cc.strip())
        if len(read) != 1 or read[0].endswith("+PTX"):
            raise UsageError(
                f"--cc {cc!r} is not a compute capability",
                tip="write it as X.Y, e.g. --cc 12.0 (or 9.0a for arch-specific code)",
            )
        norm = entry_cc(read[0])
        if read[0] != norm:
            _check_specific(cc, read[0])
            specific.setdefault(norm, read[0])
        ccs.setdefault(norm, f"--cc {read[0]}")
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
        ccs.setdefault(model.compute_capability, f"{model.name} ({model.compute_capability})")
    if ccs:
        return _targets(ccs, "--cc/--gpu", specific)
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
    if ccs:  # an exported 9.0a for a 9.0 GPU here keeps its arch-specific code
        for entry in inherited_arch_list(inherited or ""):
            base = entry.removesuffix("+PTX")
            if entry_cc(base) in ccs and base != entry_cc(base):
                specific.setdefault(entry_cc(base), base)
        return _targets(ccs, "this machine", specific)
    if inherited:  # no GPU here: the list the user exported names the GPUs, as --cc would
        for cc in inherited_ccs(inherited):
            ccs.setdefault(cc, cc)
        return _targets(ccs, FROM_ENVIRONMENT)
    others = [g for g in probe.gpus if g.vendor in ("amd", "intel")]
    return Targets((), (), "this machine", (_no_gpu("this machine shows", bool(others)),))


FROM_ENVIRONMENT = "TORCH_CUDA_ARCH_LIST from your environment"


def _check_specific(given: str, entry: str) -> None:
    """Arch-specific code begins with sm_90a (Hopper), family-specific with sm_100f (Blackwell,
    CUDA 12.9): the CUDA C++ Programming Guide's feature-set compiler targets. Checked with nvcc
    13.0 here: compute_86a and compute_90f are "Unsupported gpu architecture"; 90a, 100a, 120a,
    120f and 121f compile."""
    major = parse_cc(entry_cc(entry))[0]
    first = 9 if entry.endswith("a") else 10
    if major < first:
        raise UsageError(
            f"--cc {given!r}: {'arch' if first == 9 else 'family'}-specific code exists from "
            f"compute capability {first}.0 on",
            tip=f"write it as X.Y: --cc {entry_cc(entry)}",
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
        base = word.removesuffix("+PTX")
        suffix = base[-1:] if base[-1:] in ("a", "f") else ""
        try:
            major, minor = parse_cc(base.removesuffix(suffix) if suffix else base)
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


def _targets(ccs: dict[str, str], origin: str, specific: dict[str, str] | None = None) -> Targets:
    order = sorted(ccs, key=parse_cc)
    kept = tuple((specific or {})[c] for c in order if c in (specific or {}))
    return Targets(tuple(order), tuple(ccs[c] for c in order), origin, specific=kept)


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
