"""BuildConfig values for the test projects, written out by hand (the configuration is the
buildcfg helper's make_config; the executor tests need only the contract, build/model.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from torchsmith.build.model import BuildConfig, Project, Step

PROJECTS = Path(__file__).parent / "projects"
NVCC = "/usr/local/cuda-13.0/bin/nvcc"


def copy_project(name: str, dest: Path) -> Path:
    tree = dest / name
    shutil.copytree(PROJECTS / name, tree)
    return tree


def cmake_config(
    tree: Path,
    archs: tuple[str, ...],
    *,
    launcher: str | None = None,
    env: dict[str, str] | None = None,
) -> BuildConfig:
    build = tree / "build"
    cmake_archs = ";".join(a.replace(".", "") for a in archs)
    args = [
        "-G",
        "Ninja",
        f"-DCMAKE_CUDA_COMPILER={NVCC}",
        f"-DCMAKE_CUDA_ARCHITECTURES={cmake_archs}",
    ]
    if launcher:
        args += [
            f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}",
            f"-DCMAKE_CUDA_COMPILER_LAUNCHER={launcher}",
        ]
    steps = (
        Step("configure", ("cmake", "-S", str(tree), "-B", str(build), *args), str(tree)),
        Step("build", ("cmake", "--build", str(build), "-j", "2"), str(tree)),
    )
    return BuildConfig(
        project=Project(str(tree), "cmake", "cmake", name=tree.name, build_dir="build"),
        python=sys.executable,
        profile="fast",
        arch_list=archs,
        cuda_home="/usr/local/cuda-13.0",
        cuda_version="13.0",
        host_compiler="g++",
        jobs=2,
        nvcc_threads=2,
        cache="sccache" if launcher else "none",
        launcher=launcher,
        env=env or {},
        cmake_args=tuple(args),
        steps=steps,
    )


def python_config(
    tree: Path, python: str, argv: tuple[str, ...], env: dict[str, str]
) -> BuildConfig:
    return BuildConfig(
        project=Project(str(tree), "cpp_extension", "setup.py", name=tree.name, uses_ninja=False),
        python=python,
        profile="fast",
        arch_list=(),
        cuda_home=None,
        cuda_version=None,
        host_compiler="g++",
        jobs=2,
        nvcc_threads=1,
        cache="none",
        launcher=None,
        env=env,
        cmake_args=(),
        steps=(Step("build", (python, *argv), str(tree)),),
    )


def commit_all(tree: Path) -> None:
    """Make ``tree`` a git repository with everything in it committed (tests of what git tracks)."""
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tree,
            check=True,
            capture_output=True,
        )
