"""``torchsmith clean PATH [--yes]``: remove build outputs only, after showing them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from torchsmith.build.clean import execute_clean, plan_clean
from torchsmith.commands.common import emit, json_option
from torchsmith.errors import ToolError, TorchsmithError
from torchsmith.render.clean import render_clean


@click.command("clean")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option("--yes", is_flag=True, help="Delete what is listed (without it, only list).")
@json_option
def clean(path: Path, yes: bool, as_json: bool) -> None:
    """Remove a source tree's build outputs: never a tracked file, nothing outside the tree.

    Lists what would go, with sizes; deletes only with --yes.
    """
    kind = None
    try:
        from torchsmith.build.detect import detect_project  # noqa: PLC0415

        kind = detect_project(path).kind
    except TorchsmithError:  # any tree can be cleaned; the kind only narrows the build dirs
        kind = None
    plan = plan_clean(path, kind)
    outcome: dict[str, Any] = {"plan": plan, "result": None, "deleted": False}
    if yes and plan.entries:
        from torchsmith.ledger import Ledger  # noqa: PLC0415

        result = execute_clean(plan, confirmed=True, ledger=Ledger())
        outcome["result"] = result
        outcome["deleted"] = True
        emit("clean", outcome, as_json=as_json, render=render_clean)
        if not result.ok:
            raise ToolError(
                f"{len(result.failed)} entries could not be removed",
                tip="see the list above; nothing else was touched",
            )
        return
    emit("clean", outcome, as_json=as_json, render=render_clean)
