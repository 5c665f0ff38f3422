"""The build executor: run a :class:`BuildConfig`'s steps, record the attempt, check the result.

:func:`run_build` is the only code in build/ that changes the machine. It records the attempt in
the ledger before anything runs (status ``running``), streams every step through
:func:`torchsmith.util.stream.stream` into one timestamped log, and finishes the attempt with its
status, exit code, duration and peak memory of the whole process tree. On failure it runs explain
over the log and keeps the diagnoses, squared with what the build knows (build/diagnose.py); after
its steps succeed it reads the GPU code in what was built (inspect) and checks that every target
GPU has SASS: a target without it fails the build. Around a build that installs into its target,
the install guard puts back what it installed when the build fails, and the result says so.
:func:`record_blocked` records a build that preflight stopped before anything ran.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from torchsmith.build.diagnose import Known, known_facts, reconcile
from torchsmith.build.model import BuildConfig, Step
from torchsmith.build.preflight import cpu_torch_fix
from torchsmith.build.scripts import shell_command
from torchsmith.errors import InputError, TorchsmithError
from torchsmith.explain import Diagnosis, explain_files
from torchsmith.knowledge.compat import entry_sm
from torchsmith.probe.model import Finding, Probe
from torchsmith.util import cmd
from torchsmith.util.serialize import to_jsonable
from torchsmith.util.stream import StreamResult, stream

if TYPE_CHECKING:
    from rich.console import Console

    from torchsmith.ledger import Ledger

RunStatus = Literal["succeeded", "failed", "interrupted"]  # a step's; the ledger's final ones
# "blocked": preflight stopped it and nothing ran; "failed" includes a build whose steps
# succeeded but whose arch check failed
Status = Literal["succeeded", "failed", "interrupted", "blocked"]

BINARY_SUFFIXES = (".so", ".pyd", ".dll", ".whl", ".exe", ".dylib")
SKIP_DIRS = frozenset({"CMakeFiles", ".git", "__pycache__", ".ninja_deps"})
MAX_OUTPUTS = 400


@dataclass(frozen=True)
class StepResult:
    name: str
    command: str
    status: RunStatus
    exit_code: int | None
    duration_s: float
    peak_rss_bytes: int
    reason: str | None = None


@dataclass(frozen=True)
class Artifact:
    path: str
    sass: tuple[str, ...]
    ptx: tuple[str, ...]


@dataclass(frozen=True)
class Installed:
    """What became of what a build installed into its target interpreter."""

    python: str
    # kept: recorded as install attempt ``install_attempt`` (install --rollback undoes it);
    # removed: the build failed, so site-packages was put back as it was; restore-incomplete:
    # putting back left files behind (the note says where they are); unchanged: nothing changed
    status: Literal["kept", "removed", "restore-incomplete", "unchanged"]
    install_attempt: int | None
    wheel: str | None  # the wheel the build made, still in the tree
    note: str  # the same in words ("" when there is nothing to say)


@dataclass(frozen=True)
class BuildResult:
    project: str
    project_kind: str
    status: Status
    # the failing step's exit status; ARCH_CHECK_EXIT where every step succeeded but the arch
    # check failed; BLOCKED_EXIT where preflight stopped the build; None where no step ran
    exit_code: int | None
    duration_s: float
    peak_rss_bytes: int
    log_path: str | None  # None: nothing ran (blocked), so there is no log
    attempt_id: int | None
    steps: tuple[StepResult, ...]
    targets: tuple[str, ...]  # the requested archs ("9.0", "12.0+PTX")
    sass: tuple[str, ...] = ()  # found in what was built
    ptx: tuple[str, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    diagnoses: tuple[Diagnosis, ...] = ()
    # the arch check's findings; for a blocked build, the preflight errors that stopped it
    findings: tuple[Finding, ...] = ()
    reason: str | None = None  # why it stopped, in one line
    installed: Installed | None = None  # for a build that installs into its target

    @property
    def ok(self) -> bool:
        return self.status == "succeeded" and not any(f.severity == "error" for f in self.findings)


def log_file_for(config: BuildConfig, log_dir: Path) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    name = (config.project.name or Path(config.project.path).name or "build").replace(os.sep, "_")
    return log_dir / f"build-{name}-{stamp}-{os.getpid()}.log"


def git_state(tree: str) -> tuple[str | None, bool | None]:
    """The tree's commit and whether it has uncommitted changes (None where it is no git tree)."""
    git = cmd.which("git")
    if git is None:
        return None, None
    try:
        head = cmd.run([git, "-C", tree, "rev-parse", "HEAD"], timeout=10)
        if not head.ok:
            return None, None
        status = cmd.run([git, "-C", tree, "status", "--porcelain"], timeout=30)
    except cmd.CommandTimeoutError:
        return None, None
    except TorchsmithError:
        return None, None
    return head.stdout.strip() or None, bool(status.stdout.strip()) if status.ok else None


