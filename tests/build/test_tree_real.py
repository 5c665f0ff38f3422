"""read_tree + preflight against real tools: cmake configure, git submodules, a PyPI toolkit."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchsmith.build.config import make_config
from torchsmith.build.detect import detect_project
from torchsmith.build.model import BuildConfig
from torchsmith.build.options import BuildOptions
from torchsmith.build.preflight import preflight
from torchsmith.build.tree import parse_cmake_cache, read_tree
from torchsmith.knowledge import Knowledge
from torchsmith.probe.model import CudaToolkitInfo, Probe, ToolInfo
from torchsmith.probe.toolkits import probe_cuda_toolkits

from .conftest import copy_project

REPO = Path(__file__).resolve().parents[2]
CUDA = Path("/usr/local/cuda-13.0")
PIP_TOOLKIT = REPO / ".cache" / "nvcc-cu12-12.4"


def this_machine(h200: Probe) -> Probe:
    """The recorded probe with this machine's real toolkit, compiler and build tools."""
    gxx = shutil.which("g++")
    assert gxx is not None
    version = subprocess.run(
        [gxx, "-dumpfullversion"], capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()
    tools = tuple(
        ToolInfo(n, shutil.which(n), "3.25.1" if n == "cmake" else "1.11")
        for n in ("cmake", "ninja")
    )
    tk = dataclasses.replace(h200.cuda_toolkits[0], root=str(CUDA), nvcc=str(CUDA / "bin/nvcc"))
    return dataclasses.replace(
        h200,
        cuda_toolkits=(tk,),
        compilers=(ToolInfo("g++", gxx, version, details={"flavor": "gcc"}),),
        build_tools=tools,
    )


needs_cmake_cuda = pytest.mark.skipif(
    not (CUDA / "bin" / "nvcc").exists() or not shutil.which("cmake") or not shutil.which("ninja"),
    reason="needs nvcc 13.0, cmake and ninja",
)


def configure(config: BuildConfig) -> None:
    """Run the configuration's configure step with real cmake, as the build would."""
    step = config.steps[0]
    done = subprocess.run(
        step.argv, cwd=step.cwd, env={**os.environ, **config.env},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def wrapper(path: Path, program: str) -> str:
    """A script that runs ``program``: another path to the same compiler, as CMake sees it."""
    path.write_text(f'#!/bin/sh\nexec {program} "$@"\n')
    path.chmod(0o755)
    return str(path)


@pytest.mark.integration
@pytest.mark.slow
@needs_cmake_cuda
def test_real_cmake_cache_then_another_configuration(
    h200: Probe, kb: Knowledge, tmp_path: Path
) -> None:
    """Audit: a plain CMake project configured for one arch was refused for another, though the
    configure step's -D values replace what the cache holds: a note, nothing stale, and real
    cmake takes them. A new host compiler CMake keeps ignoring (-ccbin of the first detection)
    still stops the build."""
    probe = this_machine(h200)
    project = detect_project(copy_project("cuda_cmake", tmp_path))
    first = make_config(project, probe, kb, BuildOptions(targets=("9.0",), cache="none"))
    configure(first)
    assert preflight(first, read_tree(project, first), probe, kb) == ()

    opts = BuildOptions(targets=("12.0",), cache="none", sets=(("TINYKERN_FAST_MATH", "ON"),))
    second = make_config(project, probe, kb, opts)
    # (12.0 is for another machine: the probe's GPU 9.0 gets a warning, not the point here)
    (f,) = [
        f
        for f in preflight(second, read_tree(project, second), probe, kb)
        if f.category == "stale-build-cache"
    ]
    assert (f.category, f.severity) == ("stale-build-cache", "info")
    diffs = f.message.split("replace them: ", 1)[1].split("; ")
    assert diffs == [
        "CMAKE_CUDA_ARCHITECTURES: cached 90-real, requested 120-real",
        "TINYKERN_FAST_MATH: cached OFF, requested ON",
    ]
    configure(second)  # the note is right: CMake took the new values
    cache = parse_cmake_cache((Path(project.path) / "build" / "CMakeCache.txt").read_text())
    assert (cache["CMAKE_CUDA_ARCHITECTURES"], cache["TINYKERN_FAST_MATH"]) == ("120-real", "ON")

    gxx = wrapper(tmp_path / "g++-wrapper", str(probe.compilers[0].path))
    host = dataclasses.replace(probe.compilers[0], name="CUDAHOSTCXX", path=gxx)
    other = dataclasses.replace(probe, compilers=(host,))
    third = make_config(project, other, kb, BuildOptions(targets=("12.0",), cache="none"))
    (f,) = [
        f for f in preflight(third, read_tree(project, third), other, kb) if f.severity == "error"
    ]
    assert (f.category, f.severity) == ("stale-build-cache", "error")
    assert (
        f"CMAKE_CUDA_HOST_COMPILER: cached {probe.compilers[0].path}, requested {gxx}" in f.message
    )
    assert "-ccbin" in f.message
    assert f"torchsmith clean --yes {project.path}" in f.fix
    configure(third)  # and it is right: the build files keep the host compiler found first
    rules = (Path(project.path) / "build" / "CMakeFiles" / "rules.ninja").read_text()
    assert f"-ccbin={probe.compilers[0].path}" in rules
    assert gxx not in rules


@pytest.mark.integration
@pytest.mark.slow
@needs_cmake_cuda
def test_another_cuda_compiler_is_stale_as_cmake_drops_the_other_values(
    h200: Probe, kb: Knowledge, tmp_path: Path
) -> None:
    """A new CMAKE_CUDA_COMPILER makes CMake delete its cache and configure again without the
    command line's other -D values: the arch list falls back to CMake's default."""
    probe = this_machine(h200)
    project = detect_project(copy_project("cuda_cmake", tmp_path))
    configure(make_config(project, probe, kb, BuildOptions(targets=("9.0",), cache="none")))
    (tmp_path / "cuda" / "bin").mkdir(parents=True)
    nvcc = wrapper(tmp_path / "cuda" / "bin" / "nvcc", str(CUDA / "bin" / "nvcc"))
    tk = dataclasses.replace(probe.cuda_toolkits[0], root=str(tmp_path / "cuda"), nvcc=nvcc)
    other = dataclasses.replace(probe, cuda_toolkits=(tk,))
    second = make_config(project, other, kb, BuildOptions(targets=("12.0",), cache="none"))
    (f,) = [
        f for f in preflight(second, read_tree(project, second), other, kb) if f.severity == "error"
    ]
    assert f.severity == "error"
    assert "CMAKE_CUDA_COMPILER: cached" in f.message
    assert "without the other -D values" in f.message
    configure(second)
    cache = parse_cmake_cache((Path(project.path) / "build" / "CMakeCache.txt").read_text())
    assert cache["CMAKE_CUDA_ARCHITECTURES"] != "120-real"  # what the stale cache would cost


def git(*args: str, cwd: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    subprocess.run(
        ["git", "-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.integration
@pytest.mark.skipif(not shutil.which("git"), reason="needs git")
def test_real_submodule_not_initialised(h200: Probe, kb: Knowledge, tmp_path: Path) -> None:
    dep = tmp_path / "dep"
    dep.mkdir()
    git("init", "-q", cwd=dep)
    (dep / "CMakeLists.txt").write_text("# third-party dependency\n")
    git("add", ".", cwd=dep)
    git("commit", "-qm", "dep", cwd=dep)
    tree = copy_project("cuda_cmake", tmp_path)
    git("init", "-q", cwd=tree)
    git("submodule", "add", "-q", str(dep), "third_party/dep", cwd=tree)
    git("add", ".", cwd=tree)
    git("commit", "-qm", "tree", cwd=tree)
    project = detect_project(tree)
    config = make_config(project, h200, kb, BuildOptions())
    assert [s.state for s in read_tree(project, config).submodules] == ["ok"]

    git("submodule", "deinit", "-q", "-f", "third_party/dep", cwd=tree)
    facts = read_tree(project, config)
    assert [(s.path, s.state) for s in facts.submodules] == [("third_party/dep", "uninitialized")]
    (f,) = [f for f in preflight(config, facts, h200, kb) if f.subject == "git submodules"]
    assert f.category == "missing-build-dependency"
    assert "third_party/dep" in f.message
    assert "submodule update --init --recursive" in f.fix


def pip_toolkit() -> Path:
    """nvidia-cuda-nvcc-cu12 12.4.131 from PyPI, installed once into .cache (ptxas, no nvcc)."""
    marker = PIP_TOOLKIT / ".ready"
    if not marker.exists():
        shutil.rmtree(PIP_TOOLKIT, ignore_errors=True)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--disable-pip-version-check",
                "--target",
                str(PIP_TOOLKIT),
                "nvidia-cuda-nvcc-cu12==12.4.131",
            ],
            capture_output=True,
            check=False,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot install nvidia-cuda-nvcc-cu12: {done.stderr.strip()[-200:]}")
        marker.touch()
    return PIP_TOOLKIT


@pytest.mark.integration
@pytest.mark.slow
def test_pypi_cuda_12_4_cannot_target_sm_120(h200: Probe, kb: Knowledge) -> None:
    (tk,) = probe_cuda_toolkits(
        {"PATH": "/usr/bin:/bin"}, site_packages=[pip_toolkit()], standard_dirs=()
    )
    assert (tk.version, tk.nvcc) == ("12.4", None)
    assert "sm_90" in tk.sm_targets  # from the wheel's ptxas
    assert "sm_120" not in tk.sm_targets
    project = detect_project(Path(__file__).parent / "projects" / "cuda_cmake")
    for toolkit in (tk, dataclasses.replace(tk, sm_targets=())):  # ptxas, then KB by version
        probe = dataclasses.replace(h200, cuda_toolkits=(toolkit,))
        config = make_config(project, probe, kb, BuildOptions(targets=("9.0", "12.0")))
        assert config.cuda_home == tk.root
        found = preflight(config, read_tree(project, config), probe, kb)
        (old,) = [f for f in found if f.category == "toolkit-too-old-for-arch"]
        assert "sm_120" in old.message
        assert "12.4" in old.message
        assert "CUDA 12.8 or newer" in old.fix
        assert old.source == (None if toolkit.sm_targets else "nvcc_wheels")
        assert any(f.category == "cuda-toolkit-not-found" for f in found)  # no nvcc in it


def test_cuda_toolkit_info_without_targets_uses_kb(kb: Knowledge) -> None:
    from torchsmith.build.config import can_target  # noqa: PLC0415

    tk = CudaToolkitInfo(root="/x", version="12.8")
    assert can_target(tk, kb, "12.0") is True
    assert can_target(dataclasses.replace(tk, version="12.6"), kb, "12.0") is False
    assert can_target(dataclasses.replace(tk, version="99.1"), kb, "12.0") is None


def test_compiler_caches_in_the_target_venv(tmp_path: Path) -> None:
    from torchsmith.build.tree import find_compiler_caches  # noqa: PLC0415

    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "sccache"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    found = find_compiler_caches(str(bin_dir / "python"), path=str(tmp_path / "empty"))
    assert found["sccache"] == str(bin_dir / "sccache")


def test_torch_extensions_jit_cache(
    h200: Probe, kb: Knowledge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jit = tmp_path / "torch_extensions" / "py311_cu130" / "scatter_like"
    jit.mkdir(parents=True)
    fixture = Path(__file__).parent / "fixtures" / "torch-2.13-cuda-build.ninja"
    shutil.copy(fixture, jit / "build.ninja")
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "torch_extensions"))
    project = detect_project(copy_project("scatter_like", tmp_path))
    config = make_config(project, h200, kb, BuildOptions())
    facts = read_tree(project, config)
    assert [c.kind for c in facts.caches] == ["torch_extensions"]
    (f,) = [f for f in preflight(config, facts, h200, kb) if f.severity != "info"]
    assert f.category == "stale-build-cache"
    assert str(jit / "build.ninja") in f.message
