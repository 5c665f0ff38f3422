"""Checks for AMD (ROCm) and Intel (xpu) GPUs: access rights, gfx targets the wheels lack,
the ROCm runtime against the wheel, and whether Intel's Level Zero runtime sees the GPU."""

from __future__ import annotations

from collections.abc import Iterator

from torchsmith.findings.common import Context
from torchsmith.knowledge.model import gfx_to_hsa
from torchsmith.probe.model import Finding, GpuInfo, Probe

_GPU_GROUPS = ("render", "video")


def _amd(probe: Probe) -> list[GpuInfo]:
    return [g for g in probe.gpus if g.vendor == "amd"]


def check_amd_access(probe: Probe, ctx: Context) -> Iterator[Finding]:
    """ROCm opens /dev/kfd and /dev/dri/renderD*: root, or the render/video groups."""
    rocm = probe.rocm
    if probe.host.os != "linux" or rocm is None or not (_amd(probe) or rocm.devices):
        return
    if not rocm.kfd_present:
        yield Finding(
            "no-gpu-visible",
            "error",
            "the AMD GPU has no /dev/kfd: the amdgpu kernel driver is not loaded with compute "
            "(KFD) support, so ROCm and torch cannot use the GPU",
            "load the amdgpu driver (install AMD's amdgpu-dkms or a kernel with HSA_AMD), then "
            "check that `rocminfo` lists a gfx agent",
            subject="gpu",
            source="rocm_groups",
        )
        return
    groups = rocm.user_groups
    if groups is None or "root" in groups or any(g in groups for g in _GPU_GROUPS):
        return
    yield Finding(
        "no-gpu-visible",
        "error",
        "this user is in neither the render nor the video group, so ROCm cannot open /dev/kfd "
        "and torch.cuda.is_available() is False for the AMD GPU",
        'run `sudo usermod -aG render,video "$USER"`, then log out and back in',
        subject="gpu",
        source="rocm_groups",
    )


def check_amd_gfx(probe: Probe, ctx: Context) -> Iterator[Finding]:
    """An AMD GPU whose gfx target no ROCm wheel lists: HSA_OVERRIDE_GFX_VERSION or nothing."""
    kb = ctx.kb
    if kb is None or not getattr(kb, "rocm_archs", None):
        return
    newest = kb.rocm_archs[-1]
    override = probe.rocm.hsa_override if probe.rocm else None
    served = [g for g in _amd(probe) if g.gfx and any(g.gfx in r.gfx for r in kb.rocm_archs)]
    for gpu in _amd(probe):
        if not gpu.gfx or gpu in served:
            continue
        family = [g for g in newest.gfx if g[:-1] == gpu.gfx[:-1] and g != gpu.gfx]
        if served and (not family or {g.gfx for g in served} != {min(family)}):
            # the override is process-wide: it would make the served GPUs pose as another target
            yield Finding(
                "arch-not-compiled",
                "warning",
                f"the {gpu.name} is {gpu.gfx}, which no ROCm wheel of torch is built for, "
                f"beside {', '.join(f'the {g.name} ({g.gfx})' for g in served)}, which the "
                "wheels serve; torch lists both, and work sent to this one fails",
                "hide it: export HIP_VISIBLE_DEVICES to the other GPUs' indices (rocm-smi lists "
                "them), or turn an integrated GPU off in the firmware settings; "
                "HSA_OVERRIDE_GFX_VERSION is no way out, as it applies to every GPU",
                subject="gpu",
                source=newest.sources[0],
            )
            continue
        if family and gpu.gfx.startswith(("gfx10", "gfx11")):
            stand_in = min(family)
            hsa = gfx_to_hsa(stand_in)
            if override == hsa:
                yield Finding(
                    "arch-not-compiled",
                    "info",
                    f"the {gpu.name} is {gpu.gfx}, which no ROCm wheel is built for; "
                    f"HSA_OVERRIDE_GFX_VERSION={hsa} is set, so it runs the {stand_in} code",
                    "nothing to do; AMD does not support this combination, so report problems "
                    "with the override named",
                    subject="gpu",
                    source=newest.sources[0],
                )
                continue
            yield Finding(
                "arch-not-compiled",
                "warning",
                f"the {gpu.name} is {gpu.gfx}, which no ROCm wheel of torch is built for "
                f"(torch {newest.torch} wheels carry {', '.join(newest.gfx)})",
                f"export HSA_OVERRIDE_GFX_VERSION={hsa} to run the {stand_in} code on it "
                "(unsupported by AMD, but the usual way to use this board)",
                subject="gpu",
                source=newest.sources[0],
            )
        else:
            yield Finding(
                "arch-not-compiled",
                "error",
                f"the {gpu.name} is {gpu.gfx}, which no ROCm wheel of torch is built for, and "
                "no built target of its family can stand in for it",
                f"build torch from source with PYTORCH_ROCM_ARCH={gpu.gfx}, or use the CPU wheel",
                subject="gpu",
                source=newest.sources[0],
            )


