"""GPUs seen without a vendor driver tool: the PCI bus (Linux sysfs), the display adapters in
the Windows registry, and Apple Silicon (sysctl).

These find AMD and Intel discrete GPUs and Apple GPUs, and NVIDIA GPUs whose driver does not
answer (so the doctor can say "GPU present, driver missing").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from torchsmith.errors import ToolError
from torchsmith.probe.host_macos import parse_sysctl
from torchsmith.probe.host_windows import DISPLAY_CLASS_KEY, RegistryValue, WindowsApi
from torchsmith.probe.machine_reader import Machine
from torchsmith.probe.model import GpuInfo

Vendor = Literal["nvidia", "amd", "intel", "apple"]
VENDOR_IDS: dict[str, Vendor] = {"10de": "nvidia", "1002": "amd", "8086": "intel"}
_VENDOR_NAMES: dict[Vendor, str] = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}
PCI_ROOT = "/sys/bus/pci/devices"
PCI_IDS_PATHS = ("/usr/share/hwdata/pci.ids", "/usr/share/misc/pci.ids", "/usr/share/pci.ids")
INTEGRATED_INTEL_SLOT = "0000:00:02.0"  # where Intel puts its integrated graphics


@dataclass(frozen=True)
class DisplayDevice:
    """A display-class device: PCI ids, where it sits, what drives it."""

    vendor: Vendor
    vendor_id: str  # "10de"
    device_id: str  # "2684"
    name: str | None  # from pci.ids or the registry
    pci_bus_id: str | None
    driver: str | None  # Linux kernel driver bound to it (nvidia, nouveau, amdgpu, ...)
    memory_total_bytes: int | None = None

    @property
    def label(self) -> str:
        return self.name or f"{_VENDOR_NAMES[self.vendor]} GPU [{self.vendor_id}:{self.device_id}]"

    def as_gpu(self, index: int, source: str) -> GpuInfo:
        return GpuInfo(
            index=index,
            name=self.label,
            vendor=self.vendor,
            memory_total_bytes=self.memory_total_bytes,
            pci_bus_id=self.pci_bus_id,
            source=source,
        )


def is_discrete(device: DisplayDevice) -> bool:
    """Intel integrated graphics are not an accelerator torchsmith plans for; others are."""
    if device.vendor != "intel":
        return True
    if device.pci_bus_id is not None:
        return device.pci_bus_id.lower() != INTEGRATED_INTEL_SLOT
    return bool(re.search(r"Arc\(TM\) [AB]\d{3}|Arc [AB]\d{3}|Data Center GPU", device.label))


# ----------------------------------------------------------------------------- pure parsers


def _hex_id(text: str | None) -> str | None:
    m = re.fullmatch(r"(?:0x)?([0-9a-fA-F]{4})", (text or "").strip())
    return m[1].lower() if m else None


def parse_uevent(text: str) -> dict[str, str]:
    """A sysfs ``uevent`` file (``KEY=value`` lines)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def pci_ids_name(text: str, vendor_id: str, device_id: str) -> str | None:
    """The device's name from a ``pci.ids`` database: ``"AD102 [GeForce RTX 4090]"``."""
    vendor_line = re.search(rf"^{re.escape(vendor_id)}\s+(.+)$", text, re.MULTILINE | re.I)
    if not vendor_line:
        return None
    section = text[vendor_line.end() :]
    next_vendor = re.search(r"^[0-9a-fA-F]{4}\s", section, re.MULTILINE)
    section = section[: next_vendor.start()] if next_vendor else section
    device = re.search(rf"^\t{re.escape(device_id)}\s+(.+)$", section, re.MULTILINE | re.I)
    return device[1].strip() if device else None


