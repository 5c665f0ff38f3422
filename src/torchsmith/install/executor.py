"""The install executor: the only install code that changes the machine.

Order: resolve (or create) the target; snapshot its distributions; run the installer; check what
landed; on any failure, Ctrl-C included, restore the snapshot. Every install and rollback is a
ledger attempt of kind "install".
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from torchsmith.errors import InputError, ToolError, TorchsmithError, UsageError
from torchsmith.install import indexes, snapshot, steps
from torchsmith.install.checks import check_landed
from torchsmith.install.envstate import is_environment, package_set, read_dists
from torchsmith.install.model import InstallOptions, InstallResult, diff
from torchsmith.install.report import first_error, pip_origins
from torchsmith.ledger import Ledger
from torchsmith.plan.model import Recommendation
from torchsmith.probe.model import PythonInfo
from torchsmith.probe.python_env import (
    child_env,
    probe_python_and_torch,
    resolve_python,
    tidy_path,
)
from torchsmith.util import cmd

OnStep = Callable[[str], None]
Verifier = Callable[[str], Any]


class InstallFailedError(ToolError):
    """The installer failed or installed the wrong thing; the environment was restored."""


def _noop(_: str) -> None:
    return None


def default_verifier() -> Verifier | None:
    """verify's ``run_verify`` when this torchsmith has it (the seam tests replace)."""
    try:
        from torchsmith.verify import run_verify  # noqa: PLC0415
    except ImportError:
        return None
    return run_verify


def prepare(rec: Recommendation, options: InstallOptions) -> InstallResult:
    """Decide everything (target, sources, commands) without changing anything."""
    uv = steps.find_uv()
    installer = steps.pick_installer(options, uv)
    result = InstallResult(
        python="", installer=installer, status="planned", torch=None, variant=rec.variant
    )
    if options.venv is not None and options.python is not None:
        raise UsageError("--venv and --python name two targets", tip="pass one of them")
    if options.venv is not None and not steps.venv_python(Path(options.venv)).exists():
        venv = tidy_path(Path(options.venv))
        if venv.exists() and (not venv.is_dir() or any(venv.iterdir())):
            raise UsageError(
                f"--venv {options.venv}: exists and is not a virtual environment (no "
                f"{steps.venv_python(Path())})",
                tip="name a new or empty folder for the venv, or an existing venv",
            )
        result.steps.append(steps.venv_step(venv))
        result.python = str(steps.venv_python(venv))
    else:
        if options.venv is not None and not is_environment(Path(options.venv)):
            raise UsageError(
                f"--venv {options.venv}: has a Python but is no virtual environment (no "
                "pyvenv.cfg or conda-meta): installing there would change that interpreter",
                tip="name a venv, or pass the interpreter with --python if you mean it",
            )
        result.python = resolve_python(options.venv or options.python)
    result.torch = steps.torch_version(rec)
    overridden = bool(options.index_url or options.find_links)
    config = indexes.with_overrides(
        indexes.read_user_config(child_env()),
        index_url=options.index_url,
        find_links=options.find_links,
    )
    config, why, local = steps.choose_sources(rec, config, overridden=overridden)
    result.requirements = steps.requirements(
        rec, options.companions, local or config.index_url, why
    )
    result.notes.append(f"sources: {why}")
    if rec.index_url and config.origin.get(rec.index_url) != "plan":
        result.notes.append(f"the plan's index {rec.index_url} is not used")
    report = (
        Path(tempfile.gettempdir(), f"torchsmith-pip-report-{os.getpid()}.json")
        if installer == "pip"
        else None
    )
    args = indexes.installer_args(config, installer)
    result.steps.append(
        steps.install_step(
            installer,
            uv=uv,
            python=result.python,
            reqs=result.requirements,
            index_args=args,
            report=report,
        )
    )
    result.sources = config
    return result


