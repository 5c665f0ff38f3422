"""Rich views of ``torchsmith build``: the plan (dry run) and the result."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape

from torchsmith.build.clean import CleanPlan
from torchsmith.build.model import BuildConfig
from torchsmith.build.runner import BuildResult
from torchsmith.probe.model import Finding
from torchsmith.util.cmd import display

_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold blue"}


@dataclass(frozen=True)
class BuildPlan:
    """What --dry-run shows (and what a build shows before it runs)."""

    config: BuildConfig
    findings: tuple[Finding, ...]
    blocked: bool  # an error-severity finding stops the build (unless --force)
    clean: CleanPlan | None = None  # --dry-run --clean: what --clean would remove first


def render_findings(findings: tuple[Finding, ...], console: Console) -> None:
    for f in findings:
        style = _STYLE.get(f.severity, "bold")
        console.print(
            f"[{style}]{f.severity}[/{style}] [dim]{f.category}[/dim] {escape(f.message)}",
            soft_wrap=True,
        )
        console.print(f"   [bold]fix:[/bold] {escape(f.fix)}", soft_wrap=True)


def render_clean_plan(clean: CleanPlan, console: Console) -> None:
    """What --clean would remove before building (a dry run removes nothing): clean's own list."""
    from torchsmith.render.clean import entries_table, human_bytes, render_kept  # noqa: PLC0415

    if not clean.entries:
        console.print("[bold]clean[/bold] [dim](--clean)[/dim]: nothing to remove")
    else:
        console.print(
            f"[bold]clean[/bold] [dim](--clean; dry run: nothing removed)[/dim]: would remove "
            f"{len(clean.entries)} {'entry' if len(clean.entries) == 1 else 'entries'}, "
            f"{human_bytes(clean.total_bytes)}"
        )
        console.print(entries_table(clean))
    render_kept(clean, console)


def render_plan(plan: Any, console: Console) -> None:
    assert isinstance(plan, BuildPlan)
    config = plan.config
    project = config.project
    console.print(
        f"[bold]{escape(project.name or project.path)}[/bold] "
        f"[dim]{project.kind} · {project.build_system} · {escape(project.path)}[/dim]"
    )
    for c in config.choices:
        console.print(
            f"  [cyan]{escape(c.key)}[/cyan] = {escape(c.value)}  [dim]{escape(c.reason)}[/dim]",
            soft_wrap=True,
        )
    if plan.clean is not None:
        render_clean_plan(plan.clean, console)
    if plan.findings:
        console.print("[bold]preflight[/bold]")
        render_findings(plan.findings, console)
        stale = any(
            f.category == "stale-build-cache" and f.severity == "error" for f in plan.findings
        )
        if plan.clean is not None and stale and not plan.blocked:
            console.print("  [dim]--clean removes the stale cache first: it stops nothing[/dim]")
    else:
        console.print("[bold green]preflight: nothing found[/bold green]")
    console.print(
        "[bold]commands[/bold] [dim](POSIX shell; --emit powershell or --emit cmd writes a "
        "script for Windows)[/dim]"
    )
    if config.vcvars:
        console.print(
            "  [dim](first: Visual Studio's environment, in cmd)[/dim] "
            f'call "{escape(config.vcvars)}"',
            soft_wrap=True,
        )
    for key in sorted(config.env):
        console.print(f"  export {key}={escape(shlex.quote(config.env[key]))}", soft_wrap=True)
    for step in config.steps:
        console.print(
            f"  [dim]({step.name}, in {escape(step.cwd)})[/dim] {escape(display(step.argv))}",
            soft_wrap=True,
        )


def _size(n: int) -> str:
    return f"{n / 1024**3:.1f} GB" if n >= 1024**3 else f"{n / 1024**2:.0f} MB"


def render_build(result: Any, console: Console) -> None:
    assert isinstance(result, BuildResult)
    style = "bold green" if result.ok else "bold red"
    word = {
        "succeeded": "built",
        "failed": "FAILED",
        "interrupted": "INTERRUPTED",
        "blocked": "BLOCKED",
    }[result.status]
    console.print(
        f"[{style}]{word}[/{style}] in {result.duration_s:.1f}s, peak memory "
        f"{_size(result.peak_rss_bytes)} (whole process tree)"
        + (f", attempt #{result.attempt_id}" if result.attempt_id is not None else "")
    )
    if result.reason and result.status != "succeeded":
        console.print(f"  {escape(result.reason)}", soft_wrap=True)
    for step in result.steps:
        console.print(
            f"  [dim]{step.name}: {step.status} in {step.duration_s:.1f}s[/dim]", soft_wrap=True
        )
    if result.steps and all(s.status == "succeeded" for s in result.steps):
        targets = ", ".join(result.targets) or "none asked"
        sass = ", ".join(result.sass) or "none"
        console.print(
            f"  GPU code: SASS {sass}"
            + (f", PTX {', '.join(result.ptx)}" if result.ptx else "")
            + f" (targets: {targets})"
        )
    if result.diagnoses:
        top = result.diagnoses[0]
        console.print(
            f"[bold]most likely cause:[/bold] {escape(top.title)} [dim]{top.category}[/dim]"
        )
        for line in top.evidence[:3]:
            console.print(f"   [dim]>[/dim] {escape(line)}", soft_wrap=True)
        if top.fix:  # whole: a rule's fix is prose over several lines, its commands last
            console.print("   [bold]fix:[/bold]")
            for line in top.fix.splitlines():
                console.print(f"     {escape(line)}", soft_wrap=True)
    if result.findings:
        render_findings(result.findings, console)
    installed = result.installed
    if installed is not None and installed.note:
        loud = installed.status in ("removed", "restore-incomplete")
        note = escape(installed.note)
        console.print(
            f"[bold yellow]installed:[/bold yellow] {note}" if loud else f"[dim]{note}[/dim]",
            soft_wrap=True,
        )
    if result.log_path:
        console.print(f"  [dim]log: {escape(result.log_path)}[/dim]", soft_wrap=True)
