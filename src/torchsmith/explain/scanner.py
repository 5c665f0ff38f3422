"""The fast part: find the few lines worth matching in chunks of a (possibly huge) log.

Each rule lists literal anchors; every distinct anchor is searched in the whole chunk with
``bytes.find`` (C speed), and only the lines around hits are cut out and handed to the rules that
own the anchor. Anchors that contain a shorter anchor are folded into it, so the number of passes
over a chunk is the number of *minimal* anchors. Line numbers are counted only up to hits.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from torchsmith.explain.rules import Rule


@dataclass(frozen=True)
class Hit:
    line: int  # 1-based
    raw: bytes  # the line without its newline
    rules: tuple[int, ...]  # indices into the scanner's rules whose anchors the line contains


class Scanner:
    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)
        self.last_size = 0
        self.last_lines = 0
        owners: dict[bytes, set[int]] = {}
        for index, rule in enumerate(self.rules):
            for literal in rule.anchors:
                owners.setdefault(literal.encode("utf-8"), set()).add(index)
        anchors: list[bytes] = sorted(owners, key=len)
        minimal: list[bytes] = []
        for anchor in anchors:
            if not any(short in anchor for short in minimal):
                minimal.append(anchor)
        # A line containing a minimal anchor may carry any anchor that contains it: check those.
        self.passes: tuple[tuple[bytes, tuple[tuple[bytes, tuple[int, ...]], ...]], ...] = tuple(
            (
                short,
                tuple((a, tuple(sorted(owners[a]))) for a in anchors if short in a),
            )
            for short in minimal
        )

    def scan(self, chunks: Iterable[bytes]) -> Iterator[Hit]:
        """Hits in line order; afterwards ``last_size`` and ``last_lines`` describe the input."""
        line_base, size, tail = 1, 0, b"\n"
        for chunk in chunks:
            yield from self._scan_chunk(chunk, line_base)
            line_base += chunk.count(b"\n")
            size += len(chunk)
            tail = chunk[-1:]
        self.last_size = size
        self.last_lines = line_base - 1 + (0 if tail == b"\n" else 1)

    def _scan_chunk(self, chunk: bytes, line_base: int) -> Iterator[Hit]:
        found: dict[int, tuple[int, set[int]]] = {}  # line start -> (line end, rule indices)
        find, rfind = chunk.find, chunk.rfind
        for short, candidates in self.passes:
            pos = find(short)
            while pos != -1:
                start = rfind(b"\n", 0, pos) + 1
                end = find(b"\n", pos)
                if end == -1:
                    end = len(chunk)
                entry = found.get(start)
                if entry is None:
                    entry = found[start] = (end, set())
                text = chunk[start:end]
                for anchor, rule_ids in candidates:
                    if anchor is short or anchor in text:
                        entry[1].update(rule_ids)
                pos = find(short, end)
        if not found:
            return
        line, counted = line_base, 0
        for start in sorted(found):
            end, hit_rules = found[start]
            line += chunk.count(b"\n", counted, start)
            counted = start
            yield Hit(line, chunk[start:end], tuple(sorted(hit_rules)))