def run_install(
    rec: Recommendation,
    options: InstallOptions,
    *,
    ledger: Ledger | None = None,
    on_step: OnStep = _noop,
    verifier: Verifier | None = None,
    argv: tuple[str, ...] = (),
) -> InstallResult:
    """Install as :func:`prepare` decided; a failure puts the target back and comes back in the
    result (its ``error``). Ctrl-C raises :class:`InstallInterrupted`, whose ``said`` tells
    what it left: nothing changed, the install undone, or (while verifying) the install kept."""
    started = time.monotonic()
    result = prepare(rec, options)
    if options.dry_run:
        if len(result.steps) == 1:  # an existing target (no venv to make first)
            python = result.python
            _writable(python, _target_info(python, f"--python {python}"))
        return result
    sites, ledger, attempt, created, top = _begin(
        result, options, rec, ledger=ledger, on_step=on_step, argv=argv
    )
    try:
        result.ledger_id = attempt
        ledger.update_result(attempt, _ledger_result(result))
        _install(result, sites, on_step)
        # inside: a Ctrl-C before the success is recorded undoes the install
        pressed = _succeeded(result, ledger, attempt, started)
    except KeyboardInterrupt:
        with _no_interrupt():
            _restore(result, "interrupted", created, top)
            _discard_if_restored(result, created)
            _drop_report(result)
            ledger.finish(attempt, status="interrupted", result=_ledger_result(result))
        raise InstallInterrupted(_undone(result, attempt, "interrupted", created)) from None
    except TorchsmithError as exc:
        with _no_interrupt():
            result.error = exc.message
            _restore(result, "rolled-back", created, top)
            result.duration_s = round(time.monotonic() - started, 2)
            _discard_if_restored(result, created)
            ledger.finish(
                attempt, status="failed", exit_code=exc.exit_code, duration_s=result.duration_s,
                diagnoses=result.findings, result=_ledger_result(result),
            )  # fmt: skip
        return result
    except BaseException:  # a bug or OS failure: still put the environment back, then surface
        with _no_interrupt():
            _restore(result, "rolled-back", created, top)
            _discard_if_restored(result, created)
            _drop_report(result)
            ledger.finish(attempt, status="failed", exit_code=70, result=_ledger_result(result))
        raise
    if pressed:  # Ctrl-C while the success was recorded: the install stays, verify does not run
        raise InstallInterrupted(_kept(result, attempt, "after the install was recorded"))
    if options.verify and verifier is not None:
        _verify(result, verifier, attempt, on_step)
    return result


def _begin(
    result: InstallResult,
    options: InstallOptions,
    rec: Recommendation,
    *,
    ledger: Ledger | None,
    on_step: OnStep,
    argv: tuple[str, ...],
) -> tuple[tuple[str, ...], Ledger, int, Path | None, Path | None]:
    """Everything before the installer runs: the index checked, the venv made, the target
    snapshotted, the attempt recorded. Until the ledger holds the attempt nothing could undo
    what was made, so a failure or Ctrl-C here takes it back."""
    config = result.sources or indexes.IndexConfig()
    forced = {
        u: w for u, w in config.origin.items() if w in ("--index-url", "--find-links", "plan")
    }
    created: Path | None = None
    top: Path | None = None
    snap: snapshot.Snapshot | None = None
    making = tidy_path(Path(options.venv)) if len(result.steps) > 1 and options.venv else None
    existed = making is not None and making.exists()
    try:
        on_step("checking the package index")
        try:
            indexes.require_reachable(forced)
        except indexes.IndexUnreachableError as exc:
            other = _local_alternative(result)
            exc.tip = f"{exc.tip}; or offline: {other}" if other else exc.tip
            raise
        created, top = _create_venv(result, options, on_step)
        sites, snap = _record_environment(result, on_step)
        ledger = ledger or Ledger()
        result.snapshot, result.before = snap.path, snap.packages
        attempt = ledger.start(
            "install", config=_config(options, rec), command=argv, tree=result.python,
            tools={"installer": result.installer},
        )  # fmt: skip
    except BaseException as exc:
        with _no_interrupt():
            if snap is not None:
                snapshot.discard(snap.path)
            _take_back(exc, created, top)
        if isinstance(exc, KeyboardInterrupt):
            if making is None:
                said = f"{result.python} is unchanged"
            elif existed:
                said = f"{making} is empty again, as it was given"
            else:
                said = f"the venv {making} was not made (what was begun of it is removed)"
            raise InstallInterrupted(f"interrupted before anything was installed: {said}") from None
        raise
    return sites, ledger, attempt, created, top


