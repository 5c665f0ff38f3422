"""Root cause before symptom, first error before cascade, repeats merged, healthy logs clean."""

from __future__ import annotations

from pathlib import Path

from torchsmith.explain import explain_text
from torchsmith.explain.engine import Explainer

BUILD_FAIL = """\
[1/3] /usr/local/cuda/bin/nvcc -gencode arch=compute_120,code=sm_120 -c a.cu -o a.o
FAILED: a.o
nvcc fatal   : Unsupported gpu architecture 'compute_120'
[2/3] /usr/local/cuda/bin/nvcc -gencode arch=compute_120,code=sm_120 -c b.cu -o b.o
nvcc fatal   : Unsupported gpu architecture 'compute_120'
ninja: build stopped: subcommand failed.
error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1
"""


def test_root_cause_beats_symptoms_and_repeats_merge() -> None:
    result = explain_text(BUILD_FAIL)
    assert [d.rule for d in result.diagnoses] == ["toolkit.nvcc-unsupported-arch"]
    top = result.diagnoses[0]
    assert top.line == 3
    assert top.count == 2
    assert top.values["arch"] == "compute_120"
    assert "12.8" in top.explanation  # derived from the sourced min-CUDA table
    assert top.evidence == ("nvcc fatal   : Unsupported gpu architecture 'compute_120'",)


def test_symptoms_alone_are_reported() -> None:
    result = explain_text("ninja: build stopped: subcommand failed.\n")
    assert not result.healthy
    assert result.diagnoses[0].symptom


def test_first_compile_error_beats_later_ones() -> None:
    log = (
        "src/a.cpp:10:5: error: 'foo' was not declared in this scope\n"
        "src/b.cpp:20:1: error: expected ';' before '}' token\n"
        "ninja: build stopped: subcommand failed.\n"
    )
    top = explain_text(log).diagnoses[0]
    assert top.rule == "generic.compile-error"
    assert top.line == 1
    assert "src/a.cpp" in top.explanation


def test_specific_cause_hides_generic_compile_error() -> None:
    log = (
        "/usr/local/cuda/include/crt/host_config.h:138:2: error: #error -- unsupported GNU "
        "version! gcc versions later than 8 are not supported!\n"
    )
    result = explain_text(log)
    assert [d.category for d in result.diagnoses] == ["unsupported-host-compiler"]
    assert "gcc-8" in result.diagnoses[0].fix


def test_distinct_problems_are_each_listed() -> None:
    log = (
        "RuntimeError: Distributed package doesn't have NCCL built in\n"
        "RuntimeError: CUDA out of memory. Tried to allocate 60.00 MiB (GPU 0; 6.00 GiB total "
        "capacity; 4.11 GiB already allocated)\n"
    )
    categories = [d.category for d in explain_text(log).diagnoses]
    assert categories == ["distributed-backend-unavailable", "gpu-out-of-memory"]


def test_priority_beats_position() -> None:
    log = (
        "AssertionError: Torch not compiled with CUDA enabled\n"
        "ERROR: No matching distribution found for torch==1.13.1+cu117\n"
    )
    assert explain_text(log).diagnoses[0].category == "python-unsupported"


def test_healthy_build_with_warnings_has_no_diagnoses() -> None:
    log = (
        "-- The CUDA compiler identification is NVIDIA 12.8.93\n"
        "[1/2] c++ -Werror=return-type -Wno-error=deprecated -c a.cpp -o a.o\n"
        "a.cpp:12:3: warning: unused variable 'x' [-Wunused-variable]\n"
        'a.cu(93): warning #3189-D: "module" is parsed as an identifier rather than a keyword\n'
        "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:61: FutureWarning: The "
        "pynvml package is deprecated.\n"
        "UserWarning: TypedStorage is deprecated. It will be removed in the future.\n"
        "Successfully installed flash-attn-2.8.3\n"
    )
    result = explain_text(log)
    assert result.healthy
    assert result.diagnoses == ()
    assert "7 line(s)" in result.summary


def test_context_tailors_the_fix() -> None:
    log = "c++: fatal error: Killed signal terminated program cc1plus\n"
    fix = explain_text(log, context={"ram_gb": "16"}).diagnoses[0].fix
    assert "16 GB" in fix
    assert "MAX_JOBS=2" in fix  # (16 - 4 GB kept) // 5 GB per CUDA job: build's budget
    plain = explain_text(log).diagnoses[0].fix
    assert "MAX_JOBS=4" in plain


TRACEBACK_END = (
    "Traceback (most recent call last):\n"
    '  File "/app/train.py", line 40, in <module>\n'
    "    main()\n"
    '  File "/app/train.py", line 31, in main\n'
    "    open(cfg.data_root)\n"
    "FileNotFoundError\n"
)


