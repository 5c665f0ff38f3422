"""A closed stdout (``torchsmith plan | head -1``): no traceback, no message, exit 141 when a
write met it (see STDOUT_CLOSED_EXIT in cli.py), human output or --json alike; an error keeps
its own code. Real processes and real pipes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from torchsmith.cli import STDOUT_CLOSED_EXIT

PLAN = ["plan", "--gpu", "RTX 4090"]
KB = ["kb", "show", "2.6"]
CASES = [
    KB,
    [*KB, "--json"],
    PLAN,
    [*PLAN, "--json"],
    ["--help"],  # printed while the arguments are parsed
    ["--version"],
]


def torchsmith(args: list[str], stdout: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "torchsmith", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )


def into_a_closed_pipe(args: list[str]) -> tuple[int, bytes]:
    """Run torchsmith with a stdout whose reader is gone: its exit status and its stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = torchsmith(args, write_end)
    finally:
        os.close(write_end)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


@pytest.mark.parametrize("args", CASES, ids=" ".join)
def test_a_pipe_closed_before_the_first_write(args: list[str]) -> None:
    """The reader is gone before anything is written, so every write fails: EPIPE for sure."""
    code, err = into_a_closed_pipe(args)
    assert err == b""
    assert code == STDOUT_CLOSED_EXIT == 141


@pytest.mark.parametrize("args", CASES[:4], ids=" ".join)
def test_a_reader_that_takes_one_line_and_closes(args: list[str]) -> None:
    """``| head -1``: whether a later write meets the closed pipe depends on timing; the status
    and the silence on stderr must not."""
    with torchsmith(args, subprocess.PIPE) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        assert proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) in (0, STDOUT_CLOSED_EXIT)
    assert err == b""


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["plan", "--json", "--bogus"], 2),  # the usage error's envelope
        (["plan", "--os", "bogus", "--json"], 2),
        (["explain", "/nonexistent.log", "--json"], 3),  # a failure is never turned into success
    ],
    ids=["usage", "usage-value", "input"],
)
def test_an_error_meeting_a_closed_pipe_keeps_its_code(args: list[str], code: int) -> None:
    got, err = into_a_closed_pipe(args)
    assert b"Traceback" not in err
    assert got == code
