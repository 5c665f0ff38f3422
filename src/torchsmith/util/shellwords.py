"""Commands quoted for the Windows shells a user types them into (fix lines, corrected commands).

POSIX shells need only :func:`shlex.quote`. Windows has two shells that quote differently, and
the program splits its own command line after them:

- the program (the MSVC rules Python's launcher uses): a word in ``"..."``, a ``"`` inside as
  ``\\"``, and the backslashes before a quote, the closing one included, doubled
  (:func:`argv_quote`);
- cmd: every ``"`` opens or closes a quote (``\\"`` too), and outside its quotes ``& | < > ^`` are
  its own unless escaped with ``^`` (:func:`cmd_escaped`, across the whole line);
- PowerShell: a single-quoted literal expands nothing (:func:`ps_quote`), a quoted first word is
  a string unless called with ``&``, and Windows PowerShell 5.1 passes a ``"`` or a final ``\\``
  inside a quoted word on wrongly; after ``--%`` every PowerShell passes the rest of the line on
  exactly as written.

:func:`windows_command` gives cmd's line and PowerShell's for one argv.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# a word that cmd and PowerShell both take as it is (not , or @: PowerShell's array operator and
# splatting sigil)
WINDOWS_BARE = re.compile(r"^[A-Za-z0-9_:\\/.+=-]+$")


def ps_quote(value: str) -> str:
    """A PowerShell single-quoted literal: nothing inside expands; ``'`` doubles.

    PowerShell also treats the typographic quotes U+2018..U+201B as single quotes; double them too.
    """
    return "'" + re.sub(r"(['\u2018\u2019\u201a\u201b])", r"\1\1", value) + "'"


def argv_quote(arg: str) -> str:
    """One argument in double quotes, as a Windows program splits its command line."""
    out: list[str] = []
    slashes = 0
    for ch in arg:
        if ch == "\\":
            slashes += 1
            continue
        out.append("\\" * (2 * slashes + 1) + ch if ch == '"' else "\\" * slashes + ch)
        slashes = 0
    return '"' + "".join(out) + "\\" * (2 * slashes) + '"'


def cmd_escaped(line: str) -> str:
    """``line`` for a cmd prompt: ``& | < > ^`` outside cmd's quotes escaped with ``^``."""
    out: list[str] = []
    quoted = False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "&|<>^":
            out.append("^")
        out.append(ch)
    return "".join(out)


def windows_command(argv: Iterable[str]) -> tuple[str, str]:
    """``argv`` as (cmd's line, PowerShell's line); the two are equal where no word needs quotes."""
    args = list(argv)
    words = [a if WINDOWS_BARE.match(a) else argv_quote(a) for a in args]
    cmd = cmd_escaped(" ".join(words))  # cmd's quote state runs across the whole line
    head = args[0] if WINDOWS_BARE.match(args[0]) else f"& {ps_quote(args[0])}"
    rest = args[1:]
    if any(not WINDOWS_BARE.match(a) and ('"' in a or a.endswith("\\")) for a in rest):
        return cmd, " ".join([head, "--%", *words[1:]])
    return cmd, " ".join([head, *(a if WINDOWS_BARE.match(a) else ps_quote(a) for a in rest)])
