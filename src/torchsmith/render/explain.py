"""Rich rendering of an ExplainResult: the likely root cause first, each with evidence and fix."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from torchsmith.explain.model import Diagnosis, ExplainResult

_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold blue"}


def render_explain(result: Any, console: Console) -> None:
    assert isinstance(result, ExplainResult)
    if result.context:
        console.print(f"[dim]fixes tailored to {escape(result.context)}[/dim]")
    if result.healthy:
        console.print(f"[bold green]OK[/bold green] {escape(result.summary)}")
        return
    console.print(f"[bold]{escape(result.summary)}[/bold]")
    for number, diagnosis in enumerate(result.diagnoses, 1):
        console.print()
        _render_one(number, diagnosis, console)


def _render_one(number: int, d: Diagnosis, console: Console) -> None:
    style = "dim" if d.symptom else _STYLE.get(d.severity, "bold")
    where = (d.file or "") if d.line == 0 else f"{d.file}:{d.line}" if d.file else f"line {d.line}"
    repeats = f", {d.count} times" if d.count > 1 else ""
    console.print(
        f"[{style}]{number}. {escape(d.title)}[/{style}]  "
        f"[dim]{d.category} · {d.rule} · {escape(where)}{repeats}[/dim]"
    )
    for line in d.evidence:
        console.print(f"   [dim]>[/dim] {escape(line)}", soft_wrap=True)
    console.print(f"   {escape(d.explanation)}", soft_wrap=True)
    console.print("   [bold]fix:[/bold]")
    for line in d.fix.splitlines():
        console.print(f"     {escape(line)}", soft_wrap=True)
    if d.related:
        console.print(f"   [dim]also matched: {', '.join(d.related)}[/dim]")
    if d.source:
        console.print(f"   [dim]seen in: {escape(d.source)}[/dim]")
