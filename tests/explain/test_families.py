"""Issue 11 families that the corpus alone does not pin down: the same cause in every wording a
torch release or a platform prints, and warnings of runs that went on (not diagnosed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsmith.explain import explain_text
from torchsmith.explain.rules import load_rules

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
        (  # a GPU build uninstalled mid-install (an untagged one may be an upgrade: corroborates)
            "  Attempting uninstall: torch\n    Found existing installation: torch 2.5.1+cu124",
            "companion-version-mismatch",
        ),
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


# The general-form rules (rules/general.toml): a subject and a failure verb in either order.
@pytest.mark.parametrize(
    ("line", "category", "rule"),
    [
        # verb before the subject and after it
        (
            "Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9}",
            "missing-runtime-library",
            "general.library-not-loaded",
        ),
        (
            "libcudnn_ops.so.9 could not be loaded",
            "missing-runtime-library",
            "general.library-not-loaded",
        ),
        ("/bin/sh: 1: nvcc: not found", "cuda-toolkit-not-found", "general.nvcc-not-found"),
        (
            "  Caffe2: CUDA cannot be found.  Depending on whether you are building Caffe2",
            "cuda-toolkit-not-found",
            "general.cuda-toolkit-missing",
        ),
        (
            "cudaGetDeviceProperties returned 35",
            "driver-too-old",
            "general.cuda-error-code",
        ),
        (
            "Found NVIDIA GeForce GTX 1080 which is too old to be supported by the triton GPU "
            "compiler, which is used as the backend. Triton only supports devices of CUDA "
            "Capability >= 7.0, but your device is of CUDA capability 6.1",
            "other",  # no build adds it: torch.compile off (nnUNet#2349), as the corpus files it
            "general.gpu-lacks-feature",
        ),
        (
            # nvcc got this far, so the toolkit is there without cuSPARSE's development files
            "csrc/knn.cu:3:10: fatal error: cusparse.h: No such file or directory",
            "missing-build-dependency",
            "general.missing-cuda-library-header",
        ),
        (
            "src/vision.cpp:9:10: fatal error: TH/TH.h: No such file or directory",
            "other",
            "general.legacy-torch-header",
        ),
    ],
)
def test_general_forms(line: str, category: str, rule: str) -> None:
    lead = explain_text(line + "\n").diagnoses[0]
    assert (lead.category, lead.rule) == (category, rule)


def test_a_specific_rule_outranks_the_general_form() -> None:
    line = (
        "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory"
    )
    lead = explain_text(line + "\n").diagnoses[0]
    assert lead.rule == "libs.cannot-open-so"
    assert "general.library-not-loaded" in lead.related


@pytest.mark.parametrize(
    "log",
    [
        # CMake's own probes and TensorFlow's optional-library notices print "not found" in runs
        # that succeed; a subject without a failure verb is no finding either
        "-- Looking for libnvToolsExt.so - not found\n-- Configuring done\n-- Generating done\n",
        "2024-01-01 W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load "
        "dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object\n",
        "building 'ext' extension\ng++ -shared build/ext.o -L/usr/local/cuda/lib64 -lcudart -o "
        "build/lib/ext.so\nSuccessfully installed ext-0.1\n",
        # a CPU build named in a run that went on (corroborate: alone it says nothing)
        "PyTorch version: 2.1.0+cpu\nIs CUDA available: False\n",
    ],
    ids=["cmake-probe", "tensorflow-notice", "link-line", "cpu-build-alone"],
)
def test_general_forms_stay_quiet_on_runs_that_went_on(log: str) -> None:
    assert explain_text(log).healthy


def test_an_unrecognised_uncaught_exception_is_named_as_a_last_resort() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "ImportError: cannot import name 'TensorOpParams' from 'cumm.gemm.algospec.core'\n"
    )
    lead = explain_text(log).diagnoses[0]
    assert (lead.rule, lead.category, lead.symptom) == ("symptom.uncaught-exception", "other", True)


@pytest.mark.parametrize(
    ("log", "expect"),
    [
        (">>> import torch\n>>> torch.cuda.is_available()\n\nFalse\n", "no-gpu-visible"),
        ("In [2]: torch.cuda.is_available()\nOut[2]: False\n", "no-gpu-visible"),
        ("print(torch.cuda.device_count())\n0\n", "no-gpu-visible"),
        (">>> torch.cuda.is_available()\nTrue\n", None),
        ("python -c 'import torch; print(torch.cuda.is_available())'\n", None),
        # the printed False with CPU-build evidence: the cause outranks the symptom
        (
            "_pytorch_select           0.1                       cpu_0\n"
            ">>> torch.cuda.is_available()\nFalse\n",
            "cpu-only-torch",
        ),
    ],
    ids=["repl", "jupyter", "device-count", "true", "no-result", "cpu-build"],
)
def test_a_statement_and_its_printed_result(log: str, expect: str | None) -> None:
    result = explain_text(log)
    assert (result.diagnoses[0].category if result.diagnoses else None) == expect


def test_next_lines_stop_at_the_chunk_end_and_skip_blank_lines() -> None:
    from torchsmith.explain.scanner import next_lines  # noqa: PLC0415

    chunk = b"a\n\n  \nb\nc"
    assert next_lines(chunk, 1) == b"b\nc"
    assert next_lines(chunk, chunk.index(b"c") - 1) == b"c"
    assert next_lines(chunk, len(chunk)) == b""
    assert next_lines(b"a\n1\n2\n3\n4\n", 1) == b"1\n2\n3"
    assert next_lines(b"a\n\n\n\n\n\nb\n", 1) == b""  # more blank lines than it looks past


def test_traceback_marker_lines_do_not_count_as_next_lines() -> None:
    """Python 3.13 prints a multi-line call whole, each line under ~~~^ markers (the layout of the
    real kohya-webui-29 log): with the markers counted, PyG's AttributeError fell out of reach."""
    log = (
        "Traceback (most recent call last):\n"
        '  File "/home/me/venv/lib/python3.13/site-packages/torch_spline_conv/__init__.py",'
        " line 15, in <module>\n"
        "    torch.ops.load_library(importlib.machinery.PathFinder().find_spec(\n"
        "    ~~~~~~~~~~~~~~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "        f'{library}_{suffix}', [osp.dirname(__file__)]).origin)\n"
        "        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "AttributeError: 'NoneType' object has no attribute 'origin'\n"
    )
    diagnoses = explain_text(log).diagnoses
    assert diagnoses
    assert diagnoses[0].rule == "install.pyg-extension-library-missing"

    from torchsmith.explain.scanner import next_lines  # noqa: PLC0415

    assert next_lines(b"a\n  x[0]\n  ~^^\r\n\t^^^ ~~\nb\nc\n", 1) == b"  x[0]\nb\nc"


