"""``torchsmith build [PATH]``: configure, preflight and run a from-source build, recorded."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from torchsmith.commands.common import console, emit, json_option
from torchsmith.errors import InputError, UsageError


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
@click.option("--dry-run", is_flag=True, help="Show configuration, preflight and commands only.")
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
    from torchsmith.build.runner import run_build  # noqa: PLC0415
    from torchsmith.knowledge import load_knowledge  # noqa: PLC0415
    from torchsmith.ledger import Ledger  # noqa: PLC0415
    from torchsmith.probe.collect import collect_probe  # noqa: PLC0415
    from torchsmith.probe.io import load_probe  # noqa: PLC0415
    from torchsmith.probe.python_env import resolve_python  # noqa: PLC0415
    from torchsmith.render.build import BuildPlan, render_build, render_plan  # noqa: PLC0415

    tree = path.expanduser().resolve()
    if not tree.is_dir():
        raise InputError(f"{path}: no such directory")
    options_sets = _sets(sets)
    target = resolve_python(python) if python else None
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
    )
    prepared = prepare(tree, probe, load_knowledge(), options, fleet=fleet)
    config, findings = prepared.config, prepared.findings
    blocked = bool(blocking(findings))
    plan = BuildPlan(config, findings, blocked)
    if dry_run:
        emit("build", plan, as_json=as_json, render=render_plan)
        return
    if blocked and not force:
        if not as_json:
            render_plan(plan, console())
        first = blocking(findings)[0]
        raise InputError(
            f"preflight: {first.message}",
            tip=f"{first.fix} (or pass --force to build anyway)",
        )
    out = None if as_json else console()
    if out is not None:
        render_plan(plan, out)
    result = run_build(
        config,
        ledger=Ledger(),
        log_dir=log_dir(),
        console=out,
        command=["torchsmith", "build", *sys.argv[2:]],
        probe=probe,
    )
    emit("build", result, as_json=as_json, render=render_build)
    if not result.ok:
        raise click.exceptions.Exit(130 if result.status == "interrupted" else 1)
