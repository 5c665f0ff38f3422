"""A closed stdout (``torchsmith plan | head -1``): no traceback, no message, exit 0 (see
STDOUT_CLOSED_EXIT in cli.py), human output or --json alike. Real processes and real pipes."""

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


@pytest.mark.parametrize("args", CASES, ids=" ".join)
def test_a_pipe_closed_before_the_first_write(args: list[str]) -> None:
    """The reader is gone before anything is written, so every write fails: EPIPE for sure."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = torchsmith(args, write_end)
    finally:
        os.close(write_end)
    _, err = proc.communicate(timeout=120)
    assert err == b""
    assert proc.returncode == STDOUT_CLOSED_EXIT == 0


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
        assert proc.wait(timeout=120) == 0
    assert err == b""
