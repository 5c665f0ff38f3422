"""The contract every command keeps on any input: a result or one ``error:`` line, an exit code
of its kind (0-4), a valid JSON envelope with --json, in bounded time and memory."""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from torchsmith import envelope

CPU_SECONDS = 5  # CPU time, not wall time: CI machines are shared
WALL_SECONDS = 30  # only a stall (a blocking read) gets near this
MEMORY_BYTES = 500 * 1024 * 1024
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Run:
    code: int
    out: str
    err: str


def _limits() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))
    resource.setrlimit(resource.RLIMIT_DATA, (MEMORY_BYTES, MEMORY_BYTES))


def run_cli(*args: str, stdin: bytes | None = None) -> Run:
    """torchsmith in a subprocess limited to CPU_SECONDS of CPU and MEMORY_BYTES of data."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), NO_COLOR="1", COLUMNS="100")
    done = subprocess.run(
        [sys.executable, "-m", "torchsmith", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=WALL_SECONDS,
        preexec_fn=_limits,
        env=env,
        check=False,
    )
    return Run(done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode())


def assert_contract(run: Run, as_json: bool = False) -> None:
    assert 0 <= run.code <= 4, f"exit {run.code}: {run.err[-2000:]}"
    assert "Traceback" not in run.err, run.err[-2000:]
    assert "internal error" not in run.err + run.out
    errors = [line for line in run.err.splitlines() if line.startswith("error:")]
    if as_json:
        doc = json.loads(run.out)
        assert doc["schema"].startswith("torchsmith/")
        assert isinstance(doc["schema_version"], int)
        if not doc["ok"]:
            assert doc["error"]["exit_code"] == run.code
            assert "\n" not in doc["error"]["message"]
    elif run.code >= 2:
        assert len(errors) == 1, run.err


def run_main(*args: str) -> tuple[int, str, str]:
    """``torchsmith.cli.main`` in this process: (exit code, stdout, stderr)."""
    from torchsmith.cli import main  # noqa: PLC0415

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def check_inprocess(code: int, err: str, out: str | None = None) -> None:
    """The contract for an in-process ``main`` call (faster, for the many-example tests); pass
    ``out`` for a --json run (its envelope is checked instead of the error line)."""
    assert 0 <= code <= 4, err[-2000:]
    assert "Traceback" not in err
    if out is not None:
        doc = json.loads(out)
        assert doc["schema"].startswith("torchsmith/")
        assert doc["ok"] == (code in (0, 1)), doc
        if not doc["ok"]:
            assert doc["error"]["exit_code"] == code
            assert "\n" not in doc["error"]["message"]
    elif code >= 2:
        assert len([x for x in err.splitlines() if x.startswith("error:")]) == 1, err


__all__ = ["Run", "assert_contract", "check_inprocess", "envelope", "run_cli", "run_main"]
