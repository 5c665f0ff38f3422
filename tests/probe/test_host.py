"""probe_host: real parsers on recorded files, replayed Windows/macOS, and the real machine."""

from __future__ import annotations

import json
import os
import shutil
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from torchsmith import platforms
from torchsmith.probe import host_windows
from torchsmith.probe.host import (
    detect_container,
    detect_wsl,
    normalise_arch,
    parse_cpu_list,
    parse_cpu_model,
    parse_os_release,
    probe_host,
)
from torchsmith.probe.host_macos import SYSCTL_KEYS, parse_sysctl
from torchsmith.probe.host_windows import (
    CoreRecord,
    RegistryValue,
    hybrid_split,
    parse_processor_cores,
    windows_pretty,
)
from torchsmith.probe.machine_reader import LiveMachine, ReplayMachine, Resources, result
from torchsmith.probe.model import HostInfo

FIXTURES = Path(__file__).parent / "fixtures" / "host"
GIB = 1 << 30
# What psutil reported on this CI container (Debian 12 in Docker, 2 vCPU, 24 GiB).
DEBIAN_RESOURCES = Resources(25_276_502_016, 24_438_771_712, cores_logical=2, cores_physical=2)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def debian_files() -> dict[str, str]:
    return {
        "/etc/os-release": fixture("debian12-docker/os-release"),
        "/proc/cpuinfo": fixture("debian12-docker/cpuinfo"),
        "/proc/version": fixture("debian12-docker/version"),
        "/proc/1/cgroup": fixture("debian12-docker/proc1-cgroup"),
        "/.dockerenv": "",
    }


# ----------------------------------------------------------------------------- parsers


def test_os_release_real_and_quoted() -> None:
    debian = parse_os_release(fixture("debian12-docker/os-release"))
    assert (debian["PRETTY_NAME"], debian["VERSION_ID"]) == ("Debian GNU/Linux 12 (bookworm)", "12")
    ubuntu = parse_os_release(fixture("ubuntu2404-wsl/os-release"))
    assert (ubuntu["PRETTY_NAME"], ubuntu["ID"], ubuntu["ID_LIKE"]) == (
        "Ubuntu 24.04.1 LTS",
        "ubuntu",
        "debian",
    )
    assert parse_os_release("# comment\nNAME='Arch Linux'\nBAD LINE\n") == {"NAME": "Arch Linux"}


def test_cpu_model_x86_and_arm() -> None:
    assert parse_cpu_model(fixture("debian12-docker/cpuinfo")) == "AMD EPYC"
    assert parse_cpu_model(fixture("aarch64/cpuinfo")) == "ARM CPU part 0xd0c"
    assert parse_cpu_model("") is None


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("0-1\n", {0, 1}), ("0-3,8,10-11", {0, 1, 2, 3, 8, 10, 11}), ("", set()), ("x-2", set())],
)
def test_cpu_list(text: str, cpus: set[int]) -> None:
    assert parse_cpu_list(text) == cpus


@pytest.mark.parametrize(
    ("machine", "arch"),
    [("AMD64", "x86_64"), ("x86_64", "x86_64"), ("arm64", "aarch64"), ("ARM64", "aarch64")],
)
def test_arch_is_normalised(machine: str, arch: str) -> None:
    assert normalise_arch(machine) == arch


def test_wsl_detection() -> None:
    assert detect_wsl(fixture("ubuntu2404-wsl/version"), {})
    assert detect_wsl(None, {"WSL_DISTRO_NAME": "Ubuntu"})
    assert not detect_wsl(fixture("debian12-docker/version"), {})