class InstallGuard(Protocol):
    """What the install guard (torchsmith.install.executor.guard) yields around a build that
    installs: the build sets ``failed``; the guard puts site-packages back when it is set, or
    records what changed as an install attempt (``attempt_id``), and says so in ``notes``."""

    failed: bool
    attempt_id: int | None
    notes: list[str]


GuardFactory = Callable[[], AbstractContextManager[InstallGuard | None]]


def run_build(
    config: BuildConfig,
    *,
    ledger: Ledger | None,
    log_dir: Path,
    console: Console | None = None,
    command: Sequence[str] = (),
    probe: Any = None,
    timeout_s: float | None = None,
    on_line: Callable[[str], None] | None = None,
    preflight: Sequence[Finding] = (),
    install_guard: GuardFactory | None = None,
) -> BuildResult:
    """Run the build; never raises for a failed, interrupted or disk-full build (see status).

    ``console`` None means quiet (--json): nothing is printed, the log still gets every line.
    ``preflight``: what preflight found (a CPU-only torch shapes the explanation of a failure).
    ``install_guard``: entered around the build when it installs into its target; a build that
    fails (its arch check included) has what it installed put back, and the result says so.
    """
    tree = config.project.path
    if not Path(tree).is_dir():
        raise InputError(f"{tree}: no such directory")
    log_path = log_file_for(config, log_dir)
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"cannot create the log folder {log_dir}: {exc.strerror or exc}",
            tip="pass a writable folder, or free disk space",
        ) from exc
    known = known_facts(config, probe if isinstance(probe, Probe) else None, preflight)
    with install_guard() if install_guard else contextlib.nullcontext() as undo:
        attempt_id = None if ledger is None else _start(config, ledger, command, probe, log_path)
        result = _execute(
            config, log_path, known=known, console=console, timeout_s=timeout_s, on_line=on_line
        )
        result = dataclasses.replace(result, attempt_id=attempt_id)
        if undo is not None:
            undo.failed = not result.ok
    if undo is not None:
        result = dataclasses.replace(result, installed=install_outcome(undo, config, result))
    if ledger is not None and attempt_id is not None:
        _finish(ledger, attempt_id, result)
    return result


def record_blocked(
    config: BuildConfig,
    findings: Sequence[Finding],
    *,
    ledger: Ledger,
    command: Sequence[str] = (),
    probe: Any = None,
    after_clean: bool = False,
) -> BuildResult:
    """Record a build that preflight stopped (no build step ran) as an attempt, and return it.

    Its status is ``blocked``, with exit status 3 as the CLI's, and its reason says why."""
    first = findings[0]
    when = " after --clean" if after_clean else ""
    result = BuildResult(
        project=config.project.path,
        project_kind=config.project.kind,
        status="blocked",
        exit_code=BLOCKED_EXIT,
        duration_s=0.0,
        peak_rss_bytes=0,
        log_path=None,
        attempt_id=None,
        steps=(),
        targets=config.arch_list,
        findings=tuple(findings),
        reason=f"blocked by preflight{when}, no build step ran: {first.category}: {first.message}",
    )
    attempt_id = _start(config, ledger, command, probe, None)
    result = dataclasses.replace(result, attempt_id=attempt_id)
    _finish(ledger, attempt_id, result)
    return result


