"""The loader's static check that rule patterns search in linear time."""

from __future__ import annotations

import re
import time

import pytest

from torchsmith.errors import KnowledgeError
from torchsmith.explain.regex_safety import problems
from torchsmith.explain.rules import load_rules, parse_family

BACKTRACKING = [
    r"(a+)+b",  # nested
    r"(?:\w+\s?)*:",  # nested
    r"\d+\d*x",  # adjacent, overlapping
    r"\S+.*x",  # adjacent, overlapping
    r"\w+ depends on",  # leading unbounded
    r"(?P<gpu>\S.*?) with CUDA",  # leading unbounded after one overlapping character
    r"(?:(?P<m>[\w.+-]+\.so)\S*: )?undefined symbol",  # the shipped pattern of issue 12
    r"lib[\w.+-]+?\.so",  # a literal prefix its own class can repeat
    r"^(?P<file>\S.{0,400}?)(?:[:(]\d{1,10})+\)?: error",  # a run, then a repeated group (fuzz)
]
LINEAR = [
    r"undefined symbol: (?P<symbol>_Z\w+)",  # literal with a space first, then a run
    r"error: (?P<message>.+)",  # a trailing run never backtracks
    r"^(?P<file>\S.{0,400}?)\(\d+\): error",  # anchored at the line start
    r"(?<![\w.-])(?P<package>\w[\w.-]{0,80}) (?P<version>\S{1,80}) depends",  # bounded
    r"Killed",
]


@pytest.mark.parametrize("pattern", BACKTRACKING)
def test_backtracking_patterns_are_found(pattern: str) -> None:
    assert problems(pattern)


@pytest.mark.parametrize("pattern", LINEAR)
def test_linear_patterns_pass(pattern: str) -> None:
    assert problems(pattern) == []


def test_every_shipped_pattern_is_linear() -> None:
    for rule in load_rules():
        for pattern in (*rule.patterns, *rule.exclude):
            assert problems(pattern.pattern) == [], (rule.id, pattern.pattern)


def test_the_loader_rejects_a_backtracking_pattern() -> None:
    family = """
[[rule]]
id = "x.slow"
category = "abi-mismatch"
title = "slow"
anchors = ["depends on"]
patterns = ['(?P<package>\\w[\\w.-]*) (?P<version>\\S+) depends on torch']
explanation = "x"
fix = "y"
source = "https://example.org"
"""
    with pytest.raises(KnowledgeError, match="can backtrack"):
        parse_family("x", family)


def test_the_check_predicts_the_cost() -> None:
    """What it rejects is slow on a digit run; what the shipped rules use is not."""
    line = "7" * 3000 + " words"
    slow = re.compile(BACKTRACKING[4])
    fast = re.compile(LINEAR[3])
    start = time.perf_counter()
    fast.search(line)
    fast_s = time.perf_counter() - start
    start = time.perf_counter()
    slow.search(line)
    slow_s = time.perf_counter() - start
    assert slow_s > 5 * fast_s
