"""What every command shares: the --json flag, and printing a result twice (Rich or JSON)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from torchsmith import envelope

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])


def json_option(func: F) -> F:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print a versioned JSON envelope instead."
    )(func)


def console() -> Console:
    """The console for human output (stdout); width is Rich's own guess."""
    from rich.console import Console  # noqa: PLC0415 (keeps --json start-up free of Rich)

    return Console(soft_wrap=False, highlight=False)


def emit(
    command: str, result: Any, *, as_json: bool, render: Callable[[Any, Console], None]
) -> None:
    """Print ``result`` as the JSON envelope of ``command`` or through its Rich renderer."""
    if as_json:
        sys.stdout.write(envelope.dumps(envelope.wrap(command, result)) + "\n")
    else:
        render(result, console())
