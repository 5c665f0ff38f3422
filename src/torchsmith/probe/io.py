"""Probe files: the JSON envelope of ``torchsmith doctor --json``, read back for plan/explain."""

from __future__ import annotations

import json
import re
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
    if not raw.strip():
        raise ProbeFileError(f"{name} is empty", tip=tip)
    try:
        doc: Any = json.loads(raw)
    except RecursionError:
        raise ProbeFileError(f"{name} is nested too deeply to be a probe", tip=tip) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, the int-string limit
        reason = "an integer with too many digits" if "digits" in str(exc) else _short(exc)
        raise ProbeFileError(f"{name} is not JSON ({reason})", tip=tip) from None
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
        probe = from_dict(Probe, doc)
        validate_probe(probe)
    except DecodeError as exc:
        raise ProbeFileError(f"{name} is not a valid probe: {exc}", tip=tip) from None
    except RecursionError:
        raise ProbeFileError(f"{name} is nested too deeply to be a probe", tip=tip) from None
    return probe


# The formats of the values that planning and matching read; everything else is only shown.
_CC = re.compile(r"\d{1,2}\.\d{1,2}", re.ASCII)  # compute capability: "9.0", "12.0"
_VERSION = re.compile(r"\d{1,4}(?:\.\d{1,6}){0,3}", re.ASCII)  # "13.0", "580.159.04"
_PY_VERSION = re.compile(
    r"\d{1,2}\.\d{1,3}(?:\.\d{1,3})?\S{0,16}", re.ASCII
)  # "3.11.7", "3.13.0rc1"
MAX_NAME = 256  # GPU and CPU names, OS names: what name matching reads
MAX_VERSION_TEXT = 128
MAX_CORES = 1_000_000


def validate_probe(probe: Probe) -> None:
    """Check the values a planner reads for format and range; DecodeError names the bad field."""
    host = probe.host
    _text("host.os_pretty", host.os_pretty, MAX_NAME)
    _text("host.cpu_model", host.cpu_model, MAX_NAME)
    _text("host.arch", host.arch, 32)
    _text("host.cuda_visible_devices", host.cuda_visible_devices, MAX_NAME * 16)
    _text("host.nvidia_driver_capabilities", host.nvidia_driver_capabilities, MAX_NAME)
    if host.nvidia_devices is not None:
        _int("host.nvidia_devices (count)", len(host.nvidia_devices), 0, 4096)
        for name in host.nvidia_devices:
            _text("host.nvidia_devices", name, MAX_NAME)
    for key in ("cores_physical", "cores_logical", "cores_performance", "cores_efficiency"):
        _int(
            f"host.{key}",
            getattr(host, key),
            1 if key in ("cores_physical", "cores_logical") else 0,
            MAX_CORES,
        )
    _int("host.ram_total_bytes", host.ram_total_bytes, 1)
    _int("host.ram_available_bytes", host.ram_available_bytes, 0)
    _int("host.disk_free_bytes", host.disk_free_bytes, 0)
    for i, gpu in enumerate(probe.gpus):
        where = f"gpus[{i}]"
        _int(f"{where}.index", gpu.index, 0, 1024)
        _text(f"{where}.name", gpu.name, MAX_NAME)
        _format(f"{where}.compute_capability", gpu.compute_capability, _CC, "X.Y, like 9.0")
        _int(f"{where}.memory_total_bytes", gpu.memory_total_bytes, 0)
    if probe.driver is not None:
        _format("driver.version", probe.driver.version, _VERSION, "a version like 580.95.05")
        _format("driver.cuda_version", probe.driver.cuda_version, _VERSION, "X.Y, like 13.0")
    for i, kit in enumerate(probe.cuda_toolkits):
        _format(f"cuda_toolkits[{i}].version", kit.version, _VERSION, "X.Y, like 13.0")
    for group, tools in (("compilers", probe.compilers), ("build_tools", probe.build_tools)):
        for i, tool in enumerate(tools):
            _text(f"{group}[{i}].name", tool.name, MAX_NAME)
            _text(f"{group}[{i}].version", tool.version, MAX_VERSION_TEXT)
    if probe.python is not None:
        _format("python.version", probe.python.version, _PY_VERSION, "like 3.12.4")
        if probe.python.bits not in (32, 64):
            raise DecodeError("python.bits", f"expected 32 or 64, got {probe.python.bits}")
    if probe.torch is not None:
        _text("torch.version", probe.torch.version, MAX_VERSION_TEXT)
        _format("torch.cuda", probe.torch.cuda, _VERSION, "X.Y, like 12.8")
        for key, value in probe.torch.companions.items():
            _text(f"torch.companions.{key}", value, MAX_VERSION_TEXT)
    if probe.meta.duration_s < 0:
        raise DecodeError("meta.duration_s", "must not be negative")


def _text(where: str, value: str | None, limit: int) -> None:
    if value is not None and len(value) > limit:
        raise DecodeError(where, f"longer than {limit} characters")


def _int(where: str, value: int | None, low: int, high: int = 2**62) -> None:
    if value is not None and not low <= value <= high:
        raise DecodeError(where, f"{value} is out of range (at least {low})")


def _format(where: str, value: str | None, pattern: re.Pattern[str], expected: str) -> None:
    if value is not None and not pattern.fullmatch(value):
        raise DecodeError(where, f"{value[:40]!r} is not {expected}")


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:120]