def _capability_warning(cc: str, low: str, high: str) -> str:
    """torch 2.5-2.10's warning (torch/cuda/__init__.py, _check_capability), as the real
    nano-vllm-130 log prints it."""
    return (
        "/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:283: UserWarning: \n"
        f"    Found GPU0 NVIDIA GB10 which is of cuda capability {cc}.\n"
        "    Minimum and Maximum cuda capability supported by this version of PyTorch is\n"
        f"    ({low}) - ({high})\n"
        "    \n"
        "  warnings.warn(\n"
    )


@pytest.mark.parametrize(
    ("cc", "low", "high", "flagged"),
    [
        ("12.1", "8.0", "12.0", False),  # GB10 runs sm_120 cubins: the warning is harmless
        ("8.9", "3.7", "8.6", False),  # Ada on a cu117 build
        ("6.1", "7.0", "12.0", True),  # Pascal below the minimum
        ("12.0", "5.0", "9.0", True),  # Blackwell on a build that stops at Hopper
        ("8.7", "5.0", "8.6", True),  # Jetson Orin: Tegra runs no desktop cubins of its major
    ],
)
def test_capability_warning_for_a_later_minor_of_the_top_major_is_harmless(
    cc: str, low: str, high: str, flagged: bool
) -> None:
    result = explain_text(_capability_warning(cc, low, high))
    assert [d.rule for d in result.diagnoses] == (["arch.gpu-too-old"] if flagged else [])


def test_round_30_review_logs() -> None:
    # written by the round's reviewer in the real formats (a GitHub Actions clock before a marker
    # line; ollama finding no GPU; JAX's CPU jaxlib while torch trains on the GPU)
    pyg = (
        '2025-03-02T10:11:12.1234567Z   File "/venv/lib/python3.13/site-packages/torch_scatter/'
        '__init__.py", line 15, in <module>\n'
        "2025-03-02T10:11:12.1234567Z     torch.ops.load_library(spec(\n"
        "2025-03-02T10:11:12.1234567Z     ~~~~~~~~~~~~~~~~~~~~~~^^^^^\n"
        "2025-03-02T10:11:12.1234567Z         f'{library}_{suffix}').origin)\n"
        "2025-03-02T10:11:12.1234567Z         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "2025-03-02T10:11:12.1234567Z AttributeError: 'NoneType' object has no attribute 'origin'\n"
    )
    assert explain_text(pyg).diagnoses[0].rule == "install.pyg-extension-library-missing"
    ollama = (
        'time=2025-08-31T13:43:05.731Z level=INFO source=gpu.go:377 msg="no compatible GPUs were'
        ' discovered"\n'
        'time=2025-08-31T13:43:05.731Z level=INFO source=device.go:216 msg="model weights"'
        ' device=CPU size="19.1 GiB"\n'
    )
    assert [d.rule for d in explain_text(ollama).diagnoses] == ["general.runs-on-cpu"]
    jax = (
        "WARNING:jax._src.xla_bridge:An NVIDIA GPU may be present on this machine, but a"
        " CUDA-enabled jaxlib is not installed. Falling back to cpu.\n"
        "GPU available: True (cuda), used: True\n"
        "`Trainer.fit` stopped: `max_epochs=400` reached.\n"
    )
    assert explain_text(jax).healthy


def test_a_capability_warning_on_one_line_is_read_whole() -> None:
    # a log shipper's record keeps the warning's line breaks as "\n" text: one line
    record = (
        '{"level":"warning","msg":"/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:283:'
        " UserWarning: \\n    Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.\\n"
        "    Minimum and Maximum cuda capability supported by this version of PyTorch is\\n"
        "    (8.0) - (12.0)"
        '\\n"}\n'
    )
    assert explain_text(record).diagnoses == ()
    old = record.replace("GB10", "GTX 1080").replace("12.1.", "6.1.").replace("(8.0)", "(7.0)")
    assert [d.rule for d in explain_text(old).diagnoses] == ["arch.gpu-too-old"]


def test_runs_built_cubin() -> None:
    from torchsmith.explain.derive import runs_built_cubin  # noqa: PLC0415

    assert runs_built_cubin("12.1", "12.0")
    assert runs_built_cubin("8.6", "8.6")
    assert not runs_built_cubin("12.0", "12.1")
    assert not runs_built_cubin("10.0", "9.0")
    assert not runs_built_cubin("12.1", "x")


def test_builds_go_together() -> None:
    from torchsmith.explain.derive import builds_go_together  # noqa: PLC0415

    assert builds_go_together("cu126", "cu121")  # torchvision checks the CUDA major only
    assert builds_go_together("rocm6.2", "rocm6.2.4")
    assert not builds_go_together("cpu", "cu126")
    assert not builds_go_together("cu118", "cu126")
    assert not builds_go_together("cu92", "cu102")
    assert not builds_go_together("rocm7.9.0rc20250923", "rocm7.0.0rc20250903")


def test_cuda_tags_against_a_version() -> None:
    from torchsmith.explain.derive import cuda_tag_at_least, cuda_tag_below  # noqa: PLC0415

    assert cuda_tag_below("cu111", "11.7")
    assert cuda_tag_below("cu92", "11.6")
    assert not cuda_tag_below("cu118", "11.7")
    assert cuda_tag_at_least("cu121", "11.7")
    assert not cuda_tag_at_least("cu102", "11.6")
    assert not cuda_tag_below("rocm6.2", "11.7")  # not a CUDA tag: neither holds
    assert not cuda_tag_at_least("rocm6.2", "11.7")


def test_flash_attn_cuda_check_blames_torch_only_when_torch_is_older() -> None:
    """flash-attn prints torch.__version__ after its nvcc check: a torch built for a new enough CUDA
    means the toolkit is the one to change; an older torch means the environment is too old."""
    head = (
        "RuntimeError: FlashAttention is only supported on CUDA 11.7 and above.  Note: make sure "
        "nvcc has a supported version by running nvcc -V.\n\n\ntorch.__version__  = "
    )
    old = explain_text(head + "1.9.0+cu111\n").diagnoses
    new = explain_text(head + "2.3.1+cu121\n").diagnoses
    assert old[0].rule == "toolkit.torch-cuda-older-than-package-needs"
    assert new[0].rule == "toolkit.nvcc-older-than-package-needs"
    assert "toolkit.nvcc-older-than-package-needs" not in [d.rule for d in old]


def test_advice_and_library_log_lines_are_not_how_a_run_ended() -> None:
    advice = "Testing 0 img\nIf you encounter CUDA out of memory, try to set --tile to 200.\n"
    assert "memory.cuda-oom" not in [d.rule for d in explain_text(advice).diagnoses]
    cpuinfo = (
        'Error in cpuinfo: failed to parse file /sys/devices/system/cpu/kernel_max: "-1\n'
        "[('tiger, Panthera tigris', 91.03)]\n"
    )
    assert not explain_text(cpuinfo).diagnoses


