"""A static check that a rule pattern runs in time linear in the line it searches.

Python's ``re`` backtracks, so three shapes make ``pattern.search(line)`` superlinear:

- an unbounded quantifier nested in another (``(a+)+``, ``(\\w+\\s?)*``): exponential;
- two unbounded quantifiers side by side whose characters overlap (``\\d+\\d*``, ``\\S+.*``):
  cubic, since every split between them is tried at every start;
- a pattern that can *begin* with an unbounded quantifier (``\\w+ foo``, ``(?P<x>\\S.*?) bar``):
  ``search`` retries it at every position of a long run, and each try scans the rest of the run,
  so a line of a few thousand digits costs millions of steps.

The loader rejects all three (``problems`` names the first one); bound the quantifier instead
(``\\w{1,200}``) or start the pattern with a literal. Lines are also cut to ``normalize.MAX_LINE``
before patterns see them, which bounds what a remaining inner quantifier can cost per line.
"""

from __future__ import annotations

import importlib
import re
from typing import Any


def _module(new: str, old: str) -> Any:
    try:  # Python 3.11+ moved the parser; the old names warn
        return importlib.import_module(new)
    except ImportError:  # pragma: no cover - Python 3.10
        return importlib.import_module(old)


sre_constants = _module("re._constants", "sre_constants")
sre_parse = _module("re._parser", "sre_parse")

_MAXREPEAT = sre_constants.MAXREPEAT
_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT)
_ZERO_WIDTH = (sre_constants.AT, sre_constants.ASSERT, sre_constants.ASSERT_NOT)
# Characters to compare the classes of two quantifiers with: a class overlaps another when some
# probe character is in both. Covers ASCII and a few characters of every common Unicode kind.
_PROBES = "".join(chr(c) for c in range(128)) + "é߀—…あ中\u00a0\u2028"