BLOCKED_EXIT = InputError.exit_code  # what `torchsmith build` exits with when preflight stops it


def _start(
    config: BuildConfig,
    ledger: Ledger,
    command: Sequence[str],
    probe: Any,
    log_path: Path | None,
) -> int:
    commit, dirty = git_state(config.project.path)
    return ledger.start(
        "build",
        config=to_jsonable(config),
        command=command,
        tree=config.project.path,
        git_commit=commit,
        git_dirty=dirty,
        project_kind=config.project.kind,
        probe=to_jsonable(probe) if probe is not None else None,
        tools=_tools(config),
        log_path=log_path,
    )


def _finish(ledger: Ledger, attempt_id: int, result: BuildResult) -> None:
    ledger.finish(
        attempt_id,
        status=result.status,
        exit_code=result.exit_code,
        duration_s=result.duration_s,
        peak_rss_bytes=result.peak_rss_bytes,
        diagnoses=[to_jsonable(d) for d in result.diagnoses],
        archs=result.sass,
        result=to_jsonable(dataclasses.replace(result, diagnoses=())),
    )


def _execute(
    config: BuildConfig,
    log_path: Path,
    *,
    known: Known,
    console: Console | None,
    timeout_s: float | None,
    on_line: Callable[[str], None] | None,
) -> BuildResult:
    """Run the steps, then explain a failure or check the GPU code in what was built."""
    _start_compiler_cache(config)
    started_wall = time.time()
    started = time.monotonic()
    steps: list[StepResult] = []
    status: Status = "succeeded"
    exit_code: int | None = 0
    reason: str | None = None
    peak = 0
    vs_env, vs_problem = visual_studio_env(config.vcvars) if config.vcvars else ({}, None)
    if vs_problem is not None:
        status, exit_code, reason = "failed", None, vs_problem
        with contextlib.suppress(OSError):  # the result names this log: it says what happened
            log_path.write_text(f"torchsmith: {vs_problem}\n", encoding="utf-8")
    for step in config.steps if vs_problem is None else ():
        outcome = _run_step(
            step,
            config,
            vs_env=vs_env,
            log_path=log_path,
            console=console,
            timeout_s=timeout_s,
            on_line=on_line,
        )
        peak = max(peak, outcome.peak_rss_bytes)
        steps.append(_step_result(step.name, outcome))
        if outcome.status != "succeeded":
            status, exit_code = outcome.status, outcome.returncode
            reason = outcome.reason or f"step '{step.name}' exited with status {outcome.returncode}"
            break
    result = BuildResult(
        project=config.project.path,
        project_kind=config.project.kind,
        status=status,
        exit_code=exit_code,
        duration_s=round(time.monotonic() - started, 3),
        peak_rss_bytes=peak,
        log_path=str(log_path),
        attempt_id=None,
        steps=tuple(steps),
        targets=config.arch_list,
        reason=reason,
    )
    if status == "failed" and log_path.exists():
        return dataclasses.replace(result, diagnoses=reconcile(_diagnose(log_path), known))
    if status == "succeeded":
        return _checked(result, config, known, since=started_wall)
    return result


