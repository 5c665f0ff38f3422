"""detect_project on real small trees (and a PyTorch skeleton with the real file names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsmith.build.detect import detect_project, is_cuda_project
from torchsmith.errors import InputError

from .conftest import PROJECTS, copy_project


def test_cmake_cuda_project() -> None:
    p = detect_project(PROJECTS / "cuda_cmake")
    assert (p.kind, p.build_system, p.name) == ("cmake", "cmake", "tinykern")
    assert is_cuda_project(p)


def test_cpp_extension_with_ninja() -> None:
    p = detect_project(PROJECTS / "cpp_ext")
    assert (p.kind, p.build_system, p.name, p.version) == (
        "cpp_extension",
        "setup.py",
        "tiny_cpp_ext",
        "0.1.0",
    )
    assert p.uses_ninja
    assert not is_cuda_project(p)


def test_torch_scatter_like_project_turns_ninja_off() -> None:
    p = detect_project(PROJECTS / "scatter_like")
    assert p.kind == "cpp_extension"
    assert not p.uses_ninja
    assert is_cuda_project(p)
    assert any("use_ninja=False" in n for n in p.notes)


def test_pytorch_tree_with_pyproject_backend() -> None:
    p = detect_project(PROJECTS / "pytorch_skeleton")
    assert (p.kind, p.build_system, p.name, p.version) == (
        "pytorch",
        "pyproject",
        "torch",
        "2.13.0a0",
    )
    assert any("CMakeCache.txt" in n for n in p.notes)


def test_pytorch_tree_without_pyproject_is_a_setup_py_build(tmp_path: Path) -> None:
    tree = copy_project("pytorch_skeleton", tmp_path)
    (tree / "pyproject.toml").unlink()
    assert detect_project(tree).build_system == "setup.py"


def test_torchvision_tree(tmp_path: Path) -> None:
    (tmp_path / "torchvision").mkdir()
    (tmp_path / "version.txt").write_text("0.28.0a0\n")
    (tmp_path / "setup.py").write_text(
        'from torch.utils.cpp_extension import BuildExtension\nsetup(name="torchvision")\n'
    )
    p = detect_project(tmp_path)
    assert (p.kind, p.version) == ("torchvision", "0.28.0a0")


def test_pyproject_only_extension(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "kern"\nversion = "1.0"\n'
        "[tool.setuptools]\n# ext_modules via CUDAExtension in a plugin\n"
    )
    p = detect_project(tmp_path)
    assert (p.kind, p.build_system, p.name) == ("cpp_extension", "pyproject", "kern")


def test_cmake_without_cuda_is_no_project(tmp_path: Path) -> None:
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\n"
        "# project(x CUDA) only in a comment\nproject(x CXX)\n"
    )
    with pytest.raises(InputError, match="not a project torchsmith can build"):
        detect_project(tmp_path)


def test_enable_language_cuda(tmp_path: Path) -> None:
    (tmp_path / "CMakeLists.txt").write_text("project(k CXX)\nenable_language(CUDA)\n")
    assert detect_project(tmp_path).kind == "cmake"


@pytest.mark.parametrize("make", ["plain", "missing", "file"])
def test_no_project_is_one_clear_line(make: str, tmp_path: Path) -> None:
    path = {
        "plain": PROJECTS / "plain_python",
        "missing": tmp_path / "nope",
        "file": PROJECTS / "cpp_ext" / "setup.py",
    }[make]
    with pytest.raises(InputError) as info:
        detect_project(path)
    assert "\n" not in info.value.message
    assert info.value.tip


def test_hardcoded_gencode_archs_are_seen(tmp_path: Path) -> None:
    """causal-conv1d 1.7.0's setup.py appends -gencode literals whatever the arch list says."""
    (tmp_path / "setup.py").write_text(
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
        "cc_flag = []\n"
        'cc_flag.append("-gencode")\n'
        'cc_flag.append("arch=compute_80,code=sm_80")\n'
        'cc_flag.append("-gencode")\n'
        'cc_flag.append("arch=compute_120,code=sm_120")\n'
    )
    project = detect_project(tmp_path)
    assert project.fixed_archs == ("sm_80", "sm_120")
    assert any("TORCH_CUDA_ARCH_LIST cannot narrow them" in n for n in project.notes)
