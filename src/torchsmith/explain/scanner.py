"""The fast part: find the few lines worth matching in chunks of a (possibly huge) log.

Each rule lists literal anchors (exact, case-sensitive bytes). A line is worth matching only if it
contains an anchor. Searching every anchor separately costs one ``bytes.find`` pass over the chunk
per anchor (~70 passes), so the scanner searches a few *trigger* literals instead: a hitting set of
substrings of the anchors (every anchor contains at least one trigger), so a line that holds an
anchor holds a trigger, and each trigger's hit lines are then checked for the exact anchors that
contain it. Triggers are exact substrings, so case handling is exactly the rules'.

Which substrings make good triggers depends on the log: "error" is shared by many anchors but is on
every other line of a ``-Werror`` build. So on a large chunk the scanner samples the text, counts
how often each candidate (every anchor, and every substring of 4+ bytes shared by several anchors)
occurs, and picks the triggers with a greedy weighted set cover: each trigger costs one pass over
the chunk plus the Python work on the lines it hits. Small inputs skip the sampling and use the
minimal anchors (anchors that contain no shorter anchor) as triggers. The plan only changes speed:
hit lines are always checked against the exact anchors.

Line numbers are counted only up to hits (and once to the end of the chunk). The last TAIL_BYTES
of the input are kept for the ``tail`` rules, which read only how a log ends.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from torchsmith.explain.normalize import clean_line
from torchsmith.explain.rules import Rule

PLAN_MIN_CHUNK = 2 * 1024 * 1024  # chunks at least this big get a sampled trigger plan
SAMPLE_PIECES = 8  # the sample: this many slices spread over the chunk ...
SAMPLE_PIECE = 32 * 1024  # ... of this many bytes each
MIN_TRIGGER = 4  # shorter shared substrings ("or ", "ed ") are everywhere in any log
# Cost model, in nanoseconds per byte of chunk, measured on CPython 3.11: a find pass skips ahead
# by about the literal's length, so it costs ~0.07 + 3.2/len ns per byte (0.6 for "Killed", 0.13
# for a 50-byte anchor); every line a trigger hits costs ~2 us of Python (cut it, test anchors).
PASS_NS_BASE = 0.07
PASS_NS_LENGTH = 3.2
HIT_NS = 2000.0
ANCHOR_TEST_NS = 80.0
TAIL_BYTES = 16 * 1024  # the end of the input kept for ``tail`` rules (TAIL_LINES fit easily)

# trigger -> the anchors containing it, each with the rule indices that own it
Plan = tuple[tuple[bytes, tuple[tuple[bytes, tuple[int, ...]], ...]], ...]


@dataclass(frozen=True)
class Hit:
    line: int  # 1-based
    raw: bytes  # the line without its newline
    rules: tuple[int, ...]  # indices into the scanner's rules whose anchors the line contains
    # the next few non-blank lines of the same chunk, "\n"-joined (rules with ``next`` read them)
    after: bytes = b""


class Scanner:
    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)
        self.last_size = 0
        self.last_lines = 0
        self.last_tail = b""  # the input's last TAIL_BYTES
        owners: dict[bytes, set[int]] = {}
        for index, rule in enumerate(self.rules):
            for literal in rule.anchors:
                owners.setdefault(literal.encode("utf-8"), set()).add(index)
        self._owners = {anchor: tuple(sorted(ids)) for anchor, ids in owners.items()}
        self._anchors: tuple[bytes, ...] = tuple(sorted(owners, key=lambda a: (len(a), a)))
        minimal: list[bytes] = []
        for anchor in self._anchors:
            if not any(short in anchor for short in minimal):
                minimal.append(anchor)
        self.minimal = tuple(minimal)
        self.passes: Plan = self._plan(self.minimal)  # the plan for small chunks
        self.sampled: Plan | None = None  # the plan for large chunks, made on the first one

    def _plan(self, triggers: Iterable[bytes]) -> Plan:
        return tuple(
            (t, tuple((a, self._owners[a]) for a in self._anchors if t in a)) for t in triggers
        )

    def plan_for(self, chunk: bytes) -> Plan:
        """The triggers to search ``chunk`` with (sampled once, on the first large chunk)."""
        if len(chunk) < PLAN_MIN_CHUNK:
            return self.passes
        if self.sampled is None:
            self.sampled = self._plan(choose_triggers(self.minimal, _sample(chunk)))
        return self.sampled

    def scan(self, chunks: Iterable[bytes]) -> Iterator[Hit]:
        """Hits in line order; afterwards ``last_size``, ``last_lines`` and ``last_tail`` describe
        the input."""
        line_base, size, tail = 1, 0, b""
        for chunk in chunks:
            if not chunk:
                continue
            newlines = yield from self._scan_chunk(chunk, line_base)
            line_base += newlines
            size += len(chunk)
            tail = (tail + chunk[-TAIL_BYTES:])[-TAIL_BYTES:]
        self.last_size = size
        self.last_lines = line_base - 1 + (0 if tail[-1:] in (b"\n", b"") else 1)
        self.last_tail = tail

    def _scan_chunk(self, chunk: bytes, line_base: int) -> Generator[Hit, None, int]:
        """Yield the chunk's hits in line order; return the number of newlines in the chunk."""
        hits, newlines = find_hits(chunk, self.plan_for(chunk))
        for before, raw, rule_ids, after in hits:
            yield Hit(line_base + before, raw, rule_ids, after)
        return newlines


# (newlines before the line in its chunk, the line, its rules, the next non-blank line)
RawHit = tuple[int, bytes, tuple[int, ...], bytes]
NEXT_LINES = 3  # non-blank lines after a hit that ``next`` patterns may read
NEXT_BLANK = 3  # blank lines skipped on the way
# Python 3.11+ marks the failing expression under a traceback's source line with ~ and ^ only
_MARKERS = re.compile(r"[ \t]*[~^]+[ \t~^]*")


def find_hits(chunk: bytes, plan: Plan) -> tuple[list[RawHit], int]:
    """The lines of ``chunk`` holding an anchor, in order, and the chunk's number of newlines."""
    found: dict[int, tuple[int, set[int]]] = {}  # line start -> (line end, rule indices)
    find, rfind = chunk.find, chunk.rfind
    for trigger, candidates in plan:
        pos = find(trigger)
        while pos != -1:
            start = rfind(b"\n", 0, pos) + 1
            end = find(b"\n", pos)
            if end == -1:
                end = len(chunk)
            text = chunk[start:end]
            for anchor, rule_ids in candidates:
                if anchor is trigger or anchor in text:
                    entry = found.get(start)
                    if entry is None:
                        entry = found[start] = (end, set())
                    entry[1].update(rule_ids)
            pos = find(trigger, end)
    hits: list[RawHit] = []
    before, counted = 0, 0
    for start in sorted(found):
        end, owners = found[start]
        before += chunk.count(b"\n", counted, start)
        counted = start
        hits.append((before, chunk[start:end], tuple(sorted(owners)), next_lines(chunk, end)))
    return hits, before + chunk.count(b"\n", counted)


def next_lines(chunk: bytes, end: int) -> bytes:
    """Up to NEXT_LINES non-blank lines after the line ending at ``end``, newline-joined, skipping
    at most NEXT_BLANK blank ones (a line and its followers split across chunks are not paired,
    which chunk sizes make rare)."""
    found: list[bytes] = []
    blank = 0
    while len(found) < NEXT_LINES and end < len(chunk) and blank <= NEXT_BLANK:
        start = end + 1
        end = chunk.find(b"\n", start)
        if end == -1:
            end = len(chunk)
        line = chunk[start:end]
        # blank as a person reads it: a line with only a timestamp prefix (normalize) is blank too,
        # and so is a traceback's ~~~^^^ marker line (it would push the error out of reach)
        text = clean_line(line) if line.strip() else ""
        if text and not _MARKERS.fullmatch(text):
            found.append(line)
        else:
            blank += 1
    return b"\n".join(found)


def _sample(chunk: bytes) -> bytes:
    """Slices spread evenly over ``chunk`` (the whole chunk when it is small)."""
    if len(chunk) <= SAMPLE_PIECES * SAMPLE_PIECE:
        return chunk
    step = (len(chunk) - SAMPLE_PIECE) // (SAMPLE_PIECES - 1)
    return b"\n".join(chunk[i * step : i * step + SAMPLE_PIECE] for i in range(SAMPLE_PIECES))


@lru_cache(maxsize=8)
def candidate_triggers(minimal: tuple[bytes, ...]) -> dict[bytes, frozenset[int]]:
    """Trigger candidates -> the indices of the anchors in ``minimal`` that contain them.

    Every anchor is a candidate for itself; so is every substring of MIN_TRIGGER+ bytes that
    several anchors share, keeping only the longest substring for each set of anchors.
    """
    covers: dict[bytes, set[int]] = {}
    for index, anchor in enumerate(minimal):
        for size in range(MIN_TRIGGER, len(anchor) + 1):
            for at in range(len(anchor) - size + 1):
                covers.setdefault(anchor[at : at + size], set()).add(index)
    shared = {s: frozenset(ids) for s, ids in covers.items() if len(ids) > 1}
    best: dict[frozenset[int], bytes] = {}
    for literal, ids in shared.items():
        known = best.get(ids)
        if known is None or (len(literal), literal) > (len(known), known):
            best[ids] = literal
    out = {literal: ids for ids, literal in best.items()}
    for index, anchor in enumerate(minimal):
        out[anchor] = frozenset({index})
    return out


def choose_triggers(minimal: tuple[bytes, ...], sample: bytes) -> tuple[bytes, ...]:
    """A cheap hitting set of ``minimal``: every anchor contains at least one chosen trigger.

    Greedy weighted set cover; a candidate's cost is one pass over the chunk plus the estimated
    work on the lines of ``sample`` it occurs in. Redundant picks are dropped afterwards.
    """
    candidates = candidate_triggers(minimal)
    size = max(len(sample), 1)
    cost = {}
    for literal, ids in candidates.items():
        hits = sample.count(literal) + 0.25
        per_hit = HIT_NS + ANCHOR_TEST_NS * len(ids)
        cost[literal] = PASS_NS_BASE + PASS_NS_LENGTH / len(literal) + per_hit * hits / size
    uncovered = set(range(len(minimal)))
    chosen: list[bytes] = []
    while uncovered:
        literal = min(
            (c for c in candidates if candidates[c] & uncovered),
            key=lambda c: (cost[c] / len(candidates[c] & uncovered), -len(c), c),
        )
        chosen.append(literal)
        uncovered -= candidates[literal]
    everything = set(range(len(minimal)))
    for literal in sorted(chosen, key=lambda c: -cost[c]):  # drop the costliest redundant ones
        rest = [c for c in chosen if c != literal]
        if set().union(*(candidates[c] for c in rest)) >= everything:
            chosen = rest
    return tuple(chosen)
