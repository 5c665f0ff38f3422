"""Issue 11 families that the corpus alone does not pin down: the same cause in every wording a
torch release or a platform prints, and warnings of runs that went on (not diagnosed)."""

from __future__ import annotations

import pytest

from torchsmith.explain import explain_text

# c10d link failures after USE_DISTRIBUTED was switched off: GNU ld and MSVC link.exe wording.
C10D_GNU = (
    "communicator.cpp:(.text+0x308): undefined reference to `c10d::TCPStore::TCPStore("
    "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, "
    "c10d::TCPStoreOptions const&)'\n"
    "collect2: error: ld returned 1 exit status\n"
)
C10D_MSVC = (
    "python_functions.obj : error LNK2019: unresolved external symbol "
    '"__declspec(dllimport) public: '
    'virtual __cdecl c10d::Work::~Work(void)" (__imp_??1Work@c10d@@UEAA@XZ) referenced in function '
    '"public: virtual __cdecl c10d::FutureWrappingWork::~FutureWrappingWork(void)"\n'
    "torch_python.dll : fatal error LNK1120: 1 unresolved externals\n"
)


@pytest.mark.parametrize("log", [C10D_GNU, C10D_MSVC], ids=["gnu-ld", "msvc"])
def test_c10d_link_failure_is_a_stale_build(log: str) -> None:
    top = explain_text(log).diagnoses[0]
    assert top.category == "stale-build-cache"
    assert top.rule == "cache.c10d-link-after-distributed-off"


@pytest.mark.parametrize(
    ("line", "category"),
    [
        # every OOM wording torch has used, and the cuBLAS/cuDNN/ROCm/MPS ones
        (
            "RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/"
            "generic/THCStorage.cu:58",
            "gpu-out-of-memory",
        ),
        (
            "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 2.00 GiB total "
            "capacity; 1.25 GiB already allocated)",
            "gpu-out-of-memory",
        ),
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
            "total capacity of 23.65 GiB of which 11.06 MiB is free.",
            "gpu-out-of-memory",
        ),
        (
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling "
            "`cublasCreate(handle)`",
            "gpu-out-of-memory",
        ),
        (
            "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.00 GiB",
            "gpu-out-of-memory",
        ),
        ("RuntimeError: MPS backend out of memory (MPS allocated: 17.00 GB)", "gpu-out-of-memory"),
        # driver and runtime initialisation codes
        (
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
            "functions before calling NumCudaDevices() that might have already set an error? "
            "Error 804: forward compatibility was attempted on non supported HW",
            "driver-too-old",
        ),
        (
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
            "functions before calling NumCudaDevices() that might have already set an error? "
            "Error 802: system not yet initialized",
            "no-gpu-visible",
        ),
        (
            "failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected",
            "no-gpu-visible",
        ),
        (
            "CUDA error 222 at ggml-cuda.cu:9635: the provided PTX was compiled with an "
            "unsupported toolchain.",
            "driver-too-old",
        ),
        # containers, submodules, tools, companions, installers
        (
            "docker: Error response from daemon: could not select device driver "
            '"" with capabilities: [[gpu]].',
            "no-gpu-visible",
        ),
        (
            "Could not find /src/pytorch/third_party/cpuinfo/CMakeLists.txt",
            "missing-build-dependency",
        ),
        (
            "FileNotFoundError: [Errno 2] No such file or directory: 'ninja': 'ninja'",
            "missing-build-dependency",
        ),
        (
            "    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.1.0+cu118)",
            "companion-version-mismatch",
        ),
        ("    PyTorch 2.1.2+cu121 with CUDA 1201 (you have 2.1.2+cpu)", "cpu-only-torch"),
        ("  Attempting uninstall: torch", "companion-version-mismatch"),
        (
            "pytorch                   1.4.0               py3.7_cpu_0  [cpuonly]  pytorch",
            "cpu-only-torch",
        ),
        (
            "ValueError: Unknown CUDA arch (9.0+PTX) or GPU not supported",
            "toolkit-too-old-for-arch",
        ),
        (
            "RuntimeError: nvrtc: error: failed to open libnvrtc-builtins.so.12.1.",
            "missing-runtime-library",
        ),
        (
            "ImportError: /home/u/.cache/torch_extensions/py310_cu121/fused/fused.so: undefined "
            "symbol: _ZN3c104cuda9SetDeviceEi",
            "stale-build-cache",
        ),
    ],
)
def test_family_wordings(line: str, category: str) -> None:
    result = explain_text(line + "\n")
    assert result.diagnoses, line
    assert result.diagnoses[0].category == category


@pytest.mark.parametrize(
    "log",
    [
        # a CPU-only CI machine: torch warns and the run goes on
        "/usr/lib/python3.11/site-packages/torch/cuda/__init__.py:52: UserWarning: CUDA "
        "initialization: Found no NVIDIA driver on your system. Please check that you have an "
        "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx "
        "(Triggered internally at ../c10/cuda/CUDAFunctions.cpp:100.)\n"
        "  return torch._C._cuda_getDeviceCount() > 0\n"
        "===== 12 passed in 3.02s =====\n",
        # cpp_extension's notice on a CPU worker, alone
        "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\n",
    ],
    ids=["cpu-ci-no-driver-warning", "no-cuda-runtime-notice"],
)
def test_warnings_of_runs_that_went_on_are_not_diagnosed(log: str) -> None:
    assert explain_text(log).healthy


def test_no_driver_error_is_still_diagnosed() -> None:
    log = "RuntimeError: Found no NVIDIA driver on your system. Please check that you have a GPU\n"
    assert explain_text(log).diagnoses[0].category == "no-gpu-visible"


def test_no_cuda_runtime_notice_leads_when_the_build_fails() -> None:
    log = (
        "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\n"
        "Traceback (most recent call last):\n"
        "AssertionError: Torch not compiled with CUDA enabled\n"
    )
    result = explain_text(log)
    assert result.diagnoses[0].category == "cpu-only-torch"
