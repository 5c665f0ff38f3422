"""The build executor: run a :class:`BuildConfig`'s steps, record the attempt, check the result.

:func:`run_build` is the only code in build/ that changes the machine. It records the attempt in
the ledger before anything runs (status ``running``), streams every step through
:func:`torchsmith.util.stream.stream` into one timestamped log, and finishes the attempt with its
status, exit code, duration and peak memory of the whole process tree. On failure it runs explain
over the log and keeps the diagnoses; after a success it reads the GPU code in what was built
(inspect) and checks that every target GPU has SASS.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from torchsmith.build.model import BuildConfig, Step
from torchsmith.errors import InputError, TorchsmithError
from torchsmith.explain import Diagnosis, explain_files
from torchsmith.knowledge.compat import entry_sm
from torchsmith.probe.model import Finding
from torchsmith.util import cmd
from torchsmith.util.serialize import to_jsonable
from torchsmith.util.stream import StreamResult, stream

if TYPE_CHECKING:
    from rich.console import Console

    from torchsmith.ledger import Ledger

Status = Literal["succeeded", "failed", "interrupted"]

BINARY_SUFFIXES = (".so", ".pyd", ".dll", ".whl", ".exe", ".dylib")
SKIP_DIRS = frozenset({"CMakeFiles", ".git", "__pycache__", ".ninja_deps"})
MAX_OUTPUTS = 400


@dataclass(frozen=True)
class StepResult:
    name: str
    command: str
    status: Status
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
class BuildResult:
    project: str
    project_kind: str
    status: Status
    exit_code: int | None
    duration_s: float
    peak_rss_bytes: int
    log_path: str
    attempt_id: int | None
    steps: tuple[StepResult, ...]
    targets: tuple[str, ...]  # the requested archs ("9.0", "12.0+PTX")
    sass: tuple[str, ...] = ()  # found in what was built
    ptx: tuple[str, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    diagnoses: tuple[Diagnosis, ...] = ()
    findings: tuple[Finding, ...] = ()
    reason: str | None = None  # why it stopped, in one line

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
) -> BuildResult:
    """Run the build; never raises for a failed, interrupted or disk-full build (see status).

    ``console`` None means quiet (--json): nothing is printed, the log still gets every line.
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
    commit, dirty = git_state(tree)
    attempt_id = None
    if ledger is not None:
        attempt_id = ledger.start(
            "build",
            config=to_jsonable(config),
            command=command,
            tree=tree,
            git_commit=commit,
            git_dirty=dirty,
            project_kind=config.project.kind,
            probe=to_jsonable(probe) if probe is not None else None,
            tools=_tools(config),
            log_path=log_path,
        )
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
    duration = time.monotonic() - started
    diagnoses: tuple[Diagnosis, ...] = ()
    findings: tuple[Finding, ...] = ()
    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    if status == "failed" and log_path.exists():
        diagnoses = _diagnose(log_path)
    elif status == "succeeded":
        artifacts = read_outputs(build_outputs(config, since=started_wall))
        sass, ptx = _union(artifacts)
        findings = check_archs(config.arch_list, sass, ptx, has_outputs=bool(artifacts))
    result = BuildResult(
        project=tree,
        project_kind=config.project.kind,
        status=status,
        exit_code=exit_code,
        duration_s=round(duration, 3),
        peak_rss_bytes=peak,
        log_path=str(log_path),
        attempt_id=attempt_id,
        steps=tuple(steps),
        targets=config.arch_list,
        sass=sass,
        ptx=ptx,
        artifacts=artifacts,
        diagnoses=diagnoses,
        findings=findings,
        reason=reason,
    )
    if ledger is not None and attempt_id is not None:
        ledger.finish(
            attempt_id,
            status=status,
            exit_code=exit_code,
            duration_s=result.duration_s,
            peak_rss_bytes=peak,
            diagnoses=[to_jsonable(d) for d in diagnoses],
            archs=sass,
            result=to_jsonable(dataclasses.replace(result, diagnoses=())),
        )
    return result


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
    targets: Sequence[str], sass: Sequence[str], ptx: Sequence[str], *, has_outputs: bool
) -> tuple[Finding, ...]:
    """A finding for each target GPU without SASS in the result; one for SASS nobody asked for."""
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
            fix="rebuild with a clean tree (torchsmith build --clean) and check"
            " TORCH_CUDA_ARCH_LIST / CMAKE_CUDA_ARCHITECTURES in the log",
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