@pytest.mark.parametrize(
    ("kw", "kind"),
    [
        ({"dockerenv": True}, "docker"),
        ({"containerenv": True}, "podman"),
        ({"env": {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "dockerenv": True}, "kubernetes"),
        ({"env": {"container": "lxc"}}, "lxc"),
        ({"env": {"container": "systemd-nspawn"}}, "container"),
        ({"proc1_cgroup": "0::/kubepods/besteffort/pod1/abc\n"}, "kubernetes"),
        ({"proc1_cgroup": "12:cpu:/docker/0123abcd\n"}, "docker"),
        ({"proc1_cgroup": fixture("debian12-docker/proc1-cgroup")}, None),
        ({}, None),
    ],
)
def test_container_detection(kw: dict[str, Any], kind: str | None) -> None:
    args: dict[str, Any] = {"env": {}, "dockerenv": False, "containerenv": False}
    args["proc1_cgroup"] = None
    args.update(kw)
    assert detect_container(**args) == kind


# ----------------------------------------------------------------------------- Linux replays


def test_linux_replay_of_this_container() -> None:
    machine = ReplayMachine(
        files=debian_files(),
        release="6.18.44-fc-v657",
        resources_seen=DEBIAN_RESOURCES,
        free_bytes=80 * GIB,
    )
    with platforms.override("linux"):
        info = probe_host(Path("/work/build"), machine=machine)
    assert info == HostInfo(
        os="linux",
        os_pretty="Debian GNU/Linux 12 (bookworm)",
        os_version="12",
        os_build="6.18.44-fc-v657",
        arch="x86_64",
        cpu_model="AMD EPYC",
        cores_physical=2,
        cores_logical=2,
        ram_total_bytes=25_276_502_016,
        ram_available_bytes=24_438_771_712,
        disk_path="/work/build",
        disk_free_bytes=80 * GIB,
        wsl=False,
        container="docker",
        nvidia_devices=(),
    )


def test_linux_replay_lists_the_nvidia_device_nodes_and_the_gpu_variables() -> None:
    files = {**debian_files(), "/dev/nvidiactl": "", "/dev/nvidia0": "", "/dev/null": ""}
    machine = ReplayMachine(
        files=files,
        environ={"CUDA_VISIBLE_DEVICES": "0", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"},
    )
    with platforms.override("linux"):
        info = probe_host(Path("/work/build"), machine=machine)
    assert info.nvidia_devices == ("nvidia0", "nvidiactl")
    assert (info.cuda_visible_devices, info.nvidia_driver_capabilities) == ("0", "compute,utility")


def hybrid_topology(p_cores: int, e_cores: int) -> dict[str, str]:
    """sysfs of an Intel hybrid CPU: P-cores with two threads, then single-thread E-cores."""
    root = "/sys/devices/system/cpu"
    files: dict[str, str] = {}
    cpu = 0
    for _ in range(p_cores):
        for thread in (cpu, cpu + 1):
            files[f"{root}/cpu{thread}/topology/core_cpus_list"] = f"{cpu}-{cpu + 1}\n"
            files[f"{root}/cpu{thread}/topology/physical_package_id"] = "0\n"
        cpu += 2
    first_e = cpu
    for _ in range(e_cores):
        files[f"{root}/cpu{cpu}/topology/core_cpus_list"] = f"{cpu}\n"
        files[f"{root}/cpu{cpu}/topology/physical_package_id"] = "0\n"
        cpu += 1
    files[f"{root}/online"] = f"0-{cpu - 1}\n"
    files["/sys/devices/cpu_core/cpus"] = f"0-{first_e - 1}\n"
    files["/sys/devices/cpu_atom/cpus"] = f"{first_e}-{cpu - 1}\n"
    return files


def test_linux_hybrid_cpu_counts_p_and_e_cores() -> None:
    files = {**hybrid_topology(8, 4), "/etc/os-release": fixture("ubuntu2404-wsl/os-release")}
    counts = Resources(cores_logical=20, cores_physical=12)  # psutil's, for the same CPU
    with platforms.override("linux"):
        info = probe_host(Path("/"), machine=ReplayMachine(files=files, resources_seen=counts))
    assert (info.cores_physical, info.cores_logical) == (12, 20)
    assert (info.cores_performance, info.cores_efficiency) == (8, 4)


def test_linux_without_hybrid_lists_has_no_p_e_split() -> None:
    files = {k: v for k, v in hybrid_topology(8, 4).items() if "/cpu_atom/" not in k}
    with platforms.override("linux"):
        info = probe_host(Path("/"), machine=ReplayMachine(files=files))
    assert (info.cores_performance, info.cores_efficiency) == (None, None)


def test_wsl_ubuntu_replay() -> None:
    files = {
        "/etc/os-release": fixture("ubuntu2404-wsl/os-release"),
        "/proc/version": fixture("ubuntu2404-wsl/version"),
    }
    machine = ReplayMachine(
        files=files,
        environ={"WSL_DISTRO_NAME": "Ubuntu-24.04"},
        resources_seen=Resources(cores_logical=16),
    )
    with platforms.override("linux"):
        info = probe_host(Path("/"), machine=machine)
    assert (info.os_pretty, info.os_version, info.wsl, info.container) == (
        "Ubuntu 24.04.1 LTS",
        "24.04",
        True,
        None,
    )
    assert (info.cores_logical, info.cores_physical, info.ram_total_bytes) == (16, None, None)


def test_missing_build_folder_measures_its_nearest_parent() -> None:
    seen: list[str] = []

    class Recording(ReplayMachine):
        def disk_free(self, path: str) -> int:
            seen.append(path)
            return 5 * GIB

    machine = Recording(files={"/work/main/README.md": ""})
    with platforms.override("linux"):
        info = probe_host(Path("/work/main/build/new"), machine=machine)
    assert seen == ["/work/main"]
    assert (info.disk_path, info.disk_free_bytes) == ("/work/main/build/new", 5 * GIB)


def test_disk_failure_is_a_reason_not_an_exception() -> None:
    machine = ReplayMachine(free_bytes=PermissionError(13, "Permission denied"))
    with platforms.override("linux"):
        info = probe_host(Path("/root"), machine=machine)
    assert info.disk_free_bytes is None
    assert info.error == "free disk space at /root: [Errno 13] Permission denied"


def test_a_reader_that_breaks_is_reported() -> None:
    class Broken(ReplayMachine):
        def read_text(self, path: str) -> str | None:
            raise RuntimeError("procfs exploded")

    with platforms.override("linux"):
        info = probe_host(Path("/"), machine=Broken())
    assert info.os == "linux"
    assert info.error == "linux host details: RuntimeError: procfs exploded"


def test_psutil_failure_is_reported_and_the_rest_kept() -> None:
    class NoPsutil(ReplayMachine):
        def resources(self) -> Resources:
            raise PermissionError(13, "Permission denied")

    with platforms.override("linux"):
        info = probe_host(Path("/"), machine=NoPsutil(files=debian_files()))
    assert (info.os_pretty, info.cpu_model, info.ram_total_bytes) == (
        "Debian GNU/Linux 12 (bookworm)",
        "AMD EPYC",
        None,
    )
    assert info.error == "memory and CPU counts: PermissionError: [Errno 13] Permission denied"


# ----------------------------------------------------------------------------- Windows


def core_record(efficiency: int, mask: int, flags: int = 0) -> bytes:
    """One SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX record of RelationProcessorCore (64-bit)."""
    body = struct.pack("<BB20sH", flags, efficiency, b"\0" * 20, 1)
    body += struct.pack("<QH6s", mask, 0, b"\0" * 6)
    return struct.pack("<II", 0, 8 + len(body)) + body


def i9_14900hx_buffer() -> bytes:
    """8 P-cores with two threads (efficiency class 1), then 16 E-cores (class 0)."""
    records = [core_record(1, 0b11 << (2 * i), flags=1) for i in range(8)]
    records += [core_record(0, 1 << (16 + i)) for i in range(16)]
    return b"".join(records)


class RecordedWindows:
    """A WindowsApi answering from registry.json and recorded kernel32 results."""

    def __init__(self, cores: bytes | None) -> None:
        data = json.loads(fixture("windows11-laptop/registry.json"))
        self.keys: dict[str, dict[str, RegistryValue]] = data
        self.cores = cores

    def registry_value(self, key: str, name: str) -> RegistryValue:
        return self.keys.get(key, {}).get(name)

    def registry_subkeys(self, key: str) -> tuple[str, ...]:
        return tuple(k[len(key) + 1 :] for k in self.keys if k.startswith(key + "\\"))

    def processor_cores(self) -> bytes | None:
        return self.cores


def test_processor_core_records_decode() -> None:
    cores = parse_processor_cores(i9_14900hx_buffer())
    assert cores[0] == CoreRecord(efficiency_class=1, logical=2)
    assert cores[-1] == CoreRecord(efficiency_class=0, logical=1)
    assert (len(cores), sum(c.logical for c in cores)) == (24, 32)
    assert hybrid_split(cores) == (8, 16)
    uniform = parse_processor_cores(b"".join(core_record(0, 0b11 << (2 * i)) for i in range(6)))
    assert hybrid_split(uniform) == (None, None)
    assert parse_processor_cores(b"\x00\x00") == ()


@pytest.mark.parametrize(
    ("product", "build", "pretty"),
    [
        ("Windows 10 Pro", 26100, "Windows 11 Pro (build 26100)"),
        ("Windows 10 Home", 22631, "Windows 11 Home (build 22631)"),
        ("Windows 10 Pro", 19045, "Windows 10 Pro (build 19045)"),
        (None, None, "Windows"),
    ],
)
def test_windows_11_reports_itself_as_10(
    product: str | None, build: int | None, pretty: str
) -> None:
    assert windows_pretty(product, build, None) == pretty


def test_windows_laptop_replay() -> None:
    api = RecordedWindows(i9_14900hx_buffer())
    counts = Resources(34_072_064_000, 21_474_836_480, cores_logical=32, cores_physical=24)
    machine = ReplayMachine(arch="AMD64", resources_seen=counts, free_bytes=412 * GIB)
    with platforms.override("windows"):
        info = probe_host(Path(r"C:\Users\ana\build"), machine=machine, windows_api=api)
    assert info == HostInfo(
        os="windows",
        os_pretty="Windows 11 Pro (build 26100)",
        os_version="10.0.26100",
        os_build="26100.2454",
        arch="x86_64",
        cpu_model="Intel(R) Core(TM) i9-14900HX",
        cores_physical=24,
        cores_logical=32,
        cores_performance=8,
        cores_efficiency=16,
        ram_total_bytes=34_072_064_000,
        ram_available_bytes=21_474_836_480,
        disk_path=r"C:\Users\ana\build",
        disk_free_bytes=412 * GIB,
    )


def test_windows_without_kernel32_answers_keeps_what_it_has() -> None:
    machine = ReplayMachine(arch="ARM64", resources_seen=Resources(cores_logical=12))
    with platforms.override("windows"):
        info = probe_host(Path("C:/"), machine=machine, windows_api=RecordedWindows(None))
    assert (info.arch, info.cores_physical, info.cores_logical, info.cores_performance) == (
        "aarch64",
        None,
        12,
        None,
    )
    assert info.error is None


def test_live_windows_api_fails_softly_off_windows() -> None:
    if os.name == "nt":
        pytest.skip("only meaningful off Windows")
    api = host_windows.LiveWindowsApi()
    assert api.registry_value(host_windows.CURRENT_VERSION_KEY, "CurrentBuild") is None
    assert api.registry_subkeys(host_windows.DISPLAY_CLASS_KEY) == ()
    assert api.processor_cores() is None


# ----------------------------------------------------------------------------- macOS


def mac_machine() -> ReplayMachine:
    sysctl_argv = ("sysctl", *SYSCTL_KEYS)
    commands: dict[tuple[str, ...], Any] = {
        sysctl_argv: result(sysctl_argv, stdout=fixture("macos-m3pro/sysctl.txt")),
    }
    counts = Resources(36 * GIB, 17 * GIB, cores_logical=12, cores_physical=12)
    return ReplayMachine(
        commands=commands,
        arch="x86_64",
        mac_ver="15.1",
        release="24.1.0",
        resources_seen=counts,
    )


def test_macos_parsers() -> None:
    values = parse_sysctl(fixture("macos-m3pro/sysctl.txt"))
    assert values["machdep.cpu.brand_string"] == "Apple M3 Pro"
    assert values["hw.perflevel1.physicalcpu"] == "6"
    assert parse_sysctl("garbage\nkern.osversion: 24B83\n") == {"kern.osversion": "24B83"}


def test_macos_replay_under_rosetta_reports_the_real_arch() -> None:
    with platforms.override("macos"):
        info = probe_host(Path("/Users/ana"), machine=mac_machine())
    assert (info.os_pretty, info.os_version, info.os_build, info.arch) == (
        "macOS 15.1",
        "15.1",
        "24B83",
        "aarch64",
    )
    assert (info.cpu_model, info.cores_physical, info.cores_logical) == ("Apple M3 Pro", 12, 12)
    assert (info.cores_performance, info.cores_efficiency) == (6, 6)
    assert (info.ram_total_bytes, info.ram_available_bytes) == (36 * GIB, 17 * GIB)


# ----------------------------------------------------------------------------- the real machine


@pytest.mark.skipif(platforms.current_os() != "linux", reason="reads this Linux machine")
def test_live_probe_host_matches_the_machine(tmp_path: Path) -> None:
    started = time.perf_counter()
    info = probe_host(tmp_path)
    elapsed = time.perf_counter() - started
    assert info.error is None
    assert info.os == "linux"
    assert (
        info.cores_logical == len(os.sched_getaffinity(0)) or info.cores_logical == os.cpu_count()
    )
    assert info.cores_physical is not None
    assert info.cores_logical is not None
    assert 0 < info.cores_physical <= info.cores_logical
    total_kib = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    assert info.ram_total_bytes == total_kib * 1024
    assert info.ram_available_bytes is not None
    assert 0 < info.ram_available_bytes <= info.ram_total_bytes
    assert info.disk_free_bytes is not None
    assert abs(info.disk_free_bytes - shutil.disk_usage(tmp_path).free) < GIB
    expected_container = (
        "docker"
        if Path("/.dockerenv").exists() and not os.environ.get("KUBERNETES_SERVICE_HOST")
        else info.container
    )
    assert info.container == expected_container
    assert elapsed < 1.0, f"probe_host took {elapsed:.3f}s"


def test_live_machine_resources_are_psutil_on_any_os() -> None:
    seen = LiveMachine().resources()
    assert seen.ram_total_bytes is not None
    assert seen.cores_logical == os.cpu_count()
    assert seen.cores_physical is not None
    assert 0 < seen.cores_physical <= seen.cores_logical
