"""The planner: a pure function of (machine facts, knowledge, options) → Plan.

For each torch release (newest first, within the user's constraint) and each variant that exists
for the machine's platform, it checks the Python version, whether the variant's GPU code serves
every GPU (SASS of the same major and a lower-or-equal minor, or PTX at or below), and whether the
driver reaches the variant's CUDA line floor. What passes is ranked; what fails is rejected with a
taxonomy category and one sentence.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from torchsmith.errors import UsageError
from torchsmith.knowledge import Knowledge, TorchRelease, Wheel
from torchsmith.knowledge.compat import (
    Coverage,
    coverage,
    describe_archs,
    driver_at_least,
    parse_cc,
    torch_cuda_arch_list,
)
from torchsmith.knowledge.model import gfx_to_hsa, index_url, variant_cuda
from torchsmith.plan import findings as plan_findings
from torchsmith.plan.commands import source_commands, wheel_commands
from torchsmith.plan.model import (
    GpuTarget,
    MachineFacts,
    Plan,
    PlanOptions,
    Recommendation,
    Rejection,
    SourceBuild,
)

MAX_ALTERNATIVES = 5


def parse_spec(text: str | None) -> SpecifierSet | None:
    if text is None or not text.strip():
        return None
    value = text.strip()
    if value[0].isdigit():
        value = "==" + value + (".*" if value.count(".") == 1 else "")
    try:
        return SpecifierSet(value)
    except InvalidSpecifier:
        raise UsageError(
            f"--torch {text}: not a version constraint",
            tip="use a PEP 440 specifier such as ==2.6.* or >=2.4,<2.8",
        ) from None


def platform_of(machine: MachineFacts) -> str:
    if machine.os == "macos":
        return "macos-arm64" if machine.arch == "aarch64" else "macos-x86_64"
    return f"{machine.os}-{machine.arch}"


def candidate_releases(
    kb: Knowledge, spec: SpecifierSet | None, machine: MachineFacts | None = None
) -> list[TorchRelease]:
    """The newest matching patch of every minor, newest minor first; for a machine whose Python
    the newest patch has no wheel for, the newest patch that has one (2.12.1 dropped 3.13t
    wheels that 2.12.0 had)."""
    by_minor: dict[str, TorchRelease] = {}
    for release in kb.releases:
        if spec is None or spec.contains(Version(release.version), prereleases=True):
            known = by_minor.get(release.minor)
            if known is None or _ships(release, machine) or not _ships(known, machine):
                by_minor[release.minor] = release
    return sorted(by_minor.values(), key=lambda r: Version(r.version), reverse=True)


def _ships(release: TorchRelease, machine: MachineFacts | None) -> bool:
    """``release`` has a wheel for the machine's Python on its platform (True when unknown)."""
    if machine is None or machine.python is None:
        return True
    return machine.python in release.python.get(platform_of(machine), [])


def make_plan(machine: MachineFacts, kb: Knowledge, options: PlanOptions) -> Plan:
    spec = parse_spec(options.torch)
    releases = candidate_releases(kb, spec, machine)
    base = Plan(machine=machine, options=options, recommendation=_none("no plan"))
    if not releases:
        newest = kb.newest_release().version
        return replace(
            base,
            recommendation=_none(
                f"no torch release matches {options.torch} "
                f"(the knowledge base knows 2.0.0 to {newest})"
            ),
        )
    nvidia = tuple(g for g in machine.gpus if g.vendor == "nvidia")
    impossible = _impossible(machine, nvidia)
    if impossible is not None:
        rec = _with_cpu_commands(_none(impossible), kb, options, releases, machine)
        return replace(base, recommendation=rec)
    if any(g.jetson for g in nvidia):
        return _jetson_plan(
            base=base, machine=machine, kb=kb, options=options, releases=releases, nvidia=nvidia
        )
    # a driver older than a GPU's architecture runs nothing on it: plan for the driver the
    # user must install anyway, and say so first
    found = plan_findings.driver_vs_gpu(machine, kb, nvidia)
    unusable = found if found is not None and found.severity == "error" else None
    planned = machine if unusable is None else replace(machine, driver=None)
    viable, rejected = _evaluate(
        machine=planned, kb=kb, options=options, releases=releases, nvidia=nvidia
    )
    source = None
    arch_blocked = any(r.category == "arch-not-compiled" for r in rejected)
    # releases with no CUDA wheel for this platform at all (linux-aarch64 before sbsa wheels)
    platform_blocked = any(
        not any(w.cuda for w in kb.wheels_for(r.version, planned.os, planned.arch))
        for r in releases
    )
    # wheels whose arch lists are not established (a new release's Windows wheels)
    unverified = any(_unestablished(planned, kb, rejected))
    if nvidia and (
        options.prefer == "source"
        or (not viable and (arch_blocked or platform_blocked or unverified))
    ):
        source = plan_source_build(
            machine=planned, kb=kb, options=options, releases=releases, nvidia=nvidia
        )
    recommendation, alternatives = _choose(
        machine=planned,
        options=options,
        viable=viable,
        rejected=rejected,
        source=source,
        nvidia=nvidia,
    )
    if recommendation.kind == "none":
        recommendation = _python_for_platform(planned, recommendation, releases, options)
        if not nvidia and machine.gpus:  # an AMD or Intel GPU no wheel can use here
            recommendation = _with_cpu_commands(recommendation, kb, options, releases, planned)
    if recommendation.kind == "none" and nvidia:
        recommendation = replace(
            recommendation,
            reasons=recommendation.reasons
            + _unestablished_hint(planned, kb, rejected, nvidia)
            + _no_source_reason(planned, kb, releases, nvidia),
        )
    elif recommendation.kind == "source" and options.prefer != "source":
        # a wheel that probably serves the GPU saves hours of building: say so first
        hint = _unestablished_hint(planned, kb, rejected, nvidia)
        if hint:
            recommendation = replace(
                recommendation,
                reasons=(f"before building, try a wheel: {hint[0]}", *recommendation.reasons),
            )
    if len(nvidia) > 1 and recommendation.kind in ("none", "source"):
        recommendation = replace(
            recommendation,
            reasons=recommendation.reasons
            + _per_gpu(machine=planned, kb=kb, options=options, releases=releases, nvidia=nvidia),
        )
    if unusable is not None:
        first = f"first update the NVIDIA driver: {unusable.message}"
        recommendation = replace(recommendation, reasons=(first, *recommendation.reasons))
        gpu_need = plan_findings.driver_for_gpus(machine.os, kb, nvidia)
        wheel_need = recommendation.min_driver
        if wheel_need and (gpu_need is None or driver_at_least(wheel_need, gpu_need)):
            unusable = replace(
                unusable,
                fix=f"install an NVIDIA driver >= {wheel_need} (what torch "
                f"{recommendation.torch}+{recommendation.variant} needs), then plan again",
            )
        elif wheel_need and gpu_need:
            # the GPU asks for more than the wheel: one number, the higher
            unusable = replace(
                unusable,
                fix=f"install an NVIDIA driver >= {gpu_need} (what the GPU's architecture "
                "needs, more than the wheel does), then plan again",
            )
    lead = unusable or found  # the error (its fix made concrete above), or the warning
    findings = plan_findings.collect(
        machine=machine,
        kb=kb,
        rec=recommendation,
        rejected=rejected,
        releases=releases,
        nvidia=nvidia,
        source=source,
    )
    return replace(
        base,
        recommendation=recommendation,
        alternatives=alternatives,
        rejected=tuple(rejected),
        findings=findings if lead is None else (lead, *findings),
        source_build=source,
    )


