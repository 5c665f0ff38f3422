"""Datasheet peaks of GPUs (``data/gpu_peaks.toml``), for verify's speed checks.

Kept in its own file so the other knowledge files' readers stay as they are; every entry's
``source`` must be a key of ``sources.toml``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from torchsmith.errors import KnowledgeError
from torchsmith.util.toml import loads_toml


@dataclass(frozen=True)
class GpuPeak:
    name: str
    match: tuple[str, ...]
    peak_bf16_dense_tflops: float
    memory_bandwidth_gbs: float
    source: str
    source_url: str


def parse_peaks(text: str, sources_text: str) -> tuple[GpuPeak, ...]:
    sources = loads_toml(sources_text)
    out = []
    for i, t in enumerate(loads_toml(text).get("peak", [])):
        where = f"gpu_peaks.toml peak #{i + 1}"
        try:
            source = str(t["source"])
            match = tuple(str(m) for m in t["match"])
            for m in match:
                re.compile(m)
            peak = GpuPeak(
                name=str(t["name"]),
                match=match,
                peak_bf16_dense_tflops=float(t["peak_bf16_dense_tflops"]),
                memory_bandwidth_gbs=float(t["memory_bandwidth_gbs"]),
                source=source,
                source_url=str(sources[source]["url"]),
            )
        except (KeyError, TypeError, ValueError, re.error) as exc:
            raise KnowledgeError(f"{where}: missing or bad field or unknown source: {exc}") from exc
        out.append(peak)
    return tuple(out)


@lru_cache(maxsize=1)
def peaks() -> tuple[GpuPeak, ...]:
    root = resources.files("torchsmith.knowledge") / "data"
    return parse_peaks(
        (root / "gpu_peaks.toml").read_text(encoding="utf-8"),
        (root / "sources.toml").read_text(encoding="utf-8"),
    )


def find_peak(gpu_name: str) -> GpuPeak | None:
    """The first entry whose pattern matches the reported name, or None."""
    for peak in peaks():
        if any(re.search(m, gpu_name) for m in peak.match):
            return peak
    return None
