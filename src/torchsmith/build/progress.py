"""Build progress from build output: Ninja ``[N/M]``, CMake ``[ 42%]``, setuptools compile lines.

:func:`parse_progress` is pure: one line in, a :class:`ProgressEvent` (or None) out.
:class:`ProgressTracker` keeps the state across lines (setuptools prints no totals: it counts
compiler command lines against the number of sources it was told about) and
:class:`BuildProgress` shows it as a Rich progress bar with rate and ETA.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

Source = Literal["ninja", "cmake", "setuptools"]

_NINJA = re.compile(r"^\s*\[(\d+)/(\d+)\]\s*(.*)$")
_CMAKE = re.compile(r"^\s*\[\s*(\d{1,3})%\]\s*(.*)$")
_SETUPTOOLS_EXT = re.compile(r"^building '([^']+)' extension")
# A compiler command line that setuptools/cpp_extension prints before it runs it (non-ninja path).
_COMPILE = re.compile(
    r"^(?:\S*/)?(?:sccache\s+|ccache\s+)?(?:\S*/)?(?:nvcc|c\+\+|g\+\+|gcc|cc|clang\+\+|clang|cl\.exe)"
    r"(?:-\d+)?\s.*\s-c\s+(\S+\.(?:cpp|cc|cxx|c|cu))\b"
)


@dataclass(frozen=True)
class ProgressEvent:
    source: Source
    done: int | None = None  # steps finished (ninja) or compiles started (setuptools)
    total: int | None = None
    percent: float | None = None  # cmake
    what: str = ""  # the file or extension being worked on
    extension: str | None = None  # setuptools: "building 'x' extension"


def parse_progress(line: str) -> ProgressEvent | None:
    m = _NINJA.match(line)
    if m:
        done, total = int(m.group(1)), int(m.group(2))
        if total > 0 and done <= total:
            return ProgressEvent("ninja", done=done, total=total, what=_short(m.group(3)))
    m = _CMAKE.match(line)
    if m and int(m.group(1)) <= 100:
        return ProgressEvent("cmake", percent=float(m.group(1)), what=_short(m.group(2)))
    m = _SETUPTOOLS_EXT.match(line)
    if m:
        return ProgressEvent("setuptools", extension=m.group(1), what=m.group(1))
    m = _COMPILE.match(line.strip())
    if m:
        return ProgressEvent("setuptools", what=m.group(1).rsplit("/", 1)[-1])
    return None


def _short(text: str) -> str:
    text = text.strip()
    for prefix in ("Building CXX object ", "Building CUDA object ", "Building C object "):
        if text.startswith(prefix):
            return text[len(prefix) :].rsplit("/", 1)[-1]
    return text[:80]


class ProgressTracker:
    """Folds events into (completed, total) on one scale; ``total`` None while unknown."""

    def __init__(self, expected_sources: int | None = None) -> None:
        self.expected_sources = expected_sources
        self.completed = 0.0
        self.total: float | None = float(expected_sources) if expected_sources else None
        self.what = ""
        self._compiles = 0
        # Several ninja runs (one per extension, or configure then build) restart at [1/M]:
        # fold each run onto a growing total.
        self._ninja_base = 0
        self._ninja_last = (0, 0)

    def feed(self, event: ProgressEvent) -> None:
        self.what = event.what or self.what
        if event.source == "ninja" and event.done is not None and event.total is not None:
            last_done, last_total = self._ninja_last
            if event.done < last_done or (event.total != last_total and last_total):
                self._ninja_base += last_total
            self._ninja_last = (event.done, event.total)
            self.completed = float(self._ninja_base + event.done)
            self.total = float(self._ninja_base + event.total)
        elif event.source == "cmake" and event.percent is not None:
            self.completed, self.total = event.percent, 100.0
        elif event.source == "setuptools" and event.extension is None:
            self._compiles += 1
            # A compile line is printed when it starts: count the ones before it as done.
            self.completed = float(self._compiles - 1)
            if self.total is None or self._compiles > self.total:
                self.total = None if self.expected_sources is None else float(self._compiles)

    def feed_line(self, line: str) -> ProgressEvent | None:
        event = parse_progress(line)
        if event is not None:
            self.feed(event)
        return event


class BuildProgress:
    """A Rich progress bar (with rate and ETA) driven by build output lines."""

    def __init__(self, console: Console, *, expected_sources: int | None = None) -> None:
        from rich.progress import (  # noqa: PLC0415 (keeps --json start-up free of Rich)
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.tracker = ProgressTracker(expected_sources)
        self.progress: Progress = Progress(
            TextColumn("[bold]building[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[what]}", style="dim"),
            console=console,
            transient=True,
        )
        self.task: TaskID = self.progress.add_task("build", total=None, rate="", what="")

    def __enter__(self) -> BuildProgress:
        self.progress.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.progress.stop()

    def line(self, line: str) -> None:
        if self.tracker.feed_line(line) is None:
            return
        task = self.progress.tasks[0]
        speed = task.speed
        rate = f"{speed * 60:.1f}/min" if speed else ""
        self.progress.update(
            self.task,
            completed=self.tracker.completed,
            total=self.tracker.total,
            rate=rate,
            what=self.tracker.what[:40],
        )
