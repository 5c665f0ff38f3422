"""The nvidia-smi and /proc/driver/nvidia parsers on real and exactly-formatted outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsmith.probe.machine_reader import tool_name
from torchsmith.probe.model import DriverInfo, GpuInfo
from torchsmith.probe.nvidia_smi import (
    NvidiaSmiParseError,
    parse_memory,
    parse_nvidia_smi_csv,
    parse_nvidia_smi_xml,
    parse_proc_driver_version,
)

FIXTURES = Path(__file__).parent / "fixtures" / "gpu"
MIB = 1 << 20


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_xml_of_one_h200() -> None:
    gpus, driver = parse_nvidia_smi_xml(fixture("h200-linux/nvidia-smi-q.xml"))
    assert driver == DriverInfo(version="580.159.04", cuda_version="13.0", source="nvidia-smi-xml")
    assert gpus == (
        GpuInfo(
            index=0,
            name="NVIDIA H200",
            memory_total_bytes=143771 * MIB,
            uuid="GPU-ab3e6a2a-37db-f115-8fb5-6ecccde9a863",
            pci_bus_id="00000000:00:06.0",
            mig_mode="Disabled",
            source="nvidia-smi-xml",
        ),
    )


def test_xml_keeps_nvidia_smi_order_for_indices() -> None:
    gpus, _ = parse_nvidia_smi_xml(fixture("2xh200-linux/nvidia-smi-q.xml"))
    assert [(g.index, g.pci_bus_id) for g in gpus] == [
        (0, "00000000:00:06.0"),
        (1, "00000000:00:07.0"),
    ]


def test_xml_from_windows_with_crlf_and_wddm() -> None:
    raw = (FIXTURES / "rtx5070-laptop-windows" / "nvidia-smi-q.xml").read_bytes()
    assert b"\r\n" in raw
    gpus, driver = parse_nvidia_smi_xml(raw.decode())
    assert (driver.version, driver.cuda_version) == ("581.57", "13.0")
    assert [(g.name, g.mig_mode, g.memory_total_bytes) for g in gpus] == [
        ("NVIDIA GeForce RTX 5070 Laptop GPU", None, 8151 * MIB)
    ]


@pytest.mark.parametrize(
    "name",
    [
        "failures/nvidia-smi-no-driver.txt",
        "failures/nvidia-smi-version-mismatch.txt",
        "2xh200-linux/nvidia-smi-query.csv",
    ],
)
def test_xml_parser_rejects_what_is_not_an_xml_report(name: str) -> None:
    with pytest.raises(NvidiaSmiParseError, match="not an nvidia-smi XML report"):
        parse_nvidia_smi_xml(fixture(name))


def test_truncated_xml_is_a_parse_error() -> None:
    text = fixture("h200-linux/nvidia-smi-q.xml")
    with pytest.raises(NvidiaSmiParseError, match="does not parse"):
        parse_nvidia_smi_xml(text[: len(text) // 2])


def test_csv_query_of_two_h200s() -> None:
    gpus = parse_nvidia_smi_csv(fixture("2xh200-linux/nvidia-smi-query.csv"))
    assert [(g.index, g.name, g.compute_capability, g.mig_mode) for g in gpus] == [
        (0, "NVIDIA H200", "9.0", "Disabled"),
        (1, "NVIDIA H200", "9.0", "Disabled"),
    ]
    assert gpus[0].memory_total_bytes == 143771 * MIB
    assert gpus[1].uuid == "GPU-2118561a-f2eb-496b-e3c2-589114747d6c"


def test_csv_columns_are_found_by_name() -> None:
    text = "compute_cap, name, memory.total [MiB]\n8.6, NVIDIA GeForce RTX 3090, 24576 MiB\n"
    (gpu,) = parse_nvidia_smi_csv(text)
    assert (gpu.index, gpu.name, gpu.compute_capability, gpu.memory_total_bytes) == (
        0,
        "NVIDIA GeForce RTX 3090",
        "8.6",
        24576 * MIB,
    )


def test_csv_parser_rejects_error_text_and_ragged_rows() -> None:
    with pytest.raises(NvidiaSmiParseError, match="not an nvidia-smi CSV query"):
        parse_nvidia_smi_csv(fixture("failures/nvidia-smi-compute-cap-invalid.txt"))
    with pytest.raises(NvidiaSmiParseError, match="fields"):
        parse_nvidia_smi_csv("index, name\n0, a, b\n")


def test_proc_driver_version_open_and_proprietary_modules() -> None:
    real = fixture("2xh200-linux/driver-version.txt").split("---")[0]
    assert parse_proc_driver_version(real) == "580.159.04"
    legacy = fixture("failures/proc-driver-nvidia-version-570.txt")
    assert parse_proc_driver_version(legacy) == "570.124.06"
    assert parse_proc_driver_version("") is None


@pytest.mark.parametrize(
    ("text", "value"),
    [("143771 MiB", 143771 * MIB), ("8 GiB", 8 << 30), ("N/A", None), ("[N/A]", None), ("", None)],
)
def test_memory_values(text: str, value: int | None) -> None:
    assert parse_memory(text) == value


def test_tool_names_from_windows_paths() -> None:
    assert tool_name(r"C:\Windows\System32\nvidia-smi.exe") == "nvidia-smi"
    assert tool_name("/usr/lib/wsl/lib/nvidia-smi") == "nvidia-smi"
