"""Clean one log line the way a person reads it.

Removes ANSI colour and cursor sequences, keeps the last segment of a CR-overwritten line
(progress bars), and strips the prefixes CI systems and tools put before every line: GitHub Actions
timestamps, ``[12:00:01]`` clocks, the ``12:00:01.123`` of torchsmith's own build logs, Docker
BuildKit step prefixes, ``##[error]`` markers.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_PREFIXES = re.compile(
    r"""^(?:
        \d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s  # ISO timestamps
      | \[\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?\]\s*  # [2024-05-01 12:00:00]
      | \[\d\d:\d\d:\d\d(?:[.,]\d+)?\]\s*  # [12:00:01]
      | \d\d:\d\d:\d\d\.\d{3}\s  # 12:00:01.123: torchsmith build's own log (util/stream.py)
      | \#\d+\s\d+\.\d+\s  # BuildKit: #9 1.385
      | \#\#\[(?:error|warning|group|endgroup)\]  # GitHub markers
    )+""",
    re.VERBOSE,
)
MAX_LINE = 4000  # evidence longer than this is cut (minified JSON, giant command lines)


def clean_line(raw: bytes) -> str:
    """The readable text of one raw log line (without its line ending)."""
    text = raw.decode("utf-8", "replace").rstrip("\r\n")
    if "\r" in text:
        segments = [s for s in text.split("\r") if s.strip()]
        text = segments[-1] if segments else ""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    text = _PREFIXES.sub("", text)
    if len(text) > MAX_LINE:
        text = text[:MAX_LINE] + " …"
    return text.rstrip()