def _succeeded(result: InstallResult, ledger: Ledger, attempt: int, started: float) -> bool:
    """Record the install as succeeded; whether Ctrl-C was pressed meanwhile (held until the
    record was written)."""
    result.status = "succeeded"
    result.duration_s = round(time.monotonic() - started, 2)
    with _no_interrupt() as held:  # the install is done: its record must say so
        ledger.finish(
            attempt, status="succeeded", exit_code=0, duration_s=result.duration_s,
            diagnoses=result.findings, archs=result.archs, result=_ledger_result(result),
        )  # fmt: skip
        pruned = prune_snapshots(ledger, result.python)
    if pruned:
        result.notes.append(
            f"removed the snapshots of {len(pruned)} older install(s) into this environment "
            f"(#{', #'.join(map(str, pruned))}): the last {KEEP_SNAPSHOTS} can be rolled back"
        )
    return held.pressed


def _verify(result: InstallResult, verifier: Verifier, attempt: int, on_step: OnStep) -> None:
    """Verify the install; Ctrl-C here keeps it (it succeeded and is recorded) and says so."""
    on_step("verifying")
    try:
        result.verify = verifier(result.python)
    except KeyboardInterrupt:
        raise InstallInterrupted(_kept(result, attempt, "while verifying")) from None


def _kept(result: InstallResult, attempt: int, when: str) -> str:
    """What Ctrl-C after a recorded install left: the install, and how to check or undo it."""
    return (
        f"interrupted {when}: install #{attempt} stays in {result.python} "
        f"(torchsmith verify --python {shlex.quote(result.python)} checks it; "
        f"torchsmith install --rollback {attempt} undoes it)"
    )


class InstallInterrupted(KeyboardInterrupt):
    """Ctrl-C during an install, after the executor did what it could; ``said`` is the one line
    for the user: what the install left behind."""

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


def _undone(result: InstallResult, attempt: int, status: str, created: Path | None) -> str:
    """What an install stopped by Ctrl-C left, after :func:`_restore`."""
    if created is not None:  # the venv it made is gone (or emptied): _restore's note says which
        return f"{status}: the install was undone: {result.notes[-1]} (install #{attempt})"
    incomplete = [n for n in result.notes if n.startswith("restore incomplete")]
    if incomplete:
        return (
            f"{status}: the install could not all be undone ({incomplete[-1]}); install "
            f"#{attempt} in `torchsmith attempts show {attempt}` says what is left"
        )
    return (
        f"{status}: the install was undone, {result.python} is as it was (install #{attempt}, "
        f"recorded as {status})"
    )


@dataclass
class _Held:
    pressed: bool = False


@contextlib.contextmanager
def _no_interrupt() -> Iterator[_Held]:
    """Hold Ctrl-C while the environment is put back and the ledger written: a restore cut
    half-way would leave the environment neither as it was nor as installed. A press is noted
    (``pressed``, for the caller to act on after) and answered with one line on stderr."""
    held = _Held()
    if threading.current_thread() is not threading.main_thread():
        yield held
        return

    def note(_signum: int, _frame: object) -> None:
        first, held.pressed = not held.pressed, True
        if first:  # never raise here: a dead pipe (| tee, killed by the same Ctrl-C), no stderr,
            with contextlib.suppress(Exception):  # or a write of the main code it interrupted
                sys.stderr.write(_HOLDING)
                sys.stderr.flush()

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)


_HOLDING = "torchsmith: Ctrl-C is held until the environment and its record are in order\n"


