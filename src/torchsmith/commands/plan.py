"""`torchsmith plan`: which torch to install on this (or a described) machine, and why."""

from __future__ import annotations

from pathlib import Path

import click

from torchsmith.commands.common import emit, json_option, target_options


@click.command()
@target_options
@click.option(
    "--arch", type=click.Choice(["x86_64", "aarch64", "amd64", "arm64"]), help="CPU architecture."
)
@click.option(
    "--torch",
    "torch_spec",
    metavar="SPEC",
    help="Version constraint the project needs, e.g. ==2.6.*",
)
@click.option(
    "--prefer", type=click.Choice(["wheel", "source"]), default="wheel", show_default=True
)
@click.option(
    "--installer",
    type=click.Choice(["uv", "pip", "conda"]),
    help="Show commands for this installer only.",
)
@click.option("--ptx", is_flag=True, help="Add +PTX to TORCH_CUDA_ARCH_LIST for a source build.")
@json_option
def plan(  # noqa: PLR0917 (click passes options positionally)
    probe_file: Path | None,
    gpus: tuple[str, ...],
    ccs: tuple[str, ...],
    driver: str | None,
    os_name: str | None,
    arch: str | None,
    python: str | None,
    toolkits: tuple[str, ...],
    torch_spec: str | None,
    prefer: str,
    installer: str | None,
    ptx: bool,
    as_json: bool,
) -> None:
    """Say which torch wheel (or source build) fits this machine, and reject what would not."""
    from torchsmith.plan.inputs import PlanRequest, plan_for  # noqa: PLC0415 (fast --help)
    from torchsmith.render.plan import render_plan  # noqa: PLC0415

    request = PlanRequest(
        probe_file=probe_file,
        gpus=gpus,
        ccs=ccs,
        driver=driver,
        os=os_name,
        arch=arch,
        python=python,
        cuda_toolkits=toolkits,
        torch=torch_spec,
        prefer=prefer,
        installer=installer,
        ptx=ptx,
    )
    emit("plan", plan_for(request), as_json=as_json, render=render_plan)
