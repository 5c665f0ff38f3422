"""``torchsmith verify``: prove the installed torch loads, computes correctly and runs fast."""

from __future__ import annotations

import math
from typing import Any

import click
from click.core import ParameterSource

from torchsmith.commands.common import emit, json_option
from torchsmith.probe.python_env import PROBE_TIMEOUT_S
from torchsmith.render.verify import render_verify
from torchsmith.verify import run_verify
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
    help="Seconds before the runtime checks count as hung; when given, also how long the "
    f"interpreter has to answer (else {PROBE_TIMEOUT_S:g}).",
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

    given = ctx.get_parameter_source("timeout_s") not in {None, ParameterSource.DEFAULT}
    report = run_verify(
        python or active_python(),
        full=mode == "full",
        timeout_s=timeout_s,
        extensions=extensions,
        probe_timeout_s=timeout_s if given else None,  # else at most PROBE_TIMEOUT_S
    )
    # a failed check is verify's answer, not a failure to answer: ok stays true, data.ok says it
    # and the exit status is 1 (envelope.py)
    emit("verify", report, as_json=as_json, render=render_verify)
    if not report.ok:
        ctx.exit(1)
