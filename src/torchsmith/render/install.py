"""Rich views of an install: the steps while it runs, then what changed and where it came from."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from torchsmith.install.model import InstallResult

_STATUS_STYLE = {
    "planned": "cyan",
    "succeeded": "green",
    "failed": "red",
    "rolled-back": "yellow",
    "interrupted": "yellow",
}


@contextlib.contextmanager
def progress(console: Console) -> Iterator[Callable[[str], None]]:
    """A spinner naming the current step on a terminal; one line per step otherwise."""
    if not console.is_terminal:
        yield lambda text: console.print(f"[dim]… {escape(text)}[/dim]", soft_wrap=True)
        return
    with console.status("starting") as status:

        def update(text: str) -> None:
            console.print(f"[dim]… {escape(text)}[/dim]", soft_wrap=True)
            status.update(Text(text))

        yield update


def render_install(result: InstallResult, console: Console) -> None:
    style = _STATUS_STYLE.get(result.status, "white")
    head = f"[bold]install[/bold] into {escape(result.python)} with {escape(result.installer)}:"
    console.print(f"{head} [{style}]{result.status}[/{style}]")
    if result.torch:
        console.print(
            Text(f"  torch {result.torch}" + (f" ({result.variant})" if result.variant else ""))
        )
    for req in result.requirements:
        source = escape(req.source or "default index")
        console.print(f"  want {escape(req.spec)}  [dim]from {source}[/dim]", soft_wrap=True)
    if result.status == "planned" and result.steps:  # a rollback's dry run runs no command
        console.print("[bold]commands[/bold] (nothing was changed):")
        for step in result.steps:
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in step.env.items())
            line = " ".join(shlex.quote(a) for a in step.argv)
            console.print(Text(f"  {env + ' ' if env else ''}{line}"), soft_wrap=True)
    if result.changed:
        table = Table("package", "before", "after", "from", box=None, pad_edge=False)
        for name, (old, new) in result.changed.items():
            table.add_row(*map(Text, (name, old or "-", new or "-", result.origins.get(name, ""))))
        console.print(table)
    for finding in result.findings:
        color = "red" if finding.severity == "error" else "yellow"
        console.print(f"  [{color}]{escape(finding.category)}[/{color}]: {escape(finding.message)}")
        console.print(Text(f"    fix: {finding.fix}"))
    if result.archs:
        console.print(Text("  torch GPU code: " + " ".join(result.archs)))
    for note in result.notes:
        console.print(Text(f"  {note}", style="dim"))
    if result.snapshot:
        ledger = f"ledger #{result.ledger_id}; " if result.ledger_id is not None else ""
        console.print(Text(f"  {ledger}snapshot {result.snapshot}", style="dim"))
    if result.error and result.status == "rolled-back" and result.installer == "torchsmith":
        console.print(Text(result.error, style="red"))
    if result.verify is not None:
        from torchsmith.render.verify import render_verify  # noqa: PLC0415

        render_verify(result.verify, console)