def test_a_log_that_ends_in_an_unknown_error_is_a_failure_not_healthy() -> None:
    result = explain_text("loading config\n" + TRACEBACK_END + "\n\n")
    assert not result.healthy
    top = result.diagnoses[0]
    assert (top.rule, top.category, top.line) == ("generic.ended-in-error", "other", 7)
    assert top.evidence == ("FileNotFoundError",)
    assert "'FileNotFoundError'" in top.explanation


def test_an_error_the_run_went_on_after_is_not_how_it_ended() -> None:
    went_on = "".join(f"step {i}: loss 0.{i:02d}\n" for i in range(20))
    assert explain_text(TRACEBACK_END + went_on).healthy


def test_pips_resolver_notice_at_the_end_of_an_install_is_not_an_error() -> None:
    log = (
        "Successfully installed torch-2.7.1+cu128\n"
        "ERROR: pip's dependency resolver does not currently take into account all the packages "
        "that are installed. This behaviour is the source of the following dependency conflicts.\n"
    )
    assert explain_text(log).healthy


def test_a_known_cause_hides_the_error_the_log_ended_with() -> None:
    result = explain_text("ninja: build stopped: subcommand failed.\n" + TRACEBACK_END)
    assert [d.rule for d in result.diagnoses] == ["symptom.ninja-stopped"]


def test_an_informational_line_counts_when_the_log_ends_in_an_error() -> None:
    """A CPU build alone is no failure; a CPU build and a run that died is most likely why."""
    assert explain_text("PyTorch version: 2.1.0+cpu\ndone\n").healthy
    result = explain_text("PyTorch version: 2.1.0+cpu\n" + TRACEBACK_END)
    assert [d.category for d in result.diagnoses] == ["cpu-only-torch"]


def test_the_end_of_a_log_is_read_across_chunks() -> None:
    explainer = Explainer()
    head = b"x = 1\n" * 5000
    explainer.feed("big.log", [head + b"Traceback (most recent call last):\nKeyErr", b"or: 'w'\n"])
    top = explainer.result().diagnoses[0]
    assert (top.rule, top.line) == ("generic.ended-in-error", 5002)
    assert top.evidence == ("KeyError: 'w'",)


OLD_GPU_WARNING = """\
/usr/lib/python3/site-packages/torch/cuda/__init__.py:87: UserWarning:
    Found GPU0 {name} which is of cuda capability 3.0.
    PyTorch no longer supports this GPU because it is too old.
    The minimum cuda capability that we support is 3.5.
"""


def test_a_rule_that_overrides_another_cancels_its_matches() -> None:
    # torch's old-GPU warning misreads an AMD GPU (ROCm build): no finding when the run went on
    amd = OLD_GPU_WARNING.format(name="Ellesmere [Radeon RX 470/480/570/570X/580/580X]")
    assert explain_text(amd + "tensor([9], device='cuda:0')\n").healthy
    nvidia = OLD_GPU_WARNING.format(name="GeForce GTX 770")
    assert [d.rule for d in explain_text(nvidia).diagnoses] == ["arch.gpu-too-old"]
    failed = explain_text(amd + "RuntimeError: boom\n")
    assert [d.rule for d in failed.diagnoses] == ["arch.rocm-capability-misread"]


def test_a_later_line_refutes_an_earlier_symptom_only() -> None:
    used = (
        "ggml_init_cublas: found 1 CUDA devices:\nllm_load_tensors: offloaded 33/33 layers to GPU\n"
    )
    # the app's probe said no GPU, then llama.cpp used one: a run that went on
    assert explain_text("No GPUs detected\n" + used).healthy
    # the other way round the symptom came last: it stands
    later = explain_text(used + "No GPUs detected\n")
    assert [d.rule for d in later.diagnoses] == ["general.no-gpu-found"]
    # a refuting line alone is never a diagnosis
    assert explain_text(used).diagnoses == ()
    # a CUDA build that found a device and put no layer on it refutes nothing
    zero = explain_text(
        "No GPUs detected\nggml_init_cublas: found 1 CUDA devices:\n"
        "llm_load_tensors: offloaded 0/33 layers to GPU\n"
    )
    assert [d.rule for d in zero.diagnoses] == ["general.no-gpu-found"]


def test_a_failure_after_the_refuting_line_still_stands() -> None:
    log = (
        "No GPUs detected\n"
        "llm_load_tensors: offloaded 33/33 layers to GPU\n"
        "RuntimeError: Cannot access accelerator device when none is available.\n"
    )
    assert explain_text(log).diagnoses[0].rule == "general.no-gpu-found"
    # a second run in the same log that found no GPU again
    again = "No GPUs detected\noffloaded 33/33 layers to GPU\nrun 2\nNo GPUs detected\n"
    assert [d.rule for d in explain_text(again).diagnoses] == ["general.no-gpu-found"]


