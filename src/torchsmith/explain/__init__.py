"""``torchsmith explain``: read build, install and runtime logs and name the root cause.

The rules are data (``rules/*.toml``, one file per family). :func:`explain_files` streams each
log through a literal-anchor prefilter, runs the full rule patterns only on the lines that pass,
and ranks what matched: root causes before symptoms, higher priority first, earlier lines first.
"""

from __future__ import annotations

from torchsmith.explain.engine import explain_files, explain_text
from torchsmith.explain.model import Diagnosis, ExplainResult, InputSummary
from torchsmith.explain.rules import Rule, load_rules

__all__ = [
    "Diagnosis",
    "ExplainResult",
    "InputSummary",
    "Rule",
    "explain_files",
    "explain_text",
    "load_rules",
]
