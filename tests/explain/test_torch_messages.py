"""The messages torch itself prints about GPU set-up, as users' logs carry them.

Each message is torch 2.13.0's own text (torch/utils/cpp_extension.py and torch/cuda/__init__.py,
with its placeholders filled the way a real run fills them, string concatenations kept, e.g.
"CUDA_PATHenvironment"). Every message is checked twice: it is still in the torch the tests install
(the primary source, so a change of wording shows up here), and explain files it under the right
category when it ends a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchsmith.explain import explain_text

REPO = Path(__file__).parents[2]
VENV = Path(os.environ.get("TORCHSMITH_TEST_TORCH_VENV", REPO / ".cache" / "torch-venv"))

# (file in the torch package, a fragment of the template as written there, a message as printed,
# the category explain must give it; None: a warning of a run that goes on, or no cause to name)
MESSAGES = [
    (
        "utils/cpp_extension.py",
        "CUDA was not found on the system, please set the CUDA_HOME or the CUDA_PATH",
        "RuntimeError: CUDA was not found on the system, please set the CUDA_HOME or the "
        "CUDA_PATHenvironment variable or add NVCC to your system PATH. The extension compilation "
        "will fail.",
        "cuda-toolkit-not-found",
    ),
    (
        "utils/cpp_extension.py",
        "CUDA_HOME environment variable is not set. ",
        "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install "
        "root.",
        "cuda-toolkit-not-found",
    ),
    (
        "utils/cpp_extension.py",
        "ROCM_HOME environment variable is not set. ",
        "OSError: ROCM_HOME environment variable is not set. Please set it to your ROCm install "
        "root.",
        "cuda-toolkit-not-found",
    ),
    (
        "utils/cpp_extension.py",
        "mismatches the version that was used to compile",
        "RuntimeError: The detected CUDA version (12.1) mismatches the version that was used to "
        "compilePyTorch (11.8). Please make sure to use the same CUDA versions.",
        "toolkit-torch-cuda-mismatch",
    ),
    (
        "utils/cpp_extension.py",
        "has a minor version mismatch with the version that was used to compile PyTorch",
        "The detected CUDA version (12.4) has a minor version mismatch with the version that was "
        "used to compile PyTorch (12.1). Most likely this shouldn't be a problem.",
        None,
    ),
    (
        "utils/cpp_extension.py",
        "than the maximum required version by CUDA",
        "RuntimeError: The current installed version of g++ (14.2.0) is greater than the maximum "
        "required version by CUDA 12.4. Please make sure to use an adequate version of g++ "
        "(>=6.0.0, <14.0).",
        "unsupported-host-compiler",
    ),
    (
        "utils/cpp_extension.py",
        "than the minimum required version by CUDA",
        "RuntimeError: The current installed version of g++ (5.4.0) is less than the minimum "
        "required version by CUDA 12.4 (6.0.0). Please make sure to use an adequate version of g++ "
        "(>=6.0.0, <14.0).",
        "unsupported-host-compiler",
    ),
    (
        "utils/cpp_extension.py",
        "Ninja is required to load C++ extensions",
        "RuntimeError: Ninja is required to load C++ extensions (pip install ninja to get it)",
        "missing-build-dependency",
    ),
    (
        "utils/cpp_extension.py",
        "MSVC is required to load C++ extensions",
        "RuntimeError: MSVC is required to load C++ extensions",
        "missing-build-dependency",
    ),
    (
        "utils/cpp_extension.py",
        "Unknown CUDA arch (",
        "ValueError: Unknown CUDA arch (13.0) or GPU not supported",
        "toolkit-too-old-for-arch",
    ),
    (
        "utils/cpp_extension.py",
        "No CUDA runtime is found, using CUDA_HOME=",
        "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'",
        None,
    ),
    (
        "utils/cpp_extension.py",
        "is not compatible with the compiler Pytorch was",
        "Your compiler (c++) is not compatible with the compiler Pytorch wasbuilt with for this "
        "platform, which is g++ on linux. Pleaseuse g++ to compile your extension.",
        None,
    ),
    (
        "cuda/__init__.py",
        "PyTorch was compiled without CUDA support",
        "RuntimeError: PyTorch was compiled without CUDA support",
        "cpu-only-torch",
    ),
    (
        "cuda/__init__.py",
        "Torch not compiled with CUDA enabled",
        "AssertionError: Torch not compiled with CUDA enabled",
        "cpu-only-torch",
    ),
    (
        "cuda/__init__.py",
        "which is of compute capability (CC)",
        "UserWarning: Found GPU0 NVIDIA GeForce GTX 1070 which is of compute capability (CC) 6.1.",
        "arch-not-compiled",
    ),
    (
        "cuda/__init__.py",
        "does not include kernels for this GPU",
        "Your installed torch==2.13.0+cu130 does not include kernels for this GPU. Reinstall the "
        "same version against a CUDA build that does, e.g.:",
        "arch-not-compiled",
    ),
    (
        "cuda/__init__.py",
        "No published PyTorch CUDA builds for release",
        "No published PyTorch CUDA builds for release 2.13.0+cu130 support this GPU. Visit "
        "https://pytorch.org/get-started/locally/ to find a compatible release.",
        "arch-not-compiled",
    ),
    (
        "cuda/__init__.py",
        "is not compatible with the current PyTorch installation.",
        "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
        "PyTorch installation.",
        "arch-not-compiled",
    ),
    (
        "_inductor/exc.py",
        "Cannot find a working triton installation. ",
        "torch._inductor.exc.TritonMissing: Cannot find a working triton installation. Either the "
        "package is not installed or it is too old. More information on installing Triton can be "
        "found at: https://github.com/triton-lang/triton",
        "missing-build-dependency",
    ),
]
TRACEBACK = 'Traceback (most recent call last):\n  File "setup.py", line 3, in <module>\n'


def _torch_package() -> Path | None:
    found = sorted(VENV.glob("lib/python3*/site-packages/torch"))
    return found[0] if found else None


@pytest.mark.parametrize(("path", "fragment", "message", "category"), MESSAGES)
def test_explain_files_torch_s_own_message(
    path: str, fragment: str, message: str, category: str | None
) -> None:
    result = explain_text(TRACEBACK + message + "\n" if category else message + "\n")
    assert (result.diagnoses[0].category if result.diagnoses else None) == category


@pytest.mark.parametrize(("path", "fragment"), sorted({(m[0], m[1]) for m in MESSAGES}))
def test_the_message_is_still_torch_s_wording(path: str, fragment: str) -> None:
    package = _torch_package()
    if package is None:
        pytest.skip(f"no torch in {VENV} (scripts/test installs it)")
    assert fragment in (package / path).read_text(encoding="utf-8")