def _checked(
    result: BuildResult, config: BuildConfig, known: Known, *, since: float
) -> BuildResult:
    """The result with the GPU code read from what was built; a target GPU without SASS fails
    the build (exit status 1, as the CLI's), its reason the first missing arch."""
    artifacts = read_outputs(build_outputs(config, since=since))
    sass, ptx = _union(artifacts)
    findings = check_archs(
        config.arch_list,
        sass,
        ptx,
        has_outputs=bool(artifacts),
        cpu_fix=cpu_torch_fix(config, known.cpu_torch) if known.cpu_torch else None,
    )
    checked = dataclasses.replace(
        result, sass=sass, ptx=ptx, artifacts=artifacts, findings=findings
    )
    errors = [f for f in findings if f.severity == "error"]
    if not errors:
        return checked
    missing = ", ".join(f.subject or "?" for f in errors)
    return dataclasses.replace(
        checked,
        status="failed",
        exit_code=ARCH_CHECK_EXIT,
        reason=f"the arch check failed: every step succeeded, but the result holds no SASS for "
        f"{missing} ({errors[0].message.split('; ', 1)[-1]})",
    )


ARCH_CHECK_EXIT = 1  # a build whose steps all succeeded and whose result lacks a target's SASS


def install_outcome(undo: InstallGuard, config: BuildConfig, result: BuildResult) -> Installed:
    """What became of what the build installed into its target, in words and fields."""
    python = config.python
    if not undo.failed:
        kept = undo.attempt_id is not None
        note = " ".join(undo.notes) or f"nothing changed in {python}'s site-packages"
        return Installed(python, "kept" if kept else "unchanged", undo.attempt_id, None, note)
    wheel = next((a.path for a in result.artifacts if a.path.endswith(".whl")), None)
    if undo.notes:  # the guard could not put everything back: it says where the files are
        return Installed(python, "restore-incomplete", None, wheel, " ".join(undo.notes))
    if not _installed_something(config, result):
        return Installed(python, "unchanged", None, wheel, "")
    what = " ".join(x for x in (config.project.name, config.project.version) if x) or "the build"
    why = {"interrupted": "it was interrupted", "blocked": "it was blocked"}.get(
        result.status, "its arch check failed" if _all_ran(config, result) else "it failed"
    )
    keep = shell_command((python, "-m", "pip", "install", wheel)) if wheel else ""
    note = (
        f"{what}, which this build had installed into {python}, was removed again because "
        f"{why}: site-packages is as it was before the build"
        + (f". The wheel is still in the tree: {keep} installs it as it is" if keep else "")
    )
    return Installed(python, "removed", None, wheel, note)


def _all_ran(config: BuildConfig, result: BuildResult) -> bool:
    return len(result.steps) == len(config.steps) and all(
        s.status == "succeeded" for s in result.steps
    )


def _installed_something(config: BuildConfig, result: BuildResult) -> bool:
    """Whether a step that installs into the target (pip install, the driver's --install-from)
    ran to its end."""
    return any(
        done.status == "succeeded" and (step.name == "install" or "--install-from" in step.argv)
        for step, done in zip(config.steps, result.steps, strict=False)
    )


def _start_compiler_cache(config: BuildConfig) -> None:
    """Start the sccache server before the build, detached from the build's output.

    Started by the first compile instead, the server inherits that compile's stdout: CMake's
    compiler checks and our own reader then wait for an end of output that never comes.
    """
    if not config.launcher or Path(config.launcher).stem != "sccache":
        return
    env = {**os.environ, **config.env}
    # Already running, or broken: the build's own compiles will say so in the log.
    with contextlib.suppress(TorchsmithError):
        cmd.run_detached([config.launcher, "--start-server"], env=env, timeout=60)


def _tools(config: BuildConfig) -> dict[str, str | None]:
    return {
        "python": config.python,
        "cuda_home": config.cuda_home,
        "cuda": config.cuda_version,
        "host_compiler": config.host_compiler,
        "launcher": config.launcher,
    }


