"""``nvidia-smi`` and ``/proc/driver/nvidia/version``: pure parsers and the calls that feed them.

The XML report (``nvidia-smi -q -x``) has the driver, the CUDA version the driver supports and
every GPU, but no compute capability; the CSV query (``--query-gpu=...``) has the compute
capability on drivers from 510 on. :func:`read_nvidia_smi` runs both and merges them.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass

from torchsmith.errors import ToolError
from torchsmith.probe.machine_reader import Machine
from torchsmith.probe.model import DriverInfo, GpuInfo
from torchsmith.util.cmd import CommandNotFoundError, CommandTimeoutError

XML_ARGV = ("nvidia-smi", "-q", "-x")
CSV_FIELDS = "index,name,uuid,compute_cap,driver_version,memory.total,pci.bus_id,mig.mode.current"
CSV_ARGV = ("nvidia-smi", f"--query-gpu={CSV_FIELDS}", "--format=csv")
PROC_VERSION = "/proc/driver/nvidia/version"

_UNITS = {"b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "kb": 1 << 10, "mb": 1 << 20}
_MISSING = {"", "n/a", "[n/a]", "not supported", "[not supported]", "none"}


class NvidiaSmiParseError(ValueError):
    """The text is not an ``nvidia-smi`` report of the expected kind."""


def _value(text: str | None) -> str | None:
    text = (text or "").strip()
    return None if text.lower() in _MISSING else text


def parse_memory(text: str | None) -> int | None:
    """``"143771 MiB"`` → bytes; None for ``N/A`` and the like."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]i?B|B)?", _value(text) or "", re.IGNORECASE)
    if not m:
        return None
    return int(float(m[1]) * _UNITS[(m[2] or "MiB").lower()])


def _cc(text: str | None) -> str | None:
    value = _value(text)
    return value if value and re.fullmatch(r"\d+\.\d+", value) else None


def parse_nvidia_smi_xml(text: str) -> tuple[tuple[GpuInfo, ...], DriverInfo]:
    """``nvidia-smi -q -x``: the GPUs (without compute capability) and the driver."""
    start = text.find("<nvidia_smi_log")
    if start < 0:
        first = text.strip().splitlines()[:1]
        raise NvidiaSmiParseError(f"not an nvidia-smi XML report: {first[0] if first else ''!r}")
    body = re.sub(r"<!DOCTYPE[^>]*>", "", text[start:])
    try:
        root = ET.fromstring(body)  # noqa: S314 - nvidia-smi's own output, not untrusted input
    except ET.ParseError as exc:
        raise NvidiaSmiParseError(f"nvidia-smi XML does not parse: {exc}") from None
    gpus = []
    for index, node in enumerate(root.findall("gpu")):
        gpus.append(
            GpuInfo(
                index=index,
                name=_value(node.findtext("product_name")) or "NVIDIA GPU",
                compute_capability=None,
                memory_total_bytes=parse_memory(node.findtext("fb_memory_usage/total")),
                uuid=_value(node.findtext("uuid")),
                pci_bus_id=_value(node.findtext("pci/pci_bus_id")) or node.get("id"),
                mig_mode=_value(node.findtext("mig_mode/current_mig")),
                source="nvidia-smi-xml",
            )
        )
    driver = DriverInfo(
        version=_value(root.findtext("driver_version")),
        cuda_version=_value(root.findtext("cuda_version")),
        source="nvidia-smi-xml",
    )
    return tuple(gpus), driver


def parse_nvidia_smi_csv(text: str) -> tuple[GpuInfo, ...]:
    """``nvidia-smi --query-gpu=... --format=csv`` (with its header line) as GPUs.

    Columns are found by header name, so any subset or order of the fields works.
    """
    rows = list(csv.reader(io.StringIO(text.strip()), skipinitialspace=True))
    if not rows or not any(h.strip().startswith(("index", "name", "uuid")) for h in rows[0]):
        first = text.strip().splitlines()[:1]
        raise NvidiaSmiParseError(f"not an nvidia-smi CSV query: {first[0] if first else ''!r}")
    header = [h.split("[")[0].strip() for h in rows[0]]
    gpus = []
    for position, row in enumerate(rows[1:]):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise NvidiaSmiParseError(f"nvidia-smi CSV row has {len(row)} fields: {row!r}")
        cell = {h: c.strip() for h, c in zip(header, row, strict=True)}
        index = cell.get("index", "")
        gpus.append(
            GpuInfo(
                index=int(index) if index.isdigit() else position,
                name=_value(cell.get("name")) or "NVIDIA GPU",
                compute_capability=_cc(cell.get("compute_cap")),
                memory_total_bytes=parse_memory(cell.get("memory.total")),
                uuid=_value(cell.get("uuid")),
                pci_bus_id=_value(cell.get("pci.bus_id")),
                mig_mode=_value(cell.get("mig.mode.current")),
                source="nvidia-smi-csv",
            )
        )
    return tuple(gpus)