def test_a_package_list_of_one_build_is_no_companion_mismatch() -> None:
    """A list whose companions share torch's build says nothing; one of another build does."""
    same = "torch==2.6.0+cu126\ntorchaudio==2.6.0+cu126\ntorchvision==0.21.0+cu124\n"
    other = "torch                2.6.0+cpu\ntorchaudio           2.6.0+cu126\n"
    rule = "install.companion-listed-for-other-build"
    assert rule not in [d.rule for d in explain_text(same).diagnoses]
    assert [d.rule for d in explain_text(other).diagnoses] == [rule]


def test_a_companion_of_another_build_is_found_after_one_of_the_same() -> None:
    # the next pattern's first match (torchaudio, same build) was the only one checked
    log = "torch==2.6.0+cu126\ntorchaudio==2.6.0+cu126\ntorchvision==0.21.0+cpu\n"
    found = explain_text(log).diagnoses
    assert [d.rule for d in found] == ["install.companion-listed-for-other-build"]
    assert found[0].values["companion"] == "torchvision"
    assert found[0].evidence[0].endswith("-> torchvision==0.21.0+cpu")  # the line that decided


def test_pip_names_the_requirements_line_in_parentheses_of_its_own() -> None:
    log = (
        "ERROR: Could not find a version that satisfies the requirement torch==2.1.0 "
        "(from -r requirements.txt (line 2)) (from versions: 2.2.0, 2.3.0)\n"
    )
    found = explain_text(log).diagnoses
    assert found[0].rule == "install.no-torch-for-python"
    assert found[0].values["available"] == "2.2.0, 2.3.0"


def test_nccl_debug_lines_of_a_run_that_went_on_stay_quiet() -> None:
    log = (
        "node1:123:456 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v8 symbol.\n"
        "node1:123:456 [0] NCCL INFO Failed to open libibverbs.so[.1]\n"
        "node1:123:456 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
        "node1:123:456 [0] NCCL INFO comm 0x5581 rank 0 nranks 2 cudaDev 0 busId 1000 - "
        "Init COMPLETE\n"
        "Epoch 1: 100%|##########| 782/782 [00:41<00:00, 18.9it/s, loss=0.31]\n"
    )
    assert explain_text(log).healthy


def test_a_recorded_nccl_debug_run_that_worked_is_healthy() -> None:
    # NCCL 2.28.9 (torch 2.11.0+cu130) on the GPU machine with NCCL_DEBUG=INFO: it reports each
    # optional plugin library it did not find (libnccl-net.so, -tuner, -profiler, -env) on every run
    from pathlib import Path  # noqa: PLC0415

    log = Path(__file__).parents[1] / "fixtures" / "h200-linux" / "nccl-info-allreduce.log"
    text = log.read_text()
    assert "NET/Plugin: Could not find: libnccl-net.so" in text
    assert explain_text(text).healthy
    # the older wording (NCCL 2.21.5, vllm#5484) with the loader's message in it
    older = (
        "omega:18302:18445 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: "
        "cannot open shared object file: No such file or directory : when loading libnccl-net.so\n"
        "omega:18302:18445 [0] NCCL INFO NET/Plugin: Using internal network plugin.\n"
    )
    assert explain_text(older).healthy


@pytest.mark.parametrize(
    ("log", "rule"),
    [
        # a compiler killed while pip builds torch-scatter is the build's memory, not pip's download
        (
            "Collecting torch-scatter\n  Using cached torch_scatter-2.1.2.tar.gz\n"
            "Building wheel for torch-scatter (setup.py) ... -\nKilled\n",
            "memory.bare-killed",
        ),
        # pip >= 23.1 prints the wheel's index URL, far below 'Collecting torch'
        (
            "  Downloading https://download.pytorch.org/whl/cu121/torch-2.1.0%2Bcu121-cp310-cp310-"
            "linux_x86_64.whl (2200.6 MB)\nKilled\n",
            "install.pip-killed-downloading-torch",
        ),
        # the pinned date listed for another CUDA is a wrong index, not a pruned nightly
        (
            "ERROR: Could not find a version that satisfies the requirement "
            "torch==2.6.0.dev20240918+cu124 (from versions: 2.6.0.dev20240918+cu121, "
            "2.6.0.dev20241024+cu121)\n",
            "install.no-torch-for-python",
        ),
        # the user's own circular import, not a torch without distributed
        (
            "AttributeError: partially initialized module 'torch.distributed' has no attribute "
            "'get_rank' (most likely due to a circular import)\n",
            "symptom.uncaught-exception",
        ),
    ],
    ids=["torch-scatter-build-killed", "pip-url-download-killed", "nightly-other-cuda", "circular"],
)
def test_close_relatives_of_round_25_rules_go_to_the_right_rule(log: str, rule: str) -> None:
    assert explain_text(log).diagnoses[0].rule == rule


def test_torchvision_0_2_2_beside_the_torch_it_was_made_for_is_no_fallback() -> None:
    log = (
        "Collecting torchvision==0.2.2.post3\n"
        "Successfully installed torch-1.0.1 torchvision-0.2.2.post3\n"
    )
    assert explain_text(log).healthy


def test_warnings_a_run_goes_on_after_stay_quiet() -> None:
    """Review of round 33/34's rules: each of these lines is printed by a run that went on and
    worked (LLVM ignoring an unknown processor, NCCL falling back, TensorFlow without peer access,
    pip retrying and then installing)."""
    healthy = [
        "'sm_120' is not a recognized processor for this target (ignoring processor)\n"
        "The maximum difference between torch and triton is 0.0\n",
        "node1:1:2 [0] transport.cc:464 NCCL WARN Cannot initialize CollNet, using point-to-point "
        "network instead\nnode1:1:2 [0] NCCL WARN Could not find real path of mlx5_0 "
        "(/sys/class/infiniband/mlx5_0/device)\nTraining finished.\n",
        "W tensorflow/core/common_runtime/gpu/gpu_device.cc:2048] Unable to enable peer access "
        "between device ordinals 0 and 1, status: INTERNAL: failed to enable peer access: "
        "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: peer access is not supported between these two "
        "devices\nEpoch 1/10 loss 0.29\n",
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) "
        "after connection broken by 'ReadTimeoutError(x)': /simple/torch/\n"
        "Successfully installed torch-2.5.1\n",
    ]
    for log in healthy:
        assert explain_text(log).diagnoses == (), log