def visual_studio_env(vcvars: str, timeout_s: float = 180.0) -> tuple[dict[str, str], str | None]:
    """The environment ``vcvars64.bat`` leaves, read once: cmd calls it and prints ``set``
    (UTF-16 with /u, so no code page mangles a non-ASCII path; vcvars' own messages go to
    stderr). Returns the variables, with names upper-cased as Windows' os.environ has them, or a
    problem."""
    line = f'"call "{vcvars}" 1>&2 && set"'
    try:
        result = cmd.run(
            ("cmd.exe", "/d", "/u", "/v:off", "/s", "/c", line),
            timeout=timeout_s,
            encoding="utf-16-le",
        )
    except TorchsmithError as exc:
        return {}, f"the Visual Studio environment could not be set up: {exc}"
    env = parse_set_output(result.stdout)
    if not result.ok:
        why = f"it exited with status {result.returncode}"
    elif not any(Path(d, "cl.exe").is_file() for d in env.get("PATH", "").split(";") if d):
        why = "no cl.exe is on the PATH it set"
    else:
        return env, None
    said = [line.strip() for line in result.stderr.splitlines() if line.strip()][-3:]
    return {}, (
        f"{vcvars} did not set up a Visual Studio environment ({why})"
        + (f"; it said: {' / '.join(said)}" if said else "")
        + ". Run it in a terminal to see why: a PATH too long for cmd stops it, and a broken C++ "
        "workload is repaired in the Visual Studio Installer"
    )


def parse_set_output(text: str) -> dict[str, str]:
    """``NAME=value`` lines as cmd's ``set`` prints them; names upper-cased."""
    env: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name and not name.startswith("="):
            env[name.upper()] = value
    return env


def _run_step(
    step: Step,
    config: BuildConfig,
    *,
    vs_env: dict[str, str],
    log_path: Path,
    console: Console | None,
    timeout_s: float | None,
    on_line: Callable[[str], None] | None,
) -> StreamResult:
    env = {**os.environ, **vs_env, **config.env, **step.env}
    argv = step.argv
    if vs_env:
        # Windows looks a program up on the parent's PATH, not the child's: find the tools that
        # vcvars put on PATH (cmake and ninja of Visual Studio's C++ CMake tools) there
        found = cmd.which(argv[0], path=env.get("PATH"))
        argv = (found, *argv[1:]) if found else argv
    run = functools.partial(
        stream, argv, log_path=log_path, env=env, cwd=step.cwd, timeout=timeout_s
    )
    if console is None:
        return run(on_line=on_line)
    from torchsmith.build.progress import BuildProgress  # noqa: PLC0415

    console.print(f"[bold]{step.name}[/]: {cmd.display(step.argv)}", soft_wrap=True)
    with BuildProgress(console) as bar:

        def show(line: str) -> None:
            bar.progress.console.print(line, markup=False, highlight=False, soft_wrap=True)
            bar.line(line)
            if on_line is not None:
                on_line(line)

        return run(on_line=show)


def _step_result(name: str, result: StreamResult) -> StepResult:
    return StepResult(
        name=name,
        command=cmd.display(result.argv),
        status=result.status,
        exit_code=result.returncode,
        duration_s=round(result.duration_s, 3),
        peak_rss_bytes=result.peak_rss_bytes,
        reason=result.reason,
    )


def _diagnose(log_path: Path) -> tuple[Diagnosis, ...]:
    try:
        return explain_files([str(log_path)]).diagnoses
    except TorchsmithError:
        return ()


# -- what was built --------------------------------------------------------------------------


def output_dirs(config: BuildConfig) -> list[Path]:
    """Where the build's outputs land: the project's build dir, build/, dist/, step folders."""
    tree = Path(config.project.path)
    dirs = [tree / "build", tree / "dist"]
    if config.project.build_dir:
        dirs.append(tree / config.project.build_dir)
    dirs.extend(Path(step.cwd) for step in config.steps if Path(step.cwd) != tree)
    seen: list[Path] = []
    for d in dirs:
        resolved = d.resolve()
        if resolved.is_dir() and resolved not in seen:
            seen.append(resolved)
    return seen


