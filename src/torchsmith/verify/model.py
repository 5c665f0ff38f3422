"""What ``torchsmith verify`` found: checks (pass/fail/skipped, value, time), findings, figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchsmith.probe.model import Finding


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool | None  # None: skipped
    value: Any = None
    detail: str = ""
    duration_s: float = 0.0


@dataclass(frozen=True)
class GpuResult:
    index: int
    name: str
    compute_capability: str
    route: str  # "native SASS sm_90" / "PTX JIT from compute_90 (slow first run)" / "no ..."
    route_kind: str  # sass / ptx / none / unknown
    memory_bytes: int | None = None
    bf16_tflops: float | None = None
    copy_gbs: float | None = None
    peak_bf16_tflops: float | None = None  # datasheet, dense
    peak_bandwidth_gbs: float | None = None
    peak_source: str | None = None


@dataclass(frozen=True)
class LoadedLibrary:
    name: str
    path: str
    version: str | None = None


@dataclass
class VerifyReport:
    """The result; ``ok`` is False when any check failed (skipped checks do not count)."""

    python: str
    mode: str  # quick / full
    ok: bool = True
    torch_version: str | None = None
    torch_cuda: str | None = None
    torch_location: str | None = None
    checks: list[Check] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    gpus: list[GpuResult] = field(default_factory=list)
    loaded: list[LoadedLibrary] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)  # cudnn, nccl, cublas, cudart
    driver_version: str | None = None
    driver_cuda: str | None = None
    nccl_busbw_gbs: float | None = None
    import_s: float | None = None
    duration_s: float = 0.0
    error: str | None = None  # why the runtime part gave no (complete) result

    def add(self, check: Check) -> None:
        self.checks.append(check)
        if check.passed is False:
            self.ok = False
