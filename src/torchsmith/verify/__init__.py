"""``torchsmith verify``: prove that an installed torch loads, computes correctly and runs fast.

Library API::

    from torchsmith.verify import run_verify, VerifyReport
    report = run_verify("/path/to/venv/bin/python", full=False, timeout_s=120.0)
"""

from __future__ import annotations

from torchsmith.verify.model import Check, GpuResult, LoadedLibrary, VerifyReport
from torchsmith.verify.runner import run_verify

__all__ = ["Check", "GpuResult", "LoadedLibrary", "VerifyReport", "run_verify"]
