"""Oracles for Windows quoting tests: how a Windows program splits its command line and what
cmd hands it. Written from the documented MSVC rules (Microsoft's "Parsing C++ command-line
arguments") and cmd's quote and ^ rules, apart from the code under test."""

from __future__ import annotations


def msvc_argv(line: str) -> list[str]:
    """How a Windows program (Python's launcher: the MSVC rules) splits its command line."""
    args: list[str] = []
    current: list[str] = []
    quoted = started = False
    i = 0
    while i < len(line):
        slashes = len(line[i:]) - len(line[i:].lstrip("\\"))
        if slashes and line[i + slashes : i + slashes + 1] == '"':
            current.append("\\" * (slashes // 2))
            if slashes % 2:
                current.append('"')
                i += slashes + 1
            else:
                i += slashes
            started = True
            continue
        ch = line[i]
        if ch == '"':
            quoted, started = not quoted, True
        elif ch in " \t" and not quoted:
            if started:
                args.append("".join(current))
            current, started = [], False
        else:
            current.append(ch)
            started = True
        i += 1
    if started:
        args.append("".join(current))
    return args


def cmd_unescaped(line: str) -> str:
    """What cmd hands the program: its ^ escapes removed outside its quotes."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == '"':
            quoted = not quoted
        elif ch == "^" and not quoted:
            i += 1
            ch = line[i]
        out.append(ch)
        i += 1
    return "".join(out)
