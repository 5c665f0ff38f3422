"""Byte sources for the fatbin walker: an mmap'ed file, or a forward-only stream.

Neither copies a whole file: the mmap is sliced where headers are, the stream keeps a bounded
window and discards what lies behind it.
"""

from __future__ import annotations

import mmap
from pathlib import Path
from types import TracebackType
from typing import IO

CHUNK = 8 << 20
KEEP_BEHIND = 1 << 20  # bytes kept behind a read, so a rejected candidate can be rescanned


class MappedFile:
    """A file mapped read-only; empty files are served from an empty buffer (mmap refuses them)."""

    def __init__(self, path: str) -> None:
        self._file = Path(path).open("rb")  # noqa: SIM115 - closed in close()
        self._map: mmap.mmap | None = None
        try:
            length = self._file.seek(0, 2)
            if length:
                self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        except BaseException:
            self._file.close()
            raise
        self._size = length

    @property
    def size(self) -> int:
        return self._size

    def read_at(self, offset: int, length: int) -> bytes:
        if self._map is None or offset < 0 or offset >= self._size:
            return b""
        return self._map[offset : offset + length]

    def find(self, pattern: bytes, start: int, end: int) -> int:
        if self._map is None:
            return -1
        return self._map.find(pattern, start, end)

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
        self._file.close()

    def __enter__(self) -> MappedFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class BackwardsReadError(ValueError):
    """A forward-only stream was asked for bytes it has already discarded."""


class StreamSource:
    """Forward-only random access over a readable stream of known size.

    Keeps a window ``[_base, _base + len(_buf))``; ``read_at`` must not go behind ``_base`` (raises
    BackwardsReadError), ``find`` starts at ``_base`` at the earliest. Skipping ahead reads and
    discards, which for a zip member means decompressing: the price of not extracting it to disk.
    """

    def __init__(self, stream: IO[bytes], size: int, chunk: int = CHUNK) -> None:
        self._stream = stream
        self._size = size
        self._chunk = chunk
        self._base = 0
        self._buf = b""
        self._eof = False

    @property
    def size(self) -> int:
        return self._size

    @property
    def consumed(self) -> int:
        """How far into the stream reading has got."""
        return self._base + len(self._buf)

    def _drop_before(self, offset: int) -> None:
        if offset < self._base:
            raise BackwardsReadError(f"offset 0x{offset:x} is behind the stream window")
        cut = min(offset - self._base, len(self._buf))
        if cut:
            self._buf = self._buf[cut:]
            self._base += cut
        while self._base < offset and not self._eof:  # skip without keeping
            data = self._stream.read(min(self._chunk, offset - self._base))
            if not data:
                self._eof = True
                break
            self._base += len(data)

    def _fill_to(self, end: int) -> None:
        parts = [self._buf]
        have = self._base + len(self._buf)
        while have < end and not self._eof:
            data = self._stream.read(max(self._chunk, end - have))
            if not data:
                self._eof = True
                break
            parts.append(data)
            have += len(data)
        if len(parts) > 1:
            self._buf = b"".join(parts)

    def read_at(self, offset: int, length: int) -> bytes:
        self._drop_before(max(self._base, offset - KEEP_BEHIND))
        self._fill_to(offset + length)
        start = offset - self._base
        return self._buf[start : start + length]

    def find(self, pattern: bytes, start: int, end: int) -> int:
        """Like bytes.find; a ``start`` behind the window is moved up to the window's start."""
        start = max(start, self._base)
        self._drop_before(start)
        end = min(end, self._size)
        while True:
            hit = self._buf.find(pattern, max(0, start - self._base), end - self._base)
            if hit >= 0:
                return self._base + hit
            if self._eof or self._base + len(self._buf) >= end:
                return -1
            # keep the last few bytes: the pattern may straddle the chunk boundary
            keep_from = max(start, self._base + len(self._buf) - len(pattern) + 1)
            self._drop_before(keep_from)
            start = keep_from
            self._fill_to(self._base + len(self._buf) + self._chunk)
