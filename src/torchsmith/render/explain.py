"""Rich rendering of an ExplainResult: the likely root cause first, each with evidence and fix."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from torchsmith.explain.model import Basis, Diagnosis, ExplainResult
from torchsmith.explain.track_record import TrackRecord, load_track_record

_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold blue"}

# How sure the lead diagnosis is, by what decided it (model.BASES).
_BASIS = {
    "cause": "A line of the log names this cause.",
    "machine": "A fact of the machine the log came from decides it.",
    "generic": "The log shows the first error of a kind that has many causes.",
    "symptom": "The log shows a consequence, not its cause.",
    "ended-in-error": "The log shows only the error the run ended with.",
}
_HERE = (
    "The machine decides it: run `torchsmith explain --here` where the log came from, or pass "
    "that machine's `torchsmith doctor --json` with --probe FILE."
)


def render_explain(result: Any, console: Console) -> None:
    assert isinstance(result, ExplainResult)
    if result.context:
        console.print(f"[dim]fixes tailored to {escape(result.context)}[/dim]")
    record = load_track_record()
    if result.healthy:
        console.print(f"[bold green]OK[/bold green] {escape(result.summary)}")
        if record is not None:
            console.print(
                f"[dim]explain found nothing on {record.silent_on_failing} of {record.failing} "
                "failed runs' logs nobody had tuned it for: if this run failed, "
                "`torchsmith doctor` checks the machine[/dim]"
            )
        return
    console.print(f"[bold]{escape(result.summary)}[/bold]")
    sure = how_sure(result.diagnoses[0].basis, record, result.context)
    console.print(f"[dim]how sure: {escape(sure)}[/dim]", soft_wrap=True)
    for number, diagnosis in enumerate(result.diagnoses, 1):
        console.print()
        _render_one(number, diagnosis, console)


def how_sure(basis: Basis, record: TrackRecord | None, context: str | None) -> str:
    """What the lead rests on, with how often first answers of that kind named the confirmed cause
    on logs nobody had tuned explain for; for a symptom without machine facts, how to get them."""
    text = _BASIS[basis]
    tally = record.by_basis.get(basis) if record is not None else None
    if tally is not None:
        text += (
            f" Such first answers were right on {tally.right} of {tally.answered} logs nobody "
            f"had tuned explain for ({100 * tally.share:.0f}%)."
        )
    if basis == "symptom" and context is None:
        text += f" {_HERE}"
    return text


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