def build_outputs(config: BuildConfig, *, since: float | None = None) -> list[Path]:
    """Built binaries, wheels and executables under the output folders, newest build first.

    With ``since`` (a time.time()), only files written by this build; all of them when the
    build wrote none (a no-op rebuild).
    """
    found: list[Path] = []
    for root in output_dirs(config):
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith("temp.")]
            for name in filenames:
                path = Path(dirpath) / name
                if path in found:
                    continue
                if name.endswith(BINARY_SUFFIXES) or ".so." in name or _is_executable(path):
                    found.append(path)
            if len(found) > MAX_OUTPUTS:
                break
    if since is not None:
        fresh = [p for p in found if _mtime(p) >= since - 2.0]
        if fresh:
            found = fresh
    return found[:MAX_OUTPUTS]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _is_executable(path: Path) -> bool:
    if os.name != "posix" or not os.access(path, os.X_OK) or path.is_symlink():
        return False
    try:
        with path.open("rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def read_outputs(paths: Iterable[Path]) -> tuple[Artifact, ...]:
    from torchsmith.binaries.targets import inspect_target  # noqa: PLC0415

    artifacts = []
    for path in paths:
        try:
            report = inspect_target(str(path))
        except TorchsmithError:
            continue
        artifacts.append(Artifact(str(path), report.sass, report.ptx))
    return tuple(artifacts)


def _union(artifacts: Iterable[Artifact]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    from torchsmith.binaries.archs import sort_archs  # noqa: PLC0415

    sass: set[str] = set()
    ptx: set[str] = set()
    for a in artifacts:
        sass.update(a.sass)
        ptx.update(a.ptx)
    return sort_archs(sass), sort_archs(ptx)


def check_archs(
    targets: Sequence[str],
    sass: Sequence[str],
    ptx: Sequence[str],
    *,
    has_outputs: bool,
    cpu_fix: str | None = None,
) -> tuple[Finding, ...]:
    """A finding for each target GPU without SASS in the result; one for SASS nobody asked for.
    ``cpu_fix``: the fix where the target torch is a CPU build, the cause of every missing arch
    (torch.utils.cpp_extension then compiles no CUDA code)."""
    if not targets:
        return ()
    if not has_outputs:
        return (
            Finding(
                category="arch-not-compiled",
                severity="warning",
                message="no built binary was found to check the GPU code in",
                fix="run torchsmith inspect on the installed package",
                subject="build outputs",
            ),
        )
    wanted = [entry_sm(t) for t in targets]
    found = set(sass)

    def served(target: str, name: str) -> bool:
        # 9.0+PTX beside 9.0a asks for 9.0's PTX; the GPU's SASS is sm_90a's (CMake: 90-virtual)
        twins = {name + "a", name + "f"} & set(wanted) & found
        return name in found or (target.endswith("+PTX") and bool(twins))

    findings = [
        Finding(
            category="arch-not-compiled",
            severity="error",
            message=f"the result holds no SASS for {name} (target {t}); found: "
            + (", ".join(sass) or "no GPU code"),
            fix=cpu_fix
            or (
                "the build compiled no CUDA code at all: many setups build their CUDA part only "
                "when torch sees a GPU (check nvidia-smi where the build runs) or a switch such "
                "as FORCE_CUDA=1 is set (--set FORCE_CUDA=1); read the log for the setup's choice"
                if not sass and not ptx
                else "rebuild with a clean tree (torchsmith build --clean) and check"
                " TORCH_CUDA_ARCH_LIST / CMAKE_CUDA_ARCHITECTURES in the log"
            ),
            subject=name,
        )
        for t, name in zip(targets, wanted, strict=True)
        if not served(t, name)
    ]
    extra = sorted(found - set(wanted))
    if extra:
        findings.append(
            Finding(
                category="other",
                severity="info",
                message=f"the result also holds SASS nobody asked for: {', '.join(extra)}",
                fix="an old object in the build tree, or the project adds archs of its own",
                subject="build outputs",
            )
        )
    del ptx
    return tuple(findings)
