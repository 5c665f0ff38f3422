"""Machine facts that tailor fixes: from a probe file (``--probe``) or this machine (``--here``).

Returns plain ``name -> text`` values that rule ``fix_context`` templates may use (the names are
listed in ``rules.CONTEXT_FIELDS``). The knowledge base picks the wheel variant that carries the
GPU's architecture; without it (or without a GPU) those values are simply absent and the generic
fix is used.
"""

from __future__ import annotations

import logging
from typing import Any

from torchsmith.errors import KnowledgeError
from torchsmith.probe.model import Probe

log = logging.getLogger(__name__)


def load_probe_file(path: str) -> Probe:
    """A probe saved by ``torchsmith doctor --json``. Raises ProbeFileError (one line)."""
    from torchsmith.probe.io import load_probe  # noqa: PLC0415 - keep start-up light

    return load_probe(path)


def live_probe() -> Probe:
    """Probe this machine (the doctor's collector)."""
    from torchsmith.probe.collect import collect_probe  # noqa: PLC0415 - slow, only with --here

    return collect_probe()


def context_from_probe(probe: Probe) -> dict[str, str]:
    values: dict[str, str] = {"os": probe.host.os}
    host = probe.host
    if host.ram_total_bytes:
        values["ram_gb"] = f"{host.ram_total_bytes / 2**30:.0f}"
    if host.cores_logical:
        values["cpu_count"] = str(host.cores_logical)
    if probe.python is not None and not probe.python.error:
        values["python_version"] = probe.python.version
    if probe.torch is not None and not probe.torch.error:
        values["torch_version"] = probe.torch.version
        values["torch_cuda"] = probe.torch.cuda or "none"
    driver = probe.driver
    if driver is not None and driver.version:
        values["driver_version"] = driver.version
        if driver.cuda_version:
            values["driver_cuda"] = driver.cuda_version
    selected = [t for t in probe.cuda_toolkits if t.selected and t.version]
    if selected and selected[0].version:
        values["nvcc_version"] = selected[0].version
    nvidia = [g for g in probe.gpus if g.vendor == "nvidia"]
    if nvidia:
        gpu = nvidia[0]
        values["gpu_name"] = gpu.name
        if gpu.compute_capability:
            values["gpu_cc"] = gpu.compute_capability
            values["gpu_sm"] = "sm_" + gpu.compute_capability.replace(".", "")
            variant = _variant_for(values, host.arch)
            if variant:
                values["wheel_variant"] = variant
                from torchsmith.knowledge.model import index_url  # noqa: PLC0415 - loaded above

                values["index_url"] = index_url(variant)
    return values


def _variant_for(values: dict[str, str], cpu_arch: str) -> str | None:
    """The CUDA wheel variant (cu128, ...) that carries the GPU's sm, per the knowledge base."""
    try:
        from torchsmith.knowledge import load_knowledge  # noqa: PLC0415 - large, load on demand

        kb = load_knowledge()
        wanted = values["gpu_sm"]
        releases = [values.get("torch_version", "").split("+")[0], kb.newest_release().version]
        for version in [r for r in releases if r]:
            variant = _best_variant(kb, version, values, cpu_arch, wanted)
            if variant:
                return variant
    except (ImportError, KnowledgeError, AttributeError, LookupError, TypeError, ValueError) as exc:
        log.debug("no wheel variant from the knowledge base: %s", exc)
    return None


def _best_variant(
    kb: Any, version: str, values: dict[str, str], cpu_arch: str, wanted: str
) -> str | None:
    if kb.torch_release(version) is None:
        return None
    carrying = []
    for wheel in kb.wheels_for(version, values["os"], cpu_arch):
        archs = wheel.archs
        if wheel.cuda and archs is not None and wanted in archs.sass:
            carrying.append(wheel)
    if not carrying:
        return None
    carrying.sort(key=lambda w: tuple(int(p) for p in str(w.cuda).split(".")))
    driver_cuda = values.get("driver_cuda")
    if driver_cuda:
        limit = tuple(int(p) for p in driver_cuda.split(".")[:2])
        fitting = [w for w in carrying if tuple(int(p) for p in str(w.cuda).split(".")) <= limit]
        if fitting:
            return str(fitting[-1].variant)
    return str(carrying[0].variant)


def describe(probe: Probe, source: str) -> str:
    gpus = ", ".join(g.name for g in probe.gpus) or "no GPU"
    return f"{source}: {probe.host.os_pretty}, {gpus}"
