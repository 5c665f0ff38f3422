"""Run a long command (a build) while streaming its output: the executor's half of util/cmd.py.

:func:`stream` starts ``argv`` in its own process group with stdout and stderr merged, reads the
output line by line (a carriage return ends a line too, so progress bars that redraw with ``\\r``
arrive as lines), writes every line with a timestamp to a log file, hands it to a callback, and
samples the peak resident memory of the whole process tree with psutil about five times a second.
Ctrl-C, SIGTERM and the timeout stop the whole group (terminate, wait, kill) and the result says
``interrupted``; a full disk while writing the log stops the command and the result says so in one
line. Decoding and the group kill are util/cmd.py's own (the one gateway stays the one gateway).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType
from typing import IO, Literal

import psutil

from torchsmith.util.cmd import decode, display, signal_group, spawn

StreamStatus = Literal["succeeded", "failed", "interrupted"]
LineCallback = Callable[[str], None]

SAMPLE_INTERVAL_S = 0.2
STOP_GRACE_S = 5.0  # compilers and linkers get this long to exit after SIGTERM


@dataclass(frozen=True)
class StreamResult:
    argv: tuple[str, ...]
    status: StreamStatus
    returncode: int | None  # None when it was stopped before it exited on its own
    duration_s: float
    peak_rss_bytes: int  # of the whole process tree, sampled
    lines: int
    reason: str | None = None  # why it was interrupted or failed without an exit code


class RssSampler:
    """Samples the summed RSS of a process and all its descendants in a background thread."""

    def __init__(self, pid: int, interval_s: float = SAMPLE_INTERVAL_S) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="rss-sampler")

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(timeout=2.0)

    def sample(self) -> int:
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return 0
        total = 0
        for proc in procs:
            try:
                total += proc.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        self.peak = max(self.peak, total)
        return total

    def _loop(self) -> None:
        while not self._done.is_set():
            self.sample()
            self._done.wait(self.interval_s)


def split_lines(chunks: Iterator[bytes]) -> Iterator[str]:
    """Decoded lines from raw output chunks; ``\\n``, ``\\r\\n`` and a lone ``\\r`` end a line."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        while True:
            cut = _first_break(pending)
            if cut is None:
                break
            end, skip = cut
            yield decode(pending[:end])
            pending = pending[end + skip :]
    if pending:
        yield decode(pending)


def _first_break(data: bytes) -> tuple[int, int] | None:
    n = data.find(b"\n")
    r = data.find(b"\r")
    if r == -1 and n == -1:
        return None
    if r != -1 and (n == -1 or r < n):
        if r + 1 == len(data):
            return None  # may be the first half of \r\n: wait for more
        return (r, 2) if data[r + 1 : r + 2] == b"\n" else (r, 1)
    return (n, 1)


def _chunks(pipe: IO[bytes]) -> Iterator[bytes]:
    fd = pipe.fileno()
    while True:
        data = os.read(fd, 65536)
        if not data:
            return
        yield data


def stream(
    argv: Sequence[str],
    *,
    log_path: Path | None = None,
    on_line: LineCallback | None = None,
    env: Mapping[str, str] | None = None,
    env_overlay: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
    handle_signals: bool = True,
    sample_interval_s: float = SAMPLE_INTERVAL_S,
) -> StreamResult:
    """Run ``argv`` to the end (or until stopped), streaming its merged output.

    ``env`` replaces the environment (default: this process's); ``env_overlay`` is laid over it.
    With ``handle_signals`` (main thread only) SIGINT and SIGTERM stop the process group and the
    result is ``interrupted``; the log file is appended to, so several steps share one log.
    Raises CommandNotFoundError when the program cannot be started.
    """
    args = tuple(str(a) for a in argv)
    full_env = dict(os.environ if env is None else env)
    full_env.update(env_overlay or {})
    log_file: IO[str] | None = None
    started = time.monotonic()
    try:
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_file = log_path.open("a", encoding="utf-8", errors="replace")
            _write(log_file, f"$ {display(args)}" + (f"   (in {cwd})" if cwd else ""))
    except OSError as exc:
        if log_file is not None:
            _close(log_file)
        return StreamResult(args, "failed", None, 0.0, 0, 0, _disk_message(exc))
    try:
        proc = spawn(
            args, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=full_env, cwd=cwd
        )
        return _follow(
            proc,
            args,
            log_file=log_file,
            on_line=on_line,
            timeout=timeout,
            handle_signals=handle_signals,
            interval=sample_interval_s,
            started=started,
        )
    finally:
        if log_file is not None:
            _close(log_file)


