"""What commands share: the --json flag, printing a result twice (Rich or JSON), and the
option groups several commands take (the what-if target of plan and review, --emit/-o)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from torchsmith import envelope
from torchsmith.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])


def json_option(func: F) -> F:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print a versioned JSON envelope instead."
    )(func)


def _stacked(*options: Callable[[F], F]) -> Callable[[F], F]:
    """Apply click options in the order written (the order --help lists them)."""

    def apply(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return apply


# The machine a command advises on: this one, a probe file, or what-if flags (plan, review).
target_options = _stacked(
    click.option(
        "--probe",
        "probe_file",
        type=click.Path(path_type=Path),
        help="Describe the target by a probe file (doctor --json) instead of this machine.",
    ),
    click.option(
        "--gpu",
        "gpus",
        multiple=True,
        metavar="NAME",
        help='GPU name as nvidia-smi prints it (repeatable; "none" for no GPU).',
    ),
    click.option(
        "--cc",
        "ccs",
        multiple=True,
        metavar="X.Y",
        help="A GPU by compute capability (repeatable).",
    ),
    click.option("--driver", metavar="VERSION", help="NVIDIA driver version, e.g. 581.57."),
    click.option(
        "--os",
        "os_name",
        type=click.Choice(["linux", "windows", "macos"]),
        help="Advise for another OS (the live machine is not probed).",
    ),
    click.option(
        "--python",
        metavar="X.Y|PATH",
        help="Python version (3.13t: free-threaded), or an interpreter to probe.",
    ),
    click.option(
        "--cuda-toolkit",
        "toolkits",
        multiple=True,
        metavar="X.Y",
        help="Installed CUDA toolkit (repeatable).",
    ),
)


def emit_options(help_text: str) -> Callable[[F], F]:
    """``--emit bash|powershell|cmd`` and ``-o FILE`` (build, review)."""
    return _stacked(
        click.option(
            "--emit",
            "emit_shell",
            type=click.Choice(["bash", "powershell", "cmd"]),
            help=help_text,
        ),
        click.option(
            "-o",
            "--output",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Where --emit writes.",
        ),
    )


def check_script_shell(shell: str, target_os: str) -> None:
    """A standalone script runs on the machine its configuration was made for (its paths, its
    toolkit): bash for Linux and macOS, PowerShell or cmd for Windows."""
    from torchsmith import platforms  # noqa: PLC0415

    here = platforms.current_os()
    if target_os != here:
        raise UsageError(
            f"--emit writes a script for this machine ({here}), and the target is {target_os}: "
            "its paths and toolkit would be this machine's",
            tip="run torchsmith there with --emit (torchsmith doctor --json gives its probe)",
        )
    fits = ("powershell", "cmd") if here == "windows" else ("bash",)
    if shell not in fits:
        raise UsageError(
            f"--emit {shell} does not run on {here}",
            tip=f"use --emit {' or --emit '.join(fits)}",
        )


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
