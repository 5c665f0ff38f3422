"""``torchsmith inspect``: the GPU architectures really inside binaries."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from torchsmith.binaries import targets
from torchsmith.binaries.gpu import resolve_gpu
from torchsmith.binaries.targets import InspectReport, inspect_target
from torchsmith.commands.common import emit, json_option
from torchsmith.render.inspect import render_inspect
from torchsmith.render.progress import byte_progress
from torchsmith.util import cmd


@click.command("inspect")
@click.argument("target")
@click.option(
    "--python",
    "python",
    metavar="PATH",
    help="Interpreter in which to find a package TARGET (default: this one). Never imported.",
)
@click.option(
    "--gpu",
    metavar="CC|NAME",
    help="Say whether the code runs on this GPU: 12.0, sm_120, 120, or a GPU name.",
)
@click.option("--all", "show_all", is_flag=True, help="Also list binaries without GPU code.")
@json_option
@click.pass_context
def inspect_cmd(
    ctx: click.Context,
    target: str,
    *,
    python: str | None,
    gpu: str | None,
    show_all: bool,
    as_json: bool,
) -> None:
    """Show the SASS and PTX architectures inside TARGET.

    TARGET is a binary (.so, .dll, .pyd, executable), a wheel (.whl, read in place), a directory
    (searched recursively) or the name of an installed package (e.g. torch). Reads the CUDA fat
    binaries' headers directly; no CUDA toolkit needed. With --gpu, exits 1 when the code has
    nothing that runs on that GPU.
    """
    resolved = resolve_gpu(gpu) if gpu is not None else None  # "" (an unset $GPU) is refused
    package = not os.path.lexists(Path(target).expanduser())  # else --python plays no part
    interpreter = _interpreter(python) if package else python
    try:
        with byte_progress(Console(stderr=True), "inspect") as progress:
            report = inspect_target(
                target,
                python=interpreter,
                compute_capability=resolved.compute_capability if resolved else None,
                gpu=resolved.name if resolved and resolved.name else gpu,
                gfx=resolved.gfx if resolved else None,
                progress=progress,
            )
    except cmd.CommandTimeoutError as exc:
        if not package:
            raise
        # cmd.run's message would end in the lookup script, cut at its first line
        name = python or interpreter or sys.executable
        raise cmd.CommandTimeoutError(
            f"{name}: no answer after {targets.PACKAGE_TIMEOUT_S:g}s looking up package "
            f"{target!r}; stopped it",
            tip=_tip(name),
        ) from exc

    def render(result: Any, console: Console) -> None:
        render_inspect(result, console, show_all=show_all)

    emit("inspect", report, as_json=as_json, render=render)
    if isinstance(report, InspectReport) and report.runs_on is not None and not report.runs_on.ok:
        ctx.exit(1)


def _interpreter(python: str | None) -> str | None:
    """``--python`` resolved (an environment directory gives its interpreter); one that does
    not answer fails here, in seconds, rather than after the package lookup's minute."""
    if python is None:
        return None
    from torchsmith.probe.python_env import resolve_python  # noqa: PLC0415

    return resolve_python(python, hang_is_error=True, tip=_tip(python))


def _tip(python: str) -> str:
    return (
        f"check that `{shlex.quote(python)} -c pass` returns, pass another --python, or inspect "
        "the package's directory (a path) instead"
    )