def test_pip_failures_name_the_network_and_the_index_not_the_python() -> None:
    unreachable = (
        "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) "
        "after connection broken by 'NewConnectionError(x: Failed to establish a new connection: "
        "[Errno -3] Temporary failure in name resolution)': /simple/ctranslate2/\n"
        "ERROR: Could not find a version that satisfies the requirement ctranslate2 "
        "(from versions: none)\nERROR: No matching distribution found for ctranslate2\n"
    )
    assert [d.rule for d in explain_text(unreachable).diagnoses][:1] == [
        "install.index-unreachable"
    ]
    # the knowledge base holds no xpu wheels: nothing known says 2.7.1 lacks one
    xpu = (
        "ERROR: Could not find a version that satisfies the requirement torch==2.7.1 "
        "(from versions: 2.5.0+xpu, 2.5.1+xpu, 2.6.0+xpu)\n"
    )
    assert "install.index-lacks-release" not in [d.rule for d in explain_text(xpu).diagnoses]
    from_file = (
        "ERROR: Could not find a version that satisfies the requirement torch==2.7.1 (from -r "
        "requirements.txt (line 2)) (from versions: 2.4.0+cu124, 2.6.0+cu124)\n"
    )
    assert [d.rule for d in explain_text(from_file).diagnoses][:1] == [
        "install.index-lacks-release"
    ]


@pytest.mark.parametrize(
    ("log", "expect"),
    [
        # a program's own notice that it skips torch.compile and goes on: torch raised nothing
        (
            "INFO:root:torch.compile is not supported on Python 3.12+. Skipping it.\nDone.\n",
            None,
        ),
        (
            "RuntimeError: Dynamo is not supported on Python 3.12+\n",
            "general.compile-python-unsupported",
        ),
        # libc's names are no BLAS routines: torch's own libraries mixed, as before
        (
            "ImportError: /x/torch/lib/libc10.so: undefined symbol: strtod\n",
            "cache.torch-libs-inconsistent",
        ),
        (
            "ImportError: /x/torch/lib/libtorch_cpu.so: undefined symbol: dladdr\n",
            "cache.torch-libs-inconsistent",
        ),
        (
            "ImportError: /x/torch/lib/libtorch_cpu.so: undefined symbol: sgesdd_64_\n",
            "libs.blas-symbol-missing",
        ),
        # a program that caught the error and went on without compiling
        (
            "WARNING: torch.compile failed (RuntimeError: Dynamo is not supported on Python "
            "3.12+)\nrunning eager\nDone.\n",
            None,
        ),
        (
            "ImportError: /x/torch/lib/libtorch_cpu.so: undefined symbol: dsytrs_\n",
            "libs.blas-symbol-missing",
        ),
        (
            "ImportError('Requires Flash-Attention version >=2.7.1,<=2.7.4 "
            "but got 2.8.0.post2.')\n",
            "install.xformers-flash-attn-version",
        ),
        # a missing tag whose name holds "cache" is still a missing tag
        (
            "manifest for docker.io/library/memcached:9.9 not found: manifest unknown\n",
            "devices.container-image-tag-missing",
        ),
        # BuildKit importing a build cache that was not pushed yet goes on with the build
        ("#6 ERROR: ghcr.io/x/app:buildcache: manifest unknown\n#7 [1/5] FROM python:3.12\n", None),
    ],
    ids=[
        "compile-notice",
        "compile-raised",
        "libc-strtod",
        "libc-dladdr",
        "ilp64-blas",
        "compile-caught",
        "lapack-sytrs",
        "xformers-quoted",
        "memcached-tag",
        "buildkit-cache",
    ],
)
def test_round_38_and_39_rules_on_nearby_lines(log: str, expect: str | None) -> None:
    assert _top_rule(log) == expect


def _top_rule(log: str) -> str | None:
    diagnoses = explain_text(log).diagnoses
    return diagnoses[0].rule if diagnoses else None


def test_the_cache_rule_excludes_exactly_the_symbols_the_blas_rule_reads() -> None:
    # the routine-stem list is written in both rule files: a stem added to one only would send
    # that symbol to both rules, or to neither
    rules = {r.id: r for r in load_rules()}
    blas = rules["libs.blas-symbol-missing"].patterns[0].pattern
    symbols = blas[blas.index("(?P<symbol>") + len("(?P<symbol>") : blas.rindex(")\\b")]
    excludes = [p.pattern for p in rules["cache.torch-libs-inconsistent"].exclude]
    assert f"undefined symbol: (?:{symbols})\\b" in excludes


def test_version_tuples() -> None:
    from torchsmith.explain.derive import version_tuples  # noqa: PLC0415

    bounds = "mmcv>=(1, 3, 13, 0, 0, 0), <=(1, 4, 0, 0, 0, 0)"
    assert version_tuples(bounds) == "mmcv>=1.3.13, <=1.4.0"
    assert version_tuples("mmcv>=2.0.0rc4, <2.1.0") == "mmcv>=2.0.0rc4, <2.1.0"
    # digit_version(length=4): the release in four numbers, then the pre- or post-release
    assert version_tuples("mmcv>=(2, 0, 0, 0, -1, 4)") == "mmcv>=2.0.0rc4"
    assert version_tuples("(1, 3, 13, 5, 0, 0)") == "1.3.13.5"
    assert version_tuples("(2, 1, 0, 0, 1, 2)") == "2.1.0.post2"
    assert version_tuples("(2, 0, 0, 0, 7, 0)") == "(2, 0, 0, 0, 7, 0)"  # unknown: as printed


@pytest.mark.parametrize(
    ("log", "expect"),
    [
        # ComfyUI's exception line in both spellings; a cause on it still goes to its own rule
        (
            "got prompt\n!!! Exception during processing !!! 'NoneType' object has no attribute"
            " 'shape'\n",
            "symptom.uncaught-exception",
        ),
        (
            "!!! Exception during processing!!! CUDA out of memory. Tried to allocate 2.00 GiB\n",
            "memory.cuda-oom",
        ),
        (
            "[16:10:33] OutOfResources: out of resource: shared memory, Required: 98304, Hardware"
            " limit: 65536. Reducing block sizes or `num_stages` may help.\n",
            "general.triton-shared-memory-limit",
        ),
        # mmseg's tuple bounds read back as versions
        (
            "AssertionError: MMCV==1.3.8 is used but incompatible. Please install"
            " mmcv>=(1, 3, 13, 0, 0, 0), <=(1, 4, 0, 0, 0, 0).\n",
            "install.openmmlab-version-assert",
        ),
        # collect_env's report after wget's 404 (for collect_env.py): the report is how it ended
        (
            "2025-09-29 06:33:20 ERROR 404: Not Found.\n\nCollecting environment information...\n"
            "PyTorch version: 2.6.0+cu118\nIs debug build: False\n"
            "CUDA used to build PyTorch: 11.8\n",
            None,
        ),
        # an error after the report is still how the run ended
        (
            "PyTorch version: 2.6.0+cu118\nIs debug build: False\n"
            "2025-09-29 06:33:20 ERROR 404: Not Found.\n",
            "generic.ended-in-error",
        ),
        # torch among a list of imported modules
        (
            'Traceback (most recent call last):\n  File "/Users/x/GPT-SoVITS/webui.py", line 4, in'
            " <module>\n    import json,yaml,warnings,torch\nModuleNotFoundError: No module named"
            " 'torch'\n",
            "deps.torch-not-installed",
        ),
    ],
    ids=[
        "comfyui-exception",
        "comfyui-oom",
        "triton-smem",
        "mmcv-tuples",
        "collect-env-after-404",
        "error-after-report",
        "import-list",
    ],
)
def test_round_41_rules_on_nearby_lines(log: str, expect: str | None) -> None:
    assert _top_rule(log) == expect
    if expect == "install.openmmlab-version-assert":
        assert 'mim install "mmcv>=1.3.13, <=1.4.0"' in explain_text(log).diagnoses[0].fix