def _drop_report(result: InstallResult) -> None:
    """pip's --report file of an install that did not get to read it."""
    argv = result.steps[-1].argv if result.steps else ()
    if "--report" in argv:
        Path(argv[argv.index("--report") + 1]).unlink(missing_ok=True)


def _writable(python: str, info: PythonInfo) -> None:
    """InputError unless the installer can write where it installs: each site-packages folder
    inside the target's own environment (a venv made with --system-site-packages also lists the
    base interpreter's, which pip never writes to), or, for an interpreter outside any
    environment, one of its folders (pip falls back to the user's). Tried for real: permission
    bits do not tell an immutable or read-only-mounted folder. ``info``: the target's probe."""
    sites = info.site_packages
    prefix = info.env_prefix if info.env_kind in ("venv", "conda") else None
    own = tuple(s for s in sites if prefix and Path(s).is_relative_to(prefix))
    failed = [(site, why) for site in (own or sites) if (why := _cannot_write(site))]
    if failed and (own or len(failed) == len(sites)):
        site, why = failed[0]
        raise InputError(
            f"--python {python}: cannot write to {site} ({why}); nothing was installed",
            tip="install as the user who owns that environment, or into a venv of your own "
            "(--venv DIR)",
        )


def _cannot_write(folder: str) -> str | None:
    """Why a file cannot be made in ``folder``; None when it can."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".torchsmith-write-test-", dir=folder)
        os.close(fd)
        Path(probe).unlink()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _record_environment(
    result: InstallResult, on_step: OnStep
) -> tuple[tuple[str, ...], snapshot.Snapshot]:
    """The target's site-packages, and a snapshot of them to put back."""
    info = _target_info(result.python, f"--python {result.python}")
    _writable(result.python, info)
    sites = info.site_packages
    on_step("recording the environment")
    return sites, snapshot.take(sites, uv_lock=_uv_lock(result))


def _uv_lock(result: InstallResult) -> Path | None:
    """Where uv puts its lock when it installs into the target: the root of a virtual
    environment (bin/python or Scripts\\python.exe below pyvenv.cfg); None for pip, or a target
    that is not a virtual environment (uv then locks a file in the temp folder)."""
    if result.installer != "uv":
        return None
    root = Path(result.python).parent.parent
    return root / snapshot.UV_LOCK if (root / "pyvenv.cfg").is_file() else None


def _site_packages(python: str, said_as: str) -> tuple[str, ...]:
    """The interpreter's site-packages; InputError (named as ``said_as``) when it has none."""
    return _target_info(python, said_as).site_packages


def _target_info(python: str, said_as: str) -> PythonInfo:
    """The interpreter probed; InputError (named as ``said_as``) when the probe failed or it
    has no site-packages."""
    info, _ = probe_python_and_torch(python)
    if info.error or not info.site_packages:
        raise InputError(f"{said_as}: {info.error or 'no site-packages'}")
    return info


def _create_venv(
    result: InstallResult, options: InstallOptions, on_step: OnStep
) -> tuple[Path | None, Path | None]:
    """Run the venv step, if any: the folder made, and the top-most folder of its path that was
    not there before (None for an empty folder given, which stays, emptied, on failure)."""
    created: Path | None = None
    top: Path | None = None
    for step in result.steps[:-1]:
        on_step(step.title)
        created = tidy_path(Path(options.venv or ""))
        missing = [p for p in (created, *created.parents) if not p.exists()]
        top = missing[-1] if missing else None
        try:
            cmd.run(step.argv, timeout=300, check=True)
        except BaseException as exc:  # a half-made venv would pass for an existing one next time
            with _no_interrupt():
                _take_back(exc, created, top)
            raise
        result.notes.append(f"created {options.venv}" if top else f"made {options.venv} a venv")
    return created, top


