"""The host section of the probe: OS, CPU, memory, disk, WSL and container.

RAM and core counts come from psutil on every OS (through :meth:`Machine.resources`); one
reader per operating system, dispatched on :func:`torchsmith.platforms.current_os`, adds what
psutil does not know (OS name and build, CPU model, P/E cores, WSL, containers). Each reads
the machine only through a :class:`~torchsmith.probe.machine_reader.Machine` (and, on
Windows, a :class:`~torchsmith.probe.host_windows.WindowsApi`), so tests replay recordings.
The parsers are pure functions of the text the OS gives.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from torchsmith import platforms
from torchsmith.probe import host_macos, host_windows
from torchsmith.probe.machine_reader import LiveMachine, Machine
from torchsmith.probe.model import HostInfo

log = logging.getLogger(__name__)

_ARCH_ALIASES = {
    "amd64": "x86_64",
    "x86_64": "x86_64",
    "x64": "x86_64",
    "arm64": "aarch64",
    "aarch64": "aarch64",
    "armv8l": "aarch64",
    "i386": "x86",
    "i686": "x86",
    "x86": "x86",
}


def normalise_arch(machine: str) -> str:
    """``AMD64``/``x86_64`` → ``x86_64``; ``arm64``/``aarch64`` → ``aarch64``; else lowercased."""
    return _ARCH_ALIASES.get(machine.strip().lower(), machine.strip().lower() or "unknown")


# ----------------------------------------------------------------------------- pure parsers


def parse_os_release(text: str) -> dict[str, str]:
    """``/etc/os-release`` (KEY=value lines, values optionally quoted) as a dict."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key.strip()] = re.sub(r"\\([\\$\"'`])", r"\1", value)
    return values


def parse_cpu_model(text: str) -> str | None:
    """The CPU model ``/proc/cpuinfo`` names (x86 ``model name``; ARM ``Hardware``/``CPU part``)."""
    arm_part: str | None = None
    for block in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields.setdefault(key.strip().lower(), value.strip())
        for key in ("model name", "cpu model", "hardware", "model"):
            value = fields.get(key)
            if value and not value.isdigit():
                return value
        arm_part = arm_part or fields.get("cpu part")
    return f"ARM CPU part {arm_part}" if arm_part else None


def parse_cpu_list(text: str) -> frozenset[int]:
    """A kernel CPU list (``0-3,8,10-11``) as a set of CPU numbers; empty when malformed."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            return frozenset()
        cpus.update(range(int(lo), int(hi) + 1) if sep else (int(lo),))
    return frozenset(cpus)


def detect_wsl(proc_version: str | None, env: Mapping[str, str]) -> bool:
    """WSL 1 and 2: the kernel names Microsoft, or WSL's environment variables are set."""
    if env.get("WSL_DISTRO_NAME") or env.get("WSL_INTEROP"):
        return True
    text = (proc_version or "").lower()
    return "microsoft" in text or "wsl" in text


_CGROUP_MARKERS = (
    ("kubepods", "kubernetes"),
    ("docker", "docker"),
    ("libpod", "podman"),
    ("lxc", "lxc"),
    ("containerd", "container"),
)


def detect_container(
    *,
    env: Mapping[str, str],
    dockerenv: bool,
    containerenv: bool,
    proc1_cgroup: str | None,
) -> str | None:
    """Which container runtime (if any) this process runs in, from the usual markers."""
    if env.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if containerenv:
        return "podman"
    if dockerenv:
        return "docker"
    declared = env.get("container", "").strip().lower()  # systemd's convention
    if declared:
        return declared if declared in {"docker", "podman", "lxc"} else "container"
    cgroup = (proc1_cgroup or "").lower()
    for marker, kind in _CGROUP_MARKERS:
        if marker in cgroup:
            return kind
    return None


def linux_pretty(os_release: Mapping[str, str]) -> tuple[str, str | None]:
    """(``"Ubuntu 24.04.1 LTS"``, ``"24.04"``) from parsed ``/etc/os-release``."""
    pretty = os_release.get("PRETTY_NAME") or " ".join(
        v for v in (os_release.get("NAME"), os_release.get("VERSION")) if v
    )
    return pretty or "Linux", os_release.get("VERSION_ID")


# ----------------------------------------------------------------------------- Linux reader


def _hybrid_cores(m: Machine) -> tuple[int | None, int | None]:
    """(P cores, E cores) of an Intel hybrid CPU from sysfs; Nones elsewhere (psutil cannot tell).

    The kernel lists the P and E logical CPUs; grouping them by their core's thread siblings
    counts cores, not threads.
    """
    p_cpus = parse_cpu_list(m.read_text("/sys/devices/cpu_core/cpus") or "")
    e_cpus = parse_cpu_list(m.read_text("/sys/devices/cpu_atom/cpus") or "")
    if not (p_cpus and e_cpus):
        return None, None
    root = "/sys/devices/system/cpu"
    core_of: dict[int, str] = {}
    for cpu in p_cpus | e_cpus:
        siblings = m.read_text(f"{root}/cpu{cpu}/topology/core_cpus_list") or m.read_text(
            f"{root}/cpu{cpu}/topology/thread_siblings_list"
        )
        if siblings:
            package = (m.read_text(f"{root}/cpu{cpu}/topology/physical_package_id") or "").strip()
            core_of[cpu] = f"{package}:{siblings.strip()}"
    p_cores = len({core_of[c] for c in p_cpus if c in core_of})
    e_cores = len({core_of[c] for c in e_cpus if c in core_of})
    return p_cores or None, e_cores or None


def _read_linux(m: Machine, info: HostInfo) -> HostInfo:
    pretty, version = linux_pretty(parse_os_release(m.read_text("/etc/os-release") or ""))
    p_cores, e_cores = _hybrid_cores(m)
    return dataclasses.replace(
        info,
        os_pretty=pretty,
        os_version=version,
        os_build=m.kernel_release() or None,
        cpu_model=parse_cpu_model(m.read_text("/proc/cpuinfo") or ""),
        cores_performance=p_cores,
        cores_efficiency=e_cores,
        wsl=detect_wsl(m.read_text("/proc/version"), m.env),
        nvidia_devices=tuple(n for n in m.listdir("/dev") if n.startswith("nvidia")),
        container=detect_container(
            env=m.env,
            dockerenv=m.exists("/.dockerenv"),
            containerenv=m.exists("/run/.containerenv"),
            proc1_cgroup=m.read_text("/proc/1/cgroup"),
        ),
    )


# ----------------------------------------------------------------------------- entry point


def probe_host(
    disk_path: Path,
    *,
    machine: Machine | None = None,
    windows_api: host_windows.WindowsApi | None = None,
) -> HostInfo:
    """Describe this host; never raises (a failure is reported in ``HostInfo.error``).

    ``machine`` and ``windows_api`` replace the real machine (tests, replays).
    """
    m = machine if machine is not None else LiveMachine()
    os_name = platforms.current_os()
    readers: dict[platforms.OsName, Callable[[Machine, HostInfo], HostInfo]] = {
        "linux": _read_linux,
        "windows": functools.partial(host_windows.read_windows, api=windows_api),
        "macos": host_macos.read_macos,
    }
    errors: list[str] = []
    try:
        arch = normalise_arch(m.machine())
    except Exception as exc:  # noqa: BLE001 - a probe reports, it never raises
        errors.append(f"CPU architecture: {type(exc).__name__}: {exc}")
        arch = "unknown"
    base = _with_resources(m, HostInfo(os=os_name, os_pretty=os_name, arch=arch), errors)
    try:
        info = readers[os_name](m, base)
    except Exception as exc:  # a probe reports, it never raises
        log.debug("host probe failed", exc_info=True)
        errors.append(f"{os_name} host details: {type(exc).__name__}: {exc}")
        info = base
    info = _with_disk(m, info, disk_path, errors)
    return dataclasses.replace(
        info,
        cuda_visible_devices=m.env.get("CUDA_VISIBLE_DEVICES"),
        nvidia_driver_capabilities=m.env.get("NVIDIA_DRIVER_CAPABILITIES"),
        error="; ".join(errors) or None,
    )


def _with_resources(m: Machine, info: HostInfo, errors: list[str]) -> HostInfo:
    """RAM and core counts, the same way on every OS (psutil); the OS readers add the rest."""
    try:
        seen = m.resources()
    except Exception as exc:  # noqa: BLE001 - a probe reports, it never raises
        errors.append(f"memory and CPU counts: {type(exc).__name__}: {exc}")
        return info
    return dataclasses.replace(
        info,
        ram_total_bytes=seen.ram_total_bytes,
        ram_available_bytes=seen.ram_available_bytes,
        cores_logical=seen.cores_logical,
        cores_physical=seen.cores_physical,
    )


def _with_disk(m: Machine, info: HostInfo, disk_path: Path, errors: list[str]) -> HostInfo:
    path = Path(disk_path)
    # The build folder may not exist yet: measure the nearest existing parent.
    while not m.exists(str(path)) and path.parent != path:
        path = path.parent
    try:
        free = m.disk_free(str(path))
    except (OSError, ValueError) as exc:
        errors.append(f"free disk space at {disk_path}: {exc}")
        return dataclasses.replace(info, disk_path=str(disk_path))
    return dataclasses.replace(info, disk_path=str(disk_path), disk_free_bytes=free)