def parse_proc_driver_version(text: str) -> str | None:
    """``/proc/driver/nvidia/version`` → ``"580.159.04"`` (also reads the legacy module line)."""
    m = re.search(r"NVRM version:.*?\s(\d+\.\d+(?:\.\d+)?)\s", text + " ")
    return m[1] if m else None


def failure_reason(output: str) -> str:
    """The line of a failed nvidia-smi run that says why (its first non-empty line)."""
    for line in output.splitlines():
        if line.strip():
            return line.strip()
    return "no output"


@dataclass(frozen=True)
class SmiReport:
    gpus: tuple[GpuInfo, ...]
    driver: DriverInfo
    notes: tuple[str, ...] = ()  # what could not be read (compute capability, ...)


CcLookup = Callable[[str], str | None]


# Where drivers put nvidia-smi when it is not on PATH: WSL 2, and Windows (System32 since
# driver 5xx DCH packages, NVSMI before).
FALLBACK_PATHS = (
    "/usr/lib/wsl/lib/nvidia-smi",
    r"C:\Windows\System32\nvidia-smi.exe",
    r"C:\Program Files\NVIDIA Corporation\NVSMI\nvidia-smi.exe",
)


def find_nvidia_smi(m: Machine) -> str | None:
    return m.which("nvidia-smi") or next((p for p in FALLBACK_PATHS if m.exists(p)), None)


def read_nvidia_smi(m: Machine, cc_lookup: CcLookup, timeout: float) -> SmiReport:
    """Run the XML report and (for compute capability) the CSV query; never raises.

    Without an answer, the report has no GPUs and a driver whose ``error`` says why.
    """
    exe = find_nvidia_smi(m)
    if exe is None:
        return SmiReport((), _failed("nvidia-smi not found on PATH"))
    try:
        res = m.run((exe, *XML_ARGV[1:]), timeout=timeout)
    except CommandTimeoutError:
        return SmiReport((), _failed(f"nvidia-smi timed out after {timeout:g}s"))
    except CommandNotFoundError as exc:
        return SmiReport((), _failed(str(exc)))
    except ToolError as exc:
        return SmiReport((), _failed(f"nvidia-smi: {exc}"))
    if not res.ok:
        reason = failure_reason(res.output)
        return SmiReport((), _failed(f"nvidia-smi failed (exit {res.returncode}): {reason}"))
    try:
        gpus, driver = parse_nvidia_smi_xml(res.stdout)
    except NvidiaSmiParseError as exc:
        return SmiReport((), _failed(str(exc)))
    gpus, notes = _with_compute_capability(m, exe, gpus, cc_lookup, timeout)
    return SmiReport(gpus, driver, notes)


def _failed(reason: str) -> DriverInfo:
    return DriverInfo(version=None, cuda_version=None, source="nvidia-smi", error=reason)


def _with_compute_capability(
    m: Machine, exe: str, gpus: tuple[GpuInfo, ...], cc_lookup: CcLookup, timeout: float
) -> tuple[tuple[GpuInfo, ...], tuple[str, ...]]:
    if not gpus:
        return gpus, ()
    by_key: dict[str, str] = {}
    notes: list[str] = []
    try:
        res = m.run((exe, *CSV_ARGV[1:]), timeout=timeout)
        if res.ok:
            for row in parse_nvidia_smi_csv(res.stdout):
                if row.compute_capability:
                    by_key[row.uuid or row.pci_bus_id or str(row.index)] = row.compute_capability
        else:
            notes.append(f"nvidia-smi --query-gpu=compute_cap: {failure_reason(res.output)}")
    except (ToolError, NvidiaSmiParseError) as exc:
        notes.append(f"nvidia-smi --query-gpu=compute_cap: {exc}")
    out = []
    for gpu in gpus:
        cc = by_key.get(gpu.uuid or gpu.pci_bus_id or str(gpu.index))
        source = f"{gpu.source}+csv"
        if cc is None:
            cc, source = cc_lookup(gpu.name), f"{gpu.source}+knowledge"
            if cc is None:
                source = gpu.source
                notes.append(f"compute capability of {gpu.name!r} unknown")
        out.append(dataclasses.replace(gpu, compute_capability=cc, source=source))
    return tuple(out), tuple(notes)