def _install(result: InstallResult, sites: tuple[str, ...], on_step: OnStep) -> None:
    step = result.steps[-1]
    on_step(f"installing {' '.join(r.spec for r in result.requirements)} with {result.installer}")
    env = {**child_env(), **step.env}
    done = cmd.run(step.argv, timeout=1800, env=env)
    after = read_dists(sites)
    result.after = package_set(after)
    result.changed = diff(result.before, result.after)
    result.origins = _origins(result, step.argv)
    if result.installer == "uv":
        result.notes.append(
            "from: uv does not say where a package came from; 'probably' is the configured "
            "source that holds that exact version"
        )
    if not done.ok:
        why = first_error(done.output)
        other = _local_alternative(result) if _NO_SUCH_VERSION.search(why) else None
        if other:
            result.notes.append(other)
        raise InstallFailedError(f"{result.installer} failed: {why}")
    on_step("checking what landed")
    _, torch = probe_python_and_torch(result.python)
    findings, archs = check_landed(result, torch, after)
    result.findings += findings
    result.archs = archs
    bad = [f for f in findings if f.severity == "error"]
    if bad:
        raise InstallFailedError(f"{bad[0].category}: {bad[0].message}", tip=bad[0].fix)


# pip's and uv's words for a version no source has (the one failure another version mends)
_NO_SUCH_VERSION = re.compile(
    r"no version of torch|No matching distribution found for torch|Could not find a version "
    r"that satisfies the requirement torch\b",
    re.IGNORECASE,
)


def _local_alternative(result: InstallResult) -> str | None:
    """When the torch planned is in no local source but another version of its variant is (a
    find-links folder, a file:// index), a line saying which --torch installs that offline."""
    config = result.sources or indexes.IndexConfig()
    variant = result.torch.partition("+")[2] or None if result.torch else None
    tag = platform = None
    if Path(result.python).exists():
        info, _ = probe_python_and_torch(result.python)
        tag = None if info.error else "cp" + "".join(info.version.split(".")[:2])
        platform = None if info.error else info.platform_tag
    versions = indexes.local_versions(config, "torch", variant, tag, platform)
    if not versions or result.torch in versions:
        return None
    version, source = next(iter(versions.items()))
    where = config.origin.get(source, "config")
    plain = version.partition("+")[0]
    return f"{source} ({where}) has torch {version}: --torch =={plain} installs it from there"


def _take_back(exc: BaseException, created: Path | None, top: Path | None) -> None:
    """Remove what an install that stopped before its ledger record made; a part that stays is
    said in the error's tip."""
    if created is None:
        return
    note = _remove_created(created, top)
    if isinstance(exc, TorchsmithError) and note.startswith("could not"):
        exc.tip = f"{exc.tip}; {note}" if exc.tip else note


def _remove_created(created: Path, top: Path | None) -> str:
    """Take away a venv this install made (with the empty parents made for it), or empty the
    empty folder it was given; returns what was done, as a note."""
    if top is None:  # given empty: emptied again, the folder itself kept (a shell may be in it)
        for child in created.iterdir() if created.is_dir() else ():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
        note = f"emptied {created}, which was given empty, of what this install had put there"
    else:
        shutil.rmtree(created, ignore_errors=True)
        for parent in created.parents:
            if not parent.is_relative_to(top):
                break
            try:
                parent.rmdir()  # only an empty one: never what else came to live there
            except OSError:
                break
        left = [p for p in created.parents if p.is_relative_to(top) and p.exists()]
        if created.exists():
            note = f"could not remove all of {created}, which this install had created"
        elif left:
            note = (
                f"removed {created}, which this install had created ({left[-1]} stays: not empty)"
            )
        else:
            note = f"removed {top}, which this install had created"
    return note