def _close(log_file: IO[str]) -> None:
    with contextlib.suppress(OSError):
        log_file.close()


class _Reader(threading.Thread):
    """Reads the merged output, writes the log and calls back, off the main thread."""

    def __init__(
        self,
        pipe: IO[bytes],
        log_file: IO[str] | None,
        on_line: LineCallback | None,
        on_write_error: Callable[[str], None],
    ) -> None:
        super().__init__(daemon=True, name="stream-reader")
        self.pipe = pipe
        self.log_file = log_file
        self.on_line = on_line
        self.on_write_error = on_write_error
        self.count = 0
        self.write_error: str | None = None
        self.callback_error: BaseException | None = None

    def run(self) -> None:
        try:
            for line in split_lines(_chunks(self.pipe)):
                self.count += 1
                if self.log_file is not None and self.write_error is None:
                    try:
                        _write(self.log_file, line)
                    except OSError as exc:
                        self.write_error = _disk_message(exc)
                        self.on_write_error(self.write_error)
                if self.on_line is not None and self.callback_error is None:
                    try:
                        self.on_line(line)
                    except Exception as exc:  # noqa: BLE001 (a display bug must not stop a build)
                        self.callback_error = exc
        except OSError:
            return


def _follow(
    proc: subprocess.Popen[bytes],
    args: tuple[str, ...],
    *,
    log_file: IO[str] | None,
    on_line: LineCallback | None,
    timeout: float | None,
    handle_signals: bool,
    interval: float,
    started: float,
) -> StreamResult:
    assert proc.stdout is not None
    stop_reason: list[str] = []
    lock = threading.Lock()

    def request_stop(reason: str) -> None:
        with lock:
            if not stop_reason:
                stop_reason.append(reason)

    previous: dict[signal.Signals, object] = {}

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        request_stop(f"stopped by {name}")

    if handle_signals and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    deadline = None if timeout is None else started + timeout
    reader = _Reader(proc.stdout, log_file, on_line, request_stop)
    try:
        with RssSampler(proc.pid, interval) as sampler:
            reader.start()
            while True:
                try:
                    proc.wait(timeout=0.1)
                    break
                except subprocess.TimeoutExpired:
                    if deadline is not None and time.monotonic() > deadline:
                        request_stop(f"timed out after {timeout:g}s")
                except KeyboardInterrupt:
                    request_stop("stopped by Ctrl-C")
                if stop_reason:
                    stop_group(proc)
                    break
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
    if stop_reason:
        stop_group(proc)  # the whole group is gone before we report
    # A daemon the build started (a compiler cache server) may keep the pipe open: do not wait
    # for it longer than it takes to drain what is buffered.
    reader.join(timeout=5.0)
    if not reader.is_alive():
        proc.stdout.close()
    return _outcome(proc, args, reader, log_file, stop_reason, sampler.peak, started)


def _outcome(  # noqa: PLR0917
    proc: subprocess.Popen[bytes],
    args: tuple[str, ...],
    reader: _Reader,
    log_file: IO[str] | None,
    stop_reason: list[str],
    peak: int,
    started: float,
) -> StreamResult:
    duration = time.monotonic() - started
    reason = stop_reason[0] if stop_reason else None
    status: StreamStatus
    if reader.write_error is not None:
        status, reason = "failed", reader.write_error
    elif stop_reason:
        status = "interrupted"
    else:
        status = "succeeded" if proc.returncode == 0 else "failed"
    returncode = None if stop_reason else proc.returncode
    if log_file is not None and reader.write_error is None and not reader.is_alive():
        try:
            _write(log_file, f"# {reason or f'exit {proc.returncode}'} after {duration:.1f}s")
        except OSError as exc:
            status, reason = "failed", _disk_message(exc)
    return StreamResult(args, status, returncode, duration, peak, reader.count, reason)


def stop_group(proc: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> None:
    """Terminate the process group, wait up to ``grace_s``, then kill it (output is not read)."""
    for hard in (False, True):
        signal_group(proc, hard=hard)
        try:
            proc.wait(timeout=grace_s)
            if os.name != "posix" or hard:
                return
            # The leader is gone; give the rest of the group the same grace, then kill it.
            signal_group(proc, hard=True)
            return
        except subprocess.TimeoutExpired:
            continue


def _write(log_file: IO[str], line: str) -> None:
    stamp = datetime.now(timezone.utc).strftime("%H:%M:%S.%f")[:-3]
    log_file.write(f"{stamp} {line}\n")
    log_file.flush()


def _disk_message(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return "the disk holding the build log is full; the build was stopped"
    return f"cannot write the build log: {exc.strerror or exc}; the build was stopped"
