"""Shared pieces of the doctor checks."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from torchsmith.probe.model import Finding, GpuInfo, Probe


@dataclass(frozen=True)
class Context:
    """What the checks may consult besides the probe."""

    kb: Any | None  # torchsmith.knowledge.Knowledge, or None when it could not be loaded
    thresholds: dict[str, Any]


Check = Callable[[Probe, Context], Iterable[Finding]]


def nvidia_gpus(probe: Probe) -> list[GpuInfo]:
    return [g for g in probe.gpus if g.vendor == "nvidia"]


def torch_wants_cuda(probe: Probe) -> bool:
    """The target's torch is a CUDA build (so no visible GPU is an error, not a note)."""
    return probe.torch is not None and probe.torch.cuda is not None


def version_key(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        return Version("0")


def major_minor(text: str | None) -> tuple[int, int] | None:
    """'12.8', '12.8.93', '2.11.0+cu130' → (12, 8) / (2, 11); None when unparsable."""
    if not text:
        return None
    match = re.match(r"\s*(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None
