"""One exception class per kind of failure, each with a stable exit code.

Every message says what went wrong in one line; ``tip`` says what to do next.
The CLI maps these to ``error: ...`` / ``tip: ...`` lines and the exit code;
tracebacks appear only with ``--debug``.
"""

from __future__ import annotations


class TorchsmithError(Exception):
    """Base class: a failure torchsmith understands and can explain in one line."""

    exit_code = 1

    def __init__(self, message: str, *, tip: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.tip = tip


class UsageError(TorchsmithError):
    """The user asked for something that cannot be done as asked (bad flag values)."""

    exit_code = 2


class InputError(TorchsmithError):
    """An input file or path is missing, unreadable or not what it should be."""

    exit_code = 3


class ToolError(TorchsmithError):
    """An external tool could not be run, failed, or timed out."""

    exit_code = 4


class ProbeFileError(InputError):
    """A probe file (from ``torchsmith doctor --json``) is malformed."""


class KnowledgeError(TorchsmithError):
    """The shipped knowledge base is invalid: a bug in torchsmith, not in the user's input."""

    exit_code = 70
