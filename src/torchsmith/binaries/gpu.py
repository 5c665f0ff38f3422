"""Turn what the user typed after ``--gpu`` into a compute capability."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from torchsmith.binaries.archs import format_compute_capability, parse_compute_capability
from torchsmith.errors import UsageError

_TIP = "give the compute capability instead, e.g. --gpu 12.0 (RTX 50xx), 9.0 (H100/H200), 8.6"


@dataclass(frozen=True)
class ResolvedGpu:
    asked: str
    compute_capability: str  # "12.0"
    name: str | None = None  # when resolved from a GPU name
    source: str | None = None  # knowledge-base source key of that fact
    gfx: str | None = None  # an AMD GPU: its LLVM target ("gfx1100"); compute_capability is ""


def resolve_gpu(text: str) -> ResolvedGpu:
    """``12.0``, ``sm_120``, ``120`` or a GPU name (via the knowledge base) → compute capability.

    Raises UsageError when it is neither.
    """
    if not text.strip():  # `--gpu "$GPU"` with GPU unset: no verdict would be a silent pass
        raise UsageError("--gpu is empty", tip=_TIP)
    try:
        return ResolvedGpu(text, format_compute_capability(parse_compute_capability(text)))
    except ValueError:
        pass
    knowledge = _knowledge()
    if knowledge is None:
        raise UsageError(f"--gpu {text!r}: not a compute capability", tip=_TIP)
    model = knowledge.find_gpu(text)
    amd = knowledge.find_amd_gpu(text) if model is None else None
    if amd is not None:
        return ResolvedGpu(text, "", str(amd.name), amd.sources[0], gfx=str(amd.gfx))
    intel = knowledge.find_intel_gpu(text) if model is None else None
    if intel is not None:  # a known GPU, whose code (SPIR-V, xpu) inspect does not list
        raise UsageError(
            f"--gpu {text!r}: {intel.name} is an Intel GPU; inspect says whether NVIDIA (SASS, "
            "PTX) or AMD (gfx) code runs, and does not read Intel GPU code",
            tip="leave out --gpu to list the code; `torchsmith plan --gpu NAME` names the "
            "xpu wheel",
        )
    if model is None:
        suggestions = list(knowledge.suggest_gpus(text))
        hint = f"did you mean: {', '.join(suggestions)}? Or " if suggestions else ""
        raise UsageError(
            f"--gpu {text!r}: not a compute capability and not a GPU name torchsmith knows",
            tip=hint + _TIP,
        )
    cc = format_compute_capability(parse_compute_capability(str(model.compute_capability)))
    return ResolvedGpu(text, cc, str(model.name), getattr(model, "source", None))


def _knowledge() -> Any:
    """The knowledge base, imported lazily (it parses data files); None if unavailable."""
    try:
        module = importlib.import_module("torchsmith.knowledge")
    except ImportError:
        return None
    load = getattr(module, "load_knowledge", None)
    return load() if callable(load) else None