def _impossible(machine: MachineFacts, nvidia: tuple[GpuTarget, ...]) -> str | None:
    if machine.os == "macos" and nvidia:
        names = ", ".join(g.name for g in nvidia)
        return (
            f"macOS has no CUDA: PyTorch cannot use an NVIDIA GPU ({names}) on macOS; "
            "on a Mac it runs on the CPU or the Apple GPU (MPS)"
        )
    if machine.os == "windows" and machine.arch != "x86_64":
        return "the knowledge base has no torch wheels for Windows on Arm"
    unknown = [g.name for g in nvidia if g.compute_capability is None]
    if unknown:
        return (
            f"the compute capability of {', '.join(unknown)} is unknown, so no wheel can be "
            "checked against it; give it with --cc X.Y"
        )
    return None


def _evaluate(
    *,
    machine: MachineFacts,
    kb: Knowledge,
    options: PlanOptions,
    releases: list[TorchRelease],
    nvidia: tuple[GpuTarget, ...],
) -> tuple[list[Recommendation], list[Rejection]]:
    platform = platform_of(machine)
    viable: list[Recommendation] = []
    rejected: list[Rejection] = []
    for release in releases:
        tags = release.python.get(platform)
        if not tags:
            rejected.append(
                Rejection(
                    release.version,
                    None,
                    "other",
                    f"torch {release.version} has no wheels for {platform}",
                    release.sources,
                )
            )
            continue
        if machine.python is not None and machine.python not in tags:
            # A wheel for another Python helps only if the release has one for this GPU:
            # when none serves it, the GPU (or driver) is the fact to act on.
            gpu_problems: list[Rejection] = []
            if nvidia and machine.os != "macos":
                served = _cuda_choices(
                    machine=machine,
                    kb=kb,
                    options=options,
                    release=release,
                    nvidia=nvidia,
                    rejected=gpu_problems,
                )
                certain = {"arch-not-compiled", "driver-too-old"}
                if not served and gpu_problems and {r.category for r in gpu_problems} <= certain:
                    rejected.extend(gpu_problems)
                    continue
            rejected.append(
                Rejection(
                    release.version,
                    None,
                    "python-unsupported",
                    f"torch {release.version} has no {platform} wheel for Python {machine.python} "
                    f"(it has {', '.join(tags)})",
                    release.sources,
                )
            )
            continue
        if machine.os == "macos":
            viable.append(
                _wheel_choice(
                    kb=kb,
                    options=options,
                    release=release,
                    variant="cpu",
                    index=None,
                    machine=machine,
                    reasons=[_mps_sentence(kb, machine)],
                )
            )
            continue
        amd = tuple(g for g in machine.gpus if g.vendor == "amd")
        intel = tuple(g for g in machine.gpus if g.vendor == "intel")
        if not nvidia and amd:
            viable.extend(
                _rocm_choices(
                    machine=machine,
                    kb=kb,
                    options=options,
                    release=release,
                    amd=amd,
                    rejected=rejected,
                )
            )
            continue
        if not nvidia and intel:
            viable.extend(
                _xpu_choices(
                    machine=machine,
                    kb=kb,
                    options=options,
                    release=release,
                    intel=intel,
                    rejected=rejected,
                )
            )
            continue
        if not nvidia:
            viable.append(_cpu_choice(kb, options, release, machine))
            continue
        viable.extend(
            _cuda_choices(
                machine=machine,
                kb=kb,
                options=options,
                release=release,
                nvidia=nvidia,
                rejected=rejected,
            )
        )
    return viable, rejected


