"""The GPU and driver sections of the probe.

NVIDIA: NVML first (in-process, bounded by a timeout), then ``nvidia-smi`` (XML report plus a
CSV query for compute capability, or the knowledge base's name → compute capability table),
then, when no driver answers, ``/proc/driver/nvidia/version`` and the PCI bus, so the reason can
say whether a GPU is there at all. Other vendors: AMD and Intel discrete GPUs from the PCI bus
(Linux) or the display adapter list (Windows); Apple Silicon's GPU on macOS.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any

from torchsmith import platforms
from torchsmith.probe import accelerators, nvidia_smi, nvml
from torchsmith.probe.accelerators import DisplayDevice
from torchsmith.probe.host_windows import LiveWindowsApi, WindowsApi
from torchsmith.probe.machine_reader import LiveMachine, Machine
from torchsmith.probe.model import DriverInfo, GpuInfo

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 10.0
NO_DRIVER = "no NVIDIA driver installed"


def knowledge_compute_capability(name: str) -> str | None:
    """The compute capability the knowledge base lists for a GPU name; None when unknown."""
    try:
        kb = importlib.import_module("torchsmith.knowledge")
        model = kb.load_knowledge().find_gpu(name)
    except Exception:  # the fallback must never break the probe
        log.debug("knowledge lookup of %r failed", name, exc_info=True)
        return None
    cc = getattr(model, "compute_capability", None)
    return cc if isinstance(cc, str) and cc else None


def probe_gpus(
    *,
    machine: Machine | None = None,
    windows_api: WindowsApi | None = None,
    nvml_loader: Callable[[], Any] = nvml.import_pynvml,
    cc_lookup: nvidia_smi.CcLookup = knowledge_compute_capability,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> tuple[tuple[GpuInfo, ...], DriverInfo | None]:
    """All GPUs (NVIDIA first, then AMD / Intel / Apple) and the NVIDIA driver; never raises.

    The driver is never None: without an NVIDIA driver its ``error`` says why. The keyword
    arguments replace the machine (tests and replays).
    """
    m = machine if machine is not None else LiveMachine()
    os_name = platforms.current_os()
    try:
        if os_name == "macos":
            reason = "macOS has no NVIDIA CUDA driver (PyTorch uses the MPS backend there)"
            return accelerators.apple_gpus(m, timeout), _no_driver(reason, "none")
        nvidia, driver = _nvidia(m, nvml_loader, cc_lookup, timeout)
        api = (windows_api or LiveWindowsApi()) if os_name == "windows" else None
        devices = _display_devices(m, api)
        if not nvidia:
            nvidia, driver = _nvidia_without_driver(m, devices, driver, os_name)
        others = _others(devices)
        return nvidia + others, driver
    except Exception as exc:
        log.debug("GPU probe failed", exc_info=True)
        return (), _no_driver(f"GPU probe failed: {type(exc).__name__}: {exc}", "none")


def _no_driver(reason: str, source: str, version: str | None = None) -> DriverInfo:
    return DriverInfo(version=version, cuda_version=None, source=source, error=reason)


def _nvidia(
    m: Machine, nvml_loader: Callable[[], Any], cc_lookup: nvidia_smi.CcLookup, timeout: float
) -> tuple[tuple[GpuInfo, ...], DriverInfo]:
    by_nvml = nvml.read_nvml_in_thread(nvml_loader, timeout=timeout)
    if by_nvml.driver.error is None:
        return by_nvml.gpus, by_nvml.driver
    by_smi = nvidia_smi.read_nvidia_smi(m, cc_lookup, timeout)
    for note in by_smi.notes:
        log.debug("nvidia-smi: %s", note)
    if by_smi.driver.error is None:
        return by_smi.gpus, by_smi.driver
    smi_error = by_smi.driver.error or ""
    if by_nvml.library_missing and "not found" in smi_error:
        reason = f"{NO_DRIVER} (NVML library not found; {smi_error})"
    else:
        reason = f"{by_nvml.driver.error}; {smi_error}"
    return (), _no_driver(reason, "nvml+nvidia-smi")


def _display_devices(m: Machine, api: WindowsApi | None) -> tuple[DisplayDevice, ...]:
    if api is not None:
        return accelerators.scan_windows_registry(api)
    return accelerators.scan_linux_pci(m)


def _nvidia_without_driver(
    m: Machine, devices: tuple[DisplayDevice, ...], driver: DriverInfo, os_name: str
) -> tuple[tuple[GpuInfo, ...], DriverInfo]:
    """No driver answered: say whether the kernel module is loaded and a GPU is present."""
    reason = driver.error or NO_DRIVER
    version = None
    source = driver.source
    if os_name == "linux":
        version = nvidia_smi.parse_proc_driver_version(m.read_text(nvidia_smi.PROC_VERSION) or "")
        if version:
            source = nvidia_smi.PROC_VERSION
            reason += f"; the kernel module {version} is loaded but its user-space libraries fail"
    present = [d for d in devices if d.vendor == "nvidia"]
    if present:
        reason += f"; NVIDIA GPU present ({', '.join(d.pci_bus_id or d.label for d in present)})"
        if os_name == "linux":
            bound = sorted({d.driver for d in present if d.driver})
            reason += (
                f", bound to kernel driver {'/'.join(bound)}" if bound else ", no driver bound"
            )
    source_name = "pci-sysfs" if os_name == "linux" else "registry"
    gpus = tuple(d.as_gpu(i, source_name) for i, d in enumerate(present))
    return gpus, DriverInfo(version=version, cuda_version=None, source=source, error=reason)


def _others(devices: tuple[DisplayDevice, ...]) -> tuple[GpuInfo, ...]:
    out: list[GpuInfo] = []
    for vendor in ("amd", "intel"):
        same = [d for d in devices if d.vendor == vendor and accelerators.is_discrete(d)]
        source = "pci-sysfs" if any(d.pci_bus_id for d in same) else "registry"
        out.extend(d.as_gpu(i, source) for i, d in enumerate(same))
    return tuple(out)
