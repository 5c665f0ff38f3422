"""The one place that reads which operating system torchsmith runs on.

Tests flip ``CURRENT`` (via :func:`override`) to exercise the Windows and macOS code paths on Linux.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

OsName = Literal["linux", "windows", "macos"]


def _detect() -> OsName:
    if sys.platform.startswith("win") or sys.platform == "cygwin":
        return "windows"
    if sys.platform == "darwin":
        return "macos"
    return "linux"


CURRENT: OsName = _detect()


def current_os() -> OsName:
    return CURRENT


@contextmanager
def override(os_name: OsName) -> Iterator[None]:
    """Pretend to run on ``os_name`` for the duration of the block (tests only)."""
    global CURRENT  # noqa: PLW0603
    saved = CURRENT
    CURRENT = os_name
    try:
        yield
    finally:
        CURRENT = saved
