"""The multi-process scan of big logs gives exactly what the single-process scan gives.

The parallel path normally starts at 64 MB; here it is forced onto the real corpus logs with
tiny regions, so many region cuts fall in awkward places.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest

from torchsmith.explain import parallel
from torchsmith.explain.engine import explain_files

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*/log.txt"))


@pytest.mark.parametrize("region", [1000, 4096])
def test_forced_parallel_scan_equals_the_single_process_scan(
    monkeypatch: pytest.MonkeyPatch, region: int
) -> None:
    logs = [str(p) for p in CORPUS if p.stat().st_size > 3 * region][:12]
    assert logs
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 1 << 60)
    single = [explain_files([log]) for log in logs]
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 0)
    monkeypatch.setattr(parallel, "REGION", region)
    calls: list[object] = []
    real_scan = parallel.scan_stream

    def counting_scan(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real_scan(*args, **kwargs)

    monkeypatch.setattr(parallel, "scan_stream", counting_scan)
    forced = [explain_files([log]) for log in logs]
    assert len(calls) == len(logs)  # the parallel path really ran
    assert forced == single


@pytest.mark.parametrize("parallel_min", [1 << 60, 0])
def test_progress_counts_up_to_the_total_of_the_files(
    monkeypatch: pytest.MonkeyPatch, parallel_min: int
) -> None:
    """explain tells its progress bar the bytes read of all the logs, in both scan paths (a 1 GB
    log read silently for about a minute before)."""
    logs = [p for p in CORPUS if p.stat().st_size > 12_000][:3]
    total = sum(p.stat().st_size for p in logs)
    monkeypatch.setattr(parallel, "PARALLEL_MIN", parallel_min)
    monkeypatch.setattr(parallel, "REGION", 4096)
    seen: list[tuple[int, int, str]] = []
    quiet = explain_files([str(p) for p in logs])
    told = explain_files([str(p) for p in logs], progress=lambda *a: seen.append(a))
    assert told == quiet
    assert {t for _, t, _ in seen} == {total}
    done = [d for d, _, _ in seen]
    assert done == sorted(done)
    assert done[-1] == total
    assert len(seen) >= len(logs) * (2 if parallel_min == 0 else 1)  # per region, per chunk
    assert [n for _, _, n in seen][-1] == str(logs[-1])


def test_progress_never_goes_back_when_a_pipe_comes_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """review: piped input (no size) counted its bytes against the files' total, then the bar
    jumped back to the file's first bytes."""
    log = next(p for p in CORPUS if p.stat().st_size > 12_000)
    piped = io.BytesIO(log.read_bytes() * 3)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(piped))
    seen: list[tuple[int, int, str]] = []
    explain_files(["-", str(log)], progress=lambda *a: seen.append(a))
    done = [d for d, _, _ in seen]
    assert done == sorted(done)
    assert all(t == log.stat().st_size and d <= t for d, t, _ in seen)
    assert {n for _, _, n in seen} == {str(log)}
