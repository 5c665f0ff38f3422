"""A byte progress bar for long reads (inspect's binaries, explain's logs), on a terminal only."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from torchsmith.util.progress import ByteProgress

PROGRESS_MIN_BYTES = 128 << 20  # below this the work takes well under a second: no bar


@contextmanager
def byte_progress(console: Console, label: str) -> Iterator[ByteProgress]:
    """A callback that draws a bar titled ``label`` on ``console`` once the work is big (at least
    PROGRESS_MIN_BYTES in all) and the console is a terminal; otherwise it draws nothing."""
    progress: Progress | None = None
    task: TaskID | None = None

    def update(done: int, total: int, current: str) -> None:
        nonlocal progress, task
        if progress is None:
            if total < PROGRESS_MIN_BYTES or not console.is_terminal:
                return
            progress = Progress(
                TextColumn(f"[bold]{escape(label)}"),
                BarColumn(),
                DownloadColumn(),
                TimeRemainingColumn(),
                TextColumn("{task.description}", markup=False),
                console=console,
                transient=True,
            )
            progress.start()
            task = progress.add_task(current[-60:], total=total)
        assert task is not None
        progress.update(task, completed=done, total=total, description=current[-60:])

    try:
        yield update
    finally:
        if progress is not None:
            progress.stop()