@pytest.mark.parametrize(
    ("log", "expect", "wanted"),
    [
        # one bound: the sentence's period is not part of the version
        (
            "AssertionError: MMCV==1.2.0 is used but incompatible. Please install mmcv>=1.3.1.\n",
            "install.openmmlab-version-assert",
            'mim install "mmcv>=1.3.1"',
        ),
        (
            "AssertionError: MMCV==2.2.0 is used but incompatible. Please install"
            " mmcv>=2.0.0rc4, <2.2.0.\n",
            "install.openmmlab-version-assert",
            'mim install "mmcv>=2.0.0rc4, <2.2.0"',
        ),
        # Inductor's autotuner logs the message and skips that configuration: no failure
        (
            "W0306 14:40:15.990000 1719866 .venv/lib/python3.12/site-packages/torch/_inductor/"
            "select_algorithm.py:1517] [2/0] out of resource: shared memory, Required: 131072,"
            " Hardware limit: 101376. Reducing block sizes or `num_stages` may help.\n",
            None,
            "",
        ),
        # TransformerEngine's FP8 reason before a framework falls back, and printed: healthy runs
        (
            "[NeMo W 2024-05-01 10:00:00 utils:12] FP8 not available: Device compute capability 8.9"
            " or higher required for FP8 execution. Falling back to bf16.\n"
            "Training: 100%|####| 10/10\n",
            None,
            "",
        ),
        (
            "(False, 'Device compute capability 8.9 or higher required for FP8 execution.')\n",
            None,
            "",
        ),
        # Triton 3.x's temporary file wherever TMPDIR is
        (
            "ptxas /var/tmp/tmpa1b2c3d4.ptx, line 523; error   : Feature '.bf16' requires .target"
            " sm_80 or higher\n",
            "general.gpu-lacks-feature",
            "",
        ),
        (
            "ptxas /scratch/u/slurm-12/tmpa1b2c3d4.ptx, line 523; error   : Feature '.bf16'"
            " requires .target sm_80 or higher\n",
            "general.gpu-lacks-feature",
            "",
        ),
        # TransformerEngine's FP8 reason as a pytest skip: a healthy run
        (
            "SKIPPED [24] tests/pytorch/test_numerics.py:123: Device compute capability 8.9 or"
            " higher required for FP8 execution.\n"
            "======= 120 passed, 24 skipped in 300.12s =======\n",
            None,
            "",
        ),
        (
            "AssertionError: Device compute capability 8.9 or higher required for FP8 execution.\n",
            "general.gpu-lacks-feature",
            "",
        ),
        # ptxas run by Triton 3.x's JIT (a Python temporary file), and by nvcc for an arch list
        (
            "ptxas /tmp/tmpa1b2c3d4.ptx, line 523; error   : Feature '.bf16' requires .target sm_80"
            " or higher\n",
            "general.gpu-lacks-feature",
            "",
        ),
        (
            "ptxas /tmp/tmpxft_00000247_00000000-13_kernel.compute_52.ptx, line 1514; error   :"
            " Feature 'f16 arithemetic and compare instructions' requires .target sm_53 or"
            " higher\n",
            "toolkit.ptxas-feature-needs-newer-arch",
            "",
        ),
        # an old CUDA is what the message says it is
        (
            "RuntimeError: Triton only support CUDA 10.0 or higher, but got CUDA version: 9.2\n",
            "symptom.uncaught-exception",
            "",
        ),
        (
            "E   RuntimeError: Triton only support CUDA 10.0 or higher, but got CUDA version:"
            " 12.8\n",
            "general.triton-unknown-cuda-version",
            "",
        ),
        # torch._dynamo itself came in 2.0; a submodule removed later is another story
        (
            "ModuleNotFoundError: No module named 'torch._dynamo'\n",
            "install.torch-too-old-for-module",
            "",
        ),
        (
            "ModuleNotFoundError: No module named 'torch._dynamo.optimizations'\n",
            "symptom.uncaught-exception",
            "",
        ),
        # a launcher's level before ComfyUI's exception line
        (
            "[ERROR] !!! Exception during processing !!! 'NoneType' object has no attribute"
            " 'shape'\n",
            "symptom.uncaught-exception",
            "",
        ),
    ],
    ids=[
        "mmcv-one-bound",
        "mmcv-rc-bounds",
        "inductor-autotune",
        "te-fallback",
        "te-printed",
        "triton3-var-tmp",
        "triton3-scratch",
        "te-skipped",
        "te-raised",
        "triton3-ptx",
        "nvcc-ptx",
        "triton-cuda-9",
        "triton-cuda-12-8",
        "dynamo",
        "dynamo-submodule",
        "comfyui-prefixed",
    ],
)
def test_round_41_to_44_review_cases(log: str, expect: str | None, wanted: str) -> None:
    result = explain_text(log)
    assert (result.diagnoses[0].rule if result.diagnoses else None) == expect
    assert result.healthy == (expect is None)
    if wanted:
        assert wanted in result.diagnoses[0].fix


_NOTICE = (
    "2025-06-28 17:06:42 WARNING  A matching Triton is not available, some optimizations will not"
    " be enabled   __init__.py:61\n"
    "Traceback (most recent call last):\n"
    '  File "D:\\venv\\Lib\\site-packages\\xformers\\__init__.py", line 57, in'
    " _is_triton_available\n"
    "    import triton  # noqa\n"
    "    ^^^^^^^^^^^^^\n"
    "ModuleNotFoundError: No module named 'triton'\n"
)


