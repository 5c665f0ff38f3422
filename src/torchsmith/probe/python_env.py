"""The target interpreter: which one, and what it is (plus the torch it would import).

"The target" is the Python whose torch doctor reports on. Without ``--python`` it is the
**active environment** as the user's shell sees it, because torchsmith itself usually runs from
an isolated environment (pipx, ``uv tool``) that never holds torch, so its own
``sys.executable`` is the wrong answer. In order:

1. ``$VIRTUAL_ENV`` — an activated venv/virtualenv/uv environment (it wins over conda: a venv
   activated on top of a conda env is the innermost one);
2. ``$CONDA_PREFIX`` — an activated conda/mamba/pixi environment;
3. ``python3`` (POSIX) or ``python`` (Windows) on ``PATH``, then the other name — what typing
   ``python`` would run;
4. torchsmith's own ``sys.executable``, the last resort.

An environment variable that points at a directory without an interpreter (a deleted venv) is
skipped. ``--python`` accepts an interpreter or an environment directory.

Everything about the target is read by ONE subprocess running ``scripts/target_probe.py``
inside it, with a timeout; it never imports torch. PYTHONPATH and the user site stay in effect
(they decide what ``import torch`` finds), the script's own directory does not.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from torchsmith import platforms
from torchsmith.errors import InputError, TorchsmithError
from torchsmith.probe.model import PythonInfo, TorchInfo
from torchsmith.probe.torch_env import torch_info_from_report
from torchsmith.util import cmd

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 10.0
VERIFY_TIMEOUT_S = 10.0
SCRIPT = Path(__file__).parent / "scripts" / "target_probe.py"
MARKER = "TORCHSMITH-PROBE:"
SCHEMA = 1
_VERIFY_MARKER = "torchsmith-python-ok"
# Prints the marker on any Python (2.x included); anything else prints something else.
_VERIFY_CODE = f"import sys; sys.stdout.write('{_VERIFY_MARKER} %d.%d.%d' % sys.version_info[:3])"
# macOS framework builds pass this to children, which then believe they run in *our* venv.
_DROP_ENV = ("__PYVENV_LAUNCHER__",)


# ---------------------------------------------------------------- which interpreter


def resolve_python(
    path: str | None,
    *,
    timeout: float | None = None,
    hang_is_error: bool = False,
    tip: str | None = None,
) -> str:
    """The target interpreter's path (absolute, symlinks kept: a venv's python is a symlink).

    ``None`` picks the active environment (see the module docstring) and never raises. An
    explicit ``path`` may be an interpreter or an environment directory; it raises
    :class:`InputError` when it does not exist, is a directory without an interpreter, or is an
    executable that is not Python. A ``path`` that does not answer within ``timeout`` (default
    VERIFY_TIMEOUT_S) is returned as is: a hanging interpreter is a broken environment, which
    the probe reports (doctor). With ``hang_is_error`` it raises :func:`hanging_python`'s
    error instead (exit 4), with ``tip`` if given: for commands that need an answer from it.
    """
    if path is None:
        return active_python()
    given = Path(path).expanduser()
    if not given.exists():
        raise InputError(
            f"--python {path}: no such file or directory",
            tip="pass a Python interpreter or a virtual environment directory",
        )
    exe = _interpreter_in(given) if given.is_dir() else given
    if exe is None:
        raise InputError(
            f"--python {path}: a directory without a Python interpreter "
            "(no bin/python or Scripts\\python.exe)",
            tip="pass the interpreter itself, or the root of a venv or conda environment",
        )
    exe = tidy_path(exe)
    seconds = VERIFY_TIMEOUT_S if timeout is None else timeout
    if not _verify_is_python(str(exe), path, seconds) and hang_is_error:
        raise hanging_python(path, seconds, tip=tip)
    return str(exe)


def tidy_path(path: Path) -> Path:
    """``path`` made absolute with its ``..`` and ``.`` worked out, so that one environment has
    one spelling (the ledger matches installs by it); links are not followed, since a venv's
    python is a link to the base interpreter. Where a folder before a ``..`` is a link, the
    short spelling would be another folder: the path stays as given, absolute."""
    given = path.absolute()
    walked: list[str] = []
    for part in given.parts:
        if part == ".." and walked and Path(*walked).is_symlink():
            return given
        if part == "..":
            walked = walked[:-1] if len(walked) > 1 else walked
        elif part != ".":
            walked.append(part)
    return Path(*walked)


def hanging_python(
    given: str, timeout: float, *, tip: str | None = None
) -> cmd.CommandTimeoutError:
    """The one-line error for an interpreter that gave no answer within ``timeout`` seconds
    (a hung tool: exit 4). It names the interpreter, never the code it was asked to run."""
    return cmd.CommandTimeoutError(
        f"--python {given}: no answer after {timeout:g}s (hanging?); stopped it",
        tip=tip or f"check that `{shlex.quote(given)} -c pass` returns, or pass another --python",
    )


def python_error(given: str, info: PythonInfo, *, tip: str | None = None) -> TorchsmithError:
    """The error for a target whose probe failed (``info.error`` is set): a hang
    (``info.timed_out_s`` set) is a hung tool (exit 4, :func:`hanging_python`, with ``tip`` if
    given), anything else a bad ``--python`` (exit 3)."""
    if info.timed_out_s is not None:
        return hanging_python(given, info.timed_out_s, tip=tip)
    error = info.error or "the probe failed"
    return InputError(f"--python {given}: {error}", tip="check that the interpreter runs")


def probe_target(
    given: str, *, timeout: float | None = None, tip: str | None = None
) -> tuple[str, PythonInfo, TorchInfo | None]:
    """For commands that need answers from ``--python``: the interpreter resolved, then probed
    (each within ``timeout``, else their defaults); one that hangs or whose probe fails raises
    (:func:`python_error`, with ``tip`` if given) instead of coming back with ``error`` set."""
    exe = resolve_python(given, timeout=timeout, hang_is_error=True, tip=tip)
    info, torch = probe_python_and_torch(exe, timeout=timeout)
    if info.error:
        raise python_error(given, info, tip=tip)
    return exe, info, torch


def active_python(environ: Mapping[str, str] | None = None) -> str:
    """The interpreter of the environment active in the user's shell (module docstring)."""
    env = os.environ if environ is None else environ
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        root = env.get(var)
        if root:
            exe = _interpreter_in(Path(root))
            if exe is not None:
                return str(exe.absolute())
            log.debug("$%s=%s holds no interpreter; skipped", var, root)
    names = ("python", "python3") if platforms.current_os() == "windows" else ("python3", "python")
    for name in names:
        found = cmd.which(name, path=env.get("PATH"))
        if found:
            return str(Path(found).absolute())
    return sys.executable


