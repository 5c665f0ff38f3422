"""Root cause before symptom, first error before cascade, repeats merged, healthy logs clean."""

from __future__ import annotations

from torchsmith.explain import explain_text

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
    assert "MAX_JOBS=5" in fix  # 16 GB at 3 GB per job
    plain = explain_text(log).diagnoses[0].fix
    assert "MAX_JOBS=4" in plain
