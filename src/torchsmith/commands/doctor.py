"""`torchsmith doctor`: probe this machine and name every problem with its fix."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from torchsmith.commands.common import emit, json_option

if TYPE_CHECKING:
    from rich.console import Console

    from torchsmith.probe.model import Probe


@click.command()
@click.option(
    "--python",
    "python",
    metavar="PATH",
    help="Target interpreter (or venv directory) whose torch to inspect; default: the active one.",
)
@click.option(
    "--disk",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Where a build would go, for the free-disk check (default: the current directory).",
)
@json_option
def doctor(python: str | None, disk: Path | None, as_json: bool) -> None:
    """Probe GPUs, driver, CUDA toolkits, compilers, Python and torch; list problems and fixes."""
    from torchsmith.probe.collect import collect_probe  # noqa: PLC0415 (fast --help)
    from torchsmith.probe.python_env import resolve_python  # noqa: PLC0415

    target = resolve_python(python)
    probe = collect_probe(target, disk_path=disk)
    emit("doctor", probe, as_json=as_json, render=_render)


def _render(probe: Probe, console: Console) -> None:
    from torchsmith.render.doctor import render_doctor  # noqa: PLC0415 (Rich only when shown)

    render_doctor(probe, console)
