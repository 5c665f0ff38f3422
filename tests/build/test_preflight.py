"""preflight scenarios (pure) on recorded probes, recorded caches and small real trees."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from torchsmith import platforms
from torchsmith.build.config import make_config
from torchsmith.build.detect import detect_project
from torchsmith.build.options import BuildOptions
from torchsmith.build.preflight import blocking, preflight, stale_cache_file
from torchsmith.build.tree import TreeFacts, parse_build_ninja, read_tree, tree_options
from torchsmith.knowledge import Knowledge
from torchsmith.probe.model import Finding, Probe, ToolInfo, TorchInfo

from .conftest import GB, PROJECTS, copy_project, rtx5070_windows, with_ram

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCATTER = detect_project(PROJECTS / "scatter_like")
CMAKE = detect_project(PROJECTS / "cuda_cmake")


def real(findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """Without the info notes (the scatter-like project's 'ninja is off' note)."""
    return tuple(f for f in findings if f.severity != "info")


def cats(findings: tuple[Finding, ...]) -> list[str]:
    return [f.category for f in findings]


def facts(path: str, **kw: object) -> TreeFacts:
    base: dict[str, object] = {"path": path, "disk_free_bytes": 500 * GB}
    base.update(kw)
    return TreeFacts(**base)  # type: ignore[arg-type]


def check(project: object, probe: Probe, kb: Knowledge, opts: BuildOptions) -> tuple[Finding, ...]:
    config = make_config(project, probe, kb, opts)  # type: ignore[arg-type]
    return preflight(config, facts(config.project.path), probe, kb)


def test_h200_extension_build_is_clean(h200: Probe, kb: Knowledge) -> None:
    assert real(check(SCATTER, h200, kb, BuildOptions())) == ()


def test_rtx5070_with_cuda_12_3_is_rejected_before_any_compile(kb: Knowledge) -> None:
    probe = rtx5070_windows()
    with platforms.override("windows"):
        found = check(CMAKE, probe, kb, BuildOptions())
    (f,) = [f for f in found if f.category == "toolkit-too-old-for-arch"]
    assert f.severity == "error"
    assert "sm_120" in f.message
    assert "12.3" in f.message
    assert "CUDA 12.8 or newer" in f.fix


def test_an_arch_cuda_13_dropped(h200: Probe, kb: Knowledge) -> None:
    found = check(SCATTER, h200, kb, BuildOptions(targets=("7.0", "9.0")))
    (f,) = [f for f in found if f.category == "toolkit-too-old-for-arch"]
    assert "sm_70" in f.message
    assert "CUDA 11.7 to 12.9 (CUDA 13.0 dropped sm_70)" in f.fix


def test_host_compiler_outside_nvcc_range(h200: Probe, kb: Knowledge) -> None:
    tk = dataclasses.replace(
        h200.cuda_toolkits[0], root="/usr/local/cuda-12.3", version="12.3", sm_targets=()
    )
    torch = dataclasses.replace(h200.torch, cuda="12.1") if h200.torch else None
    probe = dataclasses.replace(h200, cuda_toolkits=(tk,), torch=torch)
    found = check(SCATTER, probe, kb, BuildOptions())
    (f,) = [f for f in found if f.category == "unsupported-host-compiler"]
    assert "13.3.0" in f.message
    assert "gcc <= 12" in f.message


def test_toolkit_major_differs_from_torch(h200: Probe, kb: Knowledge) -> None:
    tk = dataclasses.replace(
        h200.cuda_toolkits[0], root="/usr/local/cuda-12.8", version="12.8", sm_targets=()
    )
    probe = dataclasses.replace(h200, cuda_toolkits=(tk,))
    found = check(SCATTER, probe, kb, BuildOptions())
    assert "toolkit-torch-cuda-mismatch" in cats(found)


def test_cpu_torch_cannot_build_a_cuda_extension(h200: Probe, kb: Knowledge) -> None:
    probe = dataclasses.replace(h200, torch=TorchInfo(version="2.13.0+cpu", location="/x"))
    assert "cpu-only-torch" in cats(check(SCATTER, probe, kb, BuildOptions()))


def test_ram_for_explicit_jobs(h200: Probe, kb: Knowledge) -> None:
    probe = with_ram(h200, 16)
    found = check(SCATTER, probe, kb, BuildOptions(jobs=16, targets=("9.0", "12.0")))
    (f,) = [f for f in found if f.category == "compile-oom"]
    assert "--jobs 1" in f.fix


def test_disk_and_permissions(h200: Probe, kb: Knowledge) -> None:
    torch_tree = detect_project(PROJECTS / "pytorch_skeleton")
    config = make_config(torch_tree, h200, kb, BuildOptions())
    found = preflight(
        config, facts(torch_tree.path, disk_free_bytes=5 * GB, writable=False), h200, kb
    )
    subjects = {f.subject for f in found}
    assert {"disk", "permissions"} <= subjects


def test_cmake_older_than_the_tree_needs(h200: Probe, kb: Knowledge) -> None:
    torch_tree = detect_project(PROJECTS / "pytorch_skeleton")
    tools = tuple(
        dataclasses.replace(t, version="3.25.1") if t.name == "cmake" else t
        for t in h200.build_tools
    )
    probe = dataclasses.replace(h200, build_tools=tools)
    config = make_config(torch_tree, probe, kb, BuildOptions())
    tree = read_tree(torch_tree, config)
    assert tree.cmake_minimum == "3.27"
    (f,) = [f for f in preflight(config, tree, probe, kb) if f.subject == "cmake"]
    assert f.category == "missing-build-dependency"
    assert "3.27" in f.message


def test_missing_ninja_for_cmake(h200: Probe, kb: Knowledge) -> None:
    probe = dataclasses.replace(
        h200, build_tools=tuple(t for t in h200.build_tools if t.name != "ninja")
    )
    found = check(CMAKE, probe, kb, BuildOptions())
    assert any(f.subject == "ninja" and f.severity == "error" for f in found)


def test_windows_long_path(kb: Knowledge) -> None:
    probe = rtx5070_windows()
    deep = dataclasses.replace(
        CMAKE, path="C:\\Users\\someone\\Documents\\projects\\gpu-work\\tinykern-src"
    )
    with platforms.override("windows"):
        config = make_config(deep, probe, kb, BuildOptions(targets=("8.9",)))
        found = preflight(config, facts(config.project.path), probe, kb)
    assert "windows-path-length" in cats(found)
    assert any(c.key == "build_path" for c in config.choices)
    # VS 2022 17.14 (_MSC_VER 1944) is newer than CUDA 12.3's host_config.h accepts (<= 1939)
    (f,) = [f for f in found if f.category == "unsupported-host-compiler"]
    assert "1910-1939" in f.message


def test_no_gpu_finding_blocks(h200: Probe, kb: Knowledge) -> None:
    probe = dataclasses.replace(h200, gpus=())
    found = check(SCATTER, probe, kb, BuildOptions())
    assert cats(blocking(found)) == ["no-gpu-visible"]


# -- stale caches -----------------------------------------------------------------------------

PYTORCH_CACHE = """# This is the CMakeCache file.
# For build in directory: {root}/build
//Use distributed
USE_DISTRIBUTED:BOOL=ON
//Use CUDA
USE_CUDA:BOOL=ON
BUILD_TEST:BOOL=True
CMAKE_BUILD_TYPE:STRING=Release
CMAKE_CUDA_COMPILER:FILEPATH=/usr/local/cuda-12.8/bin/nvcc
PYTHON_EXECUTABLE:FILEPATH=/usr/bin/python3
TORCH_CUDA_ARCH_LIST:STRING=8.9
CMAKE_GENERATOR:INTERNAL=Ninja
"""


def test_pytorch_stale_cmake_cache_names_each_value(
    h200: Probe, kb: Knowledge, tmp_path: Path
) -> None:
    tree = copy_project("pytorch_skeleton", tmp_path)
    (tree / "build").mkdir()
    (tree / "build" / "CMakeCache.txt").write_text(PYTORCH_CACHE.format(root=tree))
    project = detect_project(tree)
    opts = BuildOptions(sets=(("USE_DISTRIBUTED", "0"),))
    config = make_config(project, h200, kb, opts, known_options=tree_options(project))
    found = preflight(config, read_tree(project, config), h200, kb)
    (f,) = [f for f in found if f.category == "stale-build-cache"]
    assert f.severity == "error"
    for text in (
        "USE_DISTRIBUTED: cached ON, requested 0",
        "BUILD_TEST: cached True, requested 0",
        "TORCH_CUDA_ARCH_LIST: cached 8.9, requested 9.0",
        "CMAKE_CUDA_COMPILER: cached /usr/local/cuda-12.8/bin/nvcc",
        "PYTHON_EXECUTABLE: cached /usr/bin/python3, requested /opt/torch/.venv/bin/python3",
        "skips CMake configure",
    ):
        assert text in f.message
    assert "USE_CUDA" not in f.message  # ON == 1
    assert "CMAKE_GENERATOR" not in f.message
    assert "torchsmith clean" in f.fix
    assert f.path == str(tree / "build" / "CMakeCache.txt")  # a field, not read from the message
    assert stale_cache_file(f) == f.path


def test_setuptools_build_ninja_from_torch_2_13(h200: Probe, kb: Knowledge, tmp_path: Path) -> None:
    text = (FIXTURES / "torch-2.13-cuda-build.ninja").read_text()
    assert parse_build_ninja(text) == {
        "cxx": "c++",
        "nvcc": "/usr/local/cuda-12.4/bin/nvcc",
        "TORCH_CUDA_ARCH_LIST": "8.6;8.9",
    }
    tree = copy_project("scatter_like", tmp_path)
    temp = tree / "build" / "temp.linux-x86_64-cpython-311"
    temp.mkdir(parents=True)
    shutil.copy(FIXTURES / "torch-2.13-cuda-build.ninja", temp / "build.ninja")
    project = detect_project(tree)
    config = make_config(project, h200, kb, BuildOptions())
    (f,) = real(preflight(config, read_tree(project, config), h200, kb))
    assert f.category == "stale-build-cache"
    assert "CUDA archs: cached 8.6;8.9, requested 9.0" in f.message
    assert "nvcc: cached /usr/local/cuda-12.4/bin/nvcc" in f.message
    assert f.path == str(temp / "build.ninja")


def test_same_configuration_is_not_stale(h200: Probe, kb: Knowledge, tmp_path: Path) -> None:
    tree = copy_project("scatter_like", tmp_path)
    temp = tree / "build" / "temp.linux-x86_64-cpython-311"
    temp.mkdir(parents=True)
    text = (FIXTURES / "torch-2.13-cuda-build.ninja").read_text()
    text = text.replace("/usr/local/cuda-12.4", "/usr/local/cuda-13.0")
    text = text.replace("compute_86,code=sm_86", "compute_90,code=sm_90")
    text = text.replace(" -gencode=arch=compute_89,code=sm_89", "")
    (temp / "build.ninja").write_text(text)
    project = detect_project(tree)
    config = make_config(project, h200, kb, BuildOptions())
    assert real(preflight(config, read_tree(project, config), h200, kb)) == ()


def test_ccache_launcher_in_cache_counts(h200: Probe, kb: Knowledge) -> None:
    probe = dataclasses.replace(
        h200, build_tools=(*h200.build_tools, ToolInfo("sccache", "/usr/bin/sccache", "0.10"))
    )
    torch_tree = detect_project(PROJECTS / "pytorch_skeleton")
    config = make_config(torch_tree, probe, kb, BuildOptions())
    assert config.env["CMAKE_CUDA_COMPILER_LAUNCHER"] == "/usr/bin/sccache"


def test_prepare_in_one_call(h200: Probe, kb: Knowledge, tmp_path: Path) -> None:
    import pytest  # noqa: PLC0415

    from torchsmith.build.prepare import prepare  # noqa: PLC0415
    from torchsmith.errors import UsageError  # noqa: PLC0415

    tree = copy_project("pytorch_skeleton", tmp_path)
    done = prepare(tree, h200, kb, BuildOptions(targets=("9.0", "12.0")))
    assert done.project.kind == "pytorch"
    assert done.config.arch_list == ("9.0", "12.0")
    assert done.config.env["BUILD_TEST"] == "0"
    with pytest.raises(UsageError, match="USE_DISTRIBUTD"):
        prepare(tree, h200, kb, BuildOptions(sets=(("USE_DISTRIBUTD", "0"),)))