def _cuda_choices(
    *,
    machine: MachineFacts,
    kb: Knowledge,
    options: PlanOptions,
    release: TorchRelease,
    nvidia: tuple[GpuTarget, ...],
    rejected: list[Rejection],
) -> list[Recommendation]:
    platform = platform_of(machine)
    default = release.pypi_default.get(platform)
    wheels = [w for w in kb.wheels_for(release.version, machine.os, machine.arch) if w.cuda]
    if not wheels:
        rejected.append(
            Rejection(
                release.version,
                None,
                "other",
                f"the knowledge base lists no CUDA wheel of torch {release.version} for {platform}",
                release.sources,
            )
        )
        return []
    # Wheels with native code (SASS) for every GPU first: PTX JIT from an older architecture
    # starts slowly and runs without the CUDA libraries' kernels for the GPU (an RTX 5090 on
    # cu118's PTX). Then the PyPI default (the simplest command), then variants whose CUDA the
    # driver supports natively, then the newest CUDA.
    wheels.sort(
        key=lambda w: (
            _jit_only(w, nvidia),
            w.variant != default,
            not _driver_native(machine, kb, w),
            -_cuda_key(w),
        )
    )
    out = []
    for wheel in wheels:
        problem = _wheel_problem(machine, kb, release, wheel, nvidia)
        if problem is not None:
            rejected.append(problem)
            continue
        reasons = [_serves_sentence(wheel, nvidia)]
        if _jit_only(wheel, nvidia):
            reasons.append(
                "no native code for the GPU in it: its PTX is compiled at first use (a slow "
                f"start), and CUDA {wheel.cuda}'s libraries (cuBLAS, cuDNN) may have no kernels "
                "for it; a newer torch with a CUDA that targets the GPU is the better fix"
            )
        if wheel.variant == default:
            reasons.append(f"it is the default PyPI wheel for {platform}")
        if not _driver_native(machine, kb, wheel):
            reasons.append(
                f"driver {machine.driver} predates CUDA {wheel.cuda}: the wheel runs through "
                "CUDA minor-version compatibility (PTX JIT and the newest CUDA features need a "
                "newer driver)"
            )
        index = None if wheel.variant == default else wheel.index_url
        out.append(
            _wheel_choice(
                kb=kb,
                options=options,
                release=release,
                variant=wheel.variant,
                index=index,
                machine=machine,
                reasons=reasons,
            )
        )
    return out


def _jit_only(wheel: Wheel, nvidia: tuple[GpuTarget, ...]) -> bool:
    """Some GPU runs this wheel only through PTX JIT (False when its archs are unknown)."""
    archs = wheel.archs
    if archs is None:
        return False
    return any(
        (cov := coverage(archs.sass, archs.ptx, g.compute_capability)).ok and cov.jit
        for g in nvidia
        if g.compute_capability
    )


def _mps_sentence(kb: Knowledge, machine: MachineFacts) -> str:
    mps = kb.mps
    need = f"macOS {mps.macos_min} or newer" if mps else "a recent macOS"
    if machine.arch == "aarch64":
        return (
            "macOS arm64 wheels run on the CPU and on the Apple GPU through MPS, "
            f"which needs {need}"
        )
    return (
        "macOS x86_64 wheels (the last is torch 2.2) run on the CPU, and on the GPU through MPS "
        f"only on an Intel Mac with an AMD GPU and {need}; on an Apple silicon Mac, an arm64 "
        "Python gets current wheels that use its GPU"
    )


def _rocm_choices(
    *,
    machine: MachineFacts,
    kb: Knowledge,
    options: PlanOptions,
    release: TorchRelease,
    amd: tuple[GpuTarget, ...],
    rejected: list[Rejection],
) -> list[Recommendation]:
    """The rocmX.Y variants of one release that carry code for every AMD GPU, newest first."""
    wheels = [
        w
        for w in kb.wheels_for(release.version, machine.os, machine.arch)
        if w.variant.startswith("rocm")
    ]
    if not wheels:
        why = (
            "the knowledge base lists none for this release"
            if platform_of(machine) == "linux-x86_64"
            else "PyTorch builds them for Linux x86_64 only"
        )
        rejected.append(
            Rejection(
                release.version,
                None,
                "other",
                f"torch {release.version} has no ROCm wheels for {platform_of(machine)}, "
                f"because {why}",
                release.sources,
            )
        )
        return []
    unknown = [g for g in amd if g.gfx is None]
    if unknown and wheels:
        rejected.append(
            Rejection(
                release.version,
                None,
                "other",
                f"the gfx target of the {unknown[0].name} is unknown, so no ROCm wheel of torch "
                f"{release.version} can be checked against it",
                release.sources,
            )
        )
        return []
    wheels.sort(key=lambda w: _rocm_key(w.variant), reverse=True)
    direct: list[Recommendation] = []
    override: list[Recommendation] = []
    for wheel in wheels:
        archs = kb.rocm_gfx(release.version, wheel.variant)
        if archs is None:
            rejected.append(
                Rejection(
                    release.version,
                    wheel.variant,
                    "other",
                    f"{wheel.variant} wheels of torch {wheel.torch} exist, "
                    "but their gfx targets are not established",
                    wheel.sources,
                )
            )
            continue
        missing = [g for g in amd if g.gfx not in archs.gfx]
        stand_ins = {g.name: _gfx_stand_in(g.gfx, archs.gfx) for g in missing}
        served = [g for g in amd if g not in missing]
        # HSA_OVERRIDE_GFX_VERSION applies to every GPU of the process: beside a GPU the wheel
        # serves, it helps only where that GPU is itself the stand-in
        one_override = {stand_ins[g.name] for g in missing} | {g.gfx for g in served}
        hide = bool(missing and served and (None in one_override or len(one_override) > 1))
        if missing and not hide and not all(stand_ins.values()):
            gpu = next(g for g in missing if not stand_ins[g.name])
            rejected.append(
                Rejection(
                    release.version,
                    wheel.variant,
                    "arch-not-compiled",
                    f"{wheel.variant} wheels of torch {wheel.torch} are built for "
                    f"{_gfx_span(archs.gfx)}, and the {gpu.name} is "
                    f"{gpu.gfx or 'of an unknown gfx target'}",
                    archs.sources,
                )
            )
            continue
        reasons = (
            _amd_hide_reasons(wheel, served, missing)
            if hide
            else _amd_override_reasons(wheel, served, missing, stand_ins)
        )
        reasons.append(f"ROCm wheels come from {wheel.index_url}, not from PyPI")
        choice = _wheel_choice(
            kb=kb,
            options=options,
            release=release,
            variant=wheel.variant,
            index=wheel.index_url,
            machine=machine,
            reasons=reasons,
        )
        (override if missing and not hide else direct).append(choice)
    return direct + override


