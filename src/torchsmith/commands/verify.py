"""``torchsmith verify``: prove the installed torch loads, computes correctly and runs fast."""

from __future__ import annotations

import math
import sys
from typing import Any

import click

from torchsmith import envelope
from torchsmith.commands.common import emit, json_option
from torchsmith.render.verify import render_verify
from torchsmith.verify import VerifyReport, run_verify
from torchsmith.verify.runner import MAX_TIMEOUT_S


class _Seconds(click.FloatRange):
    """A positive, finite number of seconds up to MAX_TIMEOUT_S (FloatRange lets NaN through:
    every comparison with it is False)."""

    name = "seconds"

    def __init__(self) -> None:
        super().__init__(min=0, max=MAX_TIMEOUT_S, min_open=True)

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = float(super().convert(value, param, ctx))
        except click.BadParameter:  # not a number, or out of range: one message for all
            seconds = math.nan
        if math.isnan(seconds):
            self.fail(
                f"{value}: must be a positive number of seconds, at most {MAX_TIMEOUT_S:g}",
                param,
                ctx,
            )
        return seconds

    def _describe_range(self) -> str:
        return f"a positive number of seconds, at most {MAX_TIMEOUT_S:g}"


@click.command("verify")
@click.option(
    "--python",
    "python",
    metavar="PATH",
    help="Interpreter or environment (default: the active one).",
)
@click.option("--quick", "mode", flag_value="quick", default=True, help="Fast checks (default).")
@click.option("--full", "mode", flag_value="full", help="Also torch.compile and longer timings.")
@click.option(
    "--timeout",
    "timeout_s",
    type=_Seconds(),
    default=120.0,
    show_default=True,
    help="Seconds before the runtime checks count as hung.",
)
@click.option(
    "--extension",
    "extensions",
    multiple=True,
    metavar="PATH|PACKAGE",
    help="Also check that this CUDA extension has code for every GPU (repeatable).",
)
@json_option
@click.pass_context
def verify(
    ctx: click.Context,
    *,
    python: str | None,
    mode: str,
    timeout_s: float,
    extensions: tuple[str, ...],
    as_json: bool,
) -> None:
    """Check the target's torch: libraries, import, GPUs, correctness and speed.

    Resolves every shared library torch needs before anything imports it, then runs the checks in
    a subprocess of the target interpreter under a timeout. Exits 1 when a check fails.
    """
    from torchsmith.probe.python_env import active_python  # noqa: PLC0415

    report = run_verify(
        python or active_python(),
        full=mode == "full",
        timeout_s=timeout_s,
        extensions=extensions,
    )
    if as_json and not report.ok:
        _emit_failed(report)
    else:
        emit("verify", report, as_json=as_json, render=render_verify)
    if not report.ok:
        ctx.exit(1)


def _emit_failed(report: VerifyReport) -> None:
    """A failed verify's envelope: ``ok`` false and an ``error`` with the exit code, as every
    failed command's, and still the whole report under ``data`` (what failed, and the fixes)."""
    failed = [c.name for c in report.checks if c.passed is False]
    doc = envelope.wrap("verify", report)
    doc["ok"] = False
    doc["error"] = {
        "message": f"{len(failed)} check(s) failed: {', '.join(failed)}"[:500],
        "tip": "data.findings says what to fix",
        "exit_code": 1,
    }
    sys.stdout.write(envelope.dumps(doc) + "\n")
