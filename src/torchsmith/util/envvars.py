"""How to set an environment variable, in the words of the shell a user has (for advice text).

POSIX shells read ``export NAME=value``; cmd reads ``set "NAME=value"`` (the quotes keep trailing
blanks out of the value) and PowerShell ``$env:NAME="value"``. Neither Windows shell reads
``NAME=value command``, nor ``export``.
"""

from __future__ import annotations

from collections.abc import Sequence


def cmd_setting(pairs: Sequence[tuple[str, str]]) -> str:
    return " & ".join(f'set "{name}={value}"' for name, value in pairs)


def powershell_setting(pairs: Sequence[tuple[str, str]]) -> str:
    return "; ".join(f"$env:{name}={_ps_quote(value)}" for name, value in pairs)


def setting(os_name: str, name: str, value: str) -> str:
    """One variable set for ``os_name``'s shells: ``export`` on POSIX, cmd's ``set`` with
    PowerShell's form beside it on Windows."""
    if os_name == "windows":
        pair = [(name, value)]
        return f"{cmd_setting(pair)} (PowerShell: {powershell_setting(pair)})"
    return f"export {name}={value}"


def _ps_quote(value: str) -> str:
    if any(c in value for c in '$`"'):
        return "'" + value.replace("'", "''") + "'"
    return f'"{value}"'