def _amd_override_reasons(
    wheel: Wheel,
    served: list[GpuTarget],
    missing: list[GpuTarget],
    stand_ins: dict[str, str | None],
) -> list[str]:
    reasons = (
        [
            f"{wheel.variant} wheels of torch {wheel.torch} carry code for "
            + ", ".join(f"{g.gfx} (the {g.name})" for g in served)
        ]
        if served
        else []
    )
    for gpu in missing:
        stand_in = stand_ins[gpu.name]
        assert stand_in is not None
        reasons.append(
            f"{wheel.variant} wheels of torch {wheel.torch} have no {gpu.gfx} code for the "
            f"{gpu.name}, but its {stand_in} code runs on it with "
            f"HSA_OVERRIDE_GFX_VERSION={gfx_to_hsa(stand_in)} (AMD does not support this)"
        )
    return reasons


def _amd_hide_reasons(wheel: Wheel, served: list[GpuTarget], missing: list[GpuTarget]) -> list[str]:
    """A wheel that serves some AMD GPUs of the machine but not the others (often an iGPU)."""
    names = " and ".join(f"the {g.name} ({g.gfx})" for g in missing)
    return [
        f"{wheel.variant} wheels of torch {wheel.torch} carry code for "
        + ", ".join(f"{g.gfx} (the {g.name})" for g in served),
        f"they have none for {names}, which torch would list too: hide "
        f"{'it' if len(missing) == 1 else 'them'} with HIP_VISIBLE_DEVICES set to the other "
        "GPUs' indices (rocm-smi lists them; an integrated GPU can also be turned off in the "
        "firmware settings); HSA_OVERRIDE_GFX_VERSION cannot help, as it applies to every GPU",
    ]


def _rocm_key(variant: str) -> tuple[int, ...]:
    return tuple(int(p) for p in variant.removeprefix("rocm").split("."))


def _gfx_span(gfx: tuple[str, ...]) -> str:
    return ", ".join(gfx[:-1]) + f" and {gfx[-1]}" if len(gfx) > 1 else gfx[0]


def _gfx_stand_in(gfx: str | None, built: tuple[str, ...]) -> str | None:
    """A built target of the same family a consumer GPU can pose as (gfx1031 → gfx1030).

    HSA_OVERRIDE_GFX_VERSION makes the ROCm runtime load another target's code objects; the
    common working case is an RDNA board posing as the first chip of its generation.
    """
    if gfx is None or (not gfx.startswith("gfx10") and not gfx.startswith("gfx11")):
        return None
    family = gfx[:-1]
    candidates = [g for g in built if g.startswith(family) and g != gfx]
    return min(candidates) if candidates else None


def _xpu_choices(
    *,
    machine: MachineFacts,
    kb: Knowledge,
    options: PlanOptions,
    release: TorchRelease,
    intel: tuple[GpuTarget, ...],
    rejected: list[Rejection],
) -> list[Recommendation]:
    support = kb.xpu_support(release.version, machine.os)
    if support is None or machine.arch != "x86_64":
        first = min((x.torch_min for x in kb.xpu), default=None)
        why = (
            f"xpu wheels start with torch {first}"
            if first and machine.os in {o for x in kb.xpu for o in x.os}
            else "xpu wheels exist for Linux and Windows on x86_64 only"
        )
        rejected.append(
            Rejection(
                release.version,
                "xpu",
                "other",
                f"torch {release.version} has no xpu wheels for {platform_of(machine)}, "
                f"because {why}",
                tuple(s for x in kb.xpu for s in x.sources),
            )
        )
        return []
    unsupported = []
    for gpu in intel:
        model = kb.find_intel_gpu(gpu.name)
        if model is None:
            continue
        if machine.os not in model.os:
            why = (
                f"xpu wheels of torch {release.version} support the {model.family} "
                f"on {' and '.join(model.os)} only, not on {machine.os}"
                if model.os
                else f"the {model.family} is not among the GPUs PyTorch's xpu wheels support "
                "(Arc A/B-series, Core Ultra Arc graphics, Data Center GPU Max)"
            )
            unsupported.append((gpu, model, why))
        elif model.torch_min and Version(release.minor) < Version(model.torch_min):
            why = (
                f"xpu wheels support the {model.family} from torch {model.torch_min} on, "
                f"not in torch {release.version}"
            )
            unsupported.append((gpu, model, why))
    served = [g for g in intel if all(g is not u for u, _, _ in unsupported)]
    if not served:
        # an integrated GPU next to a supported Arc board does not block the Arc board
        _, model, why = unsupported[0]
        rejected.append(Rejection(release.version, "xpu", "other", why, model.sources))
        return []
    reasons = [
        f"xpu wheels of torch {release.minor} support "
        + ", ".join(f"the {g.name}, an {g.architecture} GPU," for g in served)
        + f" on {machine.os}",
        f"xpu wheels come from {index_url('xpu')}, and they need Intel's GPU driver "
        "(on Linux, its Level Zero GPU runtime: on Ubuntu intel-level-zero-gpu and libze1)",
    ]
    if unsupported:
        names = " and ".join(f"the {g.name}" for g, _, _ in unsupported)
        reasons.append(
            f"{names} {'is' if len(unsupported) == 1 else 'are'} not supported by them: "
            "select the supported GPU "
            "(torch.device('xpu:N'), or ONEAPI_DEVICE_SELECTOR=level_zero:N)"
        )
    return [
        _wheel_choice(
            kb=kb,
            options=options,
            release=release,
            variant="xpu",
            index=index_url("xpu"),
            machine=machine,
            reasons=reasons,
        )
    ]


