"""macOS host details: one ``sysctl`` call, parsed by a pure function.

RAM and core counts come from psutil (:meth:`Machine.resources`); sysctl is asked only for what
psutil does not know: the chip, the P/E split (perflevels), arm64 under Rosetta, the OS build.
"""

from __future__ import annotations

import dataclasses

from torchsmith.errors import ToolError
from torchsmith.probe.machine_reader import Machine
from torchsmith.probe.model import HostInfo

SYSCTL_KEYS = (
    "machdep.cpu.brand_string",
    "hw.perflevel0.physicalcpu",
    "hw.perflevel1.physicalcpu",
    "hw.optional.arm64",
    "kern.osversion",
)
_TIMEOUT_S = 5.0


def parse_sysctl(text: str) -> dict[str, str]:
    """``sysctl name ...`` output (``name: value`` lines) as a dict; unknown names are absent."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and " " not in key.strip():
            values[key.strip()] = value.strip()
    return values


def _int(values: dict[str, str], key: str) -> int | None:
    value = values.get(key, "")
    return int(value) if value.isdigit() else None


def read_macos(m: Machine, info: HostInfo) -> HostInfo:
    """The host details of a Mac."""
    try:
        # sysctl prints the names it knows even when it exits non-zero for one it does not.
        values = parse_sysctl(m.run(["sysctl", *SYSCTL_KEYS], timeout=_TIMEOUT_S).stdout)
    except ToolError:
        values = {}
    version = m.mac_version() or None
    p_cores = _int(values, "hw.perflevel0.physicalcpu")
    e_cores = _int(values, "hw.perflevel1.physicalcpu")
    arch = "aarch64" if values.get("hw.optional.arm64") == "1" else info.arch  # also under Rosetta
    return dataclasses.replace(
        info,
        os_pretty=f"macOS {version}" if version else "macOS",
        os_version=version,
        os_build=values.get("kern.osversion"),
        arch=arch,
        cpu_model=values.get("machdep.cpu.brand_string"),
        cores_performance=p_cores if e_cores else None,
        cores_efficiency=e_cores,
    )
