"""Read a log as a stream of UTF-8 byte chunks that end on line boundaries.

Never loads a whole file: chunks of ``CHUNK_SIZE`` bytes are read, cut after their last newline,
and the remainder is carried into the next chunk. UTF-16 logs (PowerShell ``>`` redirection, with
or without a BOM) are transcoded chunk by chunk. A file that is mostly NUL or control bytes and not
UTF-16 is refused with one clear line.
"""

from __future__ import annotations

import codecs
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from torchsmith.errors import InputError
from torchsmith.util.inputs import open_input

CHUNK_SIZE = 16 * 1024 * 1024
MAX_CARRY = 4 * 1024 * 1024  # a "line" longer than this is cut, to keep memory bounded
SNIFF_SIZE = 64 * 1024

# Bytes that do not appear in text logs: C0 controls other than \t \n \v \f \r and ESC.
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13, 27))


@dataclass
class Stream:
    """An open log: where it came from, how it is encoded, and the bytes read so far."""

    name: str
    handle: BinaryIO
    encoding: str
    head: bytes  # the sniffed first bytes, BOM already removed
    bytes_read: int = 0
    # of those, the bytes behind the chunks handed out (chunks() holds one back)
    bytes_done: int = 0
    close: bool = True


def open_log(name: str) -> Stream:
    """Open ``name`` ("-" for stdin) and detect its encoding. Raises InputError."""
    if name == "-":
        handle: BinaryIO = sys.stdin.buffer
        close = False
    else:
        handle = open_input(name, what="")
        close = True
    try:
        head = handle.read(SNIFF_SIZE)
    except OSError as exc:
        raise InputError(f"{name}: cannot read ({exc.strerror})") from None
    if not head:
        if close:
            handle.close()
        shown = "standard input" if name == "-" else name
        raise InputError(
            f"{shown} is empty: there is no log to explain",
            tip="capture both output streams of the run: cmd > log.txt 2>&1",
        )
    encoding, bom = sniff_encoding(head)
    if encoding == "binary":
        if close:
            handle.close()
        raise InputError(
            f"{name} is binary data, not a text log",
            tip="pass the text output of the build, install or run (e.g. `cmd > log.txt 2>&1`)",
        )
    return Stream(name, handle, encoding, head[bom:], bytes_read=len(head), close=close)


def sniff_encoding(head: bytes) -> tuple[str, int]:
    """(encoding, BOM length) of a log from its first bytes; encoding "binary" for non-text."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8", 3
    if head.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le", 2
    if head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be", 2
    if not head:
        return "utf-8", 0
    sample = head[: len(head) - len(head) % 2]
    even, odd = sample[0::2], sample[1::2]
    if sample and b"\0" in sample:
        half = max(1, len(sample) // 2)
        even_nul, odd_nul = even.count(0) / half, odd.count(0) / half
        guess = None
        if odd_nul > 0.4 and even_nul < 0.05:
            guess = "utf-16-le"
        elif even_nul > 0.4 and odd_nul < 0.05:
            guess = "utf-16-be"
        if guess and _looks_like_text(sample.decode(guess, "replace")):
            return guess, 0
    controls = len(head) - len(head.translate(None, _CONTROL))
    if controls > len(head) * 0.05:
        return "binary", 0
    return "utf-8", 0


def _looks_like_text(text: str) -> bool:
    odd = sum(1 for c in text if (c < " " and c not in "\t\n\r\v\f\x1b") or c == "\ufffd")
    return odd <= len(text) * 0.05


def chunks(stream: Stream, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """UTF-8 chunks of the log, each ending after a newline (the last one may not). A last line
    without a newline stays in the chunk before it, where the lines before it look for it."""
    try:
        raw = _raw_utf8(stream, chunk_size)
        carry = pending = b""
        pending_read = 0
        for block in raw:
            data = carry + block if carry else block
            cut = data.rfind(b"\n") + 1
            if cut == 0 and len(data) < MAX_CARRY:
                carry = data
                continue
            if cut == 0:
                cut = len(data)
            carry = data[cut:]
            if pending:
                stream.bytes_done = pending_read
                yield pending
            pending, pending_read = data[:cut], stream.bytes_read
        if pending and carry and len(carry) < MAX_CARRY:
            pending, carry = pending + carry, b""
        if pending:
            stream.bytes_done = stream.bytes_read if not carry else pending_read
            yield pending
        if carry:
            stream.bytes_done = stream.bytes_read
            yield carry
    finally:
        if stream.close:
            stream.handle.close()


def _raw_utf8(stream: Stream, chunk_size: int) -> Iterator[bytes]:
    decoder = None
    if stream.encoding.startswith("utf-16"):
        decoder = codecs.getincrementaldecoder(stream.encoding)(errors="replace")
    block = stream.head
    while True:
        if decoder is not None:
            text = decoder.decode(block, final=not block)
            if text:
                yield text.encode("utf-8", "surrogatepass")
        elif block:
            yield block
        if not block:
            return
        try:
            block = stream.handle.read(chunk_size)
        except OSError as exc:
            raise InputError(f"{stream.name}: read failed ({exc.strerror})") from None
        stream.bytes_read += len(block)