def _driver_native(machine: MachineFacts, kb: Knowledge, wheel: Wheel) -> bool:
    """Whether the driver is at least the minimum of the wheel's own CUDA toolkit release.

    Unknown driver or minimum counts as native: minor-version compatibility is judged apart.
    """
    toolkit = kb.toolkit(wheel.cuda) if wheel.cuda else None
    if machine.driver is None or toolkit is None:
        return True
    # Windows has no minimum from CUDA 13.0 on (N/A): Linux's then stands for both
    minimum = toolkit.min_driver(machine.os) or toolkit.min_driver_linux
    return minimum is None or driver_at_least(machine.driver, minimum)


def _wheel_problem(
    machine: MachineFacts,
    kb: Knowledge,
    release: TorchRelease,
    wheel: Wheel,
    nvidia: tuple[GpuTarget, ...],
) -> Rejection | None:
    v = release.version
    if wheel.archs is None:
        # The exact arch list is unknown: still decide by what is certain, the check a user
        # can act on first (another variant for the GPU, then a driver update).
        return (
            _toolkit_cannot_target(v, kb, wheel, nvidia)
            or _driver_below_floor(v, machine, kb, wheel)
            or Rejection(
                v,
                wheel.variant,
                "other",
                f"{wheel.variant} wheels of torch {wheel.torch} exist, "
                "but their GPU archs are not established",
                wheel.sources,
            )
        )
    for gpu in nvidia:
        assert gpu.compute_capability is not None
        if not coverage(wheel.archs.sass, wheel.archs.ptx, gpu.compute_capability).ok:
            return Rejection(
                v,
                wheel.variant,
                "arch-not-compiled",
                f"{wheel.variant} wheels of torch {wheel.torch} carry "
                f"{describe_archs(wheel.archs.sass, wheel.archs.ptx)}, "
                f"and the {gpu.name} is {gpu.sm}",
                wheel.sources,
            )
    return _driver_below_floor(v, machine, kb, wheel)


def _toolkit_cannot_target(
    torch: str, kb: Knowledge, wheel: Wheel, nvidia: tuple[GpuTarget, ...]
) -> Rejection | None:
    """A wheel built with a toolkit whose nvcc cannot emit SASS or PTX the GPU runs.

    Whatever its arch list, such a wheel holds no code for the GPU: SASS runs on the same major
    with a lower or equal minor, PTX on any equal or newer GPU, and the toolkit emits neither
    below its lowest target.
    """
    toolkit = kb.toolkit(wheel.cuda) if wheel.cuda else None
    if toolkit is None:
        return None
    sass = tuple(t for t in toolkit.sm_targets if t[-1].isdigit())
    ptx = tuple("compute_" + t.removeprefix("sm_") for t in sass)
    for gpu in nvidia:
        assert gpu.compute_capability is not None
        if not coverage(sass, ptx, gpu.compute_capability).ok:
            return Rejection(
                torch,
                wheel.variant,
                "arch-not-compiled",
                f"{wheel.variant} wheels of torch {wheel.torch} are built with CUDA "
                f"{wheel.cuda}, whose compiler cannot emit code below {sass[0]}, "
                f"so they hold no code for the {gpu.name} ({gpu.sm})",
                (*wheel.sources, *toolkit.sources),
            )
    return None


def _driver_below_floor(
    torch: str, machine: MachineFacts, kb: Knowledge, wheel: Wheel
) -> Rejection | None:
    floor = kb.variant_min_driver(wheel.variant, machine.os)
    driver = machine.driver
    if driver is None or floor is None or driver_at_least(driver, floor):
        return None
    cuda = variant_cuda(wheel.variant) or "?"
    return Rejection(
        torch,
        wheel.variant,
        "driver-too-old",
        f"{wheel.variant} wheels need driver {floor} or newer (the CUDA {cuda.split('.')[0]}.x "
        f"floor), and this machine has {driver}",
        kb.floors_sources(cuda),
    )


def _serves_sentence(wheel: Wheel, nvidia: tuple[GpuTarget, ...]) -> str:
    assert wheel.archs is not None
    parts = []
    for gpu in nvidia:
        assert gpu.compute_capability is not None
        cov = coverage(wheel.archs.sass, wheel.archs.ptx, gpu.compute_capability)
        parts.append(f"the {gpu.name} ({gpu.sm}) {_runs_its(cov)}")
    return f"{wheel.variant} wheels of torch {wheel.torch}: " + "; ".join(parts)


def _runs_its(cov: Coverage) -> str:
    """How a GPU runs a wheel that serves it: "runs its sm_86 code", or its PTX through JIT."""
    return (
        f"runs its PTX {cov.via} (JIT-compiled at first use)"
        if cov.jit
        else f"runs its {cov.via} code"
    )


def _cpu_choice(
    kb: Knowledge, options: PlanOptions, release: TorchRelease, machine: MachineFacts
) -> Recommendation:
    platform = platform_of(machine)
    apple = [g.name for g in machine.gpus if g.vendor == "apple"]
    reasons = (
        [
            f"PyTorch uses an Apple GPU ({', '.join(apple)}) only through MPS on macOS; "
            f"on {machine.os} it runs on the CPU"
        ]
        if apple
        else ["no NVIDIA GPU to serve"]
    )
    if release.pypi_default.get(platform) == "cpu":
        reasons.append(f"the default PyPI wheel for {platform} is the CPU build")
        return _wheel_choice(
            kb=kb,
            options=options,
            release=release,
            variant="cpu",
            index=None,
            machine=machine,
            reasons=reasons,
        )
    reasons.append("the CPU index avoids downloading CUDA libraries")
    return _wheel_choice(
        kb=kb,
        options=options,
        release=release,
        variant="cpu",
        index=index_url("cpu"),
        machine=machine,
        reasons=reasons,
    )


def _wheel_choice(
    *,
    kb: Knowledge,
    options: PlanOptions,
    release: TorchRelease,
    variant: str,
    index: str | None,
    machine: MachineFacts,
    reasons: list[str],
) -> Recommendation:
    companions = kb.companions(release.version)
    floor = kb.variant_min_driver(variant, machine.os)
    return Recommendation(
        kind="cpu" if variant == "cpu" else "wheel",
        torch=release.version,
        variant=variant,
        index_url=index,
        commands=wheel_commands(
            release.version,
            index,
            companions,
            options.installer,
            python=machine.python_path,
            os_name=machine.os,
        ),
        reasons=tuple(reasons),
        min_driver=floor,
        companions=companions,
    )


