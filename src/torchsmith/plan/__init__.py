"""`torchsmith plan`: which torch to install on a machine, and why (a pure planner)."""

from __future__ import annotations

from torchsmith.plan.model import (
    GpuTarget,
    MachineFacts,
    Plan,
    PlanOptions,
    Recommendation,
    Rejection,
    SourceBuild,
)

__all__ = [
    "GpuTarget",
    "MachineFacts",
    "Plan",
    "PlanOptions",
    "Recommendation",
    "Rejection",
    "SourceBuild",
]
