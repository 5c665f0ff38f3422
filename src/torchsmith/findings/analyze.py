"""Turn a :class:`Probe` into findings: a pure function of (probe, knowledge, thresholds).

Each check is a small function yielding :class:`Finding` objects; ``analyze`` runs them all
and sorts the result by severity. Facts about releases and toolkits come from the knowledge
base (``torchsmith.knowledge``); when it cannot answer, the check says less rather than guess.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator, Sequence
from importlib import resources
from typing import Any

from torchsmith.findings import checks_toolchain, checks_torch, checks_vendors
from torchsmith.findings.common import Check, Context, nvidia_gpus, torch_wants_cuda
from torchsmith.knowledge.base import platform_key
from torchsmith.knowledge.build_facts import load_build_facts
from torchsmith.probe.model import Finding, GpuInfo, Probe
from torchsmith.taxonomy import SEVERITY_ORDER, Severity
from torchsmith.util.toml import loads_toml

log = logging.getLogger(__name__)


def analyze(probe: Probe, kb: Any | None = None) -> tuple[Finding, ...]:
    ctx = Context(kb=kb if kb is not None else load_knowledge_quietly(), thresholds=_thresholds())
    found: list[Finding] = []
    for check in CHECKS:
        found.extend(check(probe, ctx))
    return tuple(sorted(found, key=lambda f: SEVERITY_ORDER[f.severity]))


def load_knowledge_quietly() -> Any | None:
    """The knowledge base, or None (logged) when it cannot be loaded: doctor must still run."""
    try:
        from torchsmith.knowledge import load_knowledge  # noqa: PLC0415
    except ImportError:
        return None
    try:
        return load_knowledge()
    except Exception:
        log.exception("knowledge base could not be loaded; findings will say less")
        return None


@functools.cache
def _thresholds() -> dict[str, Any]:
    text = resources.files("torchsmith.findings").joinpath("thresholds.toml").read_text("utf-8")
    return loads_toml(text)


# --- checks about the machine itself --------------------------------------------------------


def check_gpus(probe: Probe, ctx: Context) -> Iterator[Finding]:
    if nvidia_gpus(probe):
        yield from _mig_notes(probe)
        return
    others = [g for g in probe.gpus if g.vendor != "nvidia"]
    reason = probe.driver.error if probe.driver and probe.driver.error else None
    if others:
        names = ", ".join(g.name for g in others)
        vendors = {g.vendor for g in others}
        hint = (
            "use the default macOS wheel; PyTorch runs on the GPU through MPS (device 'mps')"
            if "apple" in vendors
            else "for AMD GPUs install a ROCm wheel (Linux) — see `torchsmith plan`"
            if "amd" in vendors
            else "for Intel Arc GPUs (discrete, or the Arc graphics of Core Ultra "
            "processors) install the xpu wheel (torch 2.5+, Linux and Windows) — see "
            "`torchsmith plan`; older integrated graphics (UHD, Iris Xe) are not supported by it"
            if "intel" in vendors
            else "see `torchsmith plan` for the wheel that fits"
        )
        yield Finding(
            "no-gpu-visible",
            "info",
            f"no NVIDIA GPU; other accelerator(s): {names}",
            hint,
            subject="gpu",
        )
        return
    driver_broken = reason is not None and "communicate" in reason.lower()
    message = "no NVIDIA GPU is visible" + (f" ({reason})" if reason else "")
    if driver_broken:
        fix = (
            "the driver is installed but not working: reboot after a driver update, or reinstall "
            "the NVIDIA driver; check `nvidia-smi` prints your GPU"
        )
    elif probe.host.wsl:
        fix = (
            "in WSL, install the NVIDIA driver on Windows (not inside WSL) and update WSL "
            "(`wsl --update`); `nvidia-smi` in WSL must list the GPU"
        )
    elif probe.host.container:
        fix = (
            "run the container with GPU access (`docker run --gpus all ...` with the NVIDIA "
            "Container Toolkit installed on the host)"
        )
    else:
        fix = (
            "if this machine has an NVIDIA GPU, install the NVIDIA driver and check that "
            "`nvidia-smi` lists it; otherwise use CPU wheels (`torchsmith plan`)"
        )
    severity: Severity = "warning" if (torch_wants_cuda(probe) or driver_broken) else "info"
    yield Finding("no-gpu-visible", severity, message, fix, subject="gpu")


CUDA_ENV_DOCS = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/#cuda-environment-variables"


def visible_gpu_count(value: str, gpus: Sequence[GpuInfo]) -> int:
    """How many of ``gpus`` a CUDA program sees under CUDA_VISIBLE_DEVICES=``value``.

    CUDA reads the comma-separated list up to its first invalid entry: "only the devices whose
    index precedes the invalid index are visible" (CUDA C++ Programming Guide, CUDA environment
    variables). Entries are indices, GPU-<uuid> (a unique prefix is enough) or MIG-<uuid>.
    """
    count = 0
    for token in (t.strip() for t in value.split(",")):
        index = token.isdigit() and int(token) < len(gpus)
        uuid = token.startswith("GPU-") and any(g.uuid and g.uuid.startswith(token) for g in gpus)
        mig = token.startswith("MIG-") and len(token) > len("MIG-")  # slices are not probed
        if not (index or uuid or mig):
            break
        count += 1
    return count


def check_visible_devices(probe: Probe, ctx: Context) -> Iterator[Finding]:
    value = probe.host.cuda_visible_devices
    nvidia = nvidia_gpus(probe)
    if value is None or not nvidia or visible_gpu_count(value, nvidia):
        return
    yield Finding(
        "no-gpu-visible",
        "error" if torch_wants_cuda(probe) else "warning",
        f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU from CUDA programs (nvidia-smi still "
        f"lists {len(nvidia)}): torch.cuda.is_available() is False",
        "unset it (bash: unset CUDA_VISIBLE_DEVICES; PowerShell: Remove-Item "
        "Env:CUDA_VISIBLE_DEVICES) or list valid GPUs: indices 0.."
        f"{len(nvidia) - 1} or UUIDs from `nvidia-smi -L`",
        subject="gpu",
        source=CUDA_ENV_DOCS,
    )


def check_container_gpu_access(probe: Probe, ctx: Context) -> Iterator[Finding]:
    """GPUs that nvidia-smi sees inside a container, which CUDA still cannot use."""
    host = probe.host
    if host.os != "linux" or not host.container or not nvidia_gpus(probe):
        return
    severity: Severity = "error" if torch_wants_cuda(probe) else "warning"
    devices = host.nvidia_devices
    if devices and "nvidia-uvm" not in devices:
        shown = ", ".join(f"/dev/{d}" for d in devices[:4])
        yield Finding(
            "no-gpu-visible",
            severity,
            f"this {host.container} container has {shown} but no /dev/nvidia-uvm: nvidia-smi "
            "works, CUDA cannot initialise (torch.cuda.is_available() is False)",
            "start the container through the NVIDIA Container Toolkit (docker run --gpus all, or "
            "--runtime=nvidia), which passes /dev/nvidia-uvm as well; when passing devices by hand "
            "add --device /dev/nvidia-uvm --device /dev/nvidia-uvm-tools (the host creates the "
            "nodes with `nvidia-modprobe -u -c=0`)",
            subject="gpu",
            source="https://github.com/NVIDIA/nvidia-docker/issues/1085",
        )
    caps = (host.nvidia_driver_capabilities or "").strip()
    wanted = {c.strip() for c in caps.split(",")}
    if caps and not wanted & {"compute", "all"}:
        yield Finding(
            "no-gpu-visible",
            severity,
            f"NVIDIA_DRIVER_CAPABILITIES={caps!r} leaves out 'compute': the container toolkit does "
            "not mount the CUDA driver library (libcuda), so nvidia-smi works and CUDA does not",
            "start the container with NVIDIA_DRIVER_CAPABILITIES=compute,utility (or all)",
            subject="gpu",
            # "compute: required for CUDA"; empty or unset means utility,compute
            source="https://github.com/NVIDIA/nvidia-container-toolkit/blob/main/cmd/"
            "nvidia-container-runtime/README.md",
        )


def _mig_notes(probe: Probe) -> Iterator[Finding]:
    for gpu in probe.gpus:
        if (gpu.mig_mode or "").lower() == "enabled":
            yield Finding(
                "other",
                "info",
                f"GPU {gpu.index} ({gpu.name}) is in MIG mode: processes see MIG slices, not the "
                "whole GPU",
                "address a slice with CUDA_VISIBLE_DEVICES=MIG-<uuid> (see `nvidia-smi -L`), or "
                f"disable MIG with `nvidia-smi -i {gpu.index} -mig 0` (needs a GPU reset)",
                subject=f"gpu {gpu.index}",
            )


def check_python(probe: Probe, ctx: Context) -> Iterator[Finding]:
    py = probe.python
    if py is None or py.error:
        if py is not None and py.error:
            yield Finding(
                "other",
                "warning",
                f"the target Python could not be probed: {py.error}",
                "check the interpreter runs (`python -c 'import sys; print(sys.version)'`), or "
                "point doctor at another with --python PATH",
                subject="python",
            )
        return
    if py.bits == 32:
        yield Finding(
            "python-unsupported",
            "error",
            f"Python {py.version} at {py.executable} is a 32-bit build",
            "PyTorch ships 64-bit wheels only: install 64-bit Python (on Windows the 'x86-64' "
            "installer from python.org) and create the environment with it",
            subject="python",
        )
    yield from _python_version_supported(py.version, probe, ctx)


def _python_version_supported(version: str, probe: Probe, ctx: Context) -> Iterator[Finding]:
    newest = _newest_release(ctx)
    if newest is None or ctx.kb is None:
        return
    platform = platform_key(f"{probe.host.os}-{probe.host.arch}")
    minor = ".".join(version.split(".")[:2])
    try:
        supported = ctx.kb.python_supported(newest, minor, platform)
    except Exception:  # noqa: BLE001 - a knowledge gap must not break doctor
        return
    if supported is False:
        yield Finding(
            "python-unsupported",
            "warning",
            f"torch {newest} (the newest known) has no wheel for Python {minor} on {platform}",
            "use a Python version the current release supports (`torchsmith plan` lists them), "
            "e.g. create a venv with `uv venv --python 3.12`",
            subject="python",
        )


def _newest_release(ctx: Context) -> str | None:
    if ctx.kb is None:
        return None
    try:
        return str(ctx.kb.newest_release().version)
    except Exception:  # noqa: BLE001 - a knowledge gap must not break doctor
        return None


def check_resources(probe: Probe, ctx: Context) -> Iterator[Finding]:
    limits = ctx.thresholds["source_build"]
    host = probe.host
    gib = 1024**3
    if host.ram_total_bytes and host.ram_total_bytes < limits["min_ram_gib"] * gib:
        ram = host.ram_total_bytes / gib
        jobs = load_build_facts().jobs_that_fit(ram, cuda=True)  # build's own budget
        yield Finding(
            "compile-oom",
            "info",
            f"{ram:.0f} GiB of RAM is little for a from-source CUDA build of PyTorch or "
            f"flash-attention (compilers get killed for memory)",
            f"prefer a wheel (`torchsmith plan`); if you must build, set MAX_JOBS={jobs} "
            "(and NVCC_THREADS=1 for flash-attn) and add swap",
            subject="memory",
            source=limits["ram_source"],
        )
    min_disk = limits["min_free_disk_gib"] * gib
    if host.disk_free_bytes is not None and host.disk_free_bytes < min_disk:
        free = host.disk_free_bytes / gib
        yield Finding(
            "other",
            "info",
            f"only {free:.0f} GiB free at {host.disk_path}: too little for a from-source build",
            f"free at least {limits['min_free_disk_gib']} GiB, or build on another disk",
            subject="disk",
            source=limits["disk_source"],
        )


CHECKS: tuple[Check, ...] = (
    check_gpus,
    check_visible_devices,
    check_container_gpu_access,
    check_python,
    check_resources,
    checks_torch.check_cpu_only,
    checks_torch.check_archs,
    checks_torch.check_driver,
    checks_torch.check_companions,
    checks_toolchain.check_toolkit_present,
    checks_toolchain.check_selected_toolkit_is_whole,
    checks_toolchain.check_toolkit_targets_gpu,
    checks_toolchain.check_toolkit_matches_torch,
    checks_toolchain.check_nvcc_path_vs_cuda_home,
    checks_toolchain.check_host_compiler,
    checks_vendors.check_amd_access,
    checks_vendors.check_amd_gfx,
    checks_vendors.check_rocm_runtime_vs_wheel,
    checks_vendors.check_intel_level_zero,
    checks_vendors.check_mps,
)