def _choose(
    *,
    machine: MachineFacts,
    options: PlanOptions,
    viable: list[Recommendation],
    rejected: list[Rejection],
    source: SourceBuild | None,
    nvidia: tuple[GpuTarget, ...],
) -> tuple[Recommendation, tuple[Recommendation, ...]]:
    alternatives = _rank_alternatives(viable)
    if source is not None and (options.prefer == "source" or not viable):
        rec = _source_recommendation(source, machine, options)
        return rec, tuple(alternatives[:MAX_ALTERNATIVES])
    if viable:
        return alternatives[0], tuple(alternatives[1 : MAX_ALTERNATIVES + 1])
    return _none(_why_nothing(machine, rejected, nvidia, options)), ()


def _rank_alternatives(viable: list[Recommendation]) -> list[Recommendation]:
    """Viable choices in order: the newest torch first; within a torch, the evaluation order."""
    seen_minors: set[str] = set()
    first: list[Recommendation] = []
    rest: list[Recommendation] = []
    for rec in viable:
        assert rec.torch is not None
        minor = ".".join(rec.torch.split(".")[:2])
        (rest if minor in seen_minors else first).append(rec)
        seen_minors.add(minor)
    # the best of the newest torch, then its other variants, then one per older minor
    if not first:
        return []
    newest_minor = ".".join((first[0].torch or "").split(".")[:2])
    same = [r for r in rest if (r.torch or "").startswith(newest_minor + ".")]
    return [first[0], *same, *first[1:]]


def _with_cpu_commands(
    rec: Recommendation,
    kb: Knowledge,
    options: PlanOptions,
    releases: list[TorchRelease],
    machine: MachineFacts,
) -> Recommendation:
    """No build can use the GPU here: the commands for the CPU wheel that does run, labelled so."""
    release = next(
        (r for r in releases if _ships(r, machine) and r.python.get(platform_of(machine))), None
    )
    if release is None:
        return rec
    cpu = _cpu_choice(kb, options, release, machine)
    what = "no CUDA, MPS" if machine.os == "macos" else "CPU only"
    return replace(rec, commands={f"{name}, {what}": line for name, line in cpu.commands.items()})


def _python_for_platform(
    machine: MachineFacts,
    rec: Recommendation,
    releases: list[TorchRelease],
    options: PlanOptions,
) -> Recommendation:
    """Where no release with wheels for the platform has one for this Python, the Pythons the
    newest of them has (torch 2.2.2, the last for Intel Macs, stops at Python 3.12)."""
    platform = platform_of(machine)
    shipping = [r for r in releases if r.python.get(platform)]
    if machine.python is None or not shipping or any(_ships(r, machine) for r in shipping):
        return rec
    newest = shipping[0]
    tags = newest.python[platform]
    plain = [t for t in tags if not t.endswith("t")] or list(tags)
    first = (
        f"torch {newest.version} is the newest release{_within(options)} with {platform} wheels, "
        f"and it has them for Python {', '.join(tags)}, not {machine.python}: use one of those "
        f"(a venv: uv venv -p {plain[-1]})"
    )
    return replace(rec, reasons=(first, *rec.reasons[1:]))


def _why_nothing(
    machine: MachineFacts,
    rejected: list[Rejection],
    nvidia: tuple[GpuTarget, ...],
    options: PlanOptions,
) -> str:
    cats = {r.category for r in rejected}
    others = [g for g in machine.gpus if g.vendor in ("amd", "intel")]
    if not nvidia and others and cats != {"python-unsupported"}:
        return _why_no_rocm_or_xpu(machine, rejected, others, options)
    if cats == {"python-unsupported"}:
        return (
            f"no torch release{_within(options)} has wheels for Python {machine.python} "
            f"on {platform_of(machine)}"
        )
    if "arch-not-compiled" in cats and "driver-too-old" not in cats:
        return f"no torch wheel{_within(options)} carries code for " + ", ".join(
            f"the {g.name} ({g.sm})" for g in nvidia
        )
    if "driver-too-old" in cats:
        return (
            f"driver {machine.driver} is too old for every torch wheel{_within(options)} "
            "that carries code for this GPU"
        )
    return f"no torch wheel{_within(options)} fits this machine"


def _why_no_rocm_or_xpu(
    machine: MachineFacts,
    rejected: list[Rejection],
    gpus: list[GpuTarget],
    options: PlanOptions,
) -> str:
    names = ", ".join(f"the {g.name}" + (f" ({g.gfx})" if g.gfx else "") for g in gpus)
    linux = machine.os == "linux" and machine.arch == "x86_64"
    if gpus[0].vendor == "amd" and linux and any(g.gfx is None for g in gpus):
        return (
            f"the gfx target of {names} is unknown, so no ROCm wheel can be checked against it; "
            "install ROCm so `rocminfo` can name it, or give it with --gpu gfxNNNN"
        )
    if gpus[0].vendor == "amd" and not linux:
        return (
            f"PyTorch publishes ROCm wheels for Linux x86_64 only, so no torch wheel"
            f"{_within(options)} can use {names} on {platform_of(machine)}; use Linux "
            "(natively or, for supported Radeon boards, under WSL 2 with AMD's ROCm for WSL) "
            "or the CPU wheel"
        )
    if gpus[0].vendor == "amd" and any(r.category == "arch-not-compiled" for r in rejected):
        targets = ";".join(dict.fromkeys(g.gfx for g in gpus if g.gfx))
        return (
            f"no ROCm wheel of torch{_within(options)} is built for {names}; use the CPU wheel, "
            f"or build torch from source with PYTORCH_ROCM_ARCH={targets} (check that your "
            "ROCm release still supports that target first)"
        )
    if gpus[0].vendor == "intel":
        return (
            f"no xpu wheel of torch{_within(options)} supports {names} on {machine.os}; "
            "the CPU wheel is what runs there"
        )
    return f"no torch wheel{_within(options)} serves {names}"