@pytest.mark.parametrize(
    ("log", "expect"),
    [
        # xformers' notice with the traceback of the ImportError it caught: the run went on
        (_NOTICE, None),
        (_NOTICE + "steps:  10%|###    | 780/7800 [05:04<45:36,  2.57it/s, loss=0.117]\n", None),
        # cut inside the caught exception's line
        (_NOTICE.replace(" 'triton'\n", ""), None),
        # a failure after the caught one is still read, near it or far below
        (
            _NOTICE + 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
            "KeyError: 'model'\n",
            "symptom.uncaught-exception",
        ),
        (_NOTICE + "ok\n" * 30 + "KeyError: 'model'\n", "symptom.uncaught-exception"),
        # rich's indented traceback, then a crash: the crash is read, the caught exception is not
        (
            "2025-06-28 17:06:42 WARNING  A matching Triton is not available, some optimizations"
            " will not be enabled   __init__.py:61\n"
            "                             Traceback (most recent call last):\n"
            "                               File\n"
            '                             "F:\\venv\\xformers\\__init__.py", line 57, in'
            " _is_triton_available\n"
            "                                 import triton  # noqa\n"
            "                             ModuleNotFoundError: No module named 'triton'\n"
            'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
            "KeyError: 'model'\n",
            "symptom.uncaught-exception",
        ),
        # rich wrapped the frame's path before "xformers": the library frame is enough
        (
            "2025-06-28 17:06:42 WARNING  A matching Triton is not available, some optimizations"
            " will not be enabled   __init__.py:61\n"
            "                             Traceback (most recent call last):\n"
            "                               File\n"
            '                             "F:\\LoRA\\venv\\Lib\\site-packages\\xfo\n'
            '                             rmers\\__init__.py", line 57, in _is_triton_available\n'
            "                                 import triton  # noqa\n"
            "                             ModuleNotFoundError: No module named 'triton'\n",
            None,
        ),
        # rich folded the path inside "site-packages": the traceback still follows the notice
        (
            _NOTICE.replace(
                '  File "D:\\venv\\Lib\\site-packages\\xformers\\__init__.py", line 57, in'
                " _is_triton_available\n",
                '  File\n"F:\\AI\\Kohya\\LoRA\\venv\\Lib\\site-pac\nkages\\xformers\\__init__.py",'
                " line 57, in _is_triton_available\n",
            ),
            None,
        ),
        # another program's traceback right after the notice ends in what xformers does not catch
        (
            _NOTICE.split("Traceback", maxsplit=1)[0]
            + 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
            "KeyError: 'model'\n",
            "symptom.uncaught-exception",
        ),
        # a chained caught traceback: its next exception was caught too
        (
            _NOTICE.replace("'triton'\n", "'triton._C'\n")
            + "\nDuring handling of the above exception, another exception occurred:\n\n"
            "Traceback (most recent call last):\n"
            '  File "x/triton/__init__.py", line 3, in <module>\n'
            "ImportError: DLL load failed while importing libtriton: The specified module could not"
            " be found.\nsteps 10%\n",
            None,
        ),
        # a bare caught ImportError, then a crash: the crash is read
        (
            _NOTICE.replace("ModuleNotFoundError: No module named 'triton'", "ImportError")
            + "loading\n" * 3
            + 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
            "KeyError: 'model'\n",
            "symptom.uncaught-exception",
        ),
        # the old notice prints no traceback: nothing is caught, the crash below is read
        (
            "A matching Triton is not available, some optimizations will not be enabled.\n"
            "Error caught was: No module named 'triton'\nLoading model from x.safetensors\n"
            "ValueError: too many values to unpack (expected 2)\n",
            "symptom.uncaught-exception",
        ),
        # a caught exception a cause rule knows is no failure either
        (
            _NOTICE.replace(
                "ModuleNotFoundError: No module named 'triton'",
                "ImportError: DLL load failed while importing libtriton: The specified module could"
                " not be found.",
            )
            + "steps: 10%|###| 780/7800\n",
            None,
        ),
        # a deep caught traceback (Python 3.11's three lines a frame)
        (
            _NOTICE.replace(
                "    import triton  # noqa\n",
                '    import triton  # noqa\n    ^^^^^^\n  File "t/__init__.py", line 8, in'
                " <module>\n" * 6,
            ),
            None,
        ),
    ],
    ids=[
        "notice",
        "run-went-on",
        "cut",
        "error-near",
        "error-far",
        "rich-then-crash",
        "rich-wrapped-path",
        "fold-in-site-packages",
        "another-traceback",
        "chained",
        "bare-caught-then-crash",
        "old-notice-then-crash",
        "caught-dll",
        "deep-traceback",
    ],
)
def test_a_caught_notice_hides_only_the_exception_it_caught(log: str, expect: str | None) -> None:
    result = explain_text(log)
    assert (result.diagnoses[0].rule if result.diagnoses else None) == expect
    assert result.healthy == (expect is None)


def test_a_caught_exception_is_of_its_own_input() -> None:
    # two inputs of one name: the second's line 6 is no exception the first one's notice caught
    from torchsmith.explain.engine import Explainer  # noqa: PLC0415

    explainer = Explainer()
    explainer.feed("<text>", [_NOTICE.encode()])
    explainer.feed("<text>", [b"a\n" * 5 + b"KeyError: 'model'\n"])
    assert [d.rule for d in explainer.result().diagnoses] == ["symptom.uncaught-exception"]


