"""`torchsmith review FILE|-`: what in a build script is wrong for a machine, and the fix."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from torchsmith.review import ReviewResult

from torchsmith.commands.common import (
    check_script_shell,
    emit,
    emit_options,
    json_option,
    target_options,
)
from torchsmith.errors import InputError, UsageError

MAX_SCRIPT_BYTES = 4 * 1024 * 1024
MAX_RAM_GIB = 2**20  # a PiB: more is a typo, and past ~1e298 the byte count overflows


@click.command()
@click.argument("file", metavar="FILE|-")
@target_options
@click.option("--ram", "ram_gib", type=float, metavar="GIB", help="The target's RAM in GiB.")
@click.option(
    "--tree",
    type=click.Path(path_type=Path),
    help="The PyTorch source tree the script builds: check switches against its CMake files.",
)
@emit_options("Also write the corrected build as a standalone script (needs --tree).")
@json_option
@click.pass_context
def review(  # noqa: PLR0917 (click passes options positionally)
    ctx: click.Context,
    file: str,
    probe_file: Path | None,
    gpus: tuple[str, ...],
    ccs: tuple[str, ...],
    os_name: str | None,
    driver: str | None,
    python: str | None,
    toolkits: tuple[str, ...],
    ram_gib: float | None,
    tree: Path | None,
    emit_shell: str | None,
    output: Path | None,
    as_json: bool,
) -> None:
    """Read a build script (cmd, PowerShell, bash, a cmake line, Markdown notes) and name
    every line that is wrong for the target machine, with the corrected configuration."""
    from torchsmith.knowledge import load_knowledge  # noqa: PLC0415
    from torchsmith.plan.inputs import PlanRequest, plan_for  # noqa: PLC0415
    from torchsmith.render.review import render_review  # noqa: PLC0415
    from torchsmith.review import review_text  # noqa: PLC0415
    from torchsmith.review.checks import Target  # noqa: PLC0415
    from torchsmith.review.switches import from_knowledge, from_tree  # noqa: PLC0415

    if output is not None and emit_shell is None:
        raise UsageError(
            f"-o {output}: -o is where --emit writes the corrected script, and there is no --emit",
            tip="add --emit bash (or powershell, cmd) and --tree, or drop -o",
        )
    if emit_shell is not None and tree is None:
        raise UsageError("--emit needs --tree: the source tree the script builds")
    if emit_shell is not None and as_json and output is None:
        raise UsageError("--emit with --json needs -o FILE for the script")
    text, name = read_script(file)
    kb = load_knowledge()
    switches = from_tree(tree) if tree is not None else from_knowledge()
    request = PlanRequest(
        probe_file=probe_file,
        gpus=gpus,
        ccs=ccs,
        driver=driver,
        os=os_name,
        python=python,
        cuda_toolkits=toolkits,
    )
    plan = plan_for(request, kb)
    ram = _ram_bytes(ram_gib, probe_file, plan.machine.origin)
    target = Target(facts=plan.machine, ram_bytes=ram)
    result = review_text(
        text,
        filename=name,
        target=target,
        kb=kb,
        switches=switches,
        plan=plan,
        tree=str(tree) if tree is not None else None,
    )
    if emit_shell is None or tree is None:
        emit("review", result, as_json=as_json, render=render_review)
    elif as_json:  # the script first: a failure to write it must be the one JSON document
        _emit_corrected(result, tree, probe_file, emit_shell, output)
        emit("review", result, as_json=True, render=render_review)
    else:  # with the script on stdout, the view goes to stderr, so `> build.sh` runs
        from rich.console import Console  # noqa: PLC0415 (keeps --json start-up free of Rich)

        view = Console(stderr=output is None, soft_wrap=False, highlight=False)
        render_review(result, view)
        _emit_corrected(result, tree, probe_file, emit_shell, output)
    if result.errors:
        ctx.exit(1)


def _emit_corrected(
    result: ReviewResult, tree: Path, probe_file: Path | None, shell: str, output: Path | None
) -> None:
    """The last section's corrected configuration, prepared for ``tree`` on the target machine
    (the live one or --probe FILE) exactly as `torchsmith build` would, written as a script."""
    from torchsmith.build.options import BuildOptions  # noqa: PLC0415
    from torchsmith.build.prepare import prepare  # noqa: PLC0415
    from torchsmith.build.scripts import write_script  # noqa: PLC0415
    from torchsmith.knowledge import load_knowledge  # noqa: PLC0415
    from torchsmith.review.correct import Corrected  # noqa: PLC0415

    if result.machine.origin == "what-if":
        raise UsageError(
            "--emit needs the target machine itself: run it there, or pass --probe FILE "
            "(torchsmith doctor --json) instead of what-if flags"
        )
    corrected = result.sections[-1].corrected or Corrected(build_args=(str(tree),))
    python = corrected.python
    if probe_file is not None:
        from torchsmith.probe.io import load_probe  # noqa: PLC0415

        probe = load_probe(probe_file)
        check_script_shell(shell, probe.host.os)
    else:
        from torchsmith.probe.collect import collect_probe  # noqa: PLC0415
        from torchsmith.probe.python_env import resolve_python  # noqa: PLC0415

        python = resolve_python(python, hang_is_error=True) if python else None
        probe = collect_probe(python, disk_path=tree)
        check_script_shell(shell, probe.host.os)
    options = BuildOptions(
        targets=corrected.ccs,
        profile=corrected.profile,  # type: ignore[arg-type]
        sets=corrected.sets,
        jobs=corrected.jobs,
        cache=corrected.cache or "auto",  # type: ignore[arg-type]
        python=python,
    )
    config = prepare(tree.resolve(), probe, load_knowledge(), options).config
    text = write_script(config, shell, output)  # type: ignore[arg-type]
    if output is None:
        click.echo(text, nl=False)
    else:  # as build --emit says it: the script is not on the screen
        click.echo(f"wrote {output} ({shell})", err=True)


def read_script(file: str) -> tuple[str, str]:
    """The script's text (UTF-8 or UTF-16, BOM or not), bounded; one clear line otherwise."""
    from torchsmith.explain.reader import sniff_encoding  # noqa: PLC0415
    from torchsmith.util.inputs import open_input, os_error  # noqa: PLC0415

    if file == "-":
        data = sys.stdin.buffer.read(MAX_SCRIPT_BYTES + 1)
        name = "<stdin>"
    else:  # open_input says which of missing, a directory, a FIFO or unreadable it is
        name = file
        with open_input(file, what="") as handle:
            try:
                data = handle.read(MAX_SCRIPT_BYTES + 1)
            except OSError as exc:
                raise os_error(file, exc, what="") from None
    if len(data) > MAX_SCRIPT_BYTES:
        raise InputError(
            f"{name} is larger than {MAX_SCRIPT_BYTES // 2**20} MB: not a build script"
        )
    if not data.strip():
        raise InputError(f"{name} is empty", tip="pass the build script to review")
    encoding, bom = sniff_encoding(data[:65536])
    if encoding == "binary":
        raise InputError(f"{name} is binary data, not a build script")
    return data[bom:].decode(encoding, "replace"), name


def _ram_bytes(ram_gib: float | None, probe_file: Path | None, origin: str) -> int | None:
    if ram_gib is not None:
        if not (0 < ram_gib <= MAX_RAM_GIB):  # also nan and inf, which no byte count holds
            raise UsageError(f"--ram must be a positive number of GiB, at most {MAX_RAM_GIB}")
        return int(ram_gib * 2**30)
    if probe_file is not None:
        from torchsmith.probe.io import load_probe  # noqa: PLC0415

        return load_probe(probe_file).host.ram_total_bytes
    if origin == "live":
        import psutil  # noqa: PLC0415

        return int(psutil.virtual_memory().total)
    return None
