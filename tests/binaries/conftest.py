"""Test binaries compiled here with the real nvcc (13.0), once per session, in parallel.

Each nvcc run takes 1-3 s; they run side by side (CI has 2 cores), about 10 s in all.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from torchsmith.binaries.cuobjdump import find_cuobjdump

NVCC = os.environ.get("TORCHSMITH_TEST_NVCC", "/usr/local/cuda/bin/nvcc")
REPO = Path(__file__).resolve().parents[2]

KERNEL = """
__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }
extern "C" void launch(float* x) { scale<<<1, 32>>>(x, 2.0f); }
"""
MAIN = """
__global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }
int main() { scale<<<1, 32>>>(nullptr); return 0; }
"""
SHARED = ["-shared", "-Xcompiler", "-fPIC"]


def gencode(arch: str, code: str) -> list[str]:
    return ["-gencode", f"arch={arch},code={code}"]


# name -> (source, nvcc arguments), and what each binary must contain (SASS/PTX counts).
BUILDS: dict[str, tuple[str, list[str]]] = {
    # mixed: plain, arch-specific and family-specific SASS plus family PTX
    "libmix.so": (
        KERNEL,
        [
            *SHARED,
            *gencode("compute_75", "sm_75"),
            *gencode("compute_90a", "sm_90a"),
            *gencode("compute_100f", "sm_100f"),
            *gencode("compute_120a", "sm_120a"),
            *gencode("compute_120f", "compute_120f"),
        ],
    ),
    # PTX only (plain and arch-specific); default compression: zstd PTX
    "libptx.so": (
        KERNEL,
        [*SHARED, *gencode("compute_80", "compute_80"), *gencode("compute_90a", "compute_90a")],
    ),
    # everything zstd-compressed, as PyTorch builds
    "libzstd.so": (
        KERNEL,
        [*SHARED, "-Xfatbin", "-compress-all", *gencode("compute_86", "[sm_86,compute_86]")],
    ),
    "liblz4.so": (
        KERNEL,
        [*SHARED, "--compress-mode=speed", *gencode("compute_89", "[sm_89,compute_89]")],
    ),
    "libuncompressed.so": (
        KERNEL,
        [*SHARED, "--compress-mode=none", *gencode("compute_90", "[sm_90,compute_90]")],
    ),
    # an executable with SASS only
    "app": (MAIN, gencode("compute_80", "sm_80")),
    # relocatable device code: the fatbin sits in __nv_relfatbin of a static object
    "rdc.o": (KERNEL, ["-c", "-rdc=true", *gencode("compute_120", "[sm_120,compute_120]")]),
}


@dataclass(frozen=True)
class Built:
    root: Path
    cpu_lib: Path  # a shared library without GPU code (gcc)

    def __getitem__(self, name: str) -> Path:
        return self.root / name


def _nvcc_available() -> bool:
    return Path(NVCC).is_file() and os.access(NVCC, os.X_OK)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    if not _nvcc_available():
        pytest.skip(f"nvcc not found at {NVCC}")
    root = tmp_path_factory.mktemp("gpu-binaries")
    procs = []
    for name, (source, args) in BUILDS.items():
        src = root / f"{name}.cu"
        src.write_text(source)
        argv = [NVCC, *args, "-o", str(root / name), str(src)]
        procs.append(
            (name, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        )
    cpu_src = root / "cpu.c"
    cpu_src.write_text("int answer(void) { return 42; }\n")
    cpu_lib = root / "libcpu.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(cpu_lib), str(cpu_src)], check=True, timeout=60
    )
    for name, proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"nvcc failed for {name}:\n{out.decode(errors='replace')}"
    for name in BUILDS:
        (root / f"{name}.cu").unlink()
    cpu_src.unlink()
    return Built(root, cpu_lib)


# Files that are GPU code themselves, or hold only LTO IR: name -> nvcc arguments.
DEVICE_FILES: dict[str, list[str]] = {
    "k.cubin": ["-cubin", *gencode("compute_90", "sm_90")],
    "k90a.cubin": ["-cubin", *gencode("compute_90a", "sm_90a")],
    "k.ptx": ["-ptx", "-arch=sm_90"],
    "klto.o": ["-dc", *gencode("compute_90", "lto_90")],
}


@pytest.fixture(scope="session")
def device_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cubin, a PTX file and an LTO-only object, compiled by nvcc (skipped without it)."""
    if not _nvcc_available():
        pytest.skip(f"nvcc not found at {NVCC}")
    root = tmp_path_factory.mktemp("device-files")
    src = root / "k.cu"
    src.write_text(KERNEL)
    for name, args in DEVICE_FILES.items():
        argv = [NVCC, *args, "-o", str(root / name), str(src)]
        subprocess.run(argv, check=True, capture_output=True, timeout=300)
    src.unlink()
    return root


@pytest.fixture(scope="session")
def cuobjdump() -> str:
    tool = find_cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    return tool


@pytest.fixture(scope="session")
def torch_venv() -> Path:
    venv = Path(os.environ.get("TORCHSMITH_TEST_TORCH_VENV", REPO / ".cache" / "torch-venv"))
    python = venv / "bin" / "python"
    if not python.is_file():
        pytest.skip(f"no CPU torch venv at {venv}")
    return venv


@pytest.fixture(scope="session")
def torch_python(torch_venv: Path) -> str:
    return str(torch_venv / "bin" / "python")


@pytest.fixture(scope="session")
def torch_dir(torch_python: str) -> Path:
    out = subprocess.run(
        [torch_python, "-c", "import importlib.util as u; print(u.find_spec('torch').origin)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return Path(out.stdout.strip()).parent
