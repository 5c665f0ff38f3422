"""Probe files: the JSON envelope of ``torchsmith doctor --json``, read back for plan/explain."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from torchsmith.errors import InputError, ProbeFileError
from torchsmith.probe.model import PROBE_SCHEMA_VERSION, Probe
from torchsmith.util.inputs import read_input, shown
from torchsmith.util.serialize import DecodeError, from_dict

MAX_PROBE_BYTES = 16 * 1024 * 1024


def load_probe(path: str | Path) -> Probe:
    """Read a probe file (a doctor --json envelope, or its bare ``data`` object)."""
    tip = "make one with: torchsmith doctor --json > probe.json"
    try:
        raw = read_input(path, MAX_PROBE_BYTES, what="probe file")
    except InputError as exc:
        raise ProbeFileError(exc.message, tip=exc.tip or tip) from None
    return parse_probe(raw, shown(path))


def parse_probe(raw: bytes | str, name: str = "<probe>") -> Probe:
    tip = "make one with: torchsmith doctor --json > probe.json"
    try:
        doc: Any = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProbeFileError(f"{name} is not JSON ({_short(exc)})", tip=tip) from None
    if not isinstance(doc, dict):
        raise ProbeFileError(f"{name} is not a torchsmith probe (not a JSON object)", tip=tip)
    if "schema" in doc:
        if doc.get("schema") != "torchsmith/doctor":
            raise ProbeFileError(f"{name} is a {doc.get('schema')!r} file, not a probe", tip=tip)
        if not doc.get("ok", False):
            raise ProbeFileError(f"{name} records a failed doctor run", tip=tip)
        version = doc.get("schema_version")
        if not isinstance(version, int) or version > PROBE_SCHEMA_VERSION:
            raise ProbeFileError(
                f"{name} has probe schema {version!r}; this torchsmith reads up to "
                f"{PROBE_SCHEMA_VERSION}",
                tip="upgrade torchsmith",
            )
        doc = doc.get("data")
    try:
        return from_dict(Probe, doc)
    except DecodeError as exc:
        raise ProbeFileError(f"{name} is not a valid probe: {exc}", tip=tip) from None


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:120]
