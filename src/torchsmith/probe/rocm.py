"""The ROCm side of AMD GPUs on Linux: gfx targets from the KFD topology in sysfs (or `rocminfo`
when sysfs is not readable), the ROCm runtime version, and whether this user may open /dev/kfd.

KFD writes one ``properties`` file per topology node, ``key value`` lines; GPU nodes carry a
non-zero ``gfx_target_version`` (major*10000 + minor*100 + stepping: 90402 is gfx942,
110000 gfx1100) and ``location_id`` (PCI bus << 8 | device << 3 | function) with ``domain``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from torchsmith.errors import ToolError
from torchsmith.knowledge.model import hsa_to_gfx
from torchsmith.probe.machine_reader import Machine
from torchsmith.probe.model import GpuInfo, RocmDevice, RocmInfo

KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
ROCM_VERSION_FILES = ("/opt/rocm/.info/version", "/opt/rocm/.info/version-dev")


# ----------------------------------------------------------------------------- pure parsers


def parse_kfd_properties(text: str) -> dict[str, int]:
    """A KFD node's ``properties`` file: ``name value`` lines with integer values."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def kfd_device(props: dict[str, int]) -> RocmDevice | None:
    """The GPU a KFD node describes; None for CPU nodes (gfx_target_version 0 or absent)."""
    gfx = (
        hsa_to_gfx(props.get("gfx_target_version", 0)) if props.get("gfx_target_version") else None
    )
    if gfx is None:
        return None
    location = props.get("location_id")
    bus = None
    if location:
        domain = props.get("domain", 0)
        bus = f"{domain:04x}:{location >> 8:02x}:{(location >> 3) & 0x1F:02x}.{location & 0x7}"
    return RocmDevice(gfx=gfx, pci_bus_id=bus)


def parse_rocminfo(text: str) -> tuple[RocmDevice, ...]:
    """GPU agents of ``rocminfo`` output: ``Name: gfx1100``, ``Marketing Name``, ``BDFID``."""
    out = []
    for block in re.split(r"^\*+\s*\n\s*Agent \d+\s*\n\*+\s*$", text, flags=re.MULTILINE)[1:]:
        fields: dict[str, str] = {}
        for line in block.splitlines():
            m = re.match(r"^  (\S[^:]*?):\s+(.*?)\s*$", line)  # agent-level lines only
            if m and m[1] not in fields:
                fields[m[1]] = m[2]
        if fields.get("Device Type") != "GPU" or not fields.get("Name", "").startswith("gfx"):
            continue
        bdf = fields.get("BDFID", "")
        bus = None
        if bdf.isdigit():
            n = int(bdf)
            bus = f"0000:{n >> 8:02x}:{(n >> 3) & 0x1F:02x}.{n & 0x7}"
        out.append(
            RocmDevice(gfx=fields["Name"], pci_bus_id=bus, name=fields.get("Marketing Name"))
        )
    return tuple(out)


def parse_group_file(text: str) -> dict[int, str]:
    """/etc/group: gid -> name."""
    out: dict[int, str] = {}
    for line in text.splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[2].isdigit():
            out.setdefault(int(parts[2]), parts[0])
    return out


def groups_of_process(status: str, group_file: str) -> tuple[str, ...] | None:
    """The groups of the process whose /proc/<pid>/status is given, by name."""
    m = re.search(r"^Groups:\s*(.*)$", status, re.MULTILINE)
    gid = re.search(r"^Gid:\s*(\d+)", status, re.MULTILINE)
    if m is None:
        return None
    names = parse_group_file(group_file)
    ids = [int(x) for x in m[1].split() if x.isdigit()]
    if gid:
        ids.insert(0, int(gid[1]))
    return tuple(dict.fromkeys(names.get(i, str(i)) for i in ids))


def attach_gfx(gpus: Sequence[GpuInfo], rocm: RocmInfo | None) -> tuple[GpuInfo, ...]:
    """AMD GPUs with the gfx target ROCm reports for them (matched by PCI bus, else by order)."""
    if rocm is None or not rocm.devices:
        return tuple(gpus)
    by_bus = {d.pci_bus_id.lower(): d for d in rocm.devices if d.pci_bus_id}
    amd_index = 0
    out = []
    for gpu in gpus:
        if gpu.vendor != "amd" or gpu.gfx:
            out.append(gpu)
            continue
        dev = by_bus.get((gpu.pci_bus_id or "").lower())
        if dev is None and amd_index < len(rocm.devices) and not by_bus:
            dev = rocm.devices[amd_index]
        amd_index += 1
        out.append(dataclasses.replace(gpu, gfx=dev.gfx) if dev else gpu)
    return tuple(out)


# ----------------------------------------------------------------------------- reader


def probe_rocm(m: Machine, timeout: float = 10.0) -> RocmInfo | None:
    """What ROCm sees on this Linux machine; None where there is no KFD and no ROCm at all."""
    devices = []
    for node in sorted(m.listdir(KFD_NODES), key=lambda n: int(n) if n.isdigit() else 0):
        text = m.read_text(f"{KFD_NODES}/{node}/properties")
        dev = kfd_device(parse_kfd_properties(text)) if text else None
        if dev is not None:
            devices.append(dev)
    source = "kfd-topology"
    version = next((v.strip() for v in map(m.read_text, ROCM_VERSION_FILES) if v), None)
    if not devices and m.which("rocminfo"):
        try:
            res = m.run(["rocminfo"], timeout)
            devices = list(parse_rocminfo(res.stdout))
            source = "rocminfo"
        except ToolError:
            pass
    kfd = m.exists("/dev/kfd")
    if not devices and not kfd and version is None:
        return None
    status = m.read_text("/proc/self/status")
    group_file = m.read_text("/etc/group")
    groups = groups_of_process(status, group_file or "") if status else None
    return RocmInfo(
        devices=tuple(devices),
        source=source,
        runtime_version=version,
        kfd_present=kfd,
        user_groups=groups,
        hsa_override=m.env.get("HSA_OVERRIDE_GFX_VERSION"),
    )
