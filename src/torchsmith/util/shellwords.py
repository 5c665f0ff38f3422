"""Commands quoted for the Windows shells a user types them into (fix lines, corrected commands).

POSIX shells need only :func:`shlex.quote`. Windows has two shells that quote differently, and
the program splits its own command line after them:

- the program (the MSVC rules Python's launcher uses): a word in ``"..."``, a ``"`` inside as
  ``\\"``, and the backslashes before a quote, the closing one included, doubled
  (:func:`argv_quote`);
- cmd: every ``"`` opens or closes a quote (``\\"`` too), and outside its quotes ``& | < > ^`` are
  its own unless escaped with ``^`` (:func:`cmd_escaped`, across the whole line);
- PowerShell: a single-quoted literal expands nothing (:func:`ps_quote`), and a quoted first word is
  a string unless called with ``&``. PowerShell 7.3 and newer pass such a word on quoted as the
  program splits it; Windows PowerShell 5.1 (and 7.2 or older) pass a ``"`` inside it, a final
  ``\\`` or an empty word on wrongly, and need ``--%``, after which they pass the rest of the line
  on as written (7.3 and newer do not: they split it at spaces).

:func:`windows_command` gives the line for each Windows shell, one line where one serves all.
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


def windows_command(argv: Iterable[str]) -> list[tuple[str, str]]:
    """``argv`` as (shell, line) pairs: ``("", line)`` where cmd's line runs the same in
    PowerShell; else cmd's and PowerShell's, and where Windows PowerShell 5.1 would pass a word on
    wrongly, PowerShell 7.3+'s and 5.1's apart (5.1's left out where ``--%`` cannot carry it)."""
    args = list(argv)
    quoted = [a for a in args if not WINDOWS_BARE.match(a)]
    words = [a if WINDOWS_BARE.match(a) else argv_quote(a) for a in args]
    cmd = cmd_escaped(" ".join(words))  # cmd's quote state runs across the whole line
    legacy_wrong = any(a == "" or '"' in a or a.endswith("\\") for a in quoted)
    # inside "..." PowerShell expands $ and ` and ends the string at a typographic double quote
    if (
        WINDOWS_BARE.match(args[0])
        and not legacy_wrong
        and not any(_PS_LIVE.search(a) for a in quoted)
    ):
        return [("", cmd)]
    head = args[0] if WINDOWS_BARE.match(args[0]) else f"& {ps_quote(args[0])}"
    ps = " ".join([head, *(a if WINDOWS_BARE.match(a) else ps_quote(a) for a in args[1:])])
    if not legacy_wrong:
        return [("cmd", cmd), ("PowerShell", ps)]
    legacy = " ".join([head, "--%", *words[1:]])
    lines = [("cmd", cmd), ("PowerShell 7.3+", ps)]
    if not _ends_parsing(legacy):
        lines.append(("Windows PowerShell 5.1", legacy))
    return lines


_PS_LIVE = re.compile("[$`\u201c\u201d\u201e]")


def _ends_parsing(line: str) -> bool:
    """Whether Windows PowerShell would end ``--%`` early: at a ``|`` outside the quotes it counts
    (each ``"`` opens or closes one; it knows no ``\\"``)."""
    tail = line.split(" --% ", 1)[1]
    quoted = False
    for ch in tail:
        if ch == '"':
            quoted = not quoted
        elif ch == "|" and not quoted:
            return True
    return False
