"""``torchsmith verify``: prove the installed torch loads, computes correctly and runs fast."""

from __future__ import annotations

import click

from torchsmith.commands.common import emit, json_option
from torchsmith.render.verify import render_verify
from torchsmith.verify import run_verify


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
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds before the runtime checks count as hung.",
)
@json_option
@click.pass_context
def verify(
    ctx: click.Context, *, python: str | None, mode: str, timeout_s: float, as_json: bool
) -> None:
    """Check the target's torch: libraries, import, GPUs, correctness and speed.

    Resolves every shared library torch needs before anything imports it, then runs the checks in
    a subprocess of the target interpreter under a timeout. Exits 1 when a check fails.
    """
    from torchsmith.probe.python_env import active_python  # noqa: PLC0415

    report = run_verify(python or active_python(), full=mode == "full", timeout_s=timeout_s)
    emit("verify", report, as_json=as_json, render=render_verify)
    if not report.ok:
        ctx.exit(1)