def _within(options: PlanOptions) -> str:
    return f" matching {options.torch}" if options.torch else ""


def _unestablished(
    machine: MachineFacts, kb: Knowledge, rejected: list[Rejection]
) -> Iterator[tuple[Rejection, Wheel]]:
    """The rejected wheels that exist for this platform but whose arch lists are not established."""
    for r in rejected:
        if r.variant is None or r.category != "other":
            continue
        wheel = kb.wheel(r.torch, r.variant, machine.os, machine.arch)
        if wheel is not None and wheel.archs is None:
            yield r, wheel


def _unestablished_hint(
    machine: MachineFacts, kb: Knowledge, rejected: list[Rejection], nvidia: tuple[GpuTarget, ...]
) -> tuple[str, ...]:
    """When nothing verified fits, the newest wheel whose archs are unknown here but whose nearest
    sibling with a known arch list (same release and variant, another platform) serves every GPU."""
    for r, wheel in _unestablished(machine, kb, rejected):
        siblings = [
            w
            for w in kb.wheels
            if (w.torch, w.variant) == (wheel.torch, wheel.variant) and w.archs is not None
        ]
        if not siblings or any(g.compute_capability is None for g in nvidia):
            continue
        sibling = min(siblings, key=lambda w: (w.arch != machine.arch, w.os != machine.os))
        archs = sibling.archs
        assert archs is not None
        covs = [(g, coverage(archs.sass, archs.ptx, g.compute_capability or "")) for g in nvidia]
        if covs and all(cov.ok for _, cov in covs):
            runs = " and ".join(f"the {g.name} {_runs_its(cov)}" for g, cov in covs)
            return (
                f"torch {r.torch}+{wheel.variant} may serve it: the GPU archs of its "
                f"{platform_of(machine)} wheels are not established here, but on its "
                f"{sibling.os}-{sibling.arch} wheels {runs}; install it from "
                f"{index_url(wheel.variant)}, then check with torchsmith verify",
            )
    return ()


def _none(reason: str) -> Recommendation:
    return Recommendation(kind="none", torch=None, variant=None, index_url=None, reasons=(reason,))


def _cuda_key(wheel: Wheel) -> int:
    cuda = wheel.cuda or "0.0"
    major, minor = cuda.split(".")
    return int(major) * 100 + int(minor)


def _no_source_reason(
    machine: MachineFacts,
    kb: Knowledge,
    releases: list[TorchRelease],
    nvidia: tuple[GpuTarget, ...],
) -> tuple[str, ...]:
    """Why no source build is offered either, as one sentence (empty when nothing is known)."""
    sms = {g.sm for g in nvidia if g.sm}
    targets = ", ".join(sorted(sms))
    accepted = [
        t
        for r in releases
        if (span := _source_span(kb, r)) is not None
        for t in kb.toolkits
        if span[0] <= parse_cc(t.version) <= span[1]
    ]
    if not accepted:
        return ()
    versions = sorted({t.version for t in accepted}, key=parse_cc)
    span_text = versions[0] if len(versions) == 1 else f"{versions[0]} to {versions[-1]}"
    able = [t for t in accepted if sms <= set(t.sm_targets)]
    if not able:
        capable = [t.version for t in kb.toolkits if sms <= set(t.sm_targets)]
        if not capable:
            tail = f"; no CUDA toolkit the knowledge base knows can compile for {targets}"
        elif parse_cc(capable[0]) > parse_cc(versions[-1]):
            tail = (
                f"; CUDA {capable[0]} is the first toolkit that can compile for {targets}, "
                "and only newer torch releases accept it"
            )
        else:
            tail = (
                f"; CUDA {capable[-1]} is the newest toolkit that can compile for {targets}, "
                "and only older torch releases accept it"
            )
        return (
            f"a source build does not help either: these torch releases accept CUDA "
            f"{span_text}, and none of those toolkits can compile for {targets}{tail}",
        )
    runnable = [t for t in able if _driver_runs(machine, kb, t.version)]
    if not runnable:
        return (
            f"a source build does not help either: the toolkits these torch releases accept "
            f"that can compile for {targets} need a newer driver than {machine.driver}",
        )
    if machine.python:
        older = [r for r in releases if _newer_than_its_pythons(machine.python, r)]
        fitting = plan_source_build(
            machine=replace(machine, python=None),
            kb=kb,
            options=PlanOptions(),
            releases=older,
            nvidia=nvidia,
        )
        if fitting is not None:
            return (
                f"a source build of torch {fitting.torch} could target {targets}, but that "
                f"release predates Python {machine.python}: build it with a Python it shipped "
                "wheels for (a venv with an older Python), or build PyTorch's main branch, the "
                "first to take a new Python",
            )
    return ()


