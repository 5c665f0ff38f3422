"""Byte progress of a long read over one or more inputs (inspect's binaries, explain's logs): the
callback's shape, and how a reader's position in one input becomes a place in the whole."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class ByteProgress(Protocol):
    """Told the bytes done and in all, and what is being read now."""

    def __call__(self, done: int, total: int, current: str) -> None: ...


def offset(
    progress: ByteProgress, base: int, total: int, current: str, *, size: int | None = None
) -> Callable[[int], None]:
    """A reader's position in one input, told to ``progress`` as ``base`` (the bytes of the
    inputs before it) plus that position (capped at the input's ``size`` where given) of
    ``total``."""
    if size is None:
        return lambda pos: progress(base + pos, total, current)
    return lambda pos: progress(base + min(pos, size), total, current)