def parse_windows_display_adapters(
    entries: Sequence[Mapping[str, RegistryValue]],
) -> tuple[DisplayDevice, ...]:
    """Display adapter driver keys (DriverDesc, MatchingDeviceId, memory size) as devices."""
    out = []
    for entry in entries:
        match_id = entry.get("MatchingDeviceId")
        m = re.search(
            r"ven_([0-9a-f]{4})&dev_([0-9a-f]{4})",
            match_id if isinstance(match_id, str) else "",
            re.IGNORECASE,
        )
        if not m or m[1].lower() not in VENDOR_IDS:
            continue
        desc = entry.get("DriverDesc")
        memory = entry.get("HardwareInformation.qwMemorySize")
        if isinstance(memory, bytes) and len(memory) in (4, 8):
            memory = int.from_bytes(memory, "little")
        out.append(
            DisplayDevice(
                vendor=VENDOR_IDS[m[1].lower()],
                vendor_id=m[1].lower(),
                device_id=m[2].lower(),
                name=desc.strip() if isinstance(desc, str) and desc.strip() else None,
                pci_bus_id=None,
                driver=None,
                memory_total_bytes=memory if isinstance(memory, int) and memory > 0 else None,
            )
        )
    return tuple(out)


# ----------------------------------------------------------------------------- readers


def scan_linux_pci(m: Machine) -> tuple[DisplayDevice, ...]:
    """Display-class devices of NVIDIA, AMD and Intel on the PCI bus, from sysfs."""
    found = []
    for address in m.listdir(PCI_ROOT):
        base = f"{PCI_ROOT}/{address}"
        pci_class = (m.read_text(f"{base}/class") or "").strip().lower()
        if not pci_class.startswith("0x03"):  # 0x0300 VGA, 0x0302 3D controller, 0x0380 other
            continue
        vendor_id = _hex_id(m.read_text(f"{base}/vendor"))
        device_id = _hex_id(m.read_text(f"{base}/device"))
        if vendor_id not in VENDOR_IDS or device_id is None:
            continue
        vram = (m.read_text(f"{base}/mem_info_vram_total") or "").strip()  # amdgpu only
        found.append(
            DisplayDevice(
                vendor=VENDOR_IDS[vendor_id],
                vendor_id=vendor_id,
                device_id=device_id,
                name=None,
                pci_bus_id=address,
                driver=parse_uevent(m.read_text(f"{base}/uevent") or "").get("DRIVER"),
                memory_total_bytes=int(vram) if vram.isdigit() else None,
            )
        )
    return tuple(_named(m, found))


def _named(m: Machine, devices: list[DisplayDevice]) -> list[DisplayDevice]:
    if not devices:
        return devices
    db = next((t for t in (m.read_text(p) for p in PCI_IDS_PATHS) if t), None)
    if db is None:
        return devices
    out = []
    for d in devices:
        name = pci_ids_name(db, d.vendor_id, d.device_id)
        full = f"{_VENDOR_NAMES[d.vendor]} {name}" if name else None
        out.append(dataclasses.replace(d, name=full))
    return out


def scan_windows_registry(api: WindowsApi) -> tuple[DisplayDevice, ...]:
    """The display adapters Windows has drivers for (the Video Controller list)."""
    names = ("DriverDesc", "MatchingDeviceId", "HardwareInformation.qwMemorySize")
    entries = []
    for sub in api.registry_subkeys(DISPLAY_CLASS_KEY):
        if sub.isdigit():
            key = f"{DISPLAY_CLASS_KEY}\\{sub}"
            entries.append({n: api.registry_value(key, n) for n in names})
    return parse_windows_display_adapters(entries)


def apple_gpus(m: Machine, timeout: float = 5.0) -> tuple[GpuInfo, ...]:
    """The GPU of an Apple Silicon Mac (PyTorch's MPS device); none on Intel Macs."""
    try:
        res = m.run(
            ["sysctl", "hw.optional.arm64", "machdep.cpu.brand_string", "hw.memsize"], timeout
        )
    except ToolError:
        res = None
    values = parse_sysctl(res.stdout) if res is not None else {}
    arm = values.get("hw.optional.arm64") == "1" or m.machine().lower() in {"arm64", "aarch64"}
    if not arm:
        return ()
    chip = values.get("machdep.cpu.brand_string") or "Apple Silicon"
    memory = values.get("hw.memsize", "")
    return (
        GpuInfo(
            index=0,
            name=f"{chip} GPU",
            vendor="apple",
            memory_total_bytes=int(memory) if memory.isdigit() else None,  # unified memory
            source="sysctl",
        ),
    )
