"""Shared inputs for the build tests: recorded probes, the knowledge base, the project trees."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from torchsmith.knowledge import Knowledge, load_knowledge
from torchsmith.probe.io import load_probe
from torchsmith.probe.model import CudaToolkitInfo, HostInfo, Probe, PythonInfo, ToolInfo
from torchsmith.probe.msvc import msc_ver_for_toolset, parse_vswhere_json
from torchsmith.probe.nvidia_smi import parse_nvidia_smi_csv
from torchsmith.probe.toolkits import parse_nvcc_version

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = Path(__file__).resolve().parent / "projects"
H200 = ROOT / "fixtures" / "h200-linux" / "doctor.json"
PROBE_FIXTURES = ROOT / "probe" / "fixtures"
GB = 1024**3


@pytest.fixture(scope="session")
def kb() -> Knowledge:
    return load_knowledge()


@pytest.fixture
def h200() -> Probe:
    """The real probe recorded on the H200 machine (doctor --json)."""
    return load_probe(H200)


def rtx5070_windows() -> Probe:
    """A Windows 11 laptop with an RTX 5070 and CUDA 12.3, from recorded tool outputs:
    nvidia-smi's query CSV, nvcc 12.3's --version and vswhere's JSON of VS Build Tools 2022."""
    gpus = parse_nvidia_smi_csv(
        (PROBE_FIXTURES / "gpu" / "rtx5070-laptop-windows" / "nvidia-smi-query.csv").read_text()
    )
    version = parse_nvcc_version(
        (PROBE_FIXTURES / "toolkits" / "nvcc-12.3-windows-version.txt").read_text()
    )
    assert version is not None
    (vs,) = parse_vswhere_json(
        (PROBE_FIXTURES / "tools" / "vswhere-2022-buildtools-real.json").read_text()
    )
    root = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.3"
    cl = vs.installation_path + "\\VC\\Tools\\MSVC\\14.44.35207\\bin\\Hostx64\\x64\\cl.exe"
    return Probe(
        host=HostInfo(
            os="windows",
            os_pretty="Windows 11 Home (build 26100)",
            cores_logical=16,
            cores_physical=8,
            ram_total_bytes=32 * GB,
            ram_available_bytes=20 * GB,
            disk_free_bytes=200 * GB,
        ),
        gpus=gpus,
        cuda_toolkits=(
            CudaToolkitInfo(
                root=root,
                version=version[0],
                full_version=version[1],
                nvcc=root + "\\bin\\nvcc.exe",
                selected=True,
            ),
        ),
        compilers=(
            ToolInfo(
                "msvc",
                cl,
                "14.44.35207",
                details={
                    "vs": vs.display_name,
                    "installation_path": vs.installation_path,
                    "msc_ver": msc_ver_for_toolset("14.44.35207") or "",
                },
            ),
        ),
        build_tools=(ToolInfo("ninja", "C:\\tools\\ninja.exe", "1.11.1"),),
        python=PythonInfo("C:\\venv\\Scripts\\python.exe", "3.11.9", "CPython", 64),
    )


def no_gpu(probe: Probe) -> Probe:
    return dataclasses.replace(probe, gpus=())


def with_ram(probe: Probe, gb: float) -> Probe:
    host = dataclasses.replace(probe.host, ram_available_bytes=int(gb * GB))
    return dataclasses.replace(probe, host=host)


def copy_project(name: str, tmp_path: Path) -> Path:
    dest = tmp_path / name
    shutil.copytree(PROJECTS / name, dest)
    return dest
