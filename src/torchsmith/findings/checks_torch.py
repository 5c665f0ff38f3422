"""Checks about the installed torch: CUDA or not, GPU archs, driver, companion packages."""

from __future__ import annotations

from collections.abc import Iterator

from torchsmith.findings.common import Context, major_minor, nvidia_gpus
from torchsmith.knowledge.compat import driver_at_least
from torchsmith.probe.model import Finding, GpuInfo, Probe, TorchInfo

PLAN_HINT = "`torchsmith plan` prints the exact install command for this machine"


def check_cpu_only(probe: Probe, ctx: Context) -> Iterator[Finding]:
    torch = probe.torch
    if torch is None or torch.error or torch.cuda or torch.hip:
        return
    gpus = nvidia_gpus(probe)
    if probe.host.os == "macos":
        return  # macOS wheels never carry CUDA; MPS is what they use
    if gpus:
        names = ", ".join(sorted({g.name for g in gpus}))
        yield Finding(
            "cpu-only-torch",
            "error",
            f"torch {torch.version} is a CPU-only build: your {names} will not be used "
            "(torch.cuda.is_available() is False)",
            f"reinstall torch from a CUDA index; {PLAN_HINT}",
            subject="torch",
        )
    else:
        others = sorted({g.vendor for g in probe.gpus if g.vendor in ("amd", "intel")})
        builds = " or ".join(
            {"amd": "the ROCm build (AMD, Linux)", "intel": "the xpu build (Intel)"}[v]
            for v in others
        )
        yield Finding(
            "cpu-only-torch",
            "info",
            f"torch {torch.version} is a CPU-only build (fine on a machine without an NVIDIA GPU)",
            f"to use this machine's GPU install {builds}; {PLAN_HINT}"
            if others
            else f"for a GPU machine install a CUDA build instead; {PLAN_HINT}",
            subject="torch",
        )


def check_archs(probe: Probe, ctx: Context) -> Iterator[Finding]:
    torch = probe.torch
    if torch is None or not torch.cuda:
        return
    archs = torch.archs
    if archs is None or archs.error or not (archs.sass or archs.ptx):
        why = archs.error if archs and archs.error else "no CUDA fat binary found in its libraries"
        if nvidia_gpus(probe):
            yield Finding(
                "other",
                "info",
                f"could not read which GPU archs torch {torch.version} carries ({why})",
                "run `torchsmith inspect torch` to read its libraries directly",
                subject="torch",
            )
        return
    from torchsmith.binaries.archs import runs_on  # noqa: PLC0415 (heavy only when needed)

    for gpu in nvidia_gpus(probe):
        if not gpu.compute_capability:
            continue
        verdict = runs_on(archs.sass, archs.ptx, gpu.compute_capability)
        carried = ", ".join(archs.sass) or "no SASS"
        sm = "sm_" + gpu.compute_capability.replace(".", "")
        if not verdict.ok:
            yield Finding(
                "arch-not-compiled",
                "error",
                f"torch {torch.version} has no kernels for GPU {gpu.index} ({gpu.name}, {sm}): "
                f"it carries {carried}; CUDA calls will fail with 'no kernel image is available "
                "for execution on the device'",
                f"install a torch build that carries {sm}: {_variant_hint(ctx, gpu, probe)}",
                subject=f"gpu {gpu.index}",
            )
        elif verdict.kind == "ptx":
            yield Finding(
                "arch-not-compiled",
                "warning",
                f"torch {torch.version} has no native code for GPU {gpu.index} ({gpu.name}, "
                f"{sm}); it will JIT-compile PTX ({verdict.detail}): slow first start, and some "
                "kernels may be slower",
                f"install a build with native {sm} SASS: {_variant_hint(ctx, gpu, probe)}",
                subject=f"gpu {gpu.index}",
            )


def _variant_hint(ctx: Context, gpu: GpuInfo, probe: Probe) -> str:
    """The newest known wheel that carries native code for ``gpu`` on this platform and whose
    CUDA the installed driver runs (its floor, when the driver is known)."""
    if ctx.kb is None or not gpu.compute_capability:
        return PLAN_HINT
    from torchsmith.binaries.archs import runs_on  # noqa: PLC0415

    driver = probe.driver.version if probe.driver else None
    for release in ctx.kb.latest_patches():
        for wheel in ctx.kb.wheels_for(release.version, probe.host.os, probe.host.arch):
            if wheel.archs is None:
                continue
            floor = _driver_floor(ctx, wheel.cuda, probe.host.os) if wheel.cuda else None
            if driver and floor and not driver_at_least(driver, floor):
                continue
            sass = (*wheel.archs.sass, *wheel.archs.extra)
            if runs_on(sass, wheel.archs.ptx, gpu.compute_capability).kind == "sass":
                # the local label pins the build: pip takes "==2.11.0" as met by any 2.11.0 build
                return (
                    f"e.g. torch {release.version} {wheel.variant}: `pip install "
                    f'"torch=={release.version}+{wheel.variant}" --index-url {wheel.index_url}`; '
                    f"{PLAN_HINT}"
                )
    return PLAN_HINT


