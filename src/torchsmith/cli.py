"""The thin command-line layer: parse arguments, call the library, print the result.

``main(argv) -> int`` never raises: known failures print ``error:`` and ``tip:`` lines (or a
JSON error envelope with --json) and return their exit code; tracebacks only with --debug.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import click

from torchsmith import __version__, envelope
from torchsmith.errors import InputError, TorchsmithError
from torchsmith.util.inputs import os_error

# name -> "module:attribute" of a click.Command; imported lazily so start-up stays fast.
COMMANDS: dict[str, str] = {
    "doctor": "torchsmith.commands.doctor:doctor",
    "inspect": "torchsmith.commands.inspect:inspect_cmd",
    "plan": "torchsmith.commands.plan:plan",
    "explain": "torchsmith.commands.explain:explain",
    "kb": "torchsmith.commands.kb:kb",
    "install": "torchsmith.commands.install:install",
    "verify": "torchsmith.commands.verify:verify",
    "build": "torchsmith.commands.build:build",
    "clean": "torchsmith.commands.clean:clean",
    "attempts": "torchsmith.commands.attempts:attempts",
    "review": "torchsmith.commands.review:review",
}

INTERNAL_ERROR_EXIT = 70
# A closed stdout (the reader went away: `torchsmith plan | head -1`) stops the command quietly: no
# traceback, no message, with or without --json, and 141 (128 + SIGPIPE), the status a C tool that
# SIGPIPE killed has: the command did not finish, so no status of its own can be claimed (0 would
# call a failed build a success). Python ignores SIGPIPE and raises BrokenPipeError instead;
# following its docs (signal, "Note on SIGPIPE"), stdout is pointed at devnull so the last flush
# at exit cannot fail again. An error's envelope meeting a closed stdout keeps the error's code.
STDOUT_CLOSED_EXIT = 141


class StdoutClosedError(Exception):
    """stdout was closed under a command; raised past Click and Rich, which each exit 1 on it."""


@contextmanager
def _lift_stdout_closed() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError as exc:  # click.echo, print: Click's main would exit 1
        raise StdoutClosedError from exc
    except SystemExit as exc:  # Rich's Console.on_broken_pipe exits 1 in its BrokenPipeError
        if isinstance(exc.__context__, BrokenPipeError):
            raise StdoutClosedError from exc
        raise


class LazyGroup(click.Group):
    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        with _lift_stdout_closed():  # --help and --version print while parsing
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with _lift_stdout_closed():
            return super().invoke(ctx)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if _importable(name)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS or not _importable(cmd_name):
            return None
        module, attr = COMMANDS[cmd_name].split(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command


def _importable(name: str) -> bool:
    module = COMMANDS[name].split(":")[0]
    return importlib.util.find_spec(module) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="torchsmith")
@click.option("--debug", is_flag=True, help="Log every external command and show tracebacks.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Get a working, fast GPU PyTorch onto this machine and keep it working."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    as_json = "--json" in args
    command = next((a for a in args if a in COMMANDS), "error")
    try:
        returned = cli.main(args=args, prog_name="torchsmith", standalone_mode=False)
        sys.stdout.flush()  # buffered output meets a closed pipe here, not at interpreter exit
    except (StdoutClosedError, BrokenPipeError):  # the one place: see STDOUT_CLOSED_EXIT
        return _stdout_closed()
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except click.ClickException as exc:  # bad usage: Click's own text, and the envelope too
        exc.show()
        if as_json:
            _report(command, exc.format_message(), _help_tip(exc), exc.exit_code, as_json)
        return exc.exit_code
    except TorchsmithError as exc:
        if debug:
            raise
        _report(command, exc.message, exc.tip, exc.exit_code, as_json)
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        return 130
    except OSError as exc:  # the one place: an OSError on an input path is an input error (3)
        if debug:
            raise
        error = os_error(exc.filename, exc) if exc.filename else None
        message = error.message if error else f"cannot read input: {exc.strerror or exc}"
        _report(command, message, error.tip if error else None, InputError.exit_code, as_json)
        return InputError.exit_code
    except RecursionError:
        if debug:
            raise
        message = "input is nested too deeply to read"
        _report(command, message, None, InputError.exit_code, as_json)
        return InputError.exit_code
    except Exception as exc:
        if debug:
            raise
        message = f"internal error: {type(exc).__name__}: {exc}"
        _report(command, message, "rerun with --debug and report it", INTERNAL_ERROR_EXIT, as_json)
        return INTERNAL_ERROR_EXIT
    # In non-standalone mode click returns what ctx.exit(N) asked for instead of raising.
    return returned if isinstance(returned, int) else 0


def _stdout_closed() -> int:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor behind sys.stdout (a test's capture)
        pass
    return STDOUT_CLOSED_EXIT


def _report(command: str, message: str, tip: str | None, code: int, as_json: bool) -> None:
    first_line = message.strip().splitlines()[0] if message.strip() else "failed"
    if as_json:
        try:
            click.echo(envelope.dumps(envelope.wrap_error(command, first_line, tip, code)))
            sys.stdout.flush()
        except BrokenPipeError:  # nobody reads the envelope: the error's code still stands
            _stdout_closed()
        return
    click.echo(f"error: {first_line}", err=True)
    if tip:
        click.echo(f"tip: {tip}", err=True)


def _help_tip(exc: click.ClickException) -> str | None:
    ctx = exc.ctx if isinstance(exc, click.UsageError) else None
    return f"see '{ctx.command_path} --help'" if ctx is not None else None


def run() -> None:
    sys.exit(main())
