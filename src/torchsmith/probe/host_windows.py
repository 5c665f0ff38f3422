"""Windows host details: the registry and one kernel32 call, behind :class:`WindowsApi`.

RAM and core counts come from psutil (:meth:`Machine.resources`); kernel32 is asked only for
what psutil does not know, the efficiency class of each core (P and E cores).

Everything Windows-only (``winreg``, ``ctypes.windll``) lives in :class:`LiveWindowsApi` and is
imported when first used; the rest are pure functions tested on any OS with recorded values.
"""

from __future__ import annotations

import dataclasses
import importlib
import struct
from dataclasses import dataclass
from typing import Any, Protocol

from torchsmith.probe.machine_reader import Machine
from torchsmith.probe.model import HostInfo

CURRENT_VERSION_KEY = r"SOFTWARE\Microsoft\Windows NT\CurrentVersion"
CPU_KEY = r"HARDWARE\DESCRIPTION\System\CentralProcessor\0"
DISPLAY_CLASS_KEY = r"SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}"
_RELATION_PROCESSOR_CORE = 0
_FIRST_WINDOWS_11_BUILD = 22000

RegistryValue = str | int | bytes | None


class WindowsApi(Protocol):
    """The Windows reads the probes do (all under HKEY_LOCAL_MACHINE); none raises."""

    def registry_value(self, key: str, name: str) -> RegistryValue: ...

    def registry_subkeys(self, key: str) -> tuple[str, ...]: ...

    def processor_cores(self) -> bytes | None:
        """The raw GetLogicalProcessorInformationEx(RelationProcessorCore) buffer."""


def windows_pretty(product_name: str | None, build: int | None, edition: str | None) -> str:
    """``"Windows 11 Pro (build 26100)"``.

    Windows 11 still calls itself "Windows 10" in ProductName (and release "10" in
    ``platform``); build 22000 and later is Windows 11.
    """
    name = (product_name or "").strip() or f"Windows {edition or ''}".strip()
    if build is not None and build >= _FIRST_WINDOWS_11_BUILD:
        name = name.replace("Windows 10", "Windows 11")
    return f"{name} (build {build})" if build is not None else name


@dataclass(frozen=True)
class CoreRecord:
    """One physical core: its efficiency class (higher = faster) and its logical processors."""

    efficiency_class: int
    logical: int


def parse_processor_cores(buf: bytes) -> tuple[CoreRecord, ...]:
    """Decode SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX records of RelationProcessorCore.

    Layout (64-bit): DWORD Relationship, DWORD Size, then PROCESSOR_RELATIONSHIP: BYTE Flags,
    BYTE EfficiencyClass, BYTE Reserved[20], WORD GroupCount, GROUP_AFFINITY GroupMask[] (each
    an 8-byte mask, WORD Group, WORD Reserved[3]).
    """
    cores: list[CoreRecord] = []
    offset = 0
    while offset + 8 <= len(buf):
        relationship, size = struct.unpack_from("<II", buf, offset)
        if size < 8 or offset + size > len(buf):
            break
        if relationship == _RELATION_PROCESSOR_CORE and size >= 32:
            efficiency = buf[offset + 9]
            (group_count,) = struct.unpack_from("<H", buf, offset + 30)
            logical = 0
            for g in range(group_count):
                at = offset + 32 + 16 * g
                if at + 8 <= offset + size:
                    (mask,) = struct.unpack_from("<Q", buf, at)
                    logical += bin(mask).count("1")
            cores.append(CoreRecord(efficiency, logical))
        offset += size
    return tuple(cores)


def hybrid_split(cores: tuple[CoreRecord, ...]) -> tuple[int | None, int | None]:
    """(P cores, E cores) on a hybrid CPU (two efficiency classes or more); Nones otherwise."""
    classes = {c.efficiency_class for c in cores}
    if len(classes) < 2:
        return None, None
    top = max(classes)
    p_cores = sum(1 for c in cores if c.efficiency_class == top)
    return p_cores, len(cores) - p_cores


def read_windows(m: Machine, info: HostInfo, api: WindowsApi | None = None) -> HostInfo:
    """The host details of a Windows machine."""
    w = api if api is not None else LiveWindowsApi()
    build_text = w.registry_value(CURRENT_VERSION_KEY, "CurrentBuild")
    build = int(build_text) if isinstance(build_text, str) and build_text.isdigit() else None
    ubr = w.registry_value(CURRENT_VERSION_KEY, "UBR")
    product = w.registry_value(CURRENT_VERSION_KEY, "ProductName")
    edition = w.registry_value(CURRENT_VERSION_KEY, "EditionID")
    cpu = w.registry_value(CPU_KEY, "ProcessorNameString")
    buf = w.processor_cores()
    p_cores, e_cores = hybrid_split(parse_processor_cores(buf) if buf else ())
    return dataclasses.replace(
        info,
        os_pretty=windows_pretty(
            product if isinstance(product, str) else None,
            build,
            edition if isinstance(edition, str) else None,
        ),
        os_version=f"10.0.{build}" if build is not None else None,
        os_build=(f"{build}.{ubr}" if isinstance(ubr, int) else str(build)) if build else None,
        cpu_model=cpu.strip() if isinstance(cpu, str) and cpu.strip() else None,
        cores_performance=p_cores,
        cores_efficiency=e_cores,
    )


class LiveWindowsApi:
    """The real registry and kernel32 (only works on Windows; every failure answers None)."""

    def _winreg(self) -> Any:
        return importlib.import_module("winreg")

    def _kernel32(self) -> Any:
        import ctypes  # noqa: PLC0415 - Windows only, kept off the import path elsewhere

        return getattr(ctypes, "WinDLL")("kernel32", use_last_error=True)  # noqa: B009

    def registry_value(self, key: str, name: str) -> RegistryValue:
        try:
            winreg = self._winreg()
            with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, key) as handle:
                value, _kind = winreg.QueryValueEx(handle, name)
        except (OSError, ImportError):
            return None
        return value if isinstance(value, (str, int, bytes)) else None

    def registry_subkeys(self, key: str) -> tuple[str, ...]:
        names: list[str] = []
        try:
            winreg = self._winreg()
            with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, key) as handle:
                for i in range(winreg.QueryInfoKey(handle)[0]):
                    names.append(winreg.EnumKey(handle, i))
        except (OSError, ImportError):
            pass
        return tuple(names)

    def processor_cores(self) -> bytes | None:
        import ctypes  # noqa: PLC0415 - Windows only, kept off the import path elsewhere

        try:
            kernel32 = self._kernel32()
            size = ctypes.c_ulong(0)
            kernel32.GetLogicalProcessorInformationEx(
                _RELATION_PROCESSOR_CORE, None, ctypes.byref(size)
            )
            buf = ctypes.create_string_buffer(size.value)
            if not kernel32.GetLogicalProcessorInformationEx(
                _RELATION_PROCESSOR_CORE, buf, ctypes.byref(size)
            ):
                return None
            return buf.raw[: size.value]
        except (OSError, AttributeError):
            return None