def check_rocm_runtime_vs_wheel(probe: Probe, ctx: Context) -> Iterator[Finding]:
    """torch built with ROCm X.Y, /opt/rocm is another release: extensions will not match."""
    torch, rocm = probe.torch, probe.rocm
    if torch is None or not torch.hip or rocm is None or not rocm.runtime_version:
        return
    built = ".".join(torch.hip.split(".")[:2])
    system = ".".join(rocm.runtime_version.split("-")[0].split(".")[:2])
    if built == system:
        return
    yield Finding(
        "toolkit-torch-cuda-mismatch",
        "warning",
        f"torch {torch.version} was built with ROCm {built} (HIP {torch.hip}), but /opt/rocm "
        f"is ROCm {system}: the wheel brings its own ROCm libraries, but extensions built with "
        "hipcc from /opt/rocm will not match it",
        f"build extensions with ROCm {built} (torch's own), or install a torch release that has a "
        f"rocm{system} wheel if there is one (`torchsmith plan` lists each release's variants)",
        subject="torch",
    )


def check_intel_level_zero(probe: Probe, ctx: Context) -> Iterator[Finding]:
    """An Intel GPU that OpenCL sees but Level Zero does not: the xpu backend cannot use it."""
    xpu = probe.xpu
    if xpu is None:
        return
    level_zero = {
        d.name for d in xpu.devices if d.backend == "level_zero" and d.device_type == "gpu"
    }
    opencl = [d.name for d in xpu.devices if d.backend == "opencl" and d.device_type == "gpu"]
    missing = [n for n in opencl if n not in level_zero]
    if not missing:
        return
    yield Finding(
        "missing-runtime-library",
        "error" if not level_zero else "warning",
        f"sycl-ls lists {', '.join(missing)} through OpenCL but not through Level Zero, "
        "which PyTorch's xpu backend uses, so torch.xpu.is_available() is False for it",
        "install Intel's Level Zero GPU runtime (Ubuntu: intel-level-zero-gpu and libze1; "
        "Windows: the current Intel Arc driver), then check `sycl-ls` lists a level_zero:gpu",
        subject="gpu",
        source="pt_xpu_get_started",
    )


def check_mps(probe: Probe, ctx: Context) -> Iterator[Finding]:
    """PyTorch's MPS backend needs macOS 12.3 or newer and Apple silicon or an AMD GPU (Apple's
    MPS page); torch's x86_64 macOS wheels stopped with 2.2."""
    if probe.host.os != "macos":
        return
    mps = getattr(ctx.kb, "mps", None)
    need = mps.macos_min if mps is not None else "12.3"
    source = mps.sources[0] if mps is not None else None
    if probe.host.arch != "aarch64":
        yield Finding(
            "no-gpu-visible",
            "info",
            "this Python runs as x86_64: torch's x86_64 macOS wheels stopped with torch 2.2, "
            "and their MPS GPU backend needs an AMD GPU (Apple silicon needs arm64 wheels)",
            "on an Apple silicon Mac, install an arm64 Python (this one runs under Rosetta) and "
            "current torch; on an Intel Mac, torch runs on the CPU unless the Mac has an AMD GPU",
            subject="gpu",
            source=source,
        )
        return
    version = probe.host.os_version
    parts = tuple(int(p) for p in (version or "").split(".")[:2] if p.isdigit())
    wanted = tuple(int(p) for p in need.split("."))
    if parts and parts < wanted:
        yield Finding(
            "no-gpu-visible",
            "warning",
            f"macOS {version} is older than {need}, which PyTorch's MPS backend needs, so "
            "torch.backends.mps.is_available() is False",
            f"update macOS to {need} or newer to use the Apple GPU",
            subject="gpu",
            source=source,
        )