def _restore(
    result: InstallResult, status: str, created: Path | None = None, top: Path | None = None
) -> None:
    """Put the environment back as the snapshot has it; a venv this install created goes, with
    the parent folders made for it while they are empty (an empty folder given stays empty)."""
    if created is not None:
        note = _remove_created(created, top)
        result.status = status  # type: ignore[assignment]
        result.before, result.after, result.changed = {}, {}, {}  # it did not exist before
        result.notes.append(note)
        return
    if result.snapshot is None:
        return
    try:
        after = snapshot.restore(result.snapshot, exact=True)
    except OSError as exc:  # the snapshot stays (the only copy): _discard_if_restored sees it
        result.status = status  # type: ignore[assignment]
        result.notes.append(f"restore incomplete: {exc}")
        result.error = result.error or f"the environment could not be put back: {exc}"
        return
    result.after = after
    result.changed = diff(result.before, after)
    result.status = status  # type: ignore[assignment]
    if after != result.before:
        result.notes.append("restore incomplete: " + json.dumps(diff(result.before, after)))


@dataclass
class Guard:
    """What :func:`guard` did around a block that may install into an environment."""

    python: str
    attempt_id: int | None = None  # the install attempt recorded for the change, if any
    changed: dict[str, list[str | None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    failed: bool = False  # set by the block when what it ran failed: put everything back


@contextlib.contextmanager
def guard(python: str, *, by: dict[str, Any], ledger: Ledger | None = None) -> Iterator[Guard]:
    """Make whatever the block installs into ``python`` undoable as an install is: snapshot
    its site-packages first; when the block ends well and packages changed, record an install
    attempt (``by`` says what did it: a build) that ``install --rollback`` undoes; when it fails
    (``failed`` set) or raises, put site-packages back file by file. With no change, the
    snapshot goes."""
    sites = _site_packages(python, python)
    ledger = ledger or Ledger()
    taken = snapshot.take(sites)
    state = Guard(python)

    def record(status: Literal["succeeded", "failed"], error: str | None) -> int:
        attempt = ledger.start("install", config={"by": by}, command=(), tree=python)
        result = {
            "python": python, "status": status, "before": taken.packages,
            "after": package_set(read_dists(sites)), "snapshot": taken.path, "origins": {},
            "error": error,
        }  # fmt: skip
        ledger.finish(attempt, status=status, exit_code=int(error is not None), result=result)
        return attempt

    def put_back() -> None:
        snapshot.restore(taken.path, exact=True)
        left = snapshot.differences(taken.path)
        if not left:
            snapshot.discard(taken.path)
            return
        # the snapshot is the only copy of what could not be put back: say where it is
        failed = record("failed", f"restore incomplete: {left[0]}")
        state.notes.append(
            f"what it had installed could not all be put back ({left[0]}); the files are in "
            f"{taken.path} (install #{failed})"
        )

    try:
        yield state
    except BaseException:
        put_back()
        raise
    if state.failed:
        put_back()
        return
    state.changed = diff(taken.packages, package_set(read_dists(sites)))
    if not state.changed and not snapshot.differences(taken.path):
        snapshot.discard(taken.path)
        return
    state.attempt_id = record("succeeded", None)
    state.notes.append(
        f"what it installed into {python} is install #{state.attempt_id}: "
        "torchsmith install --rollback undoes it"
    )
    prune_snapshots(ledger, python)


KEEP_SNAPSHOTS = 3  # per environment: the installs that `--rollback` can still undo


def _discard_if_restored(result: InstallResult, created: Path | None = None) -> None:
    """A failed install was put back already: its snapshot has no further use (rollback skips
    it), so it goes, unless the restore was incomplete and it is the only copy of the files. A
    venv the install created is gone: there is nothing to compare, and nothing to keep."""
    if result.snapshot and created is not None:
        snapshot.discard(result.snapshot)
        result.snapshot = None
        return
    if not result.snapshot or result.after != result.before:
        return
    left = snapshot.differences(result.snapshot)
    if left:  # the snapshot is the only copy of what the restore could not put back
        result.notes.append(f"restore incomplete ({len(left)} files), snapshot kept: {left[0]}")
        return
    if snapshot.discard(result.snapshot):
        result.notes.append("its snapshot was removed: site-packages is as it was, file by file")
        result.snapshot = None


def prune_snapshots(ledger: Ledger, python: str, keep: int = KEEP_SNAPSHOTS) -> list[int]:
    """Delete the snapshots of installs into ``python`` beyond the newest ``keep`` that can still
    be rolled back, and mark them in the ledger; returns their attempt ids. A full CUDA torch
    environment is gigabytes, and every install takes a snapshot."""
    installs = ledger.list(kind="install")
    kept = [a.id for a in _installs(installs, python, live=True) if a.result.get("snapshot")]
    undone = _undone_by(installs)
    removed = []
    for attempt in _installs(installs, python):  # a failed or died one keeps its: the only copy
        if not attempt.result.get("snapshot") or attempt.id in kept[:keep]:
            continue
        if snapshot.discard(str(attempt.result["snapshot"])):
            # why it went: a rollback had undone it, or it is older than the last KEEP
            why = f"undone by #{undone[attempt.id]}" if attempt.id in undone else "older"
            ledger.update_result(attempt.id, {**attempt.result, "snapshot": None, "pruned": why})
            removed.append(attempt.id)
    return removed


def _undone_by(installs: list[Any]) -> dict[int, int]:
    """Install id -> the id of the rollback that undid it."""
    return {
        a.config["rollback_of"]: a.id
        for a in installs
        if "rollback_of" in a.config and a.status == "succeeded"
    }


def _origins(result: InstallResult, argv: tuple[str, ...]) -> dict[str, str]:
    """Where each new or changed package came from: pip's report, else the configured source."""
    changed = {n: v for n, (_, v) in result.changed.items() if v is not None}
    report = argv[argv.index("--report") + 1] if "--report" in argv else None
    origins = pip_origins(Path(report)) if report else {}
    if report:
        Path(report).unlink(missing_ok=True)
    config = result.sources or indexes.IndexConfig()
    for name, version in changed.items():
        if name in origins:
            continue
        # neither pip's report nor uv named it: a guess from the sources given, said as one
        local = indexes.local_wheel(config, name, version)
        guess = local or config.index_url or "the default index (PyPI or its mirror)"
        origins[name] = f"probably {guess}"
    return {n: origins[n] for n in sorted(changed) if n in origins}


def _config(options: InstallOptions, rec: Recommendation) -> dict[str, Any]:
    return {"options": options, "recommendation": rec}


def _ledger_result(result: InstallResult) -> dict[str, Any]:
    return {
        "python": result.python,
        "status": result.status,
        "before": result.before,
        "after": result.after,
        "snapshot": result.snapshot,
        "origins": result.origins,
        "error": result.error,
    }


def rollback(
    attempt_id: int | None,
    *,
    python: str | None = None,
    dry_run: bool = False,
    ledger: Ledger | None = None,
) -> InstallResult:
    """Restore the environment an install changed to its package set before that install.

    Without an id, the latest install that changed an environment and is not undone yet: a
    failed or interrupted install was restored when it failed, and a rollback is not an install.
    ``python`` (the target's interpreter) limits that choice to installs into it, and must match
    an install named by id. A dry run reads the snapshot and says what would change.
    """
    ledger = ledger or Ledger()
    attempt = _rollback_target(ledger, attempt_id, python)
    data = attempt.result
    result = InstallResult(
        python=str(data.get("python")), installer="torchsmith", status="rolled-back",
        torch=None, variant=None, snapshot=str(data["snapshot"]),
    )  # fmt: skip
    manifest = snapshot.load(result.snapshot or "")
    sites = tuple(str(s) for s in manifest["site_packages"])  # type: ignore[attr-defined]
    wanted = dict(manifest["packages"])  # type: ignore[call-overload]
    result.before = package_set(read_dists(sites))
    if dry_run:
        result.status = "planned"
        result.after = wanted
        result.changed = diff(result.before, wanted)
        result.notes.append(f"would roll back install #{attempt.id}; nothing was changed")
        return result
    new = ledger.start(
        "install", config={"rollback_of": attempt.id}, command=("install", "--rollback"),
        tree=result.python,
    )  # fmt: skip
    result.ledger_id = new
    result.after = snapshot.restore(result.snapshot or "")
    result.changed = diff(result.before, result.after)
    result.notes.append(f"rolled back install #{attempt.id}")
    ok = result.after == wanted
    if not ok:
        result.error = "restore incomplete: " + json.dumps(diff(wanted, result.after))
    ledger.finish(new, status="succeeded" if ok else "failed", result=_ledger_result(result))
    return result


def _same_python(a: str, b: str) -> bool:
    """One environment: the same interpreter path (links are not followed: a venv's
    bin/python is a link to the base one), or two interpreters of one venv's bin folder
    (python and python3)."""
    first, second = tidy_path(Path(a)), tidy_path(Path(b))
    if os.path.normcase(first) == os.path.normcase(second):
        return True
    same_bin = os.path.normcase(first.parent) == os.path.normcase(second.parent)
    return same_bin and is_environment(first.parent.parent)


def _installs(installs: list[Any], python: str | None = None, *, live: bool = False) -> list[Any]:
    """The installs that changed an environment (succeeded, not rollbacks), in the ledger's
    order (newest first), into ``python``'s environment when given; ``live``: only those no
    rollback has undone yet."""
    undone = _undone_by(installs)
    return [
        a
        for a in installs
        if a.status == "succeeded"
        and "rollback_of" not in a.config
        and (python is None or _same_python(str(a.result.get("python")), python))
        and not (live and a.id in undone)
    ]


def _rollback_target(ledger: Ledger, attempt_id: int | None, python: str | None) -> Any:
    installs = ledger.list(kind="install")
    if attempt_id is not None:
        attempt = ledger.get(attempt_id)
        if attempt.kind == "install" and "rollback_of" in attempt.config:
            raise InputError(
                f"attempt {attempt_id} is a rollback (of install #{attempt.config['rollback_of']}),"
                " not an install",
                tip=f"to have install #{attempt.config['rollback_of']}'s packages again, install "
                "them again",
            )
        undone = _undone_by(installs).get(attempt_id) if attempt.kind == "install" else None
        if undone is not None:  # its snapshot predates all since: restoring it would undo those
            raise InputError(
                f"install #{attempt_id} was rolled back already (by #{undone})",
                tip="there is nothing left of it to undo",
            )
        pruned = attempt.result.get("pruned") if attempt.kind == "install" else None
        if pruned:
            raise InputError(
                f"install #{attempt_id}'s snapshot was removed: torchsmith keeps those of the "
                f"last {KEEP_SNAPSHOTS} installs into an environment",
                tip="roll back a newer install, or reinstall the packages you want",
            )
        if attempt.kind != "install" or not attempt.result.get("snapshot"):
            raise InputError(f"attempt {attempt_id} is not an install with a snapshot")
        where = str(attempt.result.get("python"))
        if python is not None and not _same_python(where, python):
            raise UsageError(
                f"install #{attempt_id} changed {where}, not {python}",
                tip="leave out --venv/--python, or name an install of that environment",
            )
        newer = [a.id for a in _installs(installs, where, live=True) if a.id > attempt.id]
        if newer:  # its snapshot predates them: restoring it would undo them too, unsaid
            raise UsageError(
                f"install #{min(newer)} into the same environment came after #{attempt_id}",
                tip=f"roll back the newer install(s) first (--rollback {max(newer)}), then "
                f"--rollback {attempt_id}",
            )
        return attempt
    candidates = [a for a in _installs(installs, python, live=True) if a.result.get("snapshot")]
    if not candidates:
        where = f" into {python}" if python else ""
        raise InputError(
            f"no install{where} left to roll back in the ledger",
            tip="failed installs were restored when they failed; `torchsmith attempts list "
            "--kind install` lists them all (roll back one by id: --rollback ID)",
        )
    return max(candidates, key=lambda a: a.id)
