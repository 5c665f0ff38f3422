"""The single gateway for running external commands.

Every call has a timeout; on expiry the process (and its process group on POSIX) is
terminated, then killed. Output is decoded robustly (UTF-8, UTF-16 with BOM, then
replacement characters). Failures become typed :class:`~torchsmith.errors.ToolError`
subclasses whose one-line message names the tool.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from torchsmith import platforms
from torchsmith.errors import ToolError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 15.0
_GRACE_S = 2.0


class CommandNotFoundError(ToolError):
    """The executable does not exist or is not executable."""


class CommandTimeoutError(ToolError):
    """The command did not finish within its timeout and was killed."""


class CommandFailedError(ToolError):
    """The command exited with a non-zero status where success was required."""


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def output(self) -> str:
        """stdout and stderr together (many tools print versions on stderr)."""
        if self.stdout and self.stderr:
            return self.stdout + "\n" + self.stderr
        return self.stdout or self.stderr


def decode(data: bytes) -> str:
    """Decode tool output: UTF-16 when it has a BOM, else UTF-8, never raising."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace")


def display(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def brief(argv: Sequence[str], limit: int = 80) -> str:
    """:func:`display` for one line of an error: an argument over ``limit`` characters or of
    several lines (a ``python -c`` script) is cut to its start and "…", so the whole message
    stays on the one line an error shows."""
    shown = []
    for a in argv:
        first = a.splitlines()[0] if a.strip() else a
        shown.append(first[:limit] + "…" if first != a or len(a) > limit else a)
    return display(shown)


def which(name: str, path: str | None = None) -> str | None:
    return shutil.which(name, path=path)


def spawn(
    args: tuple[str, ...],
    *,
    stdin: int,
    stderr: int,
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str] | None,
) -> subprocess.Popen[bytes]:
    """Start ``args`` with stdout piped, in its own process group (POSIX), never via a shell.

    Raises CommandNotFoundError for every way a program can fail to start (missing, not
    executable, not a program this OS can run).
    """
    tool = Path(args[0]).name if args else "?"
    try:
        return subprocess.Popen(
            windows_command_line(args) if platforms.current_os() == "windows" else args,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            cwd=cwd,
            start_new_session=os.name == "posix",
        )
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise CommandNotFoundError(f"{tool}: not found ({args[0]})") from exc
    except PermissionError as exc:
        raise CommandNotFoundError(f"{tool}: not executable ({args[0]})") from exc
    except OSError as exc:
        raise CommandNotFoundError(f"{tool}: cannot be started: {exc.strerror or exc}") from exc


def windows_command_line(args: Sequence[str]) -> str | Sequence[str]:
    """The command line Windows gets for ``args``: subprocess's own quoting (list2cmdline), except
    for ``cmd.exe [/d /u ...] /s /c "<line>"``, whose line is already quoted for cmd and must
    reach it as written (list2cmdline would turn its inner quotes into \\", which cmd does not
    read)."""
    flags = [a.lower() for a in args[1:-2]]
    if (
        len(args) >= 4
        and Path(args[0]).name.lower() == "cmd.exe"
        and args[-2].lower() == "/c"
        and "/s" in flags
        and all(re.fullmatch(r"/[a-z](?::[a-z]{1,3})?", f) for f in flags)
    ):
        return " ".join(args[:-1]) + " " + args[-1]
    return args


def run(
    argv: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    check: bool = False,
    stdin: bytes | None = None,
    encoding: str | None = None,
    errors: str = "replace",
) -> CommandResult:
    """Run ``argv`` (never through a shell) and return its decoded result (by ``encoding``
    where the tool's output has a known one without a BOM, else as :func:`decode` reads it).
    ``errors="surrogateescape"`` with an ``encoding`` keeps file names that are not valid in it
    exactly (as :func:`os.fsdecode` does), so they name the same file again.

    Raises CommandNotFoundError, CommandTimeoutError, or (with ``check``) CommandFailedError.
    """
    args = tuple(str(a) for a in argv)
    tool = Path(args[0]).name if args else "?"
    log.debug("run: %s (timeout %.1fs)", display(args), timeout)
    started = time.monotonic()
    proc = spawn(
        args,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        cwd=cwd,
    )
    try:
        out, err = proc.communicate(input=stdin, timeout=timeout)
    except KeyboardInterrupt:
        _stop(proc)  # the child runs in its own session: Ctrl-C does not reach it by itself
        raise
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise CommandTimeoutError(
            f"{tool}: no answer after {timeout:g}s, stopped ({brief(args)})",
            tip="the tool may be hanging: check it by hand (or give it longer, where the command "
            "takes --timeout)",
        ) from None
    text = decode if encoding is None else (lambda b: b.decode(encoding, errors=errors))
    result = CommandResult(args, proc.returncode, text(out), text(err), time.monotonic() - started)
    log.debug("exit %d after %.3fs: %s", result.returncode, result.duration_s, tool)
    if check and not result.ok:
        first = (result.stderr or result.stdout).strip().splitlines()
        detail = f": {first[-1].strip()}" if first else ""
        raise CommandFailedError(f"{tool}: exited with status {result.returncode}{detail}")
    return result


def run_detached(
    argv: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
) -> int:
    """Run a command whose children outlive it (a daemon it starts: ``sccache --start-server``).

    Its output goes nowhere: a daemon that inherited our pipes would hold them open, and a reader
    waiting for their end would wait forever. Returns the exit status.
    """
    args = tuple(str(a) for a in argv)
    tool = Path(args[0]).name if args else "?"
    log.debug("run detached: %s (timeout %.1fs)", display(args), timeout)
    try:
        return subprocess.run(  # noqa: PLW1510 (the status is the answer)
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            timeout=timeout,
        ).returncode
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        raise CommandNotFoundError(f"{tool}: cannot be started ({args[0]})") from exc
    except subprocess.TimeoutExpired:
        raise CommandTimeoutError(f"{tool}: no answer after {timeout:g}s ({brief(args)})") from None


def signal_group(proc: subprocess.Popen[bytes], *, hard: bool) -> None:
    """SIGTERM (or with ``hard`` SIGKILL) the process and, on POSIX, its whole process group."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL if hard else signal.SIGTERM)  # type: ignore[attr-defined,unused-ignore]
        elif hard:
            proc.kill()
        else:
            proc.terminate()
    except (ProcessLookupError, PermissionError):
        pass


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate, then kill, the process and (on POSIX) its whole process group."""
    for hard in (False, True):
        signal_group(proc, hard=hard)
        try:
            proc.communicate(timeout=_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue
