"""TOML reading on every supported Python (tomllib from 3.11, tomli before)."""

from __future__ import annotations

import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as _toml  # type: ignore[import-not-found,unused-ignore]

TOMLDecodeError = _toml.TOMLDecodeError


def loads_toml(text: str) -> dict[str, Any]:
    doc: dict[str, Any] = _toml.loads(text)
    return doc
