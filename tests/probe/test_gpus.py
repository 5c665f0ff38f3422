"""probe_gpus: NVML, then nvidia-smi, then the PCI bus, replayed from recorded outputs.

Recordings: tests/probe/fixtures/gpu/README.md says which are real and which hand-made.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

from torchsmith import platforms
from torchsmith.probe import nvidia_smi, nvml
from torchsmith.probe.gpus import probe_gpus
from torchsmith.probe.host_windows import RegistryValue
from torchsmith.probe.machine_reader import ReplayMachine, result
from torchsmith.probe.model import GpuInfo
from torchsmith.util.cmd import CommandResult, CommandTimeoutError

FIXTURES = Path(__file__).parent / "fixtures" / "gpu"
MIB = 1 << 20
HAS_DRIVER = Path("/proc/driver/nvidia/version").exists()


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


class RecordedNvml:
    """A ``pynvml``-shaped module answering from a recording (nvml.json), raising the real
    ``pynvml.NVMLError`` types the way NVML does."""

    NVMLError = pynvml.NVMLError

    def __init__(self, recording: dict[str, Any] | None, init_error: int | None = None) -> None:
        self.rec = recording or {}
        self.init_error = init_error
        self.shut_down = False

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise pynvml.NVMLError(self.init_error)

    def nvmlShutdown(self) -> None:
        self.shut_down = True

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(self.rec["driver"])

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return int(self.rec["cuda_driver_version"])

    def nvmlDeviceGetCount(self) -> int:
        return len(self.rec["gpus"])

    def nvmlDeviceGetHandleByIndex(self, index: int) -> dict[str, Any]:
        return dict(self.rec["gpus"][index])

    def nvmlDeviceGetName(self, h: dict[str, Any]) -> bytes:
        return str(h["name"]).encode()  # older nvidia-ml-py returns bytes

    def nvmlDeviceGetUUID(self, h: dict[str, Any]) -> str:
        return str(h["uuid"])

    def nvmlDeviceGetCudaComputeCapability(self, h: dict[str, Any]) -> tuple[int, int]:
        return int(h["cc"][0]), int(h["cc"][1])

    def nvmlDeviceGetMemoryInfo(self, h: dict[str, Any]) -> SimpleNamespace:
        return SimpleNamespace(total=h["mem_total"], free=h["mem_total"], used=0)

    def nvmlDeviceGetPciInfo(self, h: dict[str, Any]) -> SimpleNamespace:
        return SimpleNamespace(busId=str(h["pci"]).encode())

    def nvmlDeviceGetMigMode(self, h: dict[str, Any]) -> list[int]:
        if h["mig"] is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return list(h["mig"])


def nvml_from(name: str) -> RecordedNvml:
    return RecordedNvml(json.loads(fixture(name)))


def nvml_failing(code: int) -> RecordedNvml:
    return RecordedNvml(None, init_error=code)


def smi(name: str, argv: tuple[str, ...] = nvidia_smi.XML_ARGV, rc: int = 0) -> CommandResult:
    return result(argv, stdout=fixture(name), rc=rc)


def smi_machine(folder: str, **kw: Any) -> ReplayMachine:
    commands: dict[tuple[str, ...], CommandResult | Exception] = {
        nvidia_smi.XML_ARGV: smi(f"{folder}/nvidia-smi-q.xml"),
        nvidia_smi.CSV_ARGV: smi(f"{folder}/nvidia-smi-query.csv", nvidia_smi.CSV_ARGV),
    }
    return ReplayMachine(commands=commands, **kw)


def no_kb(name: str) -> str | None:
    return None


# ----------------------------------------------------------------------------- NVML first


def test_nvml_recording_of_two_h200s() -> None:
    fake = nvml_from("2xh200-linux/nvml.json")
    found, driver = probe_gpus(machine=ReplayMachine(), nvml_loader=lambda: fake)
    assert driver is not None
    assert (driver.version, driver.cuda_version, driver.source, driver.error) == (
        "580.159.04",
        "13.0",
        "nvml",
        None,
    )
    assert found[1] == GpuInfo(
        index=1,
        name="NVIDIA H200",
        compute_capability="9.0",
        memory_total_bytes=150754820096,
        uuid="GPU-2118561a-f2eb-496b-e3c2-589114747d6c",
        pci_bus_id="00000000:00:07.0",
        mig_mode="Disabled",
        source="nvml",
    )
    assert len(found) == 2
    assert fake.shut_down


def test_nvml_without_mig_support_reports_none() -> None:
    fake = nvml_from("rtx5070-laptop-windows/nvml.json")
    with platforms.override("windows"):
        found, driver = probe_gpus(
            machine=ReplayMachine(), windows_api=RegistryApi({}), nvml_loader=lambda: fake
        )
    assert [(g.name, g.compute_capability, g.mig_mode) for g in found] == [
        ("NVIDIA GeForce RTX 5070 Laptop GPU", "12.0", None)
    ]
    assert driver is not None
    assert (driver.version, driver.cuda_version) == ("581.57", "13.0")


def test_nvml_and_nvidia_smi_agree_on_the_same_machine() -> None:
    """The two readers of the 2xH200 recordings must describe the same GPUs."""
    by_nvml, d1 = probe_gpus(
        machine=ReplayMachine(), nvml_loader=lambda: nvml_from("2xh200-linux/nvml.json")
    )
    by_smi, d2 = probe_gpus(
        machine=smi_machine("2xh200-linux"),
        nvml_loader=lambda: nvml_failing(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
    )

    def key(g: GpuInfo) -> tuple[object, ...]:
        return (g.index, g.name, g.uuid, g.pci_bus_id, g.compute_capability, g.mig_mode)

    assert [key(g) for g in by_nvml] == [key(g) for g in by_smi]
    assert d1 is not None
    assert d2 is not None
    assert (d1.version, d1.cuda_version) == (d2.version, d2.cuda_version)
    # nvidia-smi rounds to MiB and leaves out what the driver reserves
    assert all(g.memory_total_bytes == 143771 * MIB for g in by_smi)
    assert {g.source for g in by_smi} == {"nvidia-smi-xml+csv"}


def test_one_lost_gpu_does_not_hide_the_others() -> None:
    class OneLost(RecordedNvml):
        def nvmlDeviceGetHandleByIndex(self, index: int) -> dict[str, Any]:
            if index == 0:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
            return super().nvmlDeviceGetHandleByIndex(index)

    fake = OneLost(json.loads(fixture("2xh200-linux/nvml.json")))
    found, driver = probe_gpus(machine=ReplayMachine(), nvml_loader=lambda: fake)
    assert [(g.index, g.name, g.compute_capability) for g in found] == [
        (0, "NVIDIA GPU (unreadable: GPU is lost)", None),
        (1, "NVIDIA H200", "9.0"),
    ]
    assert driver is not None
    assert driver.error is None


def test_real_nvml_on_a_machine_without_gpu_says_why_quickly() -> None:
    """The real pynvml against this machine: no libnvidia-ml, so NVML fails; a reason, fast."""
    started = time.monotonic()
    report = nvml.read_nvml(pynvml)
    assert time.monotonic() - started < 2
    assert report.gpus == ()
    if HAS_DRIVER:
        pytest.skip("this machine has an NVIDIA driver")
    assert report.library_missing
    assert report.driver.error == "NVML: NVML Shared Library Not Found"


def test_missing_nvidia_ml_py_is_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    report = nvml.read_nvml_in_thread(nvml.import_pynvml, timeout=5)
    assert report.driver.error == "NVML: the nvidia-ml-py package (pynvml) is not installed"


def test_hanging_nvml_is_abandoned_after_its_timeout() -> None:
    release = threading.Event()

    def hang() -> RecordedNvml:
        release.wait(30)
        return nvml_failing(pynvml.NVML_ERROR_UNKNOWN)

    started = time.monotonic()
    try:
        report = nvml.read_nvml_in_thread(hang, timeout=0.2)
    finally:
        release.set()
    assert time.monotonic() - started < 5
    assert report.driver.error == "NVML: no answer after 0.2s (driver hung?)"


@pytest.mark.parametrize(
    ("value", "text"),
    [(13000, "13.0"), (12080, "12.8"), (12020, "12.2"), (11040, "11.4"), (0, None)],
)
def test_cuda_version_text(value: int, text: str | None) -> None:
    assert nvml.cuda_version_text(value) == text


# ----------------------------------------------------------------------------- nvidia-smi


def test_nvidia_smi_on_windows_laptop_with_the_registry() -> None:
    machine = smi_machine("rtx5070-laptop-windows")
    with platforms.override("windows"):
        found, driver = probe_gpus(
            machine=machine,
            windows_api=RegistryApi.from_fixture(),
            nvml_loader=lambda: nvml_failing(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
        )
    # Intel's integrated GPU is not listed; the NVIDIA adapter is not listed twice.
    assert found == (
        GpuInfo(
            index=0,
            name="NVIDIA GeForce RTX 5070 Laptop GPU",
            compute_capability="12.0",
            memory_total_bytes=8151 * MIB,
            uuid="GPU-3f6c1e2a-9b7d-4c1e-8a52-6d0e9f4b7a21",
            pci_bus_id="00000000:01:00.0",
            mig_mode=None,
            source="nvidia-smi-xml+csv",
        ),
    )
    assert driver is not None
    assert (driver.version, driver.cuda_version, driver.error) == ("581.57", "13.0", None)


def test_nvidia_smi_off_path_is_found_where_windows_drivers_put_it() -> None:
    machine = smi_machine(
        "rtx5070-laptop-windows",
        on_path=(),
        files={r"C:\Windows\System32\nvidia-smi.exe": ""},
    )
    with platforms.override("windows"):
        found, _ = probe_gpus(
            machine=machine,
            windows_api=RegistryApi({}),
            nvml_loader=lambda: nvml_failing(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
        )
    assert [g.name for g in found] == ["NVIDIA GeForce RTX 5070 Laptop GPU"]


def test_mixed_generations_get_their_own_compute_capability() -> None:
    found, driver = probe_gpus(
        machine=smi_machine("mixed-4090-1080ti-linux"),
        nvml_loader=lambda: nvml_failing(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
    )
    assert [(g.name, g.compute_capability, g.memory_total_bytes) for g in found] == [
        ("NVIDIA GeForce RTX 4090", "8.9", 24564 * MIB),
        ("NVIDIA GeForce GTX 1080 Ti", "6.1", 11264 * MIB),
    ]
    assert driver is not None
    assert (driver.version, driver.cuda_version) == ("570.133.07", "12.8")


def test_old_driver_without_compute_cap_field_falls_back_to_the_knowledge_base() -> None:
    machine = smi_machine("mixed-4090-1080ti-linux")
    machine.commands = {
        **machine.commands,
        nvidia_smi.CSV_ARGV: smi("failures/nvidia-smi-compute-cap-invalid.txt", rc=2),
    }
    table = {"NVIDIA GeForce RTX 4090": "8.9"}
    found, _ = probe_gpus(
        machine=machine,
        nvml_loader=lambda: nvml_failing(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
        cc_lookup=table.get,
    )
    assert [(g.compute_capability, g.source) for g in found] == [
        ("8.9", "nvidia-smi-xml+knowledge"),
        (None, "nvidia-smi-xml"),
    ]
    report = nvidia_smi.read_nvidia_smi(machine, no_kb, timeout=5)
    assert report.notes[0] == (
        'nvidia-smi --query-gpu=compute_cap: Field "compute_cap" is not a valid field to query.'
    )


def test_old_driver_with_the_shipped_knowledge_base() -> None:
    """The default lookup: the real knowledge base's GPU table."""
    machine = smi_machine("mixed-4090-1080ti-linux")
    machine.commands = {
        **machine.commands,
        nvidia_smi.CSV_ARGV: smi("failures/nvidia-smi-compute-cap-invalid.txt", rc=2),
    }
    found, _ = probe_gpus(
        machine=machine,
        nvml_loader=lambda: nvml_failing(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
    )
    assert [g.compute_capability for g in found] == ["8.9", "6.1"]


def test_no_driver_at_all() -> None:
    found, driver = probe_gpus(
        machine=ReplayMachine(),
        nvml_loader=lambda: nvml_failing(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
    )
    assert found == ()
    assert driver is not None
    assert driver.version is None
    assert driver.error == (
        "no NVIDIA driver installed (NVML library not found; nvidia-smi not found on PATH)"
    )


def test_driver_not_loaded_with_a_gpu_on_the_bus() -> None:
    """nouveau holds the RTX 4090; nvidia-smi prints its real complaint; AMD works beside."""
    files = json.loads(fixture("pci-linux/sysfs.json"))
    files["/usr/share/hwdata/pci.ids"] = fixture("pci-linux/pci.ids")
    machine = ReplayMachine(
        files=files,
        commands={nvidia_smi.XML_ARGV: smi("failures/nvidia-smi-no-driver.txt", rc=9)},
    )
    found, driver = probe_gpus(
        machine=machine, nvml_loader=lambda: nvml_failing(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    )
    assert driver is not None
    assert driver.error == (
        "NVML: Driver Not Loaded; nvidia-smi failed (exit 9): NVIDIA-SMI has failed because it"
        " couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver"
        " is installed and running.; NVIDIA GPU present (0000:01:00.0), bound to kernel driver"
        " nouveau"
    )
    assert found == (
        GpuInfo(
            index=0,
            name="NVIDIA AD102 [GeForce RTX 4090]",
            pci_bus_id="0000:01:00.0",
            source="pci-sysfs",
        ),
        GpuInfo(
            index=0,
            name="AMD Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]",
            vendor="amd",
            memory_total_bytes=25753026560,
            pci_bus_id="0000:03:00.0",
            source="pci-sysfs",
        ),
    )


def test_windows_adapter_without_an_answering_driver() -> None:
    with platforms.override("windows"):
        found, driver = probe_gpus(
            machine=ReplayMachine(),
            windows_api=RegistryApi.from_fixture(),
            nvml_loader=lambda: nvml_failing(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
        )
    assert [(g.name, g.source, g.memory_total_bytes) for g in found] == [
        ("NVIDIA GeForce RTX 5070 Laptop GPU", "registry", 8 << 30)
    ]
    assert driver is not None
    assert driver.error == (
        "no NVIDIA driver installed (NVML library not found; nvidia-smi not found on PATH);"
        " NVIDIA GPU present (NVIDIA GeForce RTX 5070 Laptop GPU)"
    )


def test_version_mismatch_still_reads_the_kernel_module_version() -> None:
    machine = ReplayMachine(
        files={nvidia_smi.PROC_VERSION: fixture("failures/proc-driver-nvidia-version-570.txt")},
        commands={nvidia_smi.XML_ARGV: smi("failures/nvidia-smi-version-mismatch.txt", rc=18)},
    )
    found, driver = probe_gpus(
        machine=machine,
        nvml_loader=lambda: nvml_failing(pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH),
    )
    assert found == ()
    assert driver is not None
    assert (driver.version, driver.source) == ("570.124.06", "/proc/driver/nvidia/version")
    assert driver.error is not None
    assert "Failed to initialize NVML: Driver/library version mismatch" in driver.error
    assert "RM has detected an NVML/RM version mismatch." in driver.error


def test_hanging_nvidia_smi_is_reported_as_a_timeout() -> None:
    hang = CommandTimeoutError("nvidia-smi: no answer after 10s, stopped (nvidia-smi -q -x)")
    machine = ReplayMachine(commands={nvidia_smi.XML_ARGV: hang})
    _, driver = probe_gpus(
        machine=machine,
        nvml_loader=lambda: nvml_failing(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
    )
    assert driver is not None
    assert driver.error == "NVML: NVML Shared Library Not Found; nvidia-smi timed out after 10s"


def test_a_probe_that_breaks_inside_reports_instead_of_raising() -> None:
    class Broken(ReplayMachine):
        def listdir(self, path: str) -> tuple[str, ...]:
            raise RuntimeError("sysfs exploded")

    found, driver = probe_gpus(
        machine=Broken(), nvml_loader=lambda: nvml_failing(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    )
    assert found == ()
    assert driver is not None
    assert driver.error == "GPU probe failed: RuntimeError: sysfs exploded"


# ----------------------------------------------------------------------------- other vendors


def test_apple_silicon_gpu_on_macos() -> None:
    sysctl = (
        Path(__file__).parent / "fixtures" / "host" / "macos-m3pro" / "sysctl.txt"
    ).read_text()
    argv = ("sysctl", "hw.optional.arm64", "machdep.cpu.brand_string", "hw.memsize")
    machine = ReplayMachine(commands={argv: result(argv, stdout=sysctl)}, arch="arm64")
    with platforms.override("macos"):
        found, driver = probe_gpus(machine=machine)
    assert found == (
        GpuInfo(
            index=0,
            name="Apple M3 Pro GPU",
            vendor="apple",
            memory_total_bytes=38654705664,
            source="sysctl",
        ),
    )
    assert driver is not None
    assert driver.error is not None
    assert "MPS" in driver.error


def test_intel_mac_has_no_accelerator() -> None:
    argv = ("sysctl", "hw.optional.arm64", "machdep.cpu.brand_string", "hw.memsize")
    out = "machdep.cpu.brand_string: Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz\n"
    machine = ReplayMachine(commands={argv: result(argv, stdout=out)}, arch="x86_64")
    with platforms.override("macos"):
        found, _ = probe_gpus(machine=machine)
    assert found == ()


# ----------------------------------------------------------------------------- the real machine


def test_live_probe_without_gpu_is_fast_and_says_why() -> None:
    if HAS_DRIVER:
        pytest.skip("this machine has an NVIDIA driver")
    started = time.perf_counter()
    found, driver = probe_gpus()
    elapsed = time.perf_counter() - started
    assert [g for g in found if g.vendor == "nvidia"] == []
    assert driver is not None
    assert driver.error is not None
    assert "NVML" in driver.error
    assert elapsed < 2.0, f"probe_gpus took {elapsed:.3f}s"


class RegistryApi:
    """A WindowsApi answering from a registry recording (key → {name: value})."""

    def __init__(self, keys: dict[str, dict[str, RegistryValue]]) -> None:
        self.keys = keys

    @classmethod
    def from_fixture(cls) -> RegistryApi:
        path = Path(__file__).parent / "fixtures" / "host" / "windows11-laptop" / "registry.json"
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def registry_value(self, key: str, name: str) -> RegistryValue:
        return self.keys.get(key, {}).get(name)

    def registry_subkeys(self, key: str) -> tuple[str, ...]:
        prefix = key + "\\"
        return tuple(k[len(prefix) :] for k in self.keys if k.startswith(prefix))

    def processor_cores(self) -> bytes | None:
        return None
