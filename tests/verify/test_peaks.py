"""The sourced datasheet peaks verify compares its figures with."""

from __future__ import annotations

import pytest

from torchsmith.errors import KnowledgeError
from torchsmith.knowledge.peaks import find_peak, parse_peaks, peaks


@pytest.mark.parametrize(
    ("reported", "entry", "tflops", "gbs"),
    [
        ("NVIDIA H200", "H200 SXM", 989.5, 4800),
        ("NVIDIA H200 NVL", "H200 NVL", 835.5, 4800),
        ("NVIDIA H100 80GB HBM3", "H100 SXM", 989.5, 3350),
        ("NVIDIA H100 PCIe", "H100 PCIe", 756.5, 2000),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM", 312, 2039),
        ("NVIDIA L40S", "L40S", 362.05, 864),
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090", 165.2, 1008),
    ],
)
def test_names_as_torch_reports_them(reported: str, entry: str, tflops: float, gbs: float) -> None:
    peak = find_peak(reported)
    assert peak is not None
    assert (peak.name, peak.peak_bf16_dense_tflops, peak.memory_bandwidth_gbs) == (
        entry,
        tflops,
        gbs,
    )
    assert peak.source_url.startswith("https://")


def test_unknown_gpu_has_no_peak() -> None:
    assert find_peak("NVIDIA GeForce RTX 4090 D") is None
    assert find_peak("Some Future GPU") is None


def test_every_entry_is_sourced() -> None:
    assert all(p.source.startswith("nvidia_") for p in peaks())
    with pytest.raises(KnowledgeError, match="unknown source"):
        parse_peaks(
            '[[peak]]\nname = "X"\nmatch = ["X"]\npeak_bf16_dense_tflops = 1\n'
            'memory_bandwidth_gbs = 1\nsource = "nowhere"\n',
            "",
        )
