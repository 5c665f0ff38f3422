"""Arch-specific (9.0a) and family-specific (10.0f) TORCH_CUDA_ARCH_LIST entries, from --cc, from an
exported list, through the toolkit choice, preflight, the stale-cache check and the target torch's
own list (an audit of the change that let them through found each of these)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from torchsmith.build.config import make_config
from torchsmith.build.detect import detect_project
from torchsmith.build.options import BuildOptions
from torchsmith.build.preflight import preflight
from torchsmith.build.tree import cpp_extension_arches, parse_build_ninja, read_tree
from torchsmith.errors import UsageError
from torchsmith.knowledge import Knowledge
from torchsmith.probe.model import CudaToolkitInfo, Probe, ToolInfo
from torchsmith.probe.tools import parse_cmake_version

from .configs import NVCC
from .conftest import PROJECTS, no_gpu

CMAKE = detect_project(PROJECTS / "cuda_cmake")
SCATTER = detect_project(PROJECTS / "scatter_like")
TORCH_VENV = os.environ.get("TORCHSMITH_TEST_TORCH_VENV", "")
REAL_TORCH = next(Path(TORCH_VENV or "/nonexistent").glob("lib/python3*/site-packages/torch"), None)


def with_toolkit(probe: Probe, version: str) -> Probe:
    """The probe with one toolkit of this version (its sm list from the knowledge base)."""
    tk = CudaToolkitInfo(
        root=f"/usr/local/cuda-{version}",
        version=version,
        nvcc=f"/usr/local/cuda-{version}/bin/nvcc",
        selected=True,
        headers=True,
    )
    return dataclasses.replace(probe, cuda_toolkits=(tk,))


def test_plain_and_specific_twins_both_stay(h200: Probe, kb: Knowledge) -> None:
    # --cc 12.0 --cc 12.0a kept only 12.0a: a 12.1 GPU, which runs sm_120, lost its code
    c = make_config(CMAKE, h200, kb, BuildOptions(targets=("12.0", "12.0a", "10.0a", "10.0f")))
    assert c.arch_list == ("10.0a", "10.0f", "12.0", "12.0a")
    assert "-DCMAKE_CUDA_ARCHITECTURES=100a-real;100f-real;120-real;120a-real" in c.cmake_args
    exported = (("TORCH_CUDA_ARCH_LIST", "9.0;9.0a"),)
    assert make_config(CMAKE, h200, kb, BuildOptions(inherited=exported)).arch_list == (
        "9.0",
        "9.0a",
    )


@pytest.mark.parametrize("bad", ["sm_90;8.6", "9.0;bogus", "9.0 8.6", "8.6a", "9.0f", "90"])
def test_cc_is_read_strictly(bad: str, h200: Probe, kb: Knowledge) -> None:
    # "sm_90;8.6" became 8.6 and "9.0;bogus" 9.0, silently
    with pytest.raises(UsageError):
        make_config(CMAKE, h200, kb, BuildOptions(targets=(bad,)))


def test_cc_digits_are_ascii_and_gpu_beside_its_specific_cc(h200: Probe, kb: Knowledge) -> None:
    # re-audit: --cc with full-width digits became TORCH_CUDA_ARCH_LIST=9.\uff10; and
    # --cc 9.0a --gpu H100 built 9.0 and 9.0a, though sm_90a already runs on the H100
    with pytest.raises(UsageError):
        make_config(CMAKE, h200, kb, BuildOptions(targets=("\uff19.\uff10",)))
    c = make_config(CMAKE, h200, kb, BuildOptions(targets=("9.0a", "9.0a"), gpus=("H100",)))
    assert c.arch_list == ("9.0a",)
    assert c.gpus == ("--cc 9.0a, NVIDIA H100 (9.0)",)


def test_an_exported_entry_that_cannot_exist_is_an_error(h200: Probe, kb: Knowledge) -> None:
    # an exported 8.6a went to the build as 86a-real, which no nvcc has, without a word
    named = (("TORCH_CUDA_ARCH_LIST", "8.6a;9.0f;12.0"),)
    c = make_config(CMAKE, no_gpu(h200), kb, BuildOptions(inherited=named))
    errors = [f.message for f in c.findings if f.severity == "error"]
    assert any("8.6a: arch-specific code exists from compute capability 9.0" in m for m in errors)
    assert any(
        "9.0f: family-specific code exists from compute capability 10.0" in m for m in errors
    )


def with_cmake(probe: Probe, version: str | None) -> Probe:
    """The probe with one cmake of this version (None: its version could not be read)."""
    tool = ToolInfo(name="cmake", path="/usr/bin/cmake", version=version)
    others = tuple(t for t in probe.build_tools if t.name != "cmake")
    return dataclasses.replace(probe, build_tools=(tool, *others))


@pytest.mark.parametrize(
    ("cmake", "entry", "severity", "said"),
    [
        # Kitware/CMake: a from v3.25.0, f from v3.31.8 and v4.0.2 (the PyPI wheels, run here)
        (
            "3.24.3",
            "9.0a",
            "error",
            "CMake 3.24.3 rejects it at configure; the first CMake that takes it is 3.25.0",
        ),
        ("3.25.1", "10.0f", "error", "CMake 3.25.1 rejects it"),
        ("3.31.6", "10.0f", "error", "the first CMakes that take it are 3.31.8 and 4.0.2"),
        ("4.0.0", "10.0f", "error", "CMake 4.0.0 rejects it"),
        (None, "10.0f", "warning", "an older CMake rejects it"),
        # audit: Visual Studio's CMake and a nightly's date patch were said to reject it
        ("4.1.20250601-g1234abc", "9.0a", "warning", "cannot tell whether CMake 4.1.20250601"),
        ("3.25.0-rc1", "9.0a", None, ""),  # the 90a check is in v3.25.0-rc1
        ("3.29.5-msvc4", "9.0a", None, ""),
        ("3.25.0", "9.0a", None, ""),
        ("3.31.10", "10.0f", None, ""),
        ("4.0.2", "10.0f", None, ""),
    ],
)
def test_suffix_entry_against_the_probed_cmake(
    cmake: str | None, entry: str, severity: str | None, said: str, h200: Probe, kb: Knowledge
) -> None:
    # the warning named CMake 3.25 whatever CMake the machine had (the H200's 4.4.3 takes 100f)
    c = make_config(CMAKE, with_cmake(h200, cmake), kb, BuildOptions(targets=(entry,)))
    found = [f for f in c.findings if f.subject == "TORCH_CUDA_ARCH_LIST"]
    if severity is None:
        assert found == []
        return
    (finding,) = found
    assert finding.severity == severity
    assert said in finding.message
    assert 'pip install "cmake>=' in finding.fix  # double quotes: cmd redirects on > otherwise
    assert finding.source == "cmake_cuda_arch_validate"


def test_the_machines_cmake_agrees_with_the_knowledge_base(kb: Knowledge, tmp_path: Path) -> None:
    # configure the CMake project here with 90a-real and 100f-real: the KB's answer for this CMake
    # must be what it does
    cmake = shutil.which("cmake")
    if cmake is None or not Path(NVCC).exists() or shutil.which("ninja") is None:
        pytest.skip("needs cmake, ninja and nvcc 13.0")
    version = parse_cmake_version(
        subprocess.run(
            [cmake, "--version"], capture_output=True, text=True, timeout=60, check=True
        ).stdout
    )
    assert version is not None
    for suffix, entry in (("a", "90a-real"), ("f", "100f-real")):
        run = subprocess.run(
            [
                cmake,
                "-S",
                str(PROJECTS / "cuda_cmake"),
                "-B",
                str(tmp_path / suffix),
                "-G",
                "Ninja",
                f"-DCMAKE_CUDA_ARCHITECTURES={entry}",
                f"-DCMAKE_CUDA_COMPILER={NVCC}",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert (run.returncode == 0) is kb.cmake_takes(suffix, version), (entry, run.stderr[-2000:])


@pytest.mark.parametrize(
    ("version", "entry", "needs"),
    [("11.8", "9.0a", "12.0"), ("12.8", "10.0f", "12.9")],
)
def test_toolkit_too_old_for_the_suffix(
    version: str, entry: str, needs: str, h200: Probe, kb: Knowledge
) -> None:
    # sm_90 passed for 9.0a although nvcc 11.8 has no compute_90a (nor 12.8 compute_100f:
    # ptxas of nvidia-cuda-nvcc-cu12 12.8.93, read here)
    probe = with_toolkit(h200, version)
    c = make_config(CMAKE, probe, kb, BuildOptions(targets=(entry,)))
    found = preflight(c, read_tree(CMAKE, c), probe, kb)
    (too_old,) = [f for f in found if f.category == "toolkit-too-old-for-arch"]
    assert f"needs CUDA {needs} or newer" in too_old.message


def test_toolkit_choice_counts_the_suffix(h200: Probe, kb: Knowledge) -> None:
    # with 12.8 and 12.9 installed, --cc 10.0f picked 12.8 ("can target sm_100")
    tks = (with_toolkit(h200, "12.8").cuda_toolkits[0], with_toolkit(h200, "12.9").cuda_toolkits[0])
    probe = dataclasses.replace(h200, cuda_toolkits=tks)
    c = make_config(CMAKE, probe, kb, BuildOptions(targets=("10.0f",)))
    assert c.cuda_home == "/usr/local/cuda-12.9"


def test_stale_cache_tells_9_0_from_9_0a() -> None:
    # an extension's build.ninja for 9.0 read as the same as a request for 9.0a
    line = (
        "cuda_post_cflags = -gencode=arch=compute_90a,code=sm_90a "
        "-gencode=arch=compute_90,code=sm_90"
    )
    assert parse_build_ninja(line)["TORCH_CUDA_ARCH_LIST"] == "9.0;9.0a"


@pytest.mark.skipif(REAL_TORCH is None, reason="needs $TORCHSMITH_TEST_TORCH_VENV")
def test_own_gencode_flags_are_not_checked_against_torchs_list(
    tmp_path: Path, h200: Probe, kb: Knowledge
) -> None:
    # re-audit: torch reads no TORCH_CUDA_ARCH_LIST when the setup passes -gencode itself
    # (causal-conv1d), yet the check of torch's list stopped the build
    (tmp_path / "setup.py").write_text(
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
        'cc_flag = ["-gencode", "arch=compute_100f,code=sm_100f"]\n'
    )
    project = detect_project(tmp_path)
    assert project.fixed_archs
    c = make_config(project, h200, kb, BuildOptions(targets=("10.0f",)))
    found = preflight(c, read_tree(project, c, str(REAL_TORCH)), h200, kb)
    assert [f.severity for f in found if "does not accept" in f.message] == ["warning"]
    # review: xformers-style setups build -gencode from the list with f-strings; no literal
    (tmp_path / "setup.py").write_text(
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
        "nvcc = [f'-gencode=arch=compute_{a},code=sm_{a}' for a in archs]\n"
    )
    project = detect_project(tmp_path)
    assert not project.fixed_archs
    assert project.own_arch_flags
    c = make_config(project, h200, kb, BuildOptions(targets=("10.0f",)))
    found = preflight(c, read_tree(project, c, str(REAL_TORCH)), h200, kb)
    assert [f.severity for f in found if "does not accept" in f.message] == ["warning"]


@pytest.mark.skipif(REAL_TORCH is None, reason="needs $TORCHSMITH_TEST_TORCH_VENV")
@pytest.mark.parametrize(
    ("value", "shown", "fix"),
    [
        ("8.6;9.0;", "''", "X.Y entries"),
        ("8.6,9.0", "'8.6,9.0'", "separated by ';'"),
        ("09.0", "'09.0'", "use 9.0 or"),
    ],
)
def test_the_list_is_read_as_torch_reads_it(
    value: str, shown: str, fix: str, h200: Probe, kb: Knowledge
) -> None:
    # review: torch splits at spaces and ';' only and keeps empty entries: "8.6;9.0;" and
    # "8.6,9.0" stop it with "Unknown CUDA arch", and torchsmith said nothing
    exported = (("TORCH_CUDA_ARCH_LIST", value),)
    c = make_config(SCATTER, no_gpu(h200), kb, BuildOptions(inherited=exported))
    found = preflight(c, read_tree(SCATTER, c, str(REAL_TORCH)), h200, kb)
    (refused,) = [f for f in found if "does not accept" in f.message]
    assert refused.severity == "error"
    assert shown in refused.message
    assert fix in (refused.fix or "")


@pytest.mark.skipif(REAL_TORCH is None, reason="needs $TORCHSMITH_TEST_TORCH_VENV")
def test_the_target_torchs_own_list_decides(h200: Probe, kb: Knowledge) -> None:
    # torch 2.13's cpp_extension stops on 10.0f ("Unknown CUDA arch"); it lists 9.0a
    assert REAL_TORCH is not None
    accepted = cpp_extension_arches(str(REAL_TORCH))
    assert accepted is not None
    assert "9.0a" in accepted
    assert "10.0f" not in accepted
    for entry, refused in (("10.0f", True), ("10.0a", False)):
        c = make_config(SCATTER, h200, kb, BuildOptions(targets=(entry,)))
        found = preflight(c, read_tree(SCATTER, c, str(REAL_TORCH)), h200, kb)
        unknown = [f for f in found if "does not accept" in f.message]
        assert bool(unknown) is refused
        if refused:
            assert "use 10.0 or 10.0a instead" in (unknown[0].fix or "")


def test_a_family_entry_serves_the_later_minors_of_its_family(h200: Probe, kb: Knowledge) -> None:
    # review: --cc 10.0f --gpu B300 compiled a plain 10.3 beside 10.0f, which runs on 10.3
    c = make_config(CMAKE, h200, kb, BuildOptions(targets=("10.0f",), gpus=("B300",)))
    assert c.arch_list == ("10.0f",)
    c = make_config(CMAKE, h200, kb, BuildOptions(targets=("10.0a",), gpus=("B300",)))
    assert c.arch_list == ("10.0a", "10.3")  # sm_100a runs on 10.0 only


def test_the_hint_for_a_family_entry_counts_its_own_minimum(h200: Probe, kb: Knowledge) -> None:
    # review: CUDA 12.6 with --cc 10.0f said "install CUDA 12.8", which has no sm_100f either
    probe = with_toolkit(h200, "12.6")
    c = make_config(CMAKE, probe, kb, BuildOptions(targets=("10.0f",)))
    found = preflight(c, read_tree(CMAKE, c), probe, kb)
    (too_old,) = [f for f in found if f.category == "toolkit-too-old-for-arch"]
    assert "sm_100f" in too_old.message
    assert "CUDA 12.9 or newer" in (too_old.fix or "")
