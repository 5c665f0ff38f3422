"""Fake tools for probe tests: tiny executable scripts run by this interpreter."""

from __future__ import annotations

import sys
from pathlib import Path


def fake_tool(path: Path, body: str) -> Path:
    """A tiny executable Python script standing in for a tool (``sys`` and ``time`` imported)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path
