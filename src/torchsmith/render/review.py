"""Rich view of a review: the verdict on a source build, then each section's findings by line."""

from __future__ import annotations

import shlex

from rich.console import Console
from rich.table import Table
from rich.text import Text

from torchsmith.review import ReviewResult
from torchsmith.review.correct import Corrected
from torchsmith.util.shellwords import windows_command

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def render_review(result: ReviewResult, console: Console) -> None:
    gpus = ", ".join(
        f"{g.name} ({g.compute_capability})" for g in result.machine.gpus if g.compute_capability
    )
    console.print(
        Text.assemble(
            ("review ", "bold"),
            result.file,
            f"  for {result.machine.os}",
            f", {gpus}" if gpus else "",
        )
    )
    if result.wheel_advice:
        console.print(Text(result.wheel_advice, style="bold green"))
    for section in result.sections:
        title = f"section {section.index + 1}" + (f": {section.title}" if section.title else "")
        if len(result.sections) > 1:
            console.rule(Text(f"{title} (line {section.first_line}, {section.dialect})"))
        if section.changed_from_previous:
            console.print(
                Text("changed from the attempt before: " + "; ".join(section.changed_from_previous))
            )
        if not section.findings:
            console.print(Text("no problems found", style="green"))
        else:
            table = Table(show_header=True, header_style="bold", expand=False)
            table.add_column("line", justify="right")
            table.add_column("severity")
            table.add_column("category")
            table.add_column("problem and fix", overflow="fold")
            for item in section.findings:
                f = item.finding
                table.add_row(
                    str(item.line) if item.line else "",
                    Text(f.severity, style=_STYLE.get(f.severity, "")),
                    Text(f.category),
                    Text.assemble(f.message, "\n", ("fix: ", "bold"), f.fix),
                )
            console.print(table)
        if section.corrected is not None:
            _corrected(section.corrected, result.machine.os, console)
    for line in result.never_tried:
        console.print(Text("never tried: " + line, style="yellow"))


def _corrected(corrected: Corrected, os_name: str, console: Console) -> None:
    """The command quoted for the target's shell, then what it still needs and each setting it
    leaves out, with why."""
    argv = ["torchsmith", "build", *corrected.build_args]
    if os_name != "windows":
        console.print(Text.assemble(("corrected: ", "bold"), shlex.join(argv)), soft_wrap=True)
    else:  # cmd and PowerShell quote differently (in PowerShell a bare ; ends the command)
        for shell, line in windows_command(argv):
            title = f"corrected ({shell}): " if shell else "corrected: "
            console.print(Text.assemble((title, "bold"), line), soft_wrap=True)
    sections = (("still needs:", "yellow", corrected.needs), ("left out:", "", corrected.dropped))
    for title, style, items in sections:
        if not items:
            continue
        console.print(Text("  " + title, style=style))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=3, justify="right")
        grid.add_column(overflow="fold")
        for item in items:
            grid.add_row("-", Text(item))
        console.print(grid)