def _source_span(
    kb: Knowledge, release: TorchRelease
) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The CUDA toolkits a source build of the release accepts: the knowledge base's range,
    else the CUDA versions its wheels were built with."""
    known = kb.source_build_range(release.version)
    if known is not None:
        return (parse_cc(known.cuda_min), parse_cc(known.cuda_max))
    cudas = sorted({w.cuda for w in kb.wheels if w.torch == release.minor and w.cuda}, key=parse_cc)
    if not cudas:
        return None
    return (parse_cc(cudas[0]), parse_cc(cudas[-1]))


def _per_gpu(
    *,
    machine: MachineFacts,
    kb: Knowledge,
    options: PlanOptions,
    releases: list[TorchRelease],
    nvidia: tuple[GpuTarget, ...],
) -> tuple[str, ...]:
    """For a multi-GPU machine no wheel serves: what each GPU alone could use."""
    out = []
    for gpu in nvidia:
        alone, _ = _evaluate(
            machine=machine, kb=kb, options=options, releases=releases, nvidia=(gpu,)
        )
        if alone:
            best = alone[0]
            out.append(f"the {gpu.name} alone would be served by torch {best.torch}+{best.variant}")
        else:
            out.append(f"no torch wheel serves the {gpu.name} ({gpu.sm}) even alone")
    return tuple(out)


# -- source builds ------------------------------------------------------------------------------


def plan_source_build(
    *,
    machine: MachineFacts,
    kb: Knowledge,
    options: PlanOptions,
    releases: list[TorchRelease],
    nvidia: tuple[GpuTarget, ...],
) -> SourceBuild | None:
    """The newest release that some CUDA toolkit it was released with can build for every GPU."""
    sms = {g.sm for g in nvidia if g.sm}
    ccs = [g.compute_capability for g in nvidia if g.compute_capability]
    for release in releases:
        if machine.python and not SpecifierSet(release.requires_python).contains(
            machine.python.rstrip("t") + ".0"
        ):
            continue
        if machine.python and _newer_than_its_pythons(machine.python, release):
            continue  # Requires-Python has no upper bound; a release predates later Pythons
        span = _source_span(kb, release)
        if span is None:
            continue
        lo, hi = span
        fits = [
            t
            for t in kb.toolkits
            if lo <= parse_cc(t.version) <= hi
            and sms <= set(t.sm_targets)
            and _driver_runs(machine, kb, t.version)
        ]
        if not fits:
            continue
        chosen = fits[-1]
        installed = [t for t in machine.cuda_toolkits if t in {f.version for f in fits}]
        if installed:
            chosen = next(f for f in fits if f.version == installed[-1])
        return SourceBuild(
            torch=release.version,
            torch_cuda_arch_list=torch_cuda_arch_list(ccs, ptx=options.ptx),
            toolkit_min=fits[0].version,
            toolkit_max=fits[-1].version,
            toolkit=chosen.version,
            installed_toolkit_ok=(bool(installed) if machine.cuda_toolkits else None),
            gcc_max_major=chosen.max_gcc_major,
            clang_max_major=chosen.max_clang_major,
            msc_ver_min=chosen.msc_ver_min,
            msc_ver_max=chosen.msc_ver_max,
            sources=tuple(dict.fromkeys((*_range_sources(kb, release), *chosen.sources))),
            accepts=f"{lo[0]}.{lo[1]}" if lo == hi else f"{lo[0]}.{lo[1]}–{hi[0]}.{hi[1]}",
        )
    return None


def _range_sources(kb: Knowledge, release: TorchRelease) -> tuple[str, ...]:
    known = kb.source_build_range(release.version)
    return known.sources if known is not None else ()


def _driver_runs(machine: MachineFacts, kb: Knowledge, cuda: str) -> bool:
    floor = kb.driver_floor(cuda, machine.os)
    return machine.driver is None or floor is None or driver_at_least(machine.driver, floor)


def _newer_than_its_pythons(python: str, release: TorchRelease) -> bool:
    """``python`` ("3.14", "3.13t") is newer than every Python ``release`` shipped wheels for."""
    shipped = [Version(tag.rstrip("t")) for tags in release.python.values() for tag in tags]
    return bool(shipped) and Version(python.rstrip("t")) > max(shipped)


def _source_recommendation(
    build: SourceBuild, machine: MachineFacts, options: PlanOptions
) -> Recommendation:
    span = build.toolkit_span
    accepts = f"its source accepts CUDA {build.accepts}, and of those " if build.accepts else ""
    reasons = [
        f"build torch {build.torch} from source with CUDA {build.toolkit} and "
        f"TORCH_CUDA_ARCH_LIST={build.torch_cuda_arch_list}: {accepts}CUDA {span} "
        f"can compile for {'these GPUs' if ';' in build.torch_cuda_arch_list else 'this GPU'}",
        f"host compiler: {build.host_compilers(machine.os)}",
    ]
    if options.prefer == "source":
        reasons.insert(0, "a source build was asked for (--prefer source)")
    return Recommendation(
        kind="source",
        torch=build.torch,
        variant=None,
        index_url=None,
        commands=source_commands(build, machine.os, machine.python_path),
        reasons=tuple(reasons),
    )


def _jetson_plan(
    *,
    base: Plan,
    machine: MachineFacts,
    kb: Knowledge,
    options: PlanOptions,
    releases: list[TorchRelease],
    nvidia: tuple[GpuTarget, ...],
) -> Plan:
    jetson = next(g for g in nvidia if g.jetson)
    reason = (
        f"the {jetson.name} ({jetson.sm}) is a Jetson GPU that runs JetPack's CUDA: the PyPI and "
        "download.pytorch.org wheels are built for discrete/SBSA GPUs and do not run on it; "
        "install NVIDIA's PyTorch for Jetson wheel that matches your JetPack release, "
        "or use NVIDIA's L4T PyTorch container, or build from source"
    )
    rejected = tuple(
        Rejection(
            r.version,
            None,
            "other",
            f"torch {r.version} from PyPI/download.pytorch.org is not built for Jetson (JetPack)",
            ("jetson_pytorch",),
        )
        for r in releases[:3]
    )
    source = plan_source_build(
        machine=machine, kb=kb, options=options, releases=releases, nvidia=nvidia
    )
    reasons = [reason]
    if source is not None:
        # JetPack brings the toolkit: it is not chosen the way a desktop's is
        accepts = source.accepts or source.toolkit_span
        reasons.append(
            f"a source build on a Jetson uses the CUDA of its JetPack release, not a toolkit "
            f"installed from NVIDIA's downloads: torch {source.torch}'s source accepts CUDA "
            f"{accepts}, so, with an older JetPack CUDA, build an older torch release"
        )
    rec = Recommendation(
        kind="none",
        torch=None,
        variant=None,
        index_url=None,
        reasons=tuple(reasons),
    )
    findings = plan_findings.jetson(jetson)
    return replace(
        base, recommendation=rec, rejected=rejected, findings=findings, source_build=source
    )
