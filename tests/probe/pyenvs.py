"""Real target environments for the python/torch probe tests: venvs and fake torch installs.

Everything here is built with the real ``venv`` module; only torch's binaries are stand-ins
(empty files, or a real fatbin built by nvcc where the test needs GPU code).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "python"
TORCH_VENV = Path(
    os.environ.get("TORCHSMITH_TEST_TORCH_VENV")
    or Path(__file__).resolve().parents[2] / ".cache" / "torch-venv"
)
# torch/__init__.py of every fake install: importing it fails loudly.
NOT_IMPORTED = 'raise RuntimeError("torchsmith imported torch")\n'

# Linux x86_64 cu130 install as on the H200 machine (versions from h200-collect_env.txt).
H200_DISTS = {
    "torch": "2.11.0",
    "torchvision": "0.26.0",
    "torchaudio": "2.11.0",
    "triton": "3.6.0",
    "nvidia-cudnn-cu13": "9.19.0.56",
    "nvidia-nccl-cu13": "2.28.9",
    "nvidia-cuda-runtime": "13.0.96",
    "nvidia-cublas": "13.1.0.3",
    "numpy": "2.5.2",
}
H200_TORCH_LIBS = (
    "libc10.so",
    "libc10_cuda.so",
    "libcaffe2_nvrtc.so",
    "libshm.so",
    "libtorch.so",
    "libtorch_cpu.so",
    "libtorch_cuda.so",
    "libtorch_cuda_linalg.so",
    "libtorch_global_deps.so",
    "libtorch_python.so",
)


def python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def make_venv(root: Path) -> Path:
    """A fresh, empty venv (no pip) built by this interpreter's ``venv`` module."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    return root


def site_packages(venv: Path) -> Path:
    (found,) = (venv / "lib").glob("python3*/site-packages")
    return found


def add_dist(site: Path, name: str, version: str) -> Path:
    """A ``.dist-info`` directory as pip writes it (underscored name, METADATA, INSTALLER)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.4\nName: {name}\nVersion: {version}\n\nDescription\n",
        encoding="utf-8",
    )
    (info / "INSTALLER").write_text("pip\n", encoding="utf-8")
    return info


def add_torch(site: Path, version_py: str, libs: tuple[str, ...] = ()) -> Path:
    """A ``torch`` package whose ``__init__`` refuses import, with ``version.py`` and ``lib/``."""
    torch = site / "torch"
    (torch / "lib").mkdir(parents=True)
    (torch / "__init__.py").write_text(NOT_IMPORTED, encoding="utf-8")
    (torch / "version.py").write_text(version_py, encoding="utf-8")
    for name in libs:
        (torch / "lib" / name).write_bytes(b"")
    return torch


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")
