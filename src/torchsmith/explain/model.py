"""What ``explain`` returns: frozen result objects, rendered by the CLI as Rich text or JSON."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from torchsmith.taxonomy import Category, Severity

# What decided a diagnosis, from the surest kind to the least: a rule that names a root cause
# matched a line ("cause"); the machine's own facts (``--probe``/``--here``); the first error of a
# kind that has many causes ("generic", a missing header); a consequence whose cause the log does
# not show ("symptom"); only the error the run ended with ("ended-in-error").
Basis = Literal["cause", "machine", "generic", "symptom", "ended-in-error"]
BASES: tuple[Basis, ...] = ("cause", "machine", "generic", "symptom", "ended-in-error")


@dataclass(frozen=True)
class Diagnosis:
    """One problem found in a log, with the evidence and a concrete fix."""

    category: Category
    rule: str  # stable rule id, "arch.no-kernel-image"
    title: str
    severity: Severity
    line: int  # 1-based line of the first evidence
    evidence: tuple[str, ...]  # the matched lines, cleaned (ANSI, timestamps, CR segments removed)
    explanation: str
    fix: str
    file: str | None = None  # the input it was found in ("-" for stdin)
    count: int = 1  # how many lines matched this rule (repeats are merged)
    symptom: bool = False  # a consequence of another failure, shown only when nothing explains it
    values: dict[str, str] = field(default_factory=dict)  # what the rule read from the log
    related: tuple[str, ...] = ()  # other rules that matched the same problem
    source: str = ""  # a public report of this failure
    basis: Basis = "cause"  # what decided it (BASES)


@dataclass(frozen=True)
class InputSummary:
    """One log that was read."""

    name: str
    encoding: str  # "utf-8", "utf-16-le", "utf-16-be"
    bytes: int
    lines: int
    # the line where the log ends inside a Python traceback, before the exception line a traceback
    # ends with (a log cut short when copied, or a process that died mid-print); 0 when it does not
    traceback_cut_at: int = 0


@dataclass(frozen=True)
class ExplainResult:
    diagnoses: tuple[Diagnosis, ...]  # most likely root cause first
    healthy: bool  # no diagnosis, and no input ends inside a traceback (traceback_cut_at)
    summary: str
    inputs: tuple[InputSummary, ...] = ()
    context: str | None = None  # where the machine facts behind tailored fixes came from
    # the shell the fixes' commands are written for: the log's platform (its paths), else the
    # machine's (explain/shell.py)
    fixes_for: Literal["windows", "posix"] = "posix"


def summary_line(
    diagnoses: Sequence[Diagnosis], lines: int, cut: bool = False, logs: int = 1
) -> str:
    """The one-line summary of a result: the count and the most likely problem, or none found
    (``cut``: in ``logs`` inputs of which one ends inside a traceback, so its error is missing)."""
    if diagnoses:
        return f"{len(diagnoses)} problem(s) found; most likely: {diagnoses[0].title}"
    if cut:
        which = "the log" if logs == 1 else "a log"
        return (
            f"no known problem found in {lines} line(s), but {which} ends inside a Python "
            "traceback: the error it was printing is not in it"
        )
    return f"no known problem found in {lines} line(s)"
