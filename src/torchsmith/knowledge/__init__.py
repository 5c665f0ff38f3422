"""The knowledge base: GPUs, CUDA toolkits, drivers and PyTorch releases, each fact with a source.

Data lives in ``knowledge/data/*.toml``; :func:`load_knowledge` reads and validates it once.
"""

from __future__ import annotations

import functools

from torchsmith.knowledge.base import Knowledge
from torchsmith.knowledge.loader import data_texts, parse
from torchsmith.knowledge.model import (
    Companions,
    CudaToolkit,
    DriverFloor,
    GpuModel,
    Source,
    TorchRelease,
    Wheel,
    WheelArchs,
)

__all__ = [
    "Companions",
    "CudaToolkit",
    "DriverFloor",
    "GpuModel",
    "Knowledge",
    "Source",
    "TorchRelease",
    "Wheel",
    "WheelArchs",
    "load_knowledge",
]


@functools.cache
def load_knowledge() -> Knowledge:
    """The shipped knowledge base, validated (raises KnowledgeError when a file is invalid)."""
    return Knowledge(parse(data_texts()))
