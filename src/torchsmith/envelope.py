"""The versioned JSON envelope every ``--json`` output uses.

Shape (pinned by tests/fuzz/contract.py and tests/test_json_edges.py)::

    {"schema": "torchsmith/<command>", "schema_version": N, "torchsmith": "<version>",
     "ok": true, "data": {...}}

and on failure ``{"schema": ..., "ok": false,
"error": {"message": ..., "tip": ..., "exit_code": N}}``.

``ok`` says whether the command did its work, not whether what it examined is healthy: a build
that ran and failed, or a verify whose check failed, is ``ok: true`` with the outcome in ``data``
(and exit code 1); ``ok: false`` is bad usage or input, a tool that failed, or an install that
failed and was restored (exit code 2 or more).
"""

from __future__ import annotations

from typing import Any

from torchsmith import __version__
from torchsmith.util.serialize import json_text, to_jsonable

SCHEMA_VERSIONS: dict[str, int] = {
    "doctor": 1,
    "inspect": 1,
    "plan": 1,
    "explain": 1,
    "kb": 1,
    "install": 1,
    "verify": 1,
    "build": 1,
    "clean": 1,
    "attempts": 1,
    "review": 1,
    "error": 1,
}


def wrap(command: str, data: Any) -> dict[str, Any]:
    return {
        "schema": f"torchsmith/{command}",
        "schema_version": SCHEMA_VERSIONS[command],
        "torchsmith": __version__,
        "ok": True,
        "data": to_jsonable(data),
    }


def wrap_error(command: str, message: str, tip: str | None, exit_code: int) -> dict[str, Any]:
    return {
        "schema": f"torchsmith/{command}",
        "schema_version": SCHEMA_VERSIONS.get(command, SCHEMA_VERSIONS["error"]),
        "torchsmith": __version__,
        "ok": False,
        "error": {"message": message, "tip": tip, "exit_code": exit_code},
    }


def dumps(envelope: dict[str, Any]) -> str:
    """The envelope as JSON text that always encodes to valid UTF-8 (a path that is not UTF-8
    is written as its ``\\udcff`` escape: :func:`json_text`)."""
    return json_text(envelope, indent=2, sort_keys=False)
