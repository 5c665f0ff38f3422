"""`torchsmith plan`: which torch to install on this (or a described) machine, and why."""

from __future__ import annotations

from pathlib import Path

import click

from torchsmith.commands.common import emit, json_option


@click.command()
@click.option(
    "--probe",
    "probe_file",
    type=click.Path(path_type=Path),
    help="Plan for a probe file (doctor --json) instead of this machine.",
)
@click.option(
    "--gpu",
    "gpus",
    multiple=True,
    metavar="NAME",
    help='GPU name as nvidia-smi prints it (repeatable; "none" for no GPU).',
)
@click.option(
    "--cc", "ccs", multiple=True, metavar="X.Y", help="A GPU by compute capability (repeatable)."
)
@click.option("--driver", metavar="VERSION", help="NVIDIA driver version, e.g. 581.57.")
@click.option(
    "--os",
    "os_name",
    type=click.Choice(["linux", "windows", "macos"]),
    help="Plan for another OS (the live machine is not probed).",
)
@click.option(
    "--arch", type=click.Choice(["x86_64", "aarch64", "amd64", "arm64"]), help="CPU architecture."
)
@click.option(
    "--python",
    metavar="X.Y|PATH",
    help="Python version (3.13t: free-threaded), or an interpreter to probe.",
)
@click.option(
    "--cuda-toolkit",
    "toolkits",
    multiple=True,
    metavar="X.Y",
    help="Installed CUDA toolkit (repeatable).",
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
