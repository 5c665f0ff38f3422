"""`torchsmith install`: carry out the plan into an environment, check it, verify it; undoable."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from torchsmith.commands.common import console, emit, json_option
from torchsmith.commands.plan import plan as _plan_command

# The plan's own inputs, reused as they are (one definition: commands/plan.py).
_PLAN_INPUTS = ("probe_file", "gpus", "ccs", "driver", "toolkits", "torch_spec")
# All that --rollback reads: it restores a snapshot, so nothing of a plan or an installer applies.
_ROLLBACK_TAKES = ("rollback_id", "venv", "python", "dry_run", "as_json")


def _plan_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for param in reversed([p for p in _plan_command.params if p.name in _PLAN_INPUTS]):
        click.decorators._param_memo(func, param)
    return func


@click.command("install")
@click.option(
    "--plan", "plan_file", type=click.Path(path_type=Path), help="A plan from `plan --json`."
)
@click.option("--python", metavar="PATH", help="The target interpreter (default: the active one).")
@click.option("--venv", metavar="DIR", help="The target venv (created when missing).")
@click.option(
    "--with",
    "companions",
    multiple=True,
    type=click.Choice(["torchvision", "torchaudio"]),
    help="Install this companion at the version that belongs to the torch (repeatable).",
)
@click.option("--index-url", metavar="URL", help="Take torch and companions from this index.")
@click.option("--find-links", multiple=True, metavar="DIR|URL", help="Add a find-links source.")
@click.option("--installer", type=click.Choice(["uv", "pip"]), help="Default: uv where present.")
@click.option("--dry-run", is_flag=True, help="Print the exact commands; change nothing.")
@click.option("--no-verify", is_flag=True, help="Skip `verify` after installing.")
@click.option(
    "--force", is_flag=True, help="Install even where the plan reports an error (a driver too old)."
)
@click.option(
    "--rollback",
    "rollback_id",
    is_flag=False,
    flag_value="latest",
    metavar="[ID]",
    help="Restore the environment an install changed (the latest, or ledger attempt ID).",
)
@_plan_options
@json_option
def install(  # noqa: PLR0917
    plan_file: Path | None,
    python: str | None,
    venv: str | None,
    companions: tuple[str, ...],
    index_url: str | None,
    find_links: tuple[str, ...],
    installer: str | None,
    dry_run: bool,
    no_verify: bool,
    force: bool,
    rollback_id: str | None,
    as_json: bool,
    **plan_inputs: Any,
) -> None:
    """Install the planned torch into an environment, check what landed, then verify it."""
    from torchsmith.errors import UsageError  # noqa: PLC0415 (fast --help)
    from torchsmith.install import executor  # noqa: PLC0415
    from torchsmith.install.model import InstallOptions  # noqa: PLC0415
    from torchsmith.render.install import progress, render_install  # noqa: PLC0415

    if rollback_id is not None:
        _refuse_unused(
            lambda name: name not in _ROLLBACK_TAKES,
            "--rollback restores the environment from its snapshot and takes no {}",
            "leave them out: --rollback takes only --venv or --python, --dry-run and --json",
        )
        if rollback_id != "latest" and not rollback_id.isdigit():
            raise UsageError(f"--rollback {rollback_id}: not a ledger attempt id")
        target = _rollback_python(venv, python)
        result = executor.rollback(
            None if rollback_id == "latest" else int(rollback_id),
            python=target,
            dry_run=dry_run,
        )
        emit("install", result, as_json=as_json, render=render_install)
        if result.error:
            raise click.exceptions.Exit(4)
        return
    if plan_file is not None:
        _refuse_unused(
            lambda name: name in _PLAN_INPUTS,
            f"--plan {plan_file} already decides the machine and the torch; it takes no {{}}",
            "pass them to `torchsmith plan` when you write the plan, or leave out --plan",
        )
    options = InstallOptions(
        python=python,
        venv=venv,
        companions=companions,
        index_url=index_url,
        find_links=find_links,
        installer=installer,  # type: ignore[arg-type]
        dry_run=dry_run,
        verify=not no_verify,
    )
    if python is not None and venv is None:
        from torchsmith.probe.python_env import resolve_python  # noqa: PLC0415

        python = resolve_python(python, hang_is_error=True)  # one line before anything else
    rec, errors = _recommendation(plan_file, python, venv, plan_inputs)
    err = console()
    err.file = sys.stderr
    from rich.markup import escape  # noqa: PLC0415

    for message, fix in errors:  # the plan's errors come first, on stderr (--json too)
        err.print(f"[bold red]error[/bold red] {escape(message)}\n   fix: {escape(fix)}")
    if errors and not dry_run and not force:
        raise UsageError(
            "the plan reports an error that this install would not fix",
            tip="fix it first (above), or pass --force to install anyway",
        )
    try:
        with progress(err) as on_step:
            result = executor.run_install(
                rec,
                options,
                on_step=on_step,
                verifier=executor.default_verifier(),
                argv=("torchsmith", *sys.argv[1:]),
            )
    except executor.InstallInterrupted as stopped:  # it says what the install left behind
        click.echo(stopped.said, err=True)
        raise click.exceptions.Exit(130) from None
    if result.status not in ("succeeded", "planned"):
        if not as_json:  # what changed and what was put back; --json gets the error envelope
            render_install(result, console())
        raise executor.InstallFailedError(
            result.error or "the install failed",
            tip=f"the environment was restored to its state before (ledger #{result.ledger_id})",
        )
    emit("install", result, as_json=as_json, render=render_install)
    if result.verify is not None and not getattr(result.verify, "ok", True):
        raise click.exceptions.Exit(1)


def _refuse_unused(unused: Callable[[str], bool], message: str, tip: str) -> None:
    """One usage error naming the options given on the command line that ``unused`` says this
    mode would drop (``message`` has a {} for them); nothing when none was given."""
    from click.core import ParameterSource  # noqa: PLC0415

    from torchsmith.errors import UsageError  # noqa: PLC0415

    ctx = click.get_current_context()
    given = [
        p.opts[0]
        for p in ctx.command.params
        if p.name is not None
        and unused(p.name)
        and ctx.get_parameter_source(p.name) not in (None, ParameterSource.DEFAULT)
    ]
    if given:
        raise UsageError(message.format(", ".join(given)), tip=tip)


def _rollback_python(venv: str | None, python: str | None) -> str | None:
    """The interpreter --rollback is limited to: --venv's, or --python's; None for any."""
    from torchsmith.errors import UsageError  # noqa: PLC0415
    from torchsmith.install import steps  # noqa: PLC0415
    from torchsmith.probe.python_env import resolve_python, tidy_path  # noqa: PLC0415

    if venv is not None and python is not None:
        raise UsageError("--venv and --python name two targets", tip="pass one of them")
    if venv is not None:
        return str(tidy_path(steps.venv_python(Path(venv))))
    return resolve_python(python) if python is not None else None


def _recommendation(
    plan_file: Path | None, python: str | None, venv: str | None, inputs: dict[str, Any]
) -> tuple[Any, list[tuple[str, str]]]:
    """The recommendation to install, and the plan's error findings (message, fix)."""
    from torchsmith.install import steps  # noqa: PLC0415
    from torchsmith.plan.inputs import PlanRequest, plan_for  # noqa: PLC0415

    if plan_file is not None:
        rec, errors, machine = steps.read_plan_file_with_machine(plan_file)
        _check_plan_file_target(plan_file, machine, _target_python(python, venv))
        return rec, errors
    target = _target_python(python, venv)
    if target is None and inputs.get("probe_file") is not None:
        # the probe file's Python is another interpreter's: plan for the one install changes
        from torchsmith.probe.python_env import resolve_python  # noqa: PLC0415

        target = resolve_python(None)
    request = PlanRequest(
        probe_file=inputs.get("probe_file"),
        gpus=inputs.get("gpus") or (),
        ccs=inputs.get("ccs") or (),
        driver=inputs.get("driver"),
        cuda_toolkits=inputs.get("toolkits") or (),
        torch=inputs.get("torch_spec"),
        python=target,
    )
    plan = plan_for(request)
    probe_file = inputs.get("probe_file")
    if probe_file is not None:
        _same_machine(
            f"--probe {probe_file}",
            plan.machine.os,
            tip="run torchsmith install on that machine, or see its answer with "
            "torchsmith plan --probe",
        )
    errors = [(f.message, f.fix) for f in plan.findings if f.severity == "error"]
    return plan.recommendation, errors


