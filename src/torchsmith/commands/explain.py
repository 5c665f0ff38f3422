"""``torchsmith explain [FILE ...|-]``: diagnose build, install and runtime logs."""

from __future__ import annotations

import sys

import click

from torchsmith.commands.common import emit, json_option
from torchsmith.errors import UsageError
from torchsmith.explain import explain_files
from torchsmith.explain.context import context_from_probe, describe, live_probe, load_probe_file
from torchsmith.render.explain import render_explain


@click.command("explain")
@click.argument("files", nargs=-1, metavar="[FILE ...|-]")
@click.option(
    "--probe",
    "probe_file",
    metavar="FILE",
    help="Tailor fixes to the machine in this probe file (torchsmith doctor --json).",
)
@click.option("--here", is_flag=True, help="Tailor fixes to this machine (probes it first).")
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
    context: dict[str, str] | None = None
    source: str | None = None
    if probe_file:
        probe = load_probe_file(probe_file)
        context, source = context_from_probe(probe), describe(probe, f"probe file {probe_file}")
    elif here:
        probe = live_probe()
        context, source = context_from_probe(probe), describe(probe, "this machine")
    result = explain_files(names, context=context, context_source=source)
    emit("explain", result, as_json=as_json, render=render_explain)