def _interpreter_in(root: Path) -> Path | None:
    """The interpreter of an environment directory (venv or conda, POSIX or Windows layout)."""
    if platforms.current_os() == "windows":
        candidates = ("Scripts/python.exe", "python.exe", "bin/python.exe")
    else:
        candidates = ("bin/python3", "bin/python", "Scripts/python.exe")
    for rel in candidates:
        exe = root / rel
        if exe.is_file():
            return exe
    return None


def _verify_is_python(exe: str, given: str, timeout: float) -> bool:
    """True when ``exe`` says it is Python, False when it gave no answer; raises otherwise."""
    try:
        result = cmd.run([exe, "-c", _VERIFY_CODE], timeout=timeout, env=child_env())
    except cmd.CommandTimeoutError:
        log.debug("%s did not answer within %gs", exe, timeout)
        return False
    except cmd.CommandNotFoundError as exc:
        raise InputError(
            f"--python {given}: cannot be run ({exc.message})",
            tip="pass an executable Python interpreter",
        ) from exc
    if result.ok and result.stdout.startswith(_VERIFY_MARKER):
        return True
    said = (result.stdout or result.stderr).strip().splitlines()
    detail = f"; it said: {said[0][:120]}" if said else ""
    raise InputError(
        f"--python {given}: not a Python interpreter (exit status {result.returncode}{detail})",
        tip="pass a Python interpreter such as .venv/bin/python, or the environment directory",
    )


