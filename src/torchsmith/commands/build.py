"""``torchsmith build [PATH]``: configure, preflight and run a from-source build, recorded."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from torchsmith.build.model import BuildConfig
from torchsmith.build.scripts import shell_command
from torchsmith.commands.common import (
    check_script_shell,
    console,
    emit,
    emit_options,
    json_option,
)
from torchsmith.errors import InputError, UsageError
from torchsmith.probe.model import Finding
from torchsmith.util.serialize import to_jsonable

if TYPE_CHECKING:
    from torchsmith.render.build import BuildPlan


def _sets(values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    out = []
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(
                f"--set {item}: expected KEY=VALUE", tip="e.g. --set USE_DISTRIBUTED=0"
            )
        out.append((key.strip(), value))
    return tuple(out)


def _shared_cache(config: BuildConfig, url: str) -> BuildConfig:
    from torchsmith.build.shared_cache import check_cache_server, with_shared_cache  # noqa: PLC0415

    check_cache_server(url)  # unreachable: one line, before anything runs
    return with_shared_cache(config, url)


def _check_output(emit_shell: str | None, output: Path | None, dry_run: bool) -> None:
    """-o is where --emit writes the script: alone it would write nothing, and a dry run
    writes nothing, so both are refused before any work is done."""
    if output is None:
        return
    if emit_shell is None:
        raise UsageError(
            f"-o {output}: -o is where --emit writes the script, and there is no --emit",
            tip="add --emit bash (or powershell, cmd) to write the script, or drop -o",
        )
    if dry_run:
        raise UsageError(
            f"-o {output} with --dry-run: a dry run changes nothing, so it writes no file",
            tip="drop -o to see the script on stdout, or drop --dry-run to write it",
        )


def _with_clean_plan(plan: BuildPlan, tree: Path) -> BuildPlan:
    """The dry run of --clean: what `torchsmith clean` lists for the tree (nothing removed).
    A stale cache that the list removes stops the build no more; one that clean keeps (not
    proven a build output) still does, as it would after a real --clean."""
    from torchsmith.build.clean import plan_clean  # noqa: PLC0415
    from torchsmith.build.preflight import blocking, stale_cache_file  # noqa: PLC0415

    cleaning = plan_clean(tree, plan.config.project.kind)
    removed = [Path(cleaning.tree, e.path) for e in cleaning.entries]

    def goes(finding: Finding) -> bool:
        cache = stale_cache_file(finding)
        if finding.category not in _CLEANED or cache is None:
            return False
        return any(Path(cache) == r or Path(cache).is_relative_to(r) for r in removed)

    blockers = [f for f in blocking(plan.findings) if not goes(f)]
    return replace(plan, clean=cleaning, blocked=bool(blockers))


def _emit_script(
    config: BuildConfig,
    shell: str,
    output: Path | None,
    as_json: bool,
    blockers: tuple[Finding, ...],
) -> None:
    """Write the script. Preflight's errors do not stop it (the script may go to another
    machine), but they are said: a script written without a word would fail where they said."""
    from torchsmith import platforms  # noqa: PLC0415
    from torchsmith.build.scripts import write_script  # noqa: PLC0415

    check_script_shell(shell, platforms.current_os())  # the configuration is this machine's
    config = _provable_clean_step(config, as_json)
    text = write_script(config, shell, output)  # type: ignore[arg-type]
    if as_json:  # the script inside the envelope, and where it was written
        emit(
            "build",
            {
                "shell": shell,
                "output": None if output is None else str(output),
                "script": text,
                "preflight": [to_jsonable(f) for f in blockers],
            },
            as_json=True,
            render=lambda _result, _console: None,
        )
        return
    for finding in blockers:
        click.echo(
            f"warning: preflight: {finding.message}; the script will fail on this machine as it "
            f"is: {finding.fix}",
            err=True,
        )
    if output is None:
        click.echo(text, nl=False)
    else:
        click.echo(f"wrote {output} ({shell})", err=True)


def _provable_clean_step(config: BuildConfig, as_json: bool) -> BuildConfig:
    """The script's TORCHSMITH_CLEAN step removes the build directory whole: keep it only where
    that folder does not exist yet or `torchsmith clean` proves all of it a build output (no
    tracked file, no user file in it); else the script gets no clean step, and says why."""
    from torchsmith.build.clean import plan_clean  # noqa: PLC0415
    from torchsmith.build.scripts import clean_dir  # noqa: PLC0415

    relative = clean_dir(config)
    tree = Path(config.project.path)
    if relative is None or not (tree / relative).exists():
        return config
    proven = {e.path for e in plan_clean(tree, config.project.kind).entries}
    if relative.replace("\\", "/").strip("/") in proven:
        return config
    if not as_json:
        click.echo(
            f"note: the script has no clean step: {relative} holds files `torchsmith clean` "
            "does not prove to be build outputs (tracked or new files); clean it with "
            f"`{shell_command(('torchsmith', 'clean', str(tree)))}` instead",
            err=True,
        )
    return replace(config, project=replace(config.project, build_dir=None))


@contextlib.contextmanager
def _undoable_install(config: BuildConfig, ledger: Any) -> Iterator[Any]:
    """A build that installs into its target (pip install ., the parallel driver's wheel) does
    so as an install does: snapshotted, put back when the build fails, and recorded so that
    `torchsmith install --rollback` undoes it. Yields the guard (None for a build that does not
    install); the block sets its ``failed`` when the build did not end well."""
    if not any(s.name == "install" or "--install-from" in s.argv for s in config.steps):
        yield None
        return
    from torchsmith.install.executor import guard  # noqa: PLC0415

    with guard(config.python, by={"build": config.project.path}, ledger=ledger) as state:
        yield state


_CLEANED = ("stale-build-cache",)  # findings that --clean's removal of build outputs resolves


def _clean(tree: Path, as_json: bool) -> None:
    """--clean: remove what `torchsmith clean` proves is a build output, and say what went."""
    from torchsmith.build.clean import execute_clean, plan_clean  # noqa: PLC0415
    from torchsmith.build.detect import detect_project  # noqa: PLC0415
    from torchsmith.errors import ToolError  # noqa: PLC0415
    from torchsmith.ledger import Ledger  # noqa: PLC0415

    plan = plan_clean(tree, detect_project(tree).kind)
    if not plan.entries:
        return
    result = execute_clean(plan, confirmed=True, ledger=Ledger())
    if not as_json:
        names = ", ".join(result.removed[:6]) + (" ..." if len(result.removed) > 6 else "")
        click.echo(f"clean: removed {names} ({result.bytes_freed / 2**20:.1f} MiB)", err=True)
    if not result.ok:
        raise ToolError(
            f"--clean: {len(result.failed)} build outputs could not be removed: "
            f"{result.failed[0].path}: {result.failed[0].message}",
            tip="close what holds them, or run "
            f"`{shell_command(('torchsmith', 'clean', str(tree)))}` to see the list",
        )


def log_dir() -> Path:
    """Build logs go next to the ledger (TORCHSMITH_LOG_DIR overrides)."""
    if os.environ.get("TORCHSMITH_LOG_DIR"):
        return Path(os.environ["TORCHSMITH_LOG_DIR"])
    from torchsmith.ledger import default_path  # noqa: PLC0415

    return default_path().parent / "logs"


@click.command("build")
@click.argument("path", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--python", "python", metavar="PY", help="The interpreter to build for.")
@click.option("--gpu", "gpus", multiple=True, metavar="NAME", help="A GPU the result must run on.")
@click.option("--cc", "ccs", multiple=True, metavar="X.Y", help="A compute capability to build.")
@click.option(
    "--probe", "probes", multiple=True, metavar="FILE", help="Build for this machine's GPUs too."
)
@click.option(
    "--profile", type=click.Choice(["fast", "portable", "debug"]), default="fast", show_default=True
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="A build switch.")
@click.option("--jobs", type=click.IntRange(min=1), help="Parallel compile jobs.")
@click.option(
    "--cache",
    type=click.Choice(["auto", "none", "sccache", "ccache"]),
    default="auto",
    show_default=True,
)
@click.option(
    "--cache-url",
    metavar="redis://HOST:PORT",
    help="A compiler cache shared by a team (sccache with a redis backend).",
)
@click.option(
    "--clean",
    "clean_first",
    is_flag=True,
    help="First remove the tree's build outputs (what `torchsmith clean` lists; never sources).",
)
@emit_options(
    "Write a standalone script of this build instead of running it (to -o FILE, else stdout)."
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Show configuration, preflight, what --clean would remove and the commands; change "
    "nothing (with --emit the script goes to stdout: -o is refused).",
)
@click.option("--force", is_flag=True, help="Build even when preflight finds errors.")
@json_option
def build(
    path: Path,
    *,
    python: str | None,
    gpus: tuple[str, ...],
    ccs: tuple[str, ...],
    probes: tuple[str, ...],
    profile: str,
    sets: tuple[str, ...],
    jobs: int | None,
    cache: str,
    cache_url: str | None,
    clean_first: bool,
    emit_shell: str | None,
    output: Path | None,
    dry_run: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Build PATH (a PyTorch tree, a torch C++/CUDA extension, a CMake+CUDA project).

    Shows the configuration with its reasons, runs preflight checks before anything compiles,
    streams the build with a progress bar into a timestamped log, records the attempt in the
    ledger, explains a failure and checks the GPU code in what was built.
    """
    # Imports here keep `torchsmith --help` fast.
    from torchsmith.build.options import BuildOptions  # noqa: PLC0415
    from torchsmith.build.preflight import blocking  # noqa: PLC0415
    from torchsmith.build.prepare import prepare  # noqa: PLC0415
    from torchsmith.knowledge import load_knowledge  # noqa: PLC0415
    from torchsmith.probe.collect import collect_probe  # noqa: PLC0415
    from torchsmith.probe.io import load_probe  # noqa: PLC0415
    from torchsmith.probe.python_env import resolve_python  # noqa: PLC0415
    from torchsmith.render.build import BuildPlan, render_plan  # noqa: PLC0415

    _check_output(emit_shell, output, dry_run)
    tree = path.expanduser().resolve()
    if not tree.is_dir():
        raise InputError(f"{path}: no such directory")
    options_sets = _sets(sets)
    if cache_url is not None:
        cache = "sccache"  # the shared cache is sccache's redis backend
    target = resolve_python(python, hang_is_error=True) if python else None
    probe = collect_probe(target, disk_path=tree)
    fleet = tuple(load_probe(p) for p in probes)
    options = BuildOptions(
        targets=ccs,
        gpus=gpus,
        probe_files=probes,
        profile=profile,  # type: ignore[arg-type]
        sets=options_sets,
        jobs=jobs,
        cache=cache,  # type: ignore[arg-type]
        python=target,
        dry_run=dry_run,
        inherited=tuple(
            (name, os.environ[name])
            for name in ("MAX_JOBS", "TORCH_CUDA_ARCH_LIST", "FORCE_CUDA")
            if os.environ.get(name)
        ),
    )

    def configure() -> BuildPlan:
        prepared = prepare(tree, probe, load_knowledge(), options, fleet=fleet)
        config = prepared.config
        if cache_url is not None:
            config = _shared_cache(config, cache_url)
        return BuildPlan(config, prepared.findings, bool(blocking(prepared.findings)))

    # the options and preflight are checked before --clean deletes anything
    plan = configure()
    config, findings = plan.config, plan.findings
    if emit_shell is not None:
        _emit_script(config, emit_shell, output, as_json, blocking(findings))
        return
    if dry_run:
        if clean_first:  # what --clean would remove, listed (nothing is)
            plan = _with_clean_plan(plan, tree)
        emit("build", plan, as_json=as_json, render=render_plan)
        return
    # a stale cache is what --clean removes: it does not stop a build that cleans first
    blockers = [f for f in blocking(findings) if not (clean_first and f.category in _CLEANED)]
    if blockers and not force:
        _refuse(plan, blockers, probe, as_json=as_json, tree=tree)
    if clean_first:
        _clean(tree, as_json)
        plan = configure()  # the tree changed: configure for what is left
        config = plan.config
        left = blocking(plan.findings)
        if left and not force:  # what clean kept (files it cannot prove are outputs) still blocks
            _refuse(plan, left, probe, as_json=as_json, tree=tree, after_clean=True)
    _run(plan, probe, as_json)


def _run(plan: Any, probe: Any, as_json: bool) -> None:
    """Run the planned build (what it installs made undoable), show and record the result."""
    from torchsmith.build.runner import run_build  # noqa: PLC0415
    from torchsmith.ledger import Ledger  # noqa: PLC0415
    from torchsmith.render.build import render_build, render_plan  # noqa: PLC0415

    config = plan.config
    out = None if as_json else console()
    if out is not None:
        render_plan(plan, out)
    ledger = Ledger()
    result = run_build(
        config,
        ledger=ledger,
        log_dir=log_dir(),
        console=out,
        command=_command(),
        probe=probe,
        preflight=plan.findings,
        install_guard=functools.partial(_undoable_install, config, ledger),
    )
    emit("build", result, as_json=as_json, render=render_build)
    if not result.ok:
        raise click.exceptions.Exit(130 if result.status == "interrupted" else 1)


def _command() -> list[str]:
    return ["torchsmith", "build", *sys.argv[2:]]


def _refuse(
    plan: BuildPlan,
    blockers: Sequence[Finding],
    probe: Any,
    *,
    as_json: bool,
    tree: Path,
    after_clean: bool = False,
) -> NoReturn:
    """Stop a build that preflight blocks: show the plan, record the attempt (blocked, no build
    step ran) and raise the first blocker as the error, its fix as the tip."""
    from torchsmith.build.runner import record_blocked  # noqa: PLC0415
    from torchsmith.ledger import Ledger, LedgerError  # noqa: PLC0415

    if not as_json:
        from torchsmith.render.build import render_plan  # noqa: PLC0415

        render_plan(plan, console())
    try:
        recorded = record_blocked(
            plan.config,
            blockers,
            ledger=Ledger(),
            command=_command(),
            probe=probe,
            after_clean=after_clean,
        )
        where = f" (attempt #{recorded.attempt_id}: blocked, no build step ran)"
    except LedgerError as exc:
        where = f" (not recorded: {exc.message})"
    first = blockers[0]
    if after_clean:
        raise InputError(
            f"preflight, after --clean: {first.message}{where}",
            tip=f"{first.fix} (or pass --force to build anyway); clean kept it, and "
            f"{shell_command(('torchsmith', 'clean', str(tree)))} says why",
        )
    raise InputError(
        f"preflight: {first.message}{where}",
        tip=f"{first.fix} (or pass --force to build anyway)",
    )
