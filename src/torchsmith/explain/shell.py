"""Fixes written for the shell of the machine a log came from.

Rule texts are written for a POSIX shell. Neither cmd nor PowerShell reads ``NAME=value command``
(cmd says "'NAME' is not recognized as an internal or external command"), so a fix for a Windows
log sets such a variable first, in both shells' words; a rule may also give a ``fix_windows`` text
where its commands have no Windows form to convert to (``rm -rf ~/.cache/...``).

Which platform a log is from: its own paths decide (a drive letter, a ``.dll`` or ``.exe`` against
``/usr/``, ``/home/`` or a ``.so``); where it shows neither, the machine's probe (``--probe`` or
``--here``); else the POSIX text stands.
"""

from __future__ import annotations

import re
from typing import Literal

from torchsmith.util.envvars import cmd_setting, powershell_setting

Platform = Literal["windows", "posix"]

_WINDOWS = re.compile(
    rb"(?<![A-Za-z0-9])[A-Za-z]:\\[^\\\s]|\.(?:dll|exe|pyd|bat|ps1)\b|\\site-packages\\", re.I
)
_POSIX = re.compile(
    rb"(?:^|[\s'\"(=:])/(?:usr|home|opt|root|tmp|mnt|etc|var|lib|lib64|workspace|content|data|srv)/"
    rb"|\.so(?:\.\d+)*\b",
    re.M,
)

# NAME=value pairs in front of one of the commands fixes run (pip, python, a build tool)
_NAME, _VALUE = r"[A-Z][A-Z0-9_]*", r'"[^"\n]*"|[^\s"]+'
_ASSIGN = re.compile(rf"({_NAME})=({_VALUE})")
_PREFIX = re.compile(
    r"(?m)(?P<lead>^[ \t]*|(?<=[\s(:]))"
    rf"(?P<assigns>(?:{_NAME}=(?:{_VALUE})[ \t]+)+)"
    r"(?=(?:pip3?|python3?|py|uv|cmake|ninja|torchrun|accelerate|deepspeed|make)\b)"
)


def marks(data: bytes) -> tuple[int, int]:
    """How many Windows and POSIX path marks ``data`` holds."""
    return len(_WINDOWS.findall(data)), len(_POSIX.findall(data))


def platform_of(windows: int, posix: int, machine_os: str | None = None) -> Platform:
    """The platform a fix is written for: the log's marks (the more of the two), else the machine
    the facts came from, else POSIX."""
    if windows != posix:
        return "windows" if windows > posix else "posix"
    return "windows" if machine_os == "windows" else "posix"


def for_windows(fix: str) -> str:
    """``fix`` with every ``NAME=value command`` set first, for cmd and for PowerShell. A command
    on a line of its own gets a line for each shell above it; one inside a sentence gets both
    settings before it."""

    def setting(match: re.Match[str]) -> str:
        pairs = [(name, value.strip('"')) for name, value in _ASSIGN.findall(match["assigns"])]
        cmd, powershell = cmd_setting(pairs), powershell_setting(pairs)
        lead = match["lead"]
        if match.start() == 0 or fix[match.start() - 1] == "\n":
            return f"{lead}cmd:        {cmd}\n{lead}PowerShell: {powershell}\n{lead}"
        return f"{cmd} (PowerShell: {powershell}), then "

    return _PREFIX.sub(setting, fix)
