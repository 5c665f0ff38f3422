"""Run every probe concurrently and assemble a :class:`Probe`.

Each section runs in its own thread with its own timeouts (inside the section); a
section that fails unexpectedly is contained and reported, never fatal to the report.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

from torchsmith import __version__, platforms
from torchsmith.probe import gpus as gpu_probe
from torchsmith.probe import host as host_probe
from torchsmith.probe import python_env, toolkits, tools
from torchsmith.probe import rocm as rocm_probe
from torchsmith.probe import xpu as xpu_probe
from torchsmith.probe.machine_reader import LiveMachine
from torchsmith.probe.model import (
    CudaToolkitInfo,
    DriverInfo,
    HostInfo,
    Probe,
    ProbeMeta,
    PythonInfo,
    RocmInfo,
    TorchInfo,
    XpuInfo,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


def collect_probe(python: str | None = None, *, disk_path: Path | None = None) -> Probe:
    """Probe this machine; ``python`` is the target interpreter (resolved by the caller)."""
    from torchsmith.findings import analyze, load_knowledge_quietly  # noqa: PLC0415

    started = time.perf_counter()
    seconds: dict[str, float] = {}
    target = python or python_env.resolve_python(None)
    where = disk_path or Path.cwd()
    with ThreadPoolExecutor(max_workers=7, thread_name_prefix="probe") as pool:
        # Parsing the knowledge base overlaps the probes' waits on subprocesses.
        f_kb = _submit(pool, seconds, "knowledge", load_knowledge_quietly)
        f_python = _submit(pool, seconds, "python", python_env.probe_python_and_torch, target)
        f_host = _submit(pool, seconds, "host", host_probe.probe_host, where)
        f_gpus = _submit(pool, seconds, "gpus", gpu_probe.probe_gpus)
        f_compilers = _submit(pool, seconds, "compilers", tools.probe_compilers)
        f_build = _submit(pool, seconds, "build_tools", tools.probe_build_tools)
        f_toolkits = _submit(pool, seconds, "cuda_toolkits", _toolkits_after, f_python)
        f_rocm = _submit(pool, seconds, "rocm", _rocm)
        f_xpu = _submit(pool, seconds, "xpu", _xpu)
        python_info, torch_info = _result(f_python, _python_failed(target))
        rocm_info = _result(f_rocm, None)
        probe = Probe(
            host=_result(f_host, _host_failed()),
            gpus=rocm_probe.attach_gfx(_result(f_gpus, ((), None))[0], rocm_info),
            rocm=rocm_info,
            xpu=_result(f_xpu, None),
            driver=_result(f_gpus, ((), _driver_failed()))[1],
            cuda_toolkits=_result(f_toolkits, ()),
            compilers=_result(f_compilers, ()),
            build_tools=_result(f_build, ()),
            python=python_info,
            torch=torch_info,
        )
        kb = _result(f_kb, None)
    probe = replace(probe, findings=analyze(probe, kb))
    meta = ProbeMeta(
        torchsmith=__version__,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        duration_s=round(time.perf_counter() - started, 4),
        section_seconds={k: round(v, 4) for k, v in sorted(seconds.items())},
    )
    return replace(probe, meta=meta)


def _toolkits_after(
    f_python: Future[tuple[PythonInfo, TorchInfo | None]],
) -> tuple[CudaToolkitInfo, ...]:
    """Toolkits need the target's site-packages to find pip-installed nvcc."""
    try:
        python_info, _ = f_python.result()
        site = tuple(Path(p) for p in python_info.site_packages)
    except Exception:  # noqa: BLE001 - the python section reports its own failure
        site = ()
    return toolkits.probe_cuda_toolkits(dict(os.environ), site_packages=site)


def _submit(
    pool: ThreadPoolExecutor,
    seconds: dict[str, float],
    name: str,
    func: Callable[..., T],
    *args: object,
) -> Future[T]:
    def timed() -> T:
        t0 = time.perf_counter()
        try:
            return func(*args)
        finally:
            seconds[name] = time.perf_counter() - t0

    return pool.submit(timed)


def _result(future: Future[T], fallback: T) -> T:
    try:
        return future.result()
    except Exception:
        log.exception("probe section failed")
        return fallback


def _rocm() -> RocmInfo | None:
    if platforms.current_os() != "linux":
        return None
    return rocm_probe.probe_rocm(LiveMachine())


def _xpu() -> XpuInfo | None:
    if platforms.current_os() == "macos":
        return None
    return xpu_probe.probe_xpu(LiveMachine())


def _host_failed() -> HostInfo:
    return HostInfo(os=platforms.current_os(), os_pretty="unknown", error="host probe failed")


def _driver_failed() -> DriverInfo:
    return DriverInfo(version=None, cuda_version=None, source="none", error="GPU probe failed")


def _python_failed(executable: str) -> tuple[PythonInfo, TorchInfo | None]:
    info = PythonInfo(executable, "unknown", "unknown", 0, error="python probe failed")
    return info, None