def test_a_caught_notice_at_the_end_of_a_chunk(tmp_path: Path) -> None:
    # the scanner's first chunk is the log's first 64 KiB: a notice as its last line has no lines
    # after it there, and its traceback, read in the next chunk, is still the caught one
    from torchsmith.explain import explain_files  # noqa: PLC0415

    notice, _, rest = _NOTICE.partition("\n")
    pad = "loading shard 00001 of 00099 from /data/model/shards\n"
    head = pad * ((65536 - len(notice) - 1) // len(pad))
    head += "x" * (65536 - len(notice) - 1 - len(head) - 1) + "\n"
    log = tmp_path / "train.log"
    log.write_text(head + notice + "\n" + rest + "step 1 loss 0.5\n" * 40 + "Training finished.\n")
    assert len((head + notice + "\n").encode()) == 65536
    result = explain_files([str(log)])
    assert result.diagnoses == ()
    assert result.healthy


def test_offers_at_least_reads_pips_list_of_versions() -> None:
    from torchsmith.explain.derive import offers_at_least  # noqa: PLC0415

    assert not offers_at_least("0.7.13, 0.8.0, 1.0.3, 1.0.4", "1.2.0")
    assert offers_at_least("0.7.13, 1.2.0", "1.2.0")
    assert offers_at_least(
        "1.0.4, 2.0.0rc1, not-a-version", "1.2"
    )  # a later pre-release counts; junk is skipped
    assert offers_at_least(
        "1.0", "a.b"
    )  # a bound that does not read: nothing against the listed ones


_PIP_NO_VERSION = "ERROR: Could not find a version that satisfies the requirement"

ROUND_45_LINES = [
    # a >= bound above every release pip lists: the newer ones have no file for this Python
    (
        f"{_PIP_NO_VERSION} taichi>=1.2.0 (from versions: 0.7.13, 1.0.4)",
        "install.newer-release-not-for-this-python",
    ),
    # the same bound met by a listed release is not this cause
    (
        f"{_PIP_NO_VERSION} taichi>=1.0.0 (from versions: 0.7.13, 1.0.4)",
        None,
    ),
    # an exact pin is left to the rules that read a release that does not exist
    (
        f"{_PIP_NO_VERSION} taichi==1.2.0 (from versions: 0.7.13, 1.0.4)",
        None,
    ),
    ("zsh: segmentation fault  python demo.py", "symptom.uncaught-exception"),
    (
        "RuntimeError: expected type torch.cuda.FloatTensor but got torch.FloatTensor",
        "devices.tensors-on-different-devices",
    ),
    # a dtype mismatch on one device is not a device mismatch
    (
        "RuntimeError: expected type torch.cuda.FloatTensor but got torch.cuda.DoubleTensor",
        "symptom.uncaught-exception",
    ),
    (
        "'TORCH_CUDA_ARCH_LIST' is not recognized as an internal or external command,",
        "windows.posix-env-assignment",
    ),
    # a missing program is not a variable assignment, nor an upper-case name without '_' or a digit
    ("'nvcc' is not recognized as an internal or external command,", None),
    ("'NVCC' is not recognized as an internal or external command,", None),
    (
        "The term 'MAX_JOBS=4' is not recognized as a name of a cmdlet, function, script file, or"
        " executable program.",
        "windows.posix-env-assignment",
    ),
    # pip saw nothing at all: that is install.no-release-for-this-python's reading, not this one's
    (
        f"{_PIP_NO_VERSION} taichi>=1.2.0 (from versions: none)",
        "install.no-release-for-this-python",
    ),
    (
        "RuntimeError: Expected object of type torch.cuda.FloatTensor but found type"
        " torch.FloatTensor for argument #2 'weight'",
        "devices.tensors-on-different-devices",
    ),
    ("[1]  + 10389 segmentation fault  python", "symptom.uncaught-exception"),
    (
        "Warp CUDA error: Failed to get driver entry point 'cuDeviceGetUuid' (CUDA error 1)",
        "general.warp-entry-point-newer-driver",
    ),
    # a linker's unresolved torch symbol is a build failure, not Windows' loader dialog
    (
        'error LNK2001: unresolved external symbol "public: void __cdecl c10::Foo(void)"'
        " (?Foo@c10@@QEAAXXZ)",
        None,
    ),
]


@pytest.mark.parametrize(("line", "rule"), ROUND_45_LINES)
def test_round_45_forms(line: str, rule: str | None) -> None:
    result = explain_text(line + "\n")
    rules = [d.rule for d in result.diagnoses]
    if rule is None:
        assert not any(
            r in rules
            for r in (
                "install.newer-release-not-for-this-python",
                "windows.posix-env-assignment",
                "abi.windows-entry-point-not-found",
            )
        ), rules
    else:
        assert rules[:1] == [rule], rules


def test_killed_after_a_build_step_is_still_the_compiler() -> None:
    log = "[12/40] /usr/local/cuda/bin/nvcc -c kernel.cu -o kernel.o\nKilled\n"
    assert _top_rule(log) == "memory.bare-killed"
    repl = ">>> model = build().cuda()\nKilled\n"
    assert _top_rule(repl) == "memory.killed-while-running"
    # pip killed getting a wheel is pip's own rule, with Docker's exit line after it too
    docker = (
        "  Downloading nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl (664.8 MB)\n"
        "Killed\nThe command returned a non-zero code: 137\n"
    )
    assert _top_rule(docker) == "install.pip-killed-downloading-torch"
    # and a statement at Python's prompt with the shell's prompt after it
    assert _top_rule(repl + "$ \n") == "memory.killed-while-running"


def test_a_torch_symbol_missing_on_macos_is_still_a_build_for_another_torch() -> None:
    log = (
        "ImportError: dlopen(/Users/me/venv/lib/python3.9/site-packages/torchaudio/lib/"
        "libtorchaudio.so, 0x0006): Symbol not found: "
        "__ZN2at14RecordFunctionC1ENS_11RecordScopeEb\n"
        "  Referenced from: /Users/me/venv/lib/python3.9/site-packages/torchaudio/lib/"
        "libtorchaudio.so "
        "(which was built for Mac OS X 11.0)\n"
    )
    assert _top_rule(log) == "abi.undefined-symbol"


def test_warp_without_a_driver_is_a_failure_only_where_the_run_failed() -> None:
    start = "Warp CUDA error: Could not open libcuda.so.\nWarp 1.7.0 initialized:\n"
    # a CPU-only CI runner: Warp says so at start and the run goes on on the CPU
    assert explain_text(start + "   CUDA Toolkit 12.8, Driver 0.0\n").healthy
    failed = start + 'RuntimeError: Error: device "cuda" not found\n'
    assert _top_rule(failed) == "general.warp-no-driver"


ROUND_47_LINES = [
    (
        "RuntimeError: Triton Error [CUDA]: device kernel image is invalid.",
        "driver.kernel-image-invalid",
    ),
    (
        "[rank0]: RuntimeError: CUDA error: device kernel image is invalid",
        "driver.kernel-image-invalid",
    ),
    (
        "RuntimeError: CUDA driver error: device kernel image is invalid",
        "driver.kernel-image-invalid",
    ),
    ("CUDA failure 200: device kernel image is invalid ; GPU=0", "driver.kernel-image-invalid"),
    # a GPU without code for its arch is error 209, not 200; an enum in a source listing is no error
    (
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        "arch.no-kernel-image",
    ),
    ("  if (err == CUDA_ERROR_INVALID_IMAGE) return;", None),
    (
        "ImportError: /opt/nvvl/lib/libnvvl.so: undefined symbol: cuvidGetDecoderCaps",
        "driver.video-decoder-symbol-missing",
    ),
    (
        "[h264_cuvid @ 0x2993740] Cannot load cuvidGetDecodeStatus",
        "driver.video-decoder-symbol-missing",
    ),
    (
        "pointnet2/_ext-src/include/utils.h:23:5: error: ‘AT_CHECK’ was not declared in this scope",
        "general.legacy-torch-header",
    ),
    ('src/nms.cu(12): error: identifier "THCState" is undefined', "general.legacy-torch-header"),
    (
        "src/nms.cpp:3:1: error: use of undeclared identifier 'THCudaCheck'",
        "general.legacy-torch-header",
    ),
    (
        "src\\pcreg.cpp(12): error C3861: 'AT_CHECK': identifier not found",
        "general.legacy-torch-header",
    ),
    (
        "src\\nms.cu(3): error C2065: 'THCState': undeclared identifier",
        "general.legacy-torch-header",
    ),
    ("src/nms.cpp:4:1: error: ‘THCState’ does not name a type", "general.legacy-torch-header"),
    ("src/nms.cpp:4:1: error: unknown type name 'THCState'", "general.legacy-torch-header"),
    (
        "src/nms.cu:2:10: fatal error: THC/THCDeviceUtils.cuh: No such file or directory",
        "general.legacy-torch-header",
    ),
    (
        '    csrc/ms_deform_attn_cuda.cu(65): error: no suitable conversion function from "const'
        ' at::DeprecatedTypeProperties" to "c10::ScalarType" exists',
        "general.legacy-torch-header",
    ),
    # the deprecation warning of torch 1.x to 2.5 is no failure, and a THC-named name of the
    # project's own is not torch's
    (
        "csrc/mlp.cpp:69:53: warning: 'at::DeprecatedTypeProperties& at::Tensor::type() const'"
        " is deprecated",
        None,
    ),
    (
        "src/a.cpp:3:1: error: 'THC_THRESHOLD' was not declared in this scope",
        "generic.compile-error",
    ),
    ("src/a.cpp:3:1: error: 'THCOUNT' was not declared in this scope", "generic.compile-error"),
    (
        "  - nothing provides pytorch needed by micro_sam-0.0.2-pyhd8ed1ab_0",
        "install.conda-channels-lack-pytorch",
    ),
    (
        "  - nothing provides pytorch >=1.10,<2 needed by foo-1.0-py_0",
        "install.conda-channels-lack-pytorch",
    ),
    (
        "  - nothing provides pytorch 1.13.1 cuda112py39h_200 needed by foo-1.0-py_0",
        "install.conda-channels-lack-pytorch",
    ),
    ("  - nothing provides requested pytorch 2.1.*", "install.conda-channels-lack-pytorch"),
    (
        "  └─ pytorch 2.1.* does not exist (perhaps a typo or a missing channel).",
        "install.conda-channels-lack-pytorch",
    ),
    # other packages whose names start with pytorch or torch
    ("  - nothing provides pytorch-cuda 11.7.* needed by pytorch-1.13.1-py3.10_cuda11.7_0", None),
    ("  - nothing provides pytorch_lightning needed by foo-1.0-py_0", None),
    ("  - nothing provides pytorch-lightning >=1.5 needed by foo-1.0-py_0", None),
    ("  - nothing provides pytorch-mutex 1.0 cuda needed by foo-1.0-py_0", None),
    ("  - nothing provides torchvision needed by foo-1.0-py_0", None),
    # a build needing a virtual package the machine lacks is not a missing channel
    (
        "  - nothing provides __cuda needed by pytorch-2.1.2-cuda118_py310h8b36b8a_300",
        "install.conda-no-cuda-virtual-package",
    ),
]


def test_rocm_raises_hip_errors_in_cuda_words() -> None:
    # ROCm's torch says "CUDA error" for hipErrorInvalidImage and names HIP after it
    error = "RuntimeError: CUDA error: device kernel image is invalid\n"
    hip = (
        "Search for `hipErrorInvalidImage' in https://rocm.docs.amd.com/projects/HIP/en/latest/"
        "index.html for more information.\n"
    )
    assert _top_rule(error) == "driver.kernel-image-invalid"
    assert _top_rule(error + hip) == "symptom.uncaught-exception"


def test_nccl_probing_libibverbs_is_no_missing_library() -> None:
    # NCCL 2.10 names itself before WARN; it goes on over sockets (a healthy run, lightning#10471)
    log = (
        "node:34785:34785 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
        "node:34785:34785 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.110.85<0>\n"
    )
    assert explain_text(log).healthy


ROUND_48_LINES = [
    # uv's hint wrapped by the terminal after "only has" (bili2text#95)
    (
        "hint: You're on macOS (`macosx_26_0_x86_64`), but `torch` (v2.11.0) only has ",
        "install.installer-no-wheel-for-platform",
    ),
    (
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/generic/THCTensorCopy.cpp line=70 error=59 :"
        " device-side assert triggered",
        "devices.device-side-assert",
    ),
    (
        "/pytorch/aten/src/ATen/native/cuda/Loss.cu:240: nll_loss_forward_reduce_cuda_kernel_2d:"
        " block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.",
        "devices.device-side-assert",
    ),
    (
        "hint: You're on Linux (`manylinux_2_39_aarch64`), but `torchcodec` (v0.9.1) only has"
        " wheels for",
        "install.installer-no-wheel-for-platform",
    ),
    (
        "ImportError: Error loading shared library ld-linux-x86-64.so.2: No such file or directory"
        " (needed by /usr/lib/python3.5/site-packages/torch/_C.cpython-35m-x86_64-linux-gnu.so)",
        "libs.glibc-binary-on-musl",
    ),
    (
        "ImportError: Error relocating /usr/lib/python3.5/site-packages/torch/lib/libcudnn.so.6:"
        " __strtod_internal: symbol not found",
        "libs.glibc-binary-on-musl",
    ),
    # the line every CUDA error of torch 2.x carries is no assert
    ("Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", None),
    # the ABI form wrapped at the same place is the Python's case
    (
        "hint: You're using CPython 3.14 (`cp314`), but `torch` (v2.5.1) only has",
        "install.installer-python-range",
    ),
    # glibc's assert in host code is no kernel's
    ("python: src/main.c:12: main: Assertion `x' failed.", None),
]


@pytest.mark.parametrize(("line", "rule"), ROUND_47_LINES + ROUND_48_LINES)
def test_round_47_and_48_forms(line: str, rule: str | None) -> None:
    assert _top_rule(line + "\n") == rule


def test_a_device_side_assert_leads_the_nccl_errors_it_causes() -> None:
    log = (
        "Loss.cu:240: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0]"
        " Assertion `t >= 0 && t < n_classes` failed.\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "NCCL WARN Cuda failure 'device-side assert triggered'\n"
        "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9,"
        " OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out.\n"
    )
    assert _top_rule(log) == "devices.device-side-assert"


def test_conda_43_names_the_missing_package_on_the_next_lines() -> None:
    log = (
        "PackageNotFoundError: Packages missing in current channels:\n\n  - pytorch\n\n"
        "We have searched for the packages in the following channels:\n\n"
        "  - https://conda.anaconda.org/pytorch/linux-ppc64le\n"
    )
    assert _top_rule(log) == "install.conda-no-package-for-platform"
    # conda 4.3 also names the platform, in the singular
    singular = log.replace(
        "Packages missing in current", "Package missing in current linux-ppc64le"
    )
    assert _top_rule(singular) == "install.conda-no-package-for-platform"
