"""``torchsmith attempts list|show|diff|export``: the ledger of build and install attempts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from torchsmith.commands.common import emit, json_option
from torchsmith.errors import InputError
from torchsmith.ledger import Ledger
from torchsmith.render.attempts import (
    diff_attempts,
    export_html,
    export_md,
    patterns,
    render_diff,
    render_list,
    render_show,
)


@click.group("attempts")
def attempts() -> None:
    """Every recorded build and install attempt: list, show, compare, export."""


@attempts.command("list")
@click.option("--kind", type=click.Choice(["build", "install", "clean"]), default=None)
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
def list_cmd(kind: str | None, limit: int, as_json: bool) -> None:
    """The newest attempts first."""
    ledger = Ledger()
    rows = ledger.list(kind=kind, limit=limit)
    if kind is not None and not rows and not as_json:
        others = len(ledger.list())
        if others:
            click.echo(f"no {kind} attempts recorded ({others} of other kinds: attempts list)")
            return
    emit("attempts", rows, as_json=as_json, render=render_list)


@attempts.command("show")
@click.argument("attempt_id", type=int)
@json_option
def show(attempt_id: int, as_json: bool) -> None:
    """One attempt in full."""
    emit("attempts", Ledger().get(attempt_id), as_json=as_json, render=render_show)


@attempts.command("diff")
@click.argument("a", type=int)
@click.argument("b", type=int)
@json_option
def diff(a: int, b: int, as_json: bool) -> None:
    """What changed between attempts A and B, and how each ended."""
    ledger = Ledger()
    emit(
        "attempts", diff_attempts(ledger.get(a), ledger.get(b)), as_json=as_json, render=render_diff
    )


@attempts.command("export")
@click.option("--format", "fmt", type=click.Choice(["md", "html"]), default="md", show_default=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Write to this file (default: standard output).",
)
@click.option(
    "--kind", type=click.Choice(["build", "install", "clean"]), default="build", show_default=True
)
@click.option("--tree", default=None, help="Only attempts on this source tree.")
@json_option
def export(fmt: str, output: Path | None, kind: str, tree: str | None, as_json: bool) -> None:
    """The build log as Markdown or HTML: commands, changes, outcomes, then patterns."""
    rows = Ledger().list(kind=kind)
    if tree is not None:
        wanted = str(Path(tree).resolve())
        rows = [a for a in rows if a.tree in (tree, wanted)]
    render = export_md if fmt == "md" else export_html
    text = render(rows, kind=kind, tree=tree)
    if output is not None:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write {output}: {exc.strerror or exc}") from exc
    if as_json:
        seen, never = patterns(sorted(rows, key=lambda a: a.id))
        data: dict[str, Any] = {
            "format": fmt,
            "output": str(output) if output else None,
            "attempts": [a.id for a in rows],
            "patterns": seen,
            "never_tried": never,
        }
        if output is None:
            data["text"] = text
        emit("attempts", data, as_json=True, render=lambda *_: None)
    elif output is None:
        sys.stdout.write(text)
    else:
        click.echo(f"wrote {output} ({len(rows)} attempts)")
