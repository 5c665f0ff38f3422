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
    if result.fixes_for == "windows" and result.diagnoses:
        console.print("[dim]commands are for Windows: cmd, and PowerShell where it differs[/dim]")
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
    cut = [i for i in result.inputs if i.traceback_cut_at]
    if not result.diagnoses:
        console.print(f"[bold yellow]incomplete[/bold yellow] {escape(result.summary)}")
        for log in cut:
            console.print(f"[dim]{escape(_cut_note(log.name, log.traceback_cut_at))}[/dim]")
        console.print(_RUN_AGAIN, soft_wrap=True)
        return
    console.print(f"[bold]{escape(result.summary)}[/bold]")
    sure = how_sure(result.diagnoses[0].basis, record, result.context)
    console.print(f"[dim]how sure: {escape(sure)}[/dim]", soft_wrap=True)
    for log in cut:
        note = (
            f"{_cut_note(log.name, log.traceback_cut_at)}: what follows rests on the lines before"
        )
        console.print(f"[dim]note: {escape(note)}[/dim]", soft_wrap=True)
    for number, diagnosis in enumerate(result.diagnoses, 1):
        console.print()
        _render_one(number, diagnosis, console)


_RUN_AGAIN = (
    "Every Python traceback ends with the exception line that names the error; the log stops "
    "before it (cut when it was copied, or the process died while printing). Run the command "
    "again with both output streams kept in a file (<command> > run.log 2>&1), then: "
    "torchsmith explain run.log"
)


def _cut_note(name: str, line: int) -> str:
    where = _shown(name)
    return f"{where} ends inside a Python traceback at line {line}, before its exception line"


def _shown(name: str) -> str:
    """A log's name as people read it: "-" is what they typed for standard input, not a name."""
    return "standard input" if name == "-" else name


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
    file = _shown(d.file) if d.file else None
    where = (file or "") if d.line == 0 else f"{file}:{d.line}" if file else f"line {d.line}"
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
