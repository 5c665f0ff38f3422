"""Turn what the user typed after ``--gpu`` into a compute capability."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torchsmith.binaries.archs import format_compute_capability, parse_compute_capability
from torchsmith.errors import UsageError

# Functions of torchsmith.knowledge tried, in order, to map a GPU name to a compute capability.
# Each takes the name and returns "8.6", an object with .compute_capability, or None.
_KNOWLEDGE_LOOKUPS = ("compute_capability_for_gpu", "gpu_compute_capability", "lookup_gpu")


@dataclass(frozen=True)
class ResolvedGpu:
    asked: str
    compute_capability: str  # "12.0"
    name: str | None = None  # when resolved from a GPU name


def resolve_gpu(text: str) -> ResolvedGpu:
    """``12.0``, ``sm_120``, ``120`` or a GPU name (via the knowledge base) → compute capability.

    Raises UsageError when it is neither.
    """
    try:
        return ResolvedGpu(text, format_compute_capability(parse_compute_capability(text)))
    except ValueError:
        pass
    lookup = _knowledge_lookup()
    if lookup is None:
        raise UsageError(
            f"--gpu {text!r}: not a compute capability, and GPU names cannot be looked up yet",
            tip="give the compute capability, e.g. --gpu 12.0 (RTX 50xx), 9.0 (H100/H200), 8.6",
        )
    found = lookup(text)
    cc = getattr(found, "compute_capability", found)
    if not isinstance(cc, str):
        raise UsageError(
            f"--gpu {text!r}: unknown GPU name and not a compute capability",
            tip="give the compute capability, e.g. --gpu 12.0; `nvidia-smi --query-gpu=name,"
            "compute_cap --format=csv` prints it",
        )
    try:
        resolved = format_compute_capability(parse_compute_capability(cc))
    except ValueError:
        raise UsageError(f"--gpu {text!r}: the knowledge base gave {cc!r}") from None
    return ResolvedGpu(text, resolved, str(getattr(found, "name", text)))


def _knowledge_lookup() -> Callable[[str], Any] | None:
    # TODO(knowledge): settle on one function name with the knowledge-base owner.
    try:
        module = importlib.import_module("torchsmith.knowledge")
    except ImportError:
        return None
    for name in _KNOWLEDGE_LOOKUPS:
        func = getattr(module, name, None)
        if callable(func):
            return func  # type: ignore[no-any-return]
    return None