def _target_python(python: str | None, venv: str | None) -> str | None:
    """The interpreter the install will change: --python, --venv's (the one a new venv is made
    with), or None for the active one."""
    from torchsmith.install import steps  # noqa: PLC0415

    if python is None and venv is not None:
        exe = steps.venv_python(Path(venv))
        return str(exe) if exe.exists() else sys.executable
    return python


def _check_plan_file_target(plan_file: Path, machine: dict[str, Any], target: str | None) -> None:
    """Refuse a plan file written for another OS, or for another Python than the target's
    (``machine``: the plan's, as the one read of the file gave it)."""
    from torchsmith.plan.machine import python_tag  # noqa: PLC0415
    from torchsmith.probe.python_env import probe_python_and_torch, resolve_python  # noqa: PLC0415

    planned = machine.get("python") if isinstance(machine.get("python"), str) else None
    target = target or resolve_python(None)
    tip = f"write the plan for this target: torchsmith plan --python {target} --json > FILE"
    have = None
    if planned is not None:
        info, _ = probe_python_and_torch(target)
        have = None if info.error else python_tag(info.version, info.free_threaded)
    os_name = machine.get("os") if isinstance(machine.get("os"), str) else None
    _same_machine(f"--plan {plan_file}", os_name, tip=tip, python=(planned, have, target))


def _same_machine(
    source: str,
    machine_os: str | None,
    *,
    tip: str,
    python: tuple[str | None, str | None, str] | None = None,
) -> None:
    """Refuse to change this machine as ``source`` (a probe or plan file) describes another:
    another OS, or (``python``: the planned version, the target's, the target) another Python;
    a fact that is unknown (None) is not checked."""
    from torchsmith import platforms  # noqa: PLC0415
    from torchsmith.errors import UsageError  # noqa: PLC0415

    here = platforms.current_os()
    if machine_os is not None and machine_os != here:
        raise UsageError(
            f"{source} describes a {machine_os} machine, and install changes this one ({here})",
            tip=tip,
        )
    planned, have, target = python or (None, None, "")
    if planned is not None and have is not None and planned != have:
        raise UsageError(
            f"{source} is for Python {planned}, and install changes {target} (Python {have})",
            tip=tip,
        )
