"""Scan a large UTF-8 log file on several cores.

The file is split into regions of ``REGION`` bytes whose edges are moved to just after a newline
(the same rule on both sides of every edge, so each line belongs to exactly one region). Worker
processes each read one region at a time and return its hit lines (``scanner.find_hits``) and its
newline count; the parent takes the results strictly in file order, so line numbers and the order
of evidence are exactly those of the single-process scan. At most ``2 x workers`` regions are in
flight, so memory stays bounded whatever the file size. Only the prefilter runs in the workers:
the rules' regexes run in the parent on the (few) hit lines.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import BinaryIO

from torchsmith.explain.reader import MAX_CARRY, Stream
from torchsmith.explain.scanner import (
    SAMPLE_PIECE,
    SAMPLE_PIECES,
    TAIL_BYTES,
    Hit,
    Plan,
    RawHit,
    Scanner,
    choose_triggers,
    find_hits,
)

PARALLEL_MIN = 64 * 1024 * 1024  # smaller logs: one process (starting workers costs more)
REGION = 16 * 1024 * 1024
MAX_WORKERS = 8
EDGE_PROBE = 64 * 1024

_PLAN: Plan = ()


def worker_count() -> int:
    """CPUs this process may use (1 means: scan in-process)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 1
    return max(1, min(usable, MAX_WORKERS))


def eligible(stream: Stream) -> bool:
    """Whether ``stream`` is a UTF-8 file big enough to be worth scanning on several cores."""
    if stream.name == "-" or stream.encoding != "utf-8" or worker_count() < 2:
        return False
    try:
        return Path(stream.name).stat().st_size - _bom(stream) >= PARALLEL_MIN
    except OSError:
        return False


def _bom(stream: Stream) -> int:
    return stream.bytes_read - len(stream.head)


def scan_stream(
    scanner: Scanner, stream: Stream, done: Callable[[int], None] | None = None
) -> Iterator[Hit]:
    """Hits of the file behind ``stream`` in line order; sets the scanner's last_size, last_lines
    and last_tail. ``done`` is told the bytes read so far as each region's hits come in."""
    if stream.close:
        stream.handle.close()
    path, start = stream.name, _bom(stream)
    size = Path(path).stat().st_size
    with Path(path).open("rb") as handle:
        plan = scanner._plan(choose_triggers(scanner.minimal, _sample(handle, start, size)))
        handle.seek(max(size - TAIL_BYTES, start))
        tail = handle.read(TAIL_BYTES)
    edges = [*range(start, size, REGION), size]
    regions = iter([(path, a, b, a != start) for a, b in itertools.pairwise(edges)])
    workers = worker_count()
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    line_base = 1
    with ProcessPoolExecutor(workers, context, initializer=_init, initargs=(plan,)) as pool:
        pending: deque[Future[tuple[list[RawHit], int]]] = deque()
        for region in itertools.islice(regions, 2 * workers):
            pending.append(pool.submit(_scan_region, *region))
        finished = start
        while pending:
            hits, newlines = pending.popleft().result()
            finished = min(finished + REGION, size)
            if done is not None:
                done(finished)
            following = next(regions, None)
            if following is not None:
                pending.append(pool.submit(_scan_region, *following))
            for before, raw, rule_ids, after in hits:
                yield Hit(line_base + before, raw, rule_ids, after)
            line_base += newlines
    scanner.last_size = size - start
    scanner.last_lines = line_base - 1 + (0 if tail[-1:] in (b"\n", b"") else 1)
    scanner.last_tail = tail


def _sample(handle: BinaryIO, start: int, size: int) -> bytes:
    step = max((size - start - SAMPLE_PIECE) // (SAMPLE_PIECES - 1), 0)
    pieces = []
    for index in range(SAMPLE_PIECES):
        handle.seek(start + index * step)
        pieces.append(handle.read(SAMPLE_PIECE))
    return b"\n".join(pieces)


def _init(plan: Plan) -> None:
    global _PLAN  # noqa: PLW0603 (per-process state of a worker)
    _PLAN = plan


def _edge(handle: BinaryIO, offset: int) -> int:
    """Where the region that nominally starts at ``offset`` really starts: after the first newline
    at or after ``offset - 1``; a line longer than MAX_CARRY is cut at ``offset``, like the reader
    cuts it."""
    handle.seek(offset - 1)
    seen = 0
    while seen <= MAX_CARRY:
        probe = handle.read(EDGE_PROBE)
        cut = probe.find(b"\n")
        if cut != -1:
            return offset + seen + cut
        if len(probe) < EDGE_PROBE:
            break
        seen += len(probe)
    return offset


def _scan_region(path: str, begin: int, end: int, cut_begin: bool) -> tuple[list[RawHit], int]:
    with Path(path).open("rb") as handle:
        first = _edge(handle, begin) if cut_begin else begin
        size = handle.seek(0, os.SEEK_END)
        last = _edge(handle, end) if end < size else end
        if last <= first:
            return [], 0
        handle.seek(first)
        chunk = handle.read(last - first)
    return find_hits(chunk, _PLAN)
