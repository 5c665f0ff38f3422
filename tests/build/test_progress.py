"""Progress from recorded real build output (tests/build/fixtures, see its README)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from torchsmith.build.progress import BuildProgress, ProgressTracker, parse_progress

FIXTURES = Path(__file__).parent / "fixtures"


def _feed(name: str, expected_sources: int | None = None) -> ProgressTracker:
    tracker = ProgressTracker(expected_sources)
    for line in (FIXTURES / name).read_text().splitlines():
        tracker.feed_line(line)
    return tracker


def test_ninja_lines() -> None:
    event = parse_progress("[3/5] Building CUDA object CMakeFiles/tinycuda.dir/kernel.cu.o")
    assert event is not None
    assert (event.source, event.done, event.total, event.what) == ("ninja", 3, 5, "kernel.cu.o")
    tracker = _feed("cmake-ninja.log")
    assert (tracker.completed, tracker.total) == (5.0, 5.0)


def test_cmake_percent_lines() -> None:
    tracker = _feed("cmake-make.log")
    assert (tracker.completed, tracker.total) == (100.0, 100.0)
    event = parse_progress("[ 20%] Building CUDA object CMakeFiles/tinycuda.dir/kernel.cu.o")
    assert event is not None
    assert (event.percent, event.what) == (20.0, "kernel.cu.o")


def test_setuptools_compile_lines_count_against_sources() -> None:
    lines = (FIXTURES / "setuptools-no-ninja.log").read_text().splitlines()
    events = [e for e in map(parse_progress, lines) if e is not None]
    assert [e.extension for e in events] == ["tinyext", None]
    assert events[1].what == "tinyext.cpp"  # the compile line, not the link line
    tracker = _feed("setuptools-no-ninja.log", expected_sources=1)
    assert tracker.total == 1.0


def test_ninja_restarts_fold_onto_one_scale() -> None:
    tracker = ProgressTracker()
    for line in ["[1/2] a.o", "[2/2] b.o", "[1/3] c.o", "[3/3] e.o"]:
        tracker.feed_line(line)
    assert (tracker.completed, tracker.total) == (5.0, 5.0)


def test_unrelated_lines_are_ignored() -> None:
    for line in ["", "running build_ext", "-- Configuring done", "[ERROR] x", "[120%] no"]:
        assert parse_progress(line) is None


def test_rich_bar_runs_over_recorded_lines() -> None:
    console = Console(file=io.StringIO(), force_terminal=True)
    with BuildProgress(console) as bar:
        for line in (FIXTURES / "cmake-ninja.log").read_text().splitlines():
            bar.line(line)
        assert bar.progress.tasks[0].completed == 5.0
