"""Reading what the installers say: the one line that explains a failure, and pip's report."""

from __future__ import annotations

import json
import re
from pathlib import Path

from packaging.utils import canonicalize_name

_ERROR = re.compile(r"^(error|ERROR)\b:?\s*")


def first_error(output: str) -> str:
    """One line for a failed uv/pip run: the error and, for uv, its innermost cause."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    errors = [_ERROR.sub("", ln) for ln in lines if _ERROR.match(ln)]
    causes = [ln.removeprefix("cause:").strip() for ln in lines if ln.startswith("cause:")]
    errors = [e for e in errors if e]
    if errors and causes:
        text = f"{errors[0].rstrip(':')}: {causes[-1]}"
    elif errors:
        text = errors[-1]
    else:
        text = lines[-1] if lines else "no output"
    return text[:300]


def pip_origins(path: Path) -> dict[str, str]:
    """name -> the URL pip took it from, out of ``pip install --report`` (empty when unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {
            canonicalize_name(str(item["metadata"]["name"])): str(item["download_info"]["url"])
            for item in data.get("install", [])
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}
