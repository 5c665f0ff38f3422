"""Rich rendering of a clean: the list with sizes before, what went and what stayed after."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from torchsmith.build.clean import CleanPlan, CleanResult


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def entries_table(plan: CleanPlan) -> Table:
    """What the clean removes: path (a folder with "/", a link with " ->"), size and why."""
    table = Table(show_header=True, header_style="bold", box=None)
    table.add_column("path")
    table.add_column("size", justify="right")
    table.add_column("why", style="dim")
    for entry in plan.entries:
        suffix = "/" if entry.kind == "dir" else (" ->" if entry.kind == "symlink" else "")
        table.add_row(escape(entry.path + suffix), human_bytes(entry.bytes), escape(entry.reason))
    return table


def render_kept(plan: CleanPlan, console: Console) -> None:
    """What the clean keeps, and why."""
    for kept in plan.kept:
        console.print(f"[dim]kept {escape(kept.path)}: {escape(kept.reason)}[/dim]", soft_wrap=True)


def render_clean(outcome: Any, console: Console) -> None:
    plan, result = outcome["plan"], outcome.get("result")
    assert isinstance(plan, CleanPlan)
    source = (
        "git: ignored build outputs and build directories" if plan.in_git else "known build dirs"
    )
    console.print(f"[bold]{escape(plan.tree)}[/bold] [dim]({source})[/dim]")
    if not plan.entries:
        console.print("[green]nothing to clean[/green]")
    else:
        console.print(entries_table(plan))
        console.print(f"{len(plan.entries)} entries, {human_bytes(plan.total_bytes)}")
    render_kept(plan, console)
    if result is None:
        if plan.entries:
            console.print(
                "[yellow]nothing deleted yet:[/yellow] run again with --yes to delete these"
            )
        return
    assert isinstance(result, CleanResult)
    console.print(
        f"[green]removed {len(result.removed)} entries, {human_bytes(result.bytes_freed)}[/green]"
    )
    for failure in result.failed:
        console.print(f"[red]not removed[/red] {escape(failure.path)}: {escape(failure.message)}")
