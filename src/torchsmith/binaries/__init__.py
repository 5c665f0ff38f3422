"""GPU code inside binaries: which SASS and PTX architectures a .so/.dll/wheel really holds.

Public API (used by ``inspect`` and ``doctor``)::

    read_archs(paths) -> ArchSet
    inspect_target(target, *, python=None, ...) -> InspectReport
    runs_on(sass, ptx, compute_capability) -> RunsOn
"""

from __future__ import annotations

from torchsmith.binaries.archs import RunsOn, parse_compute_capability, runs_on
from torchsmith.binaries.reader import BinaryReport, read_binary
from torchsmith.binaries.targets import InspectReport, inspect_target, read_archs

__all__ = [
    "BinaryReport",
    "InspectReport",
    "RunsOn",
    "inspect_target",
    "parse_compute_capability",
    "read_archs",
    "read_binary",
    "runs_on",
]
