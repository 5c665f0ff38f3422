"""Display devices from the PCI bus (sysfs) and the Windows registry."""

from __future__ import annotations

import json
from pathlib import Path

from torchsmith.probe.accelerators import (
    DisplayDevice,
    is_discrete,
    parse_uevent,
    parse_windows_display_adapters,
    pci_ids_name,
    scan_linux_pci,
)
from torchsmith.probe.host_windows import DISPLAY_CLASS_KEY, RegistryValue
from torchsmith.probe.machine_reader import ReplayMachine

FIXTURES = Path(__file__).parent / "fixtures"


def sysfs() -> dict[str, str]:
    data: dict[str, str] = json.loads((FIXTURES / "gpu/pci-linux/sysfs.json").read_text())
    return data


def test_pci_ids_lookup() -> None:
    db = (FIXTURES / "gpu/pci-linux/pci.ids").read_text()
    assert pci_ids_name(db, "10de", "2684") == "AD102 [GeForce RTX 4090]"
    assert pci_ids_name(db, "1002", "744c") == "Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]"
    assert pci_ids_name(db, "8086", "2684") is None  # a device id of another vendor
    assert pci_ids_name(db, "abcd", "0001") is None


def test_sysfs_scan_keeps_display_devices_only() -> None:
    devices = scan_linux_pci(ReplayMachine(files=sysfs()))  # no pci.ids on this machine
    assert [(d.pci_bus_id, d.vendor, d.driver, d.label) for d in devices] == [
        ("0000:00:02.0", "intel", "i915", "Intel GPU [8086:a780]"),
        ("0000:01:00.0", "nvidia", "nouveau", "NVIDIA GPU [10de:2684]"),
        ("0000:03:00.0", "amd", "amdgpu", "AMD GPU [1002:744c]"),
    ]
    assert devices[2].memory_total_bytes == 25753026560
    assert [is_discrete(d) for d in devices] == [False, True, True]


def test_uevent() -> None:
    text = sysfs()["/sys/bus/pci/devices/0000:03:00.0/uevent"]
    assert parse_uevent(text)["DRIVER"] == "amdgpu"


def test_intel_arc_on_its_own_bus_is_discrete() -> None:
    arc = DisplayDevice("intel", "8086", "56a0", None, "0000:03:00.0", "xe")
    assert is_discrete(arc)
    assert is_discrete(DisplayDevice("intel", "8086", "56a0", "Intel(R) Arc(TM) A770", None, None))
    assert not is_discrete(
        DisplayDevice("intel", "8086", "a788", "Intel(R) UHD Graphics", None, None)
    )


def test_windows_display_adapters_from_the_registry() -> None:
    keys = json.loads((FIXTURES / "host/windows11-laptop/registry.json").read_text())
    entries: list[dict[str, RegistryValue]] = [
        v for k, v in keys.items() if k.startswith(DISPLAY_CLASS_KEY + "\\") and v
    ]
    devices = parse_windows_display_adapters(entries)
    assert [(d.vendor, d.device_id, d.label, d.memory_total_bytes) for d in devices] == [
        ("intel", "a788", "Intel(R) UHD Graphics", 2 << 30),
        ("nvidia", "2d58", "NVIDIA GeForce RTX 5070 Laptop GPU", 8 << 30),
    ]


def test_windows_memory_size_as_binary_value() -> None:
    entry: dict[str, RegistryValue] = {
        "DriverDesc": "AMD Radeon RX 7900 XTX",
        "MatchingDeviceId": "PCI\\VEN_1002&DEV_744C&REV_C8",
        "HardwareInformation.qwMemorySize": (24 << 30).to_bytes(8, "little"),
    }
    (device,) = parse_windows_display_adapters([entry, {"MatchingDeviceId": "ROOT\\BasicDisplay"}])
    assert (device.vendor, device.memory_total_bytes) == ("amd", 24 << 30)