def child_env() -> dict[str, str]:
    """The environment for the target: the user's own, minus what would mislead it."""
    return {k: v for k, v in os.environ.items() if k not in _DROP_ENV}


# ---------------------------------------------------------------- what it is


def probe_python_and_torch(
    python: str, *, timeout: float | None = None
) -> tuple[PythonInfo, TorchInfo | None]:
    """Describe the interpreter ``python`` and the torch it would import; never raises.

    One subprocess of ``python`` runs ``scripts/target_probe.py`` (``-B``: it writes no
    bytecode into the target) for at most ``timeout`` seconds (default PROBE_TIMEOUT_S). A
    failure to run it, a timeout or unreadable output comes back as ``PythonInfo.error`` with
    torch ``None`` (:func:`python_error` turns it into the error to raise).
    """
    argv = [python, "-B", str(SCRIPT)]
    seconds = PROBE_TIMEOUT_S if timeout is None else timeout
    try:
        result = cmd.run(argv, timeout=seconds, env=child_env())
    except cmd.CommandTimeoutError:
        hang = f"no answer after {seconds:g}s from {python} (hanging?)"
        return _failed(python, hang, timed_out_s=seconds), None
    except cmd.CommandNotFoundError as exc:
        return _failed(python, exc.message), None
    try:
        report = parse_probe_output(result.stdout)
    except ValueError as exc:
        return _failed(python, _why_no_report(python, result, str(exc))), None
    return python_info_from_report(report, python), torch_info_from_report(report)


def parse_probe_output(stdout: str) -> dict[str, Any]:
    """The JSON object after the marker line in the script's output; ValueError if none."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                report = json.loads(line[len(MARKER) :])
            except json.JSONDecodeError as exc:
                raise ValueError(f"probe output is not valid JSON: {exc}") from None
            if not isinstance(report, dict):
                raise ValueError("probe output is not a JSON object")
            if report.get("schema") != SCHEMA:
                raise ValueError(f"probe output has schema {report.get('schema')!r}, not {SCHEMA}")
            return report
    raise ValueError("no probe output")


def python_info_from_report(report: Mapping[str, Any], python: str) -> PythonInfo:
    """Build :class:`PythonInfo` from the script's JSON (tolerant of missing fields)."""
    bits = report.get("bits")
    return PythonInfo(
        executable=_str(report.get("executable")) or python,
        version=_str(report.get("version")) or "unknown",
        implementation=_str(report.get("implementation")) or "unknown",
        bits=bits if isinstance(bits, int) else 0,
        free_threaded=report.get("free_threaded") is True,
        env_kind=_str(report.get("env_kind")) or "system",
        env_prefix=_str(report.get("prefix")),
        platform_tag=_str(report.get("platform_tag")),
        site_packages=tuple(p for p in report.get("site_packages") or () if isinstance(p, str)),
    )


def _failed(python: str, error: str, *, timed_out_s: float | None = None) -> PythonInfo:
    return PythonInfo(python, "unknown", "unknown", 0, error=error, timed_out_s=timed_out_s)


def _why_no_report(python: str, result: cmd.CommandResult, parse_error: str) -> str:
    """One line on why the script gave no report; names the version when that is the cause."""
    lines = result.stderr.strip().splitlines()
    last = lines[-1].strip() if lines else parse_error
    if "SyntaxError" in last:
        version = _version_of(python)
        if version is not None and not version.startswith("3."):
            return f"Python {version} is too old for torchsmith's probe (it needs Python 3.6+)"
    if result.returncode != 0:
        return f"the probe script failed in {python} (exit status {result.returncode}): {last}"
    return f"{parse_error} from {python}"


def _version_of(python: str) -> str | None:
    try:
        result = cmd.run([python, "-c", _VERIFY_CODE], timeout=5.0, env=child_env())
    except (cmd.CommandTimeoutError, cmd.CommandNotFoundError):
        return None
    if result.stdout.startswith(_VERIFY_MARKER):
        return result.stdout[len(_VERIFY_MARKER) :].strip()
    return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