def problems(pattern: str) -> list[str]:
    """Why ``pattern`` can backtrack superlinearly (empty when it cannot)."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as exc:
        return [f"does not compile: {exc}"]
    found: list[str] = []
    _nested(list(parsed), False, found)
    _adjacent(list(parsed), found)
    first = parsed.data[0] if parsed.data else None
    anchored = first == (sre_constants.AT, sre_constants.AT_BEGINNING)
    if not anchored and _leading_unbounded(list(parsed)):
        found.append(
            "it can begin with an unbounded quantifier, so search() rescans long runs from "
            "every position; bound it (e.g. {1,200}) or begin with a literal"
        )
    return found


def _unbounded(op: Any, av: Any) -> bool:
    return op in _REPEATS and av[1] == _MAXREPEAT


def _children(op: Any, av: Any) -> list[list[Any]]:
    """The sub-sequences inside one parsed item."""
    if op in _REPEATS:
        return [list(av[2])]
    if op == sre_constants.SUBPATTERN:
        return [list(av[3])]
    if op == sre_constants.BRANCH:
        return [list(b) for b in av[1]]
    if op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
        return [list(av[1])]
    if op == sre_constants.GROUPREF_EXISTS:
        return [list(b) for b in av[1:] if b is not None]
    if op == getattr(sre_constants, "ATOMIC_GROUP", None):
        return [list(av)]
    return []


def _nested(items: list[Any], inside: bool, found: list[str]) -> None:
    for op, av in items:
        here = _unbounded(op, av) and op != sre_constants.POSSESSIVE_REPEAT
        if here and inside:
            found.append("an unbounded quantifier is nested in another (exponential backtracking)")
            return
        for child in _children(op, av):
            _nested(child, inside or here, found)


def _classes(body: list[Any]) -> set[str] | None:
    if len(body) != 1:
        return None
    op, av = body[0]
    if op == sre_constants.SUBPATTERN:
        return _classes(list(av[3]))
    return _matcher_chars(body[0])


def _matcher_chars(item: Any) -> set[str] | None:
    op, av = item
    if op == sre_constants.LITERAL:
        return {chr(av)}
    if op == sre_constants.NOT_LITERAL:
        return {c for c in _PROBES if ord(c) != av}
    if op == sre_constants.ANY:
        return {c for c in _PROBES if c != "\n"}
    if op == sre_constants.CATEGORY:
        return {c for c in _PROBES if _in_category(av, c)}
    if op == sre_constants.IN:
        return {c for c in _PROBES if _in_set(av, c)}
    return None


def _in_category(category: Any, char: str) -> bool:
    name = str(category).lower()
    if "digit" in name:
        hit = char.isdigit()
    elif "space" in name:
        hit = char.isspace()
    elif "word" in name:
        hit = char.isalnum() or char == "_"
    elif "linebreak" in name:
        hit = char == "\n"
    else:
        return True  # unknown: assume it overlaps
    return (not hit) if "_not_" in name else hit


def _in_set(members: Any, char: str) -> bool:
    negate = False
    hit = False
    for op, av in members:
        if op == sre_constants.NEGATE:
            negate = True
        elif op == sre_constants.LITERAL:
            hit = hit or ord(char) == av
        elif op == sre_constants.RANGE:
            hit = hit or av[0] <= ord(char) <= av[1]
        elif op == sre_constants.CATEGORY:
            hit = hit or _in_category(av, char)
        else:
            hit = True  # unknown member: assume it overlaps
    return hit != negate


def _adjacent(items: list[Any], found: list[str]) -> None:
    """An unbounded quantifier right after a variable-length run (only optional items between)
    that can hold the characters it begins with: every split between the two is tried."""
    previous: set[str] | None = None
    for op, av in items:
        if op in _REPEATS and op != sre_constants.POSSESSIVE_REPEAT and av[0] != av[1]:
            body = list(av[2])
            if av[1] == _MAXREPEAT:
                first = _first_chars(body)
                if previous is not None and (first is None or previous & first):
                    found.append(
                        "two quantifiers in a row share characters (every split between "
                        "them is tried); bound the second or separate them with a literal"
                    )
                    return
            chars = _classes(body)
            if av[0] == 0 and previous is not None:
                previous = previous | chars if chars is not None else previous
            else:
                previous = chars
        elif op in _ZERO_WIDTH:
            pass
        elif op == sre_constants.SUBPATTERN:
            previous = _trailing_chars(list(av[3]))  # a group ending in a run: "(?P<f>\S.*?)"
        else:
            previous = None
        for child in _children(op, av):
            _adjacent(child, found)


def _trailing_chars(items: list[Any]) -> set[str] | None:
    """The characters of the variable-length run a sequence ends with (None: it ends fixed)."""
    for op, av in reversed(items):
        if op in _ZERO_WIDTH:
            continue
        if op in _REPEATS and av[0] != av[1]:
            return _classes(list(av[2]))
        if op == sre_constants.SUBPATTERN:
            return _trailing_chars(list(av[3]))
        return None
    return None


def _first_chars(items: list[Any]) -> set[str] | None:
    """The characters a sequence can begin with (None: unknown)."""
    out: set[str] = set()
    for op, av in items:
        if op in _ZERO_WIDTH:
            continue
        if op in _REPEATS:
            inner = _first_chars(list(av[2]))
            if inner is None:
                return None
            out |= inner
            if av[0] == 0:
                continue
            return out
        if op == sre_constants.SUBPATTERN:
            inner = _first_chars(list(av[3]))
            if inner is None:
                return None
            out |= inner
            if _can_be_empty(list(av[3])):
                continue
            return out
        if op == sre_constants.BRANCH:
            for branch in av[1]:
                inner = _first_chars(list(branch))
                if inner is None:
                    return None
                out |= inner
            if any(_can_be_empty(list(b)) for b in av[1]):
                continue
            return out
        chars = _matcher_chars((op, av))
        if chars is None:
            return None
        return out | chars
    return out


def _leading_unbounded(
    items: list[Any], prefix: list[set[str] | None] | None = None, tail_free: bool = True
) -> bool:
    """Whether a search can reach an unbounded repeat through a prefix that its class can hold.

    The prefix is the single-character items before the repeat; when every one of them can be
    a character the repeat consumes, a long run of those characters makes the pattern start at
    every position of the run and rescan the rest of it each time. A repeat with nothing after
    it that can fail (``: (?P<message>.+)`` at the end) never backtracks, so it is fine.
    """
    prefix = [] if prefix is None else prefix
    for index, (op, av) in enumerate(items):
        free = tail_free and _can_be_empty(items[index + 1 :])
        if op in _ZERO_WIDTH:
            continue
        if _unbounded(op, av):
            if free:
                return False
            chars = _classes(list(av[2]))
            return chars is None or all(p is None or p & chars for p in prefix)
        if op in _REPEATS:
            if _leading_unbounded(list(av[2]), list(prefix), False):
                return True
            if av[0] == 0:
                continue  # optional: the next item can be first too
            return False
        if op == sre_constants.SUBPATTERN:
            body = list(av[3])
            if _leading_unbounded(body, list(prefix), free):
                return True
            if _can_be_empty(body):
                continue
            single = _classes(body)
            if single is None:
                return False
            prefix.append(single)
            continue
        if op == sre_constants.BRANCH:
            branches = [list(b) for b in av[1]]
            if any(_leading_unbounded(b, list(prefix), free) for b in branches):
                return True
            if any(_can_be_empty(b) for b in branches):
                continue
            return False
        single = _matcher_chars((op, av))
        if single is None:
            return False
        prefix.append(single)
    return False


def _can_be_empty(items: list[Any]) -> bool:
    for op, av in items:
        if op in _ZERO_WIDTH:
            continue
        if op in _REPEATS:
            if av[0] == 0 or _can_be_empty(list(av[2])):
                continue
            return False
        if op == sre_constants.SUBPATTERN:
            if _can_be_empty(list(av[3])):
                continue
            return False
        if op == sre_constants.BRANCH:
            if any(_can_be_empty(list(b)) for b in av[1]):
                continue
            return False
        return False
    return True
