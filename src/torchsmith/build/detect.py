"""Project detection: what kind of source tree a path is, read from its files (no execution)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from torchsmith.build.model import Project
from torchsmith.errors import InputError
from torchsmith.util.inputs import read_text_head

BuildSystem = Literal["setup.py", "pyproject", "cmake"]
_MAX_READ = 512 * 1024
_CPP_EXT = re.compile(r"\b(CUDAExtension|CppExtension|BuildExtension|SyclExtension)\b")
_CUDA_EXT = re.compile(r"\bCUDAExtension\b|\.cu['\"]|\bglob\([^)]*\*\.cu\b")
# use_ninja=False: with_options(use_ninja=False), BuildExtension(..., use_ninja=False)
_NO_NINJA = re.compile(r"use_ninja\s*=\s*False")
_CMAKE_CUDA = re.compile(
    r"project\s*\([^)]*\bCUDA\b[^)]*\)|enable_language\s*\(\s*CUDA\b|"
    r"check_language\s*\(\s*CUDA\b|find_package\s*\(\s*CUDAToolkit\b",
    re.IGNORECASE,
)
_SETUP_NAME = re.compile(r"\bname\s*=\s*['\"]([A-Za-z0-9_.\-]+)['\"]")
_SETUP_VERSION = re.compile(r"\bversion\s*=\s*['\"]([0-9][A-Za-z0-9_.+\-]*)['\"]")
_TOML_NAME = re.compile(r"^\s*name\s*=\s*['\"]([A-Za-z0-9_.\-]+)['\"]", re.MULTILINE)
_TOML_VERSION = re.compile(r"^\s*version\s*=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
_BUILD_BACKEND = re.compile(r"^\s*build-backend\s*=", re.MULTILINE)


def _read(path: Path) -> str:
    return read_text_head(path, _MAX_READ)


def _version_txt(root: Path) -> str | None:
    text = _read(root / "version.txt").strip()
    return text.splitlines()[0].strip() if text else None


def detect_project(path: Path) -> Project:
    """Read ``path`` and say what it is; raises InputError when it is no buildable project."""
    root = Path(path).expanduser()
    if not root.exists():
        raise InputError(f"{root} does not exist", tip="give the path of a source tree")
    if not root.is_dir():
        raise InputError(f"{root} is not a directory", tip="give the folder holding setup.py")
    root = root.resolve()
    setup = _read(root / "setup.py")
    pyproject = _read(root / "pyproject.toml")
    cmake = _read(root / "CMakeLists.txt")
    has_setup = (root / "setup.py").is_file()
    has_pyproject = (root / "pyproject.toml").is_file()
    py_build: BuildSystem = (
        "pyproject" if has_pyproject and _BUILD_BACKEND.search(pyproject) else "setup.py"
    )

    if _is_pytorch(root) and has_setup:
        return Project(
            path=str(root),
            kind="pytorch",
            build_system=py_build,
            name="torch",
            version=_version_txt(root),
            uses_ninja=True,
            build_dir=str(root / "build"),
            notes=_pytorch_notes(root, py_build),
        )
    for kind in ("torchvision", "torchaudio"):
        if has_setup and (root / kind).is_dir() and re.search(rf"['\"]{kind}['\"]", setup):
            return Project(
                path=str(root),
                kind=kind,
                build_system=py_build,
                name=kind,
                version=_version_txt(root),
                uses_ninja=not bool(_NO_NINJA.search(setup)),
                build_dir=str(root / "build"),
            )
    python_text = setup + "\n" + pyproject
    if (has_setup or has_pyproject) and _CPP_EXT.search(python_text):
        no_ninja = bool(_NO_NINJA.search(python_text))
        notes: list[str] = []
        if no_ninja:
            notes.append(
                "the project turns ninja off (use_ninja=False): torch.utils.cpp_extension "
                "compiles one file at a time per extension"
            )
        if _CUDA_EXT.search(python_text):
            notes.append("has CUDA sources (CUDAExtension)")
        fixed = fixed_gencode_archs(python_text)
        if fixed:
            notes.append(
                f"its setup adds -gencode for {len(fixed)} archs of its own ({', '.join(fixed)}): "
                "TORCH_CUDA_ARCH_LIST cannot narrow them"
            )
        return Project(
            path=str(root),
            kind="cpp_extension",
            build_system=py_build if has_setup else "pyproject",
            name=_first(_SETUP_NAME, setup) or _first(_TOML_NAME, pyproject) or root.name,
            version=_first(_SETUP_VERSION, setup) or _first(_TOML_VERSION, pyproject),
            uses_ninja=not no_ninja,
            build_dir=str(root / "build"),
            notes=tuple(notes),
            fixed_archs=fixed,
            own_arch_flags=bool(fixed) or bool(_ARCH_FLAGS.search(python_text)),
            force_cuda_var="FORCE_CUDA" if _FORCE_CUDA.search(python_text) else None,
        )
    if cmake and _CMAKE_CUDA.search(_strip_cmake_comments(cmake)):
        m = re.search(r"project\s*\(\s*([A-Za-z0-9_\-]+)", cmake, re.IGNORECASE)
        return Project(
            path=str(root),
            kind="cmake",
            build_system="cmake",
            name=m.group(1) if m else root.name,
            version=None,
            uses_ninja=True,
            build_dir=str(root / "build"),
        )
    raise InputError(
        f"{root} is not a project torchsmith can build: no PyTorch tree, no setup.py/pyproject "
        "using torch.utils.cpp_extension, no CMakeLists.txt enabling CUDA",
        tip="point torchsmith build at the folder that holds setup.py or CMakeLists.txt",
    )


_GENCODE = re.compile(r"arch=compute_(\d{2,3}[af]?),code=\[?sm_(\d{2,3}[af]?)")


_FORCE_CUDA = re.compile(r"""["']FORCE_CUDA["']""")
_ARCH_FLAGS = re.compile(r"-gencode|--generate-code|arch=compute_|[\"']-arch[=\"']")


def fixed_gencode_archs(text: str) -> tuple[str, ...]:
    """SASS archs a setup script hardcodes as ``-gencode arch=compute_X,code=sm_X`` literals."""
    found = {f"sm_{m.group(2)}" for m in _GENCODE.finditer(text)}
    return tuple(sorted(found, key=lambda a: int(re.sub(r"\D", "", a))))


def is_cuda_project(project: Project) -> bool:
    """Whether the build compiles CUDA code (PyTorch/vision/audio: when built with CUDA)."""
    if project.kind == "cpp_extension":
        return any("CUDA" in n for n in project.notes)
    return True


def _is_pytorch(root: Path) -> bool:
    return all(
        p.exists()
        for p in (
            root / "torch",
            root / "tools" / "setup_helpers",
            root / "CMakeLists.txt",
            root / "version.txt",
        )
    )


def _pytorch_notes(root: Path, build_system: str) -> tuple[str, ...]:
    notes = [
        "tools/setup_helpers/cmake.py skips CMake configure when build/CMakeCache.txt exists: "
        "changed options need a clean build"
    ]
    if build_system == "pyproject":
        notes.append("pyproject.toml names a build backend: built with pip --no-build-isolation")
    return tuple(notes)


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    m = pattern.search(text)
    return m.group(1) if m else None


def _strip_cmake_comments(text: str) -> str:
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())
