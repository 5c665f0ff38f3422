"""``torchsmith explain [FILE ...|-]``: diagnose build, install and runtime logs."""

from __future__ import annotations

import sys

import click
from rich.console import Console

from torchsmith.commands.common import emit, json_option
from torchsmith.errors import UsageError
from torchsmith.explain import explain_files
from torchsmith.explain.context import context_from_probe, describe, live_probe, load_probe_file
from torchsmith.render.explain import render_explain
from torchsmith.render.progress import byte_progress


@click.command("explain")
@click.argument("files", nargs=-1, metavar="[FILE ...|-]")
@click.option(
    "--probe",
    "probe_file",
    metavar="FILE",
    help="The machine the log came from, as a probe file (torchsmith doctor --json): its facts "
    "tailor the fixes and decide a symptom's cause (a CPU build, an old driver, no GPU).",
)
@click.option(
    "--here", is_flag=True, help="The log came from this machine: probe it, as with --probe."
)
@json_option
def explain(files: tuple[str, ...], probe_file: str | None, here: bool, as_json: bool) -> None:
    """Read build, install or runtime logs and name the root cause, with a fix.

    Reads the files given, or standard input with "-" (or when input is piped).
    """
    if probe_file and here:
        raise UsageError("--probe and --here exclude each other", tip="pass one of them")
    names = list(files)
    if not names:
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("no log given", tip="pass a log file, or '-' to read standard input")
        names = ["-"]
    if names.count("-") > 1:  # the second read would find it empty and say so, wrongly
        raise UsageError(
            "- is given more than once: standard input can be read only once",
            tip="pass - once, and the other logs as files",
        )
    probe, where = None, ""
    if probe_file:
        probe, where = load_probe_file(probe_file), f"probe file {probe_file}"
    elif here:
        probe, where = live_probe(), "this machine"
    context = context_from_probe(probe) if probe is not None else None
    source = describe(probe, where) if probe is not None else None
    with byte_progress(Console(stderr=True), "explain") as progress:  # a bar on long logs
        result = explain_files(names, context=context, context_source=source, progress=progress)
    if probe is not None:
        from torchsmith.explain.machine import with_machine_facts  # noqa: PLC0415 - with a probe only
        from torchsmith.findings.analyze import analyze  # noqa: PLC0415 - loads the knowledge base

        result = with_machine_facts(result, analyze(probe), where)
    emit("explain", result, as_json=as_json, render=render_explain)
