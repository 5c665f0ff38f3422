"""The runtime script's JSON turned into checks, GPU figures and findings (pure; replayable)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from torchsmith.knowledge.peaks import find_peak
from torchsmith.probe.model import Finding
from torchsmith.verify.model import Check, GpuResult, LoadedLibrary, VerifyReport

_CATCH_ALL = "symptom.uncaught-exception"  # explain's rule for an error it does not know
# A traceback's exception line: "ImportError: ...", "torch.OutOfMemoryError: ...", "SystemExit"
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*$", re.MULTILINE)
FAR_BELOW = 0.5  # a figure under half the datasheet peak gets a warning
_VERSION_IN_NAME = re.compile(r"\.so\.(\d+(?:\.\d+)*)$|(\d+(?:_\d+)*)\.dll$", re.IGNORECASE)
_SLOW_CAUSES = (
    "low clocks or a power cap (nvidia-smi -q -d CLOCK,POWER), another process on the GPU "
    "(nvidia-smi), a narrow or slow PCIe link (nvidia-smi -q -d PCIE), or thermal throttling"
)


def apply_runtime(report: VerifyReport, state: Mapping[str, Any]) -> None:
    """Add what the script found to ``report`` (in place)."""
    for raw in state.get("checks") or ():
        if isinstance(raw, Mapping):
            report.add(
                Check(
                    name=str(raw.get("name")),
                    passed=raw.get("passed") if isinstance(raw.get("passed"), bool) else None,
                    value=raw.get("value"),
                    detail=str(raw.get("detail") or ""),
                    duration_s=float(raw.get("duration_s") or 0.0),
                )
            )
    torch = state.get("torch")
    if isinstance(torch, Mapping) and isinstance(torch.get("import_s"), (int, float)):
        report.import_s = float(torch["import_s"])
    if isinstance(state.get("import_error"), str):
        line = state.get("import_error_line")
        report.findings.extend(
            _import_failure(state["import_error"], line if isinstance(line, str) else None)
        )
    driver = state.get("driver")
    if isinstance(driver, Mapping):
        report.driver_version = driver.get("driver_version") or report.driver_version
        report.driver_cuda = driver.get("driver_cuda")
    for lib in state.get("loaded") or ():
        if isinstance(lib, Mapping):
            m = _VERSION_IN_NAME.search(str(lib.get("path", "")))
            version = (m.group(1) or m.group(2).replace("_", ".")) if m else None
            report.loaded.append(LoadedLibrary(str(lib.get("name")), str(lib.get("path")), version))
    versions = state.get("versions")
    if isinstance(versions, Mapping):
        for key, value in versions.items():
            text = _version_text(str(key), value)
            if text:
                report.versions[str(key)] = text
    for raw in state.get("gpus") or ():
        if isinstance(raw, Mapping):
            report.gpus.append(_gpu(report, raw))
    report.nccl_busbw_gbs = _value(report, "nccl all-reduce GB/s")
    peers = state.get("peer_access")
    if isinstance(peers, list) and peers and not all(p[2] for p in peers):
        report.findings.append(
            Finding(
                "distributed-backend-unavailable",
                "warning",
                "some GPU pairs cannot access each other's memory directly (no P2P): NCCL goes "
                "through host memory, slower",
                "check the topology with `nvidia-smi topo -m`; in VMs enable P2P/ACS settings",
                subject="peer access",
            )
        )
    available = next((c for c in report.checks if c.name == "cuda available"), None)
    if available is not None and available.passed is False:
        report.findings.append(
            Finding(
                "no-gpu-visible",
                "error",
                f"this CUDA build of torch sees no GPU (torch.cuda.is_available() is False; "
                f"{available.detail})",
                "check `nvidia-smi` (driver loaded?), CUDA_VISIBLE_DEVICES, and in containers the "
                "GPU runtime (--gpus all); `torchsmith doctor` checks the driver against this "
                "torch",
                subject="cuda",
            )
        )
    nccl = next((c for c in report.checks if c.name == "nccl all-reduce GB/s"), None)
    if nccl is not None and nccl.passed is False:
        report.findings.append(
            Finding(
                "distributed-backend-unavailable",
                "error",
                f"the NCCL all-reduce across the GPUs failed: {nccl.detail}",
                "run with NCCL_DEBUG=INFO to see where it stops; check `nvidia-smi topo -m`",
                subject="nccl",
            )
        )


def _version_text(key: str, value: object) -> str | None:
    """cuDNN reports 91900 (9.19.0) or, before 9, 8907 (8.9.7); the rest are strings already."""
    if isinstance(value, bool) or value is None:
        return None
    if key == "cudnn" and isinstance(value, int):
        major, rest = (
            (value // 10000, value % 10000) if value >= 90000 else (value // 1000, value % 1000)
        )
        return f"{major}.{rest // 100}.{rest % 100}"
    return str(value)


def _value(report: VerifyReport, name: str) -> float | None:
    for c in report.checks:
        if c.name == name and isinstance(c.value, (int, float)) and not isinstance(c.value, bool):
            return float(c.value)
    return None


def _gpu(report: VerifyReport, raw: Mapping[str, Any]) -> GpuResult:
    index = int(raw.get("index") or 0)
    name = str(raw.get("name") or "?")
    cc = str(raw.get("compute_capability") or "?")
    found = raw.get("route")
    route: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    kind = str(route.get("kind") or "unknown")
    tag = f"cuda:{index} "
    peak = find_peak(name)
    gpu = GpuResult(
        index=index,
        name=name,
        compute_capability=cc,
        route=str(route.get("route") or "unknown"),
        route_kind=kind,
        memory_bytes=raw.get("memory_bytes") if isinstance(raw.get("memory_bytes"), int) else None,
        bf16_tflops=_value(report, tag + "bf16 matmul TFLOP/s"),
        copy_gbs=_value(report, tag + "copy bandwidth GB/s"),
        peak_bf16_tflops=peak.peak_bf16_dense_tflops if peak else None,
        peak_bandwidth_gbs=peak.memory_bandwidth_gbs if peak else None,
        peak_source=peak.source_url if peak else None,
    )
    subject = f"gpu {index}"
    if kind == "none" or route.get("ok") is False:
        report.findings.append(
            Finding(
                "arch-not-compiled",
                "error",
                f"this torch has no code for {name} (compute capability {cc}): "
                f"{route.get('detail') or route.get('route')}",
                f"install a torch build that includes sm_{cc.replace('.', '')}; {_plan()}",
                subject=subject,
            )
        )
    elif kind == "ptx":
        report.findings.append(
            Finding(
                "arch-not-compiled",
                "warning",
                f"this torch has no native code for {name} (compute capability {cc}); "
                f"it runs by {route.get('route')}",
                f"a build with sm_{cc.replace('.', '')} avoids the JIT; {_plan()}",
                subject=subject,
            )
        )
    for figure, peak_value, what in (
        (gpu.bf16_tflops, gpu.peak_bf16_tflops, "bf16 matmul TFLOP/s"),
        (gpu.copy_gbs, gpu.peak_bandwidth_gbs, "copy bandwidth GB/s"),
    ):
        if figure is not None and peak_value and figure < FAR_BELOW * peak_value:
            report.findings.append(
                Finding(
                    "other",
                    "warning",
                    f"{name}: {what} {figure:g} is {figure / peak_value:.0%} of the datasheet "
                    f"peak {peak_value:g}",
                    f"look for {_SLOW_CAUSES}",
                    subject=subject,
                    source=gpu.peak_source,
                )
            )
    return gpu


def _plan() -> str:
    from torchsmith.findings.checks_torch import PLAN_HINT  # noqa: PLC0415

    return PLAN_HINT


def _import_failure(traceback_text: str, line: str | None = None) -> list[Finding]:
    """The top diagnosis of ``explain`` over the import traceback, as a finding; without one,
    the exception's own line (``line``: ``ImportError: ...``, from the script)."""
    from torchsmith.explain.engine import explain_text  # noqa: PLC0415

    result = explain_text(traceback_text, name="import torch")
    # explain's catch-all ("an error no rule recognises") says less than the exception itself
    known = [d for d in result.diagnoses if d.rule != _CATCH_ALL]
    if not known:
        said = line or _exception_line(traceback_text)
        return [
            Finding(
                "other",
                "error",
                f"`import torch` failed: {said[:300]}",
                "run `torchsmith explain` on the full traceback; reinstall torch if it persists",
                subject="torch",
            )
        ]
    top = known[0]
    return [
        Finding(
            top.category,
            top.severity,
            f"`import torch` failed: {top.title}",
            top.fix,
            subject="torch",
        )
    ]


def _exception_line(traceback_text: str) -> str:
    """The last ``SomeError: message`` line starting a line of a traceback (the exception's
    first line, not the last line of a message that runs on), else its last line."""
    found = [m.group(0) for m in _EXCEPTION_LINE.finditer(traceback_text)]
    if found:
        return found[-1]
    lines = traceback_text.strip().splitlines()
    return lines[-1] if lines else "?"