def test_a_refuting_line_of_another_log_does_not_cancel(tmp_path: Path) -> None:
    from torchsmith.explain import explain_files  # noqa: PLC0415

    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_text("No GPUs detected\n")
    second.write_text("No GPUs detected\nGPU available: True (cuda), used: True\n")
    # the second log alone is a run that went on
    assert explain_files([str(second)]).healthy
    # the first log's symptom has no line after it that refutes it: it stands, in either order
    for logs in ([first, second], [second, first]):
        result = explain_files([str(p) for p in logs])
        assert [d.rule for d in result.diagnoses] == ["general.no-gpu-found"]


def test_an_install_that_finished_after_resolver_errors_is_healthy() -> None:
    log = (
        "ERROR: torchvision 0.9.1 has requirement torch==1.8.1, but you'll have torch "
        "1.9.0.dev20210217+cu112 which is incompatible.\n"
        "Installing collected packages: torch\n"
        "Successfully installed torch-1.9.0.dev20210217+cu112\n"
    )
    assert explain_text(log).healthy
    crashed = log + "Traceback (most recent call last):\nRuntimeError: boom\n"
    assert not explain_text(crashed).healthy


# Written by a reviewer in the exact formats of the real messages (nearby/README.md): the rule that
# must lead each, or None where none of round 27's rules may.
NEARBY = Path(__file__).parent / "nearby"
NOT_THE_NEW_RULES = {
    "rtx5090-triton.log": "arch.capability-not-compatible",
    "extra-index-py.log": "install.no-torch-for-python",
    "head-whl.log": None,
    "libcxx.log": "abi.undefined-symbol",
    "hash-spec.log": "abi.undefined-symbol",
    "which-ffmpeg.log": None,
    "which-smi.log": None,
}
NEW_RULES = (
    "toolkit.ptxas-unknown-arch",
    "install.index-page-not-an-index",
    "libs.libstdcxx-symbol-missing",
    "deps.build-tool-not-found",
)


def test_round_27_rules_stay_out_of_nearby_logs() -> None:
    for name, lead in NOT_THE_NEW_RULES.items():
        diagnoses = explain_text((NEARBY / name).read_text()).diagnoses
        top = diagnoses[0].rule if diagnoses else None
        if lead is not None:
            assert top == lead, name
        else:
            assert top not in NEW_RULES, name


# Round 28's review (nearby/README.md): each log's leading rule, None for a log with no diagnosis.
ROUND_28_NEARBY = {
    "r28-tn-hatch-build.log": "deps.no-torch-in-build-env",  # a build helper, not the program
    "r28-tn-setup-helper.log": "deps.no-torch-in-build-env",
    "r28-tn-docker-compose.log": "deps.torch-not-installed",
    "r28-tn-program-win.log": "deps.torch-not-installed",
    # the project's own template error, not the host compiler
    "r28-hdr-project-instantiation-new.log": "symptom.ninja-stopped",
    "r28-hdr-real-gcc8.log": "compiler.nvcc-rejects-host-headers",
    "r28-tv-warning-then-segfault-ops.log": "abi.torchvision-ops",
    "r28-tv-warning-only-healthy.log": None,
    "r28-comp-local-shadow.log": "symptom.uncaught-exception",  # a torchvision.py of the user's
    "r28-pyg-uv.log": "install.pyg-wheel-needs-its-index",
    # the index serves xformers
    "r28-uvs-xformers-mac.log": "install.installer-no-wheel-for-platform",
    "r28-nvcc-cxx20.log": "symptom.ninja-stopped",  # the project's c++20, not torch's headers
    "r28-ld-zh-nonlinker.log": None,
    "r28-cpu-timestamps.log": "general.runs-on-cpu",
    "r28-cpu-isaac-ok.log": None,
    "r28-sm-uv.log": "deps.submodule-missing",
    "r28-sm-deps-folder-wrongdir.log": "generic.ended-in-error",
    "r28-uvb-offline.log": "deps.uv-offline-cache-miss",
    "r28-java-quoted-sig.log": "install.java-runtime-too-old",
    # round 29's review: torchsmith's own build-log clock, and DGL's optional plugin
    "r29-ts-next-true-then-false.log": None,  # True, then another statement's False
    "r29-ts-count1-current0.log": None,  # a count of 1, then current_device()'s 0
    "r29-ts-next-false.log": "general.cuda-not-available-printed",
    "r29-dgl-cuda.log": None,
    "r29-dgl-cudacpp.log": None,
}


def test_round_28_rules_on_nearby_logs() -> None:
    for name, lead in ROUND_28_NEARBY.items():
        diagnoses = explain_text((NEARBY / name).read_text(encoding="utf-8")).diagnoses
        assert (diagnoses[0].rule if diagnoses else None) == lead, name
