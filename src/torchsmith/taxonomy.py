"""The finding/diagnosis categories shared by doctor, plan, explain and build.

These strings are a contract: probe files, plans and explain output carry them, and
other tools may key on them. Add new ones at the end; never rename.
"""

from __future__ import annotations

from typing import Literal

Category = Literal[
    "arch-not-compiled",
    "driver-too-old",
    "no-gpu-visible",
    "cpu-only-torch",
    "toolkit-too-old-for-arch",
    "toolkit-torch-cuda-mismatch",
    "cuda-toolkit-not-found",
    "unsupported-host-compiler",
    "missing-runtime-library",
    "abi-mismatch",
    "companion-version-mismatch",
    "python-unsupported",
    "compile-oom",
    "stale-build-cache",
    "windows-path-length",
    "missing-build-dependency",
    "gpu-out-of-memory",
    "distributed-backend-unavailable",
    "other",
    "unknown-build-option",
]

CATEGORIES: tuple[str, ...] = Category.__args__  # type: ignore[attr-defined]

Severity = Literal["error", "warning", "info"]

SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}
