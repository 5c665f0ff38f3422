"""The one way to open an input file the user names: bounded, and never a device, FIFO or socket.

``check_input`` refuses what cannot be an input (missing, a directory, a special file that would
block forever or never end, such as a FIFO with no writer or ``/dev/zero``) with one clear line;
``read_input`` reads a whole small file (probe files, JSON) and refuses one past its cap without
reading past the cap; ``open_input`` opens one for streaming (logs, binaries). Every OSError on the
path (too long a name, permission, EIO from ``/proc/self/mem``) becomes an InputError (exit 3).
Stdin (``-``) is not a path: the log reader reads it as a stream itself. ``read_text_head``
reads a file the code looks for itself (inside a source tree), where absent means empty.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from torchsmith.errors import InputError

MAX_NAME_SHOWN = 120  # a path longer than this is shortened in messages


def _label(what: str, name: str) -> str:
    return f"{what} {name}" if what else name


def shown(path: str | os.PathLike[str]) -> str:
    """The path as a message shows it: cut when absurdly long (ENAMETOOLONG inputs)."""
    text = os.fspath(path)
    if len(text) > MAX_NAME_SHOWN:
        return text[: MAX_NAME_SHOWN // 2] + "…" + text[-MAX_NAME_SHOWN // 2 :]
    return text


def os_error(path: str | os.PathLike[str], exc: OSError, what: str = "input") -> InputError:
    """One clear line for an OSError on an input path."""
    name = shown(path)
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{_label(what, name)}: no such file", tip="check the path")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{_label(what, name)} is a directory", tip="pass the file itself")
    if isinstance(exc, PermissionError):
        return InputError(
            f"{_label(what, name)}: permission denied", tip="check the file's permissions"
        )
    if exc.errno == errno.ENAMETOOLONG:
        return InputError(f"{_label(what, name)}: the file name is too long for this system")
    reason = exc.strerror or type(exc).__name__
    return InputError(f"{_label(what, name)}: cannot read ({reason})")


def check_input(path: str | os.PathLike[str], what: str = "input") -> os.stat_result:
    """The stat of a regular input file; InputError for anything else."""
    name = shown(path)
    try:
        info = Path(path).stat()
    except OSError as exc:
        raise os_error(path, exc, what) from None
    except ValueError:  # embedded NUL byte in the name
        raise InputError(f"{_label(what, repr(name))}: not a valid path") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"{_label(what, name)} is a directory", tip="pass the file itself")
    if not stat.S_ISREG(info.st_mode):
        kind = (
            "a FIFO"
            if stat.S_ISFIFO(info.st_mode)
            else "a socket"
            if stat.S_ISSOCK(info.st_mode)
            else "a device"
            if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
            else "not a regular file"
        )
        raise InputError(
            f"{_label(what, name)} is {kind}, not a regular file",
            tip="save it to a file first (for logs, `-` reads standard input)",
        )
    return info


def open_input(path: str | os.PathLike[str], what: str = "input") -> BinaryIO:
    """A regular file opened for binary reading (checked first, so a FIFO never blocks)."""
    check_input(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped between the check and the open
            os.close(fd)
            raise InputError(f"{_label(what, shown(path))} is not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except OSError as exc:
        raise os_error(path, exc, what) from None


def read_input(path: str | os.PathLike[str], limit: int, what: str = "input") -> bytes:
    """The whole of a small regular file, refused (without reading it all) past ``limit`` bytes."""
    info = check_input(path, what)
    if info.st_size > limit:
        raise InputError(
            f"{_label(what, shown(path))} is {info.st_size} bytes; more than the {limit} this reads"
        )
    with open_input(path, what) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise os_error(path, exc, what) from None
    if len(data) > limit:  # it grew, or /proc-like files that report size 0
        raise InputError(f"{_label(what, shown(path))} is more than the {limit} bytes this reads")
    return data


def read_text_head(path: Path, limit: int) -> str:
    """The first ``limit`` bytes of a regular file as text; "" when absent, unreadable or special.

    For files torchsmith looks for itself (setup.py, CMakeCache.txt in a tree), where a missing
    file is an answer, not an error; a FIFO or device in their place is never opened.
    """
    try:
        if not path.is_file():
            return ""
        with path.open("rb") as handle:
            return handle.read(limit).decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return ""
