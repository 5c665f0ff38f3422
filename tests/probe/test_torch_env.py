"""The installed torch: version.py parsing, cuDNN/NCCL sources, archs, broken installs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.probe.pyenvs import (
    FIXTURES,
    H200_DISTS,
    H200_TORCH_LIBS,
    add_dist,
    add_torch,
    fixture_text,
    make_venv,
    python_of,
    site_packages,
)
from torchsmith.probe.python_env import parse_probe_output, probe_python_and_torch
from torchsmith.probe.torch_env import (
    cudnn_version,
    nccl_version,
    parse_version_py,
    torch_info_from_report,
)

NVCC = shutil.which("nvcc") or (
    "/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None
)

# ---------------------------------------------------------------- version.py


def test_cpu_wheel_version_py() -> None:
    fields = parse_version_py(fixture_text("torch-2.13.0+cpu.version.txt"))
    assert fields == {
        "__version__": "2.13.0+cpu",
        "debug": False,
        "cuda": None,
        "git_version": "cf30153c4c131c8164ee7798e5022d810682e2cb",
        "hip": None,
        "rocm": None,
        "xpu": None,
    }


def test_cuda_wheel_version_py() -> None:
    fields = parse_version_py(fixture_text("torch-2.11.0+cu130.version.txt"))
    assert (fields["__version__"], fields["cuda"], fields["hip"]) == ("2.11.0+cu130", "13.0", None)


def test_version_py_of_2_7_with_xpu_missing_from_all() -> None:
    fields = parse_version_py(fixture_text("torch-2.7.1+cu126.version.txt"))
    assert (fields["__version__"], fields["cuda"], fields["xpu"]) == ("2.7.1+cu126", "12.6", None)


def test_unannotated_version_py_of_torch_1() -> None:
    """Before torch 1.10 the generator wrote plain assignments (``cuda = '11.1'``)."""
    text = (
        "__version__ = '1.8.1+cu111'\ndebug = False\ncuda = '11.1'\ngit_version = 'x'\nhip = None\n"
    )
    assert parse_version_py(text)["cuda"] == "11.1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("__version__ = '2.11.0+cu1", "not valid Python"),
        ("\x00\x00\x00", "not valid Python"),
        ("", "no __version__"),
        ("__version__ = compute()\n", "no __version__"),
        ("cuda = '13.0'\n", "no __version__"),
    ],
)
def test_broken_version_py_is_a_value_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_version_py(text)


def test_version_py_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = f"__version__ = '2.0.0'\nopen({str(marker)!r}, 'w').close()\n"
    assert parse_version_py(text)["__version__"] == "2.0.0"
    assert not marker.exists()


# ---------------------------------------------------------------- cuDNN and NCCL


def test_cudnn_and_nccl_from_the_pip_dists_matching_torchs_cuda() -> None:
    dists = {"nvidia-cudnn-cu12": "9.10.2.21", "nvidia-cudnn-cu13": "9.19.0.56"}
    dists |= {"nvidia-nccl-cu13": "2.28.9"}
    cudnn = cudnn_version([], dists, "13.0")
    assert cudnn is not None
    assert (cudnn.version, cudnn.source) == ("9.19.0.56", "nvidia-cudnn-cu13")
    assert cudnn_version([], dists, "12.8") == type(cudnn)("9.10.2.21", "nvidia-cudnn-cu12")
    nccl = nccl_version([], dists, "13.0")
    assert nccl is not None
    assert nccl.version == "2.28.9"


def test_bundled_libraries_win_over_dists() -> None:
    libs = ["libcudnn.so.8", "libcudnn_ops_infer.so.8", "libnccl.so.2.14.3", "libtorch_cuda.so"]
    cudnn = cudnn_version(libs, {"nvidia-cudnn-cu12": "9.1.0.70"}, "11.7")
    nccl = nccl_version(libs, {}, "11.7")
    assert cudnn is not None
    assert nccl is not None
    assert (cudnn.version, cudnn.source) == ("8", "torch/lib/libcudnn.so.8")
    assert (nccl.version, nccl.source) == ("2.14.3", "torch/lib/libnccl.so.2.14.3")


def test_auditwheel_renamed_cudnn() -> None:
    found = cudnn_version(["libcudnn-9a1b2c3d.so.9.1.0"], {}, "12.4")
    assert found is not None
    assert found.version == "9.1.0"


def test_no_cudnn_anywhere() -> None:
    assert cudnn_version(["libtorch_cpu.so"], {}, None) is None
    assert nccl_version([], {"nvidia-cudnn-cu12": "9"}, "12.1") is None


def test_windows_cuda_wheel_bundles_cudnn_dll() -> None:
    report = json.loads((FIXTURES / "report-windows-cu126.json").read_text(encoding="utf-8"))
    torch = torch_info_from_report(report)
    assert torch is not None
    assert torch.error is None
    assert (torch.version, torch.cuda, torch.cudnn, torch.nccl) == (
        "2.7.1+cu126",
        "12.6",
        "9",
        None,
    )
    assert torch.companions == {"torchvision": "0.22.1+cu126"}
    assert torch.archs is not None  # the DLLs are not on this machine: named in its error
    assert torch.archs.error is not None


# ---------------------------------------------------------------- fake installs in real venvs


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    return make_venv(tmp_path / "venv")


def _h200_install(venv: Path) -> Path:
    site = site_packages(venv)
    for name, version in H200_DISTS.items():
        add_dist(site, name, version)
    return add_torch(site, fixture_text("torch-2.11.0+cu130.version.txt"), H200_TORCH_LIBS)


def test_cuda_torch_install_like_the_h200(venv: Path) -> None:
    torch_dir = _h200_install(venv)
    _, torch = probe_python_and_torch(str(python_of(venv)))
    assert torch is not None
    assert torch.error is None
    assert (torch.version, torch.cuda, torch.hip, torch.debug) == (
        "2.11.0+cu130",
        "13.0",
        None,
        False,
    )
    assert torch.git_version == "70d99e998b4955e0049d13a98d77ae1b14db1f45"
    assert (torch.cudnn, torch.nccl) == ("9.19.0.56", "2.28.9")
    assert torch.companions == {
        "nvidia-cuda-runtime": "13.0.96",
        "nvidia-cudnn-cu13": "9.19.0.56",
        "nvidia-nccl-cu13": "2.28.9",
        "torchaudio": "2.11.0",
        "torchvision": "0.26.0",
        "triton": "3.6.0",
    }
    # Only torch's own CUDA libraries are read; the empty stand-ins hold no GPU code.
    assert torch.archs is not None
    assert (torch.archs.sass, torch.archs.files) == ((), ())
    assert torch.archs.error is not None
    named = sorted(part.split(": ")[0] for part in torch.archs.error.split("; "))
    lib = torch_dir / "lib"
    assert named == [
        str(lib / n) for n in ("libc10_cuda.so", "libtorch_cuda.so", "libtorch_cuda_linalg.so")
    ]


def test_corrupted_version_py_does_not_break_the_report(venv: Path) -> None:
    site = site_packages(venv)
    add_dist(site, "torch", "2.11.0")
    add_torch(site, "__version__ = '2.11.0+cu130\x00garbage\n")
    python, torch = probe_python_and_torch(str(python_of(venv)))
    assert python.error is None
    assert torch is not None
    assert torch.version == "2.11.0"  # from the dist's METADATA
    assert torch.error is not None
    assert torch.error.startswith("torch/version.py is broken: not valid Python")


def test_torch_without_version_py(venv: Path) -> None:
    torch_dir = add_torch(site_packages(venv), "")
    (torch_dir / "version.py").unlink()
    _, torch = probe_python_and_torch(str(python_of(venv)))
    assert torch is not None
    assert (torch.version, torch.location) == ("unknown", str(torch_dir))
    assert torch.error is not None
    assert torch.error.startswith("torch/version.py cannot be read: FileNotFoundError")


def test_leftover_torch_directory_without_init(venv: Path) -> None:
    leftover = site_packages(venv) / "torch" / "lib"
    leftover.mkdir(parents=True)
    _, torch = probe_python_and_torch(str(python_of(venv)))
    assert torch is not None
    assert torch.error is not None
    assert "has no __init__.py" in torch.error


def test_metadata_without_package_is_a_broken_install(venv: Path) -> None:
    add_dist(site_packages(venv), "torch", "2.13.0")
    _, torch = probe_python_and_torch(str(python_of(venv)))
    assert torch is not None
    assert torch.version == "2.13.0"
    assert torch.error is not None
    assert "no torch package can be found" in torch.error


def test_report_without_torch_and_without_dist_is_none() -> None:
    assert torch_info_from_report({"schema": 1, "torch": None, "dists": {}}) is None


def test_failing_finder_is_reported() -> None:
    report = {"schema": 1, "torch": {"find_error": "ImportError: bad hook"}, "dists": {}}
    torch = torch_info_from_report(report)
    assert torch is not None
    assert torch.error == "looking for torch failed: ImportError: bad hook"


@pytest.mark.integration
@pytest.mark.skipif(NVCC is None, reason="no nvcc here")
def test_archs_read_from_a_real_fatbin(venv: Path, tmp_path: Path) -> None:
    """libtorch_cuda.so built by the real nvcc: SASS sm_80 + sm_90, PTX compute_90."""
    assert NVCC is not None
    torch_dir = _h200_install(venv)
    source = tmp_path / "k.cu"
    source.write_text("__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n", "utf-8")
    lib = torch_dir / "lib" / "libtorch_cuda.so"
    subprocess.run(
        [NVCC, "-shared", "-Xcompiler", "-fPIC", "-o", str(lib), str(source),
         "-gencode", "arch=compute_80,code=sm_80",
         "-gencode", "arch=compute_90,code=[sm_90,compute_90]"],
        check=True, capture_output=True,
    )  # fmt: skip
    _, torch = probe_python_and_torch(str(python_of(venv)))
    assert torch is not None
    assert torch.archs is not None
    assert (torch.archs.sass, torch.archs.ptx) == (("sm_80", "sm_90"), ("compute_90",))
    assert str(lib) in torch.archs.files


def test_probe_output_of_the_real_script_round_trips(venv: Path) -> None:
    """The script's JSON is what torch_info_from_report reads (no schema drift)."""
    _h200_install(venv)
    from torchsmith.probe import python_env  # noqa: PLC0415

    result = subprocess.run(
        [str(python_of(venv)), "-B", str(python_env.SCRIPT)],
        check=True,
        capture_output=True,
        text=True,
    )
    report = parse_probe_output(result.stdout)
    assert set(report) >= {"bits", "dists", "env_kind", "site_packages", "torch", "version"}
    assert report["dists"]["nvidia-cudnn-cu13"]["version"] == "9.19.0.56"
    assert "numpy" not in report["dists"]