def check_driver(probe: Probe, ctx: Context) -> Iterator[Finding]:
    torch, driver = probe.torch, probe.driver
    if torch is None or not torch.cuda or driver is None or not driver.version:
        return
    need = major_minor(torch.cuda)
    have = major_minor(driver.cuda_version)
    floor = _driver_floor(ctx, torch.cuda, probe.host.os)
    below_floor = floor is not None and not driver_at_least(driver.version, floor)
    if need is None:
        return
    if (have is not None and have[0] < need[0]) or below_floor:
        allows = f"CUDA {driver.cuda_version}" if driver.cuda_version else "an older CUDA"
        at_least = f" (at least {floor})" if floor else ""
        yield Finding(
            "driver-too-old",
            "error",
            f"driver {driver.version} allows {allows}, but torch {torch.version} needs CUDA "
            f"{torch.cuda}: torch.cuda.is_available() will be False or CUDA calls fail",
            f"update the NVIDIA driver{at_least}, or install a torch built for a CUDA this driver "
            f"runs ({_runs_hint(driver.cuda_version)}); {PLAN_HINT}",
            subject="driver",
        )
    elif have is not None and have < need:
        yield Finding(
            "driver-too-old",
            "warning",
            f"driver {driver.version} allows CUDA {driver.cuda_version}, older than torch's CUDA "
            f"{torch.cuda}: it runs through minor-version compatibility, but PTX JIT and newer "
            "CUDA features fail",
            f"update the NVIDIA driver to one that supports CUDA {torch.cuda}",
            subject="driver",
            source="https://docs.nvidia.com/deploy/cuda-compatibility/",
        )


def _runs_hint(driver_cuda: str | None) -> str:
    """Which torch CUDA builds a driver that reports ``driver_cuda`` as its newest runs: from
    CUDA 11 on, any release of that major (minor-version compatibility), so "12.2" names no
    wheel to look for."""
    have = major_minor(driver_cuda)
    if have is None:
        return "nvidia-smi shows the newest CUDA it supports"
    if have[0] >= 11:
        return f"a cu{have[0]}x build, CUDA {have[0]}.x runs on it"
    return f"CUDA {driver_cuda} or older"


def _driver_floor(ctx: Context, cuda: str, os_name: str) -> str | None:
    if ctx.kb is None:
        return None
    try:
        floor = ctx.kb.driver_floor(cuda, os_name)
    except Exception:  # noqa: BLE001 - a knowledge gap must not break doctor
        return None
    return str(floor) if floor else None


def check_companions(probe: Probe, ctx: Context) -> Iterator[Finding]:
    torch = probe.torch
    if torch is None or torch.error:
        return
    yield from _companion_versions(torch, ctx)
    yield from _companion_variants(torch)


def _companion_versions(torch: TorchInfo, ctx: Context) -> Iterator[Finding]:
    if ctx.kb is None:
        return
    try:
        expected: dict[str, str] = dict(ctx.kb.companions(torch.version) or {})
    except Exception:  # noqa: BLE001
        return
    for name, want in sorted(expected.items()):
        have = torch.companions.get(name)
        if not have or major_minor(have) == major_minor(want):
            continue
        base = torch.version.split("+")[0]
        yield Finding(
            "companion-version-mismatch",
            "error",
            f"{name} {have} does not belong with torch {torch.version} (expects {name} {want}.x): "
            "expect import or operator-registration errors",
            f"install the matching pair from the same index, e.g. `pip install torch=={base} "
            f"{name}=={want}.*` (add the --index-url torch came from)",
            subject=name,
        )


def _companion_variants(torch: TorchInfo) -> Iterator[Finding]:
    local = _local_tag(torch.version)
    if local is None:
        return
    for name in ("torchvision", "torchaudio"):
        version = torch.companions.get(name)
        tag = _local_tag(version) if version else None
        if tag is None or tag == local:
            continue
        yield Finding(
            "companion-version-mismatch",
            "warning",
            f"{name} {version} is a {tag} build but torch {torch.version} is {local}",
            f"reinstall {name} from the same index as torch (the {local} index)",
            subject=name,
        )


def _local_tag(version: str | None) -> str | None:
    if not version or "+" not in version:
        return None
    return version.split("+", 1)[1]
