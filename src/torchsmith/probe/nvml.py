"""NVIDIA GPUs and driver through NVML (the ``pynvml`` module of the nvidia-ml-py package).

:func:`read_nvml` takes the module as a parameter: the real ``pynvml`` on a machine, a small
fake fed by a recording in tests. NVML runs in this process, so :func:`read_nvml_in_thread`
bounds it with a timeout: a driver in a bad state cannot hang the probe.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from torchsmith.probe.model import DriverInfo, GpuInfo

log = logging.getLogger(__name__)

_LIBRARY_NOT_FOUND = 12  # NVML_ERROR_LIBRARY_NOT_FOUND
_MIG_MODES = {0: "Disabled", 1: "Enabled"}


@dataclass(frozen=True)
class NvmlReport:
    gpus: tuple[GpuInfo, ...]
    driver: DriverInfo  # with ``error`` set when NVML could not be used
    library_missing: bool = False  # no NVML library at all: most likely no NVIDIA driver


def cuda_version_text(version: int) -> str | None:
    """NVML's integer CUDA version (13000, 12080) → ``"13.0"``, ``"12.8"``."""
    if version <= 0:
        return None
    return f"{version // 1000}.{(version % 1000) // 10}"


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _error_code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def _failed(reason: str, *, library_missing: bool = False) -> NvmlReport:
    driver = DriverInfo(version=None, cuda_version=None, source="nvml", error=reason)
    return NvmlReport((), driver, library_missing)


def read_nvml(nvml: Any) -> NvmlReport:
    """GPUs and driver from an initialisable ``pynvml``-shaped module; never raises."""
    error_type: type[BaseException] = getattr(nvml, "NVMLError", Exception)
    try:
        nvml.nvmlInit()
    except error_type as exc:
        code = _error_code(exc)
        return _failed(f"NVML: {exc}", library_missing=code == _LIBRARY_NOT_FOUND)
    except OSError as exc:
        return _failed(f"NVML: {exc}", library_missing=True)
    try:
        return _read_initialised(nvml, error_type)
    except error_type as exc:
        return _failed(f"NVML: {exc}")
    finally:
        try:
            nvml.nvmlShutdown()
        except error_type:
            log.debug("nvmlShutdown failed", exc_info=True)


def _read_initialised(nvml: Any, error_type: type[BaseException]) -> NvmlReport:
    def optional(fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except error_type as exc:
            log.debug("NVML: %s", exc)
            return None

    version = _text(nvml.nvmlSystemGetDriverVersion())
    cuda = None
    for name in ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"):
        fn = getattr(nvml, name, None)  # _v2 is missing from old nvidia-ml-py releases
        if cuda is None and fn is not None:
            cuda = optional(fn)
    gpus = []
    for index in range(nvml.nvmlDeviceGetCount()):
        try:
            gpus.append(_read_device(nvml, index, optional))
        except error_type as exc:  # one broken GPU ("GPU is lost") must not hide the others
            gpus.append(GpuInfo(index=index, name=f"NVIDIA GPU (unreadable: {exc})"))
    driver = DriverInfo(
        version=version,
        cuda_version=cuda_version_text(cuda) if isinstance(cuda, int) else None,
        source="nvml",
    )
    return NvmlReport(tuple(gpus), driver)


def _read_device(nvml: Any, index: int, optional: Callable[..., Any]) -> GpuInfo:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    cc = optional(nvml.nvmlDeviceGetCudaComputeCapability, handle)
    memory = optional(nvml.nvmlDeviceGetMemoryInfo, handle)
    pci = optional(nvml.nvmlDeviceGetPciInfo, handle)
    uuid = optional(nvml.nvmlDeviceGetUUID, handle)
    mig = optional(nvml.nvmlDeviceGetMigMode, handle)
    return GpuInfo(
        index=index,
        name=_text(nvml.nvmlDeviceGetName(handle)),
        compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
        memory_total_bytes=int(memory.total) if memory is not None else None,
        uuid=_text(uuid) if uuid is not None else None,
        pci_bus_id=_text(pci.busId) if pci is not None else None,
        mig_mode=_MIG_MODES.get(mig[0]) if mig else None,
        source="nvml",
    )


def import_pynvml() -> ModuleType | str:
    """The ``pynvml`` module, or why it cannot be imported."""
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return "NVML: the nvidia-ml-py package (pynvml) is not installed"
    except Exception as exc:  # noqa: BLE001 - a broken third-party module must not break the probe
        return f"NVML: pynvml failed to import: {type(exc).__name__}: {exc}"


def read_nvml_in_thread(
    load: Callable[[], Any] = import_pynvml, *, timeout: float = 10.0
) -> NvmlReport:
    """:func:`read_nvml` on the module ``load`` returns, bounded by ``timeout``; never raises.

    ``load`` returns the module or a string saying why there is none.
    """
    box: list[NvmlReport] = []

    def work() -> None:
        try:
            module = load()
            box.append(_failed(module) if isinstance(module, str) else read_nvml(module))
        except Exception as exc:  # noqa: BLE001 - reported, never raised
            box.append(_failed(f"NVML: {type(exc).__name__}: {exc}"))

    thread = threading.Thread(target=work, name="torchsmith-nvml", daemon=True)
    thread.start()
    thread.join(timeout)
    if not box:
        return _failed(f"NVML: no answer after {timeout:g}s (driver hung?)")
    return box[0]
