"""Every CUDA toolkit on the machine, and the one a build would pick.

Toolkits are found through CUDA_HOME, CUDA_PATH, CUDA_PATH_V*_*, CUDACXX, CUDAToolkit_ROOT,
nvcc on PATH, the standard install folders, the active conda env and pip-installed
``nvidia-cuda-nvcc`` wheels in the target interpreter's site-packages; they are
deduplicated by real path. Each one's nvcc is asked for its version and the GPU
architectures it can target; all nvcc calls run at once.

Pip layouts (checked by listing the wheels): ``nvidia-cuda-nvcc`` 13.x puts the toolkit
under ``site-packages/nvidia/cu13`` (``bin/nvcc``, ``bin/ptxas``, ...); the 11.x and 12.x
wheels (``nvidia-cuda-nvcc-cu11``/``-cu12``) ship **no nvcc**, only
``nvidia/cuda_nvcc/bin/ptxas`` and libnvvm, so such a "toolkit" is reported with its
ptxas version and targets and ``nvcc=None``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from torchsmith import platforms
from torchsmith.probe.model import CudaToolkitInfo
from torchsmith.probe.tools import (
    DEFAULT_TIMEOUT_S,
    Answer,
    ask,
    environ,
    exe_name,
    failure,
    find_program,
    getenv,
)

LINUX_STANDARD_DIRS = ("/usr/local/cuda", "/usr/local/cuda-*", "/opt/cuda")
WINDOWS_TOOLKITS = r"NVIDIA GPU Computing Toolkit\CUDA"  # under %ProgramFiles%

# ----------------------------------------------------------------------------------------------
# Pure parsers.


def parse_nvcc_version(text: str) -> tuple[str, str] | None:
    """``Cuda compilation tools, release 13.0, V13.0.88`` -> ``("13.0", "13.0.88")``.

    ``ptxas --version`` prints the same line. Returns None when it is missing.
    """
    m = re.search(r"release (\d+\.\d+),\s*V(\d+\.\d+\.\d+)", text)
    if m:
        return m.group(1), m.group(2)
    m = re.search(r"release (\d+\.\d+)", text)
    return (m.group(1), m.group(1)) if m else None


def parse_nvcc_list(text: str) -> tuple[str, ...]:
    """``nvcc --list-gpu-code`` / ``--list-gpu-arch``: one ``sm_XY`` / ``compute_XY`` a line,
    in nvcc's order (which is not sorted: ``sm_100, sm_110, sm_103``)."""
    names = (line.strip() for line in text.splitlines())
    return tuple(n for n in names if re.fullmatch(r"(sm|compute|lto)_\d+[a-z]?", n))


def parse_gpu_names_from_help(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The base ``sm_XY`` and ``compute_XY`` names quoted in ``--help`` ("Allowed values for
    this option: 'compute_50',...") of ptxas or of an nvcc too old for ``--list-gpu-code``.

    Arch- and family-specific variants (``sm_90a``, ``sm_100f``) are left out, as
    ``--list-gpu-code`` leaves them out. Sorted by number.
    """
    quoted = set(re.findall(r"'((?:sm|compute)_\d+)'", text))

    def ordered(prefix: str) -> tuple[str, ...]:
        found = (q for q in quoted if q.startswith(prefix))
        return tuple(sorted(found, key=lambda q: int(q.split("_")[1])))

    return ordered("sm_"), ordered("compute_")


def parse_version_json(text: str) -> tuple[str, str] | None:
    """A toolkit's ``version.json`` (CUDA 11.1+) -> ``(major.minor, nvcc full version)``.

    ``cuda.version`` is the SDK release (``12.3.2``: update 2); ``cuda_nvcc.version`` is what
    ``nvcc --version`` prints (``12.3.107``) and is preferred for the full version.
    """
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    versions = {}
    for key in ("cuda", "cuda_nvcc"):
        entry = data.get(key)
        if isinstance(entry, dict) and isinstance(entry.get("version"), str):
            versions[key] = entry["version"]
    full = versions.get("cuda_nvcc") or versions.get("cuda")
    if not full or not re.match(r"\d+\.\d+", full):
        return None
    short = ".".join((versions.get("cuda") or full).split(".")[:2])
    return short, full


def parse_version_txt(text: str) -> tuple[str, str] | None:
    """``version.txt`` of CUDA 11.0 and older: ``CUDA Version 10.2.89``."""
    m = re.search(r"CUDA Version (\d+)\.(\d+)(\.\d+)?", text)
    if not m:
        return None
    short = f"{m.group(1)}.{m.group(2)}"
    return short, short + (m.group(3) or "")


def parse_dist_info_version(name: str) -> tuple[str, str] | None:
    """``nvidia_cuda_nvcc_cu12-12.4.131.dist-info`` -> ``("12.4", "12.4.131")``."""
    m = re.fullmatch(r"nvidia_cuda_nvcc(?:_cu\d+)?-(\d+)\.(\d+)(\.\d+)?\.dist-info", name)
    if not m:
        return None
    short = f"{m.group(1)}.{m.group(2)}"
    return short, short + (m.group(3) or "")


# ----------------------------------------------------------------------------------------------
# Discovery: where toolkits are (filesystem and environment only, no processes).


@dataclass
class _Toolkit:
    root: Path  # as torch or the user would name it (not resolved)
    found_via: list[str] = field(default_factory=list)
    nvcc: Path | None = None
    dist_info_dirs: list[Path] = field(default_factory=list)  # where a pip wheel's metadata is


def _key(path: Path) -> str:
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):
        return str(path)


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _glob(pattern: str) -> list[Path]:
    """Expand one ``*`` in the last component of ``pattern``; sorted by name."""
    path = Path(pattern)
    if "*" not in path.name:
        return [path] if _exists(path) else []
    try:
        return sorted(path.parent.glob(path.name))
    except OSError:
        return []


def _windows_toolkit_dirs(env: Mapping[str, str]) -> list[Path]:
    program_files = getenv(env, "ProgramFiles") or r"C:\Program Files"
    base = Path(program_files) / Path(*WINDOWS_TOOLKITS.split("\\"))
    return _glob(str(base / "v*.*"))


def discover(
    env: Mapping[str, str],
    site_packages: Sequence[Path] = (),
    standard_dirs: Sequence[str] | None = None,
) -> list[_Toolkit]:
    """Every toolkit root, merged by real path, in the order they were found."""
    windows = platforms.current_os() == "windows"
    found: dict[str, _Toolkit] = {}

    def add(root: Path, via: str, nvcc: Path | None = None, dist_info: Path | None = None) -> None:
        tk = found.setdefault(_key(root), _Toolkit(root=root))
        if via not in tk.found_via:
            tk.found_via.append(via)
        if nvcc is not None and tk.nvcc is None:
            tk.nvcc = nvcc
        if dist_info is not None and dist_info not in tk.dist_info_dirs:
            tk.dist_info_dirs.append(dist_info)

    for var in ("CUDA_HOME", "CUDA_PATH"):
        if value := getenv(env, var):
            add(Path(value), var)
    for var in sorted(k for k in env if re.fullmatch(r"CUDA_PATH_V\d+_\d+", k.upper())):
        if value := env[var]:
            add(Path(value), var)
    if value := getenv(env, "CUDAToolkit_ROOT"):
        add(Path(value), "CUDAToolkit_ROOT")
    if (value := getenv(env, "CUDACXX")) and _is_file(Path(value)):
        add(Path(value).parent.parent, "CUDACXX", nvcc=Path(value))
    if nvcc := find_program("nvcc", env):
        add(Path(nvcc).parent.parent, "PATH", nvcc=Path(nvcc))
    if standard_dirs is None:
        standard_dirs = () if windows else LINUX_STANDARD_DIRS
    for pattern in standard_dirs:
        for root in _glob(pattern):
            add(root, pattern)
    if windows:
        for root in _windows_toolkit_dirs(env):
            add(root, "Program Files")
    if prefix := getenv(env, "CONDA_PREFIX"):
        conda_root = Path(prefix) / "Library" if windows else Path(prefix)
        if _is_file(conda_root / "bin" / exe_name("nvcc")):
            add(conda_root, "conda")
    for sp in site_packages:
        _discover_pip(Path(sp), add)
    return list(found.values())


def _discover_pip(sp: Path, add: Callable[..., None]) -> None:
    nvidia = sp / "nvidia"
    if not _exists(nvidia):
        return
    dist_infos = _glob(str(sp / "nvidia_cuda_nvcc*.dist-info"))
    dist = dist_infos[-1] if dist_infos else None
    for package in _glob(str(nvidia / "*")):
        bin_dir = package / "bin"
        if _is_file(bin_dir / exe_name("nvcc")) or (
            bin_dir.parent.name == "cuda_nvcc" and _is_file(bin_dir / exe_name("ptxas"))
        ):
            add(bin_dir.parent, "pip", dist_info=dist)


# ----------------------------------------------------------------------------------------------
# Which toolkit a build would pick.


def torch_cuda_home(env: Mapping[str, str]) -> tuple[Path | None, str]:
    """The CUDA_HOME torch.utils.cpp_extension would use, and why.

    Mirrors ``_find_cuda_home()`` of torch 2.13.0 (torch/utils/cpp_extension.py, lines
    155-179; unchanged in substance since torch 1.x):
      1. ``os.environ.get('CUDA_HOME') or os.environ.get('CUDA_PATH')`` - used as is,
         without checking that it exists;
      2. else ``shutil.which("nvcc")``, and CUDA_HOME is the parent of its folder
         (no symlinks resolved, so a wrapper script in /usr/local/bin gives /usr/local);
      3. else ``/usr/local/cuda`` on Linux, or on Windows the FIRST match of
         ``glob('C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v*.*')`` (directory
         order: alphabetical on NTFS, so v11.8 before v12.4; not the newest) - if it exists.
    CUDA_PATH_V*_* are never read by torch.
    """
    windows = platforms.current_os() == "windows"
    if home := getenv(env, "CUDA_HOME"):
        other = getenv(env, "CUDA_PATH")
        tail = (
            f"; CUDA_PATH={other} is ignored"
            if other and _key(Path(other)) != _key(Path(home))
            else ""
        )
        return Path(home), f"CUDA_HOME is set; torch.utils.cpp_extension uses it first{tail}"
    if home := getenv(env, "CUDA_PATH"):
        return Path(home), "CUDA_PATH is set (CUDA_HOME is not); torch.utils.cpp_extension uses it"
    if nvcc := find_program("nvcc", env):
        root = Path(nvcc).parent.parent
        return root, (
            f"CUDA_HOME and CUDA_PATH are unset; torch.utils.cpp_extension takes the folder "
            f"above the first nvcc on PATH ({nvcc})"
        )
    if windows:
        matches = _windows_toolkit_dirs(env)
        if matches:
            return matches[0], (
                "CUDA_HOME, CUDA_PATH and nvcc on PATH are missing; torch.utils.cpp_extension "
                "takes the first (alphabetical, not newest) Program Files toolkit"
            )
        return None, "no CUDA_HOME, CUDA_PATH, nvcc on PATH or Program Files toolkit"
    if _exists(Path("/usr/local/cuda")):
        return Path("/usr/local/cuda"), (
            "CUDA_HOME, CUDA_PATH and nvcc on PATH are missing; torch.utils.cpp_extension "
            "falls back to /usr/local/cuda"
        )
    return None, "no CUDA_HOME, CUDA_PATH, nvcc on PATH or /usr/local/cuda"


def cmake_cuda_root(env: Mapping[str, str]) -> tuple[Path | None, str]:
    """The toolkit CMake's FindCUDAToolkit would find first (it never reads CUDA_HOME):
    the CUDA compiler (CUDACXX), CUDAToolkit_ROOT, CUDA_PATH, nvcc on PATH, /usr/local/cuda.
    Source: https://cmake.org/cmake/help/latest/module/FindCUDAToolkit.html (Search Behavior).
    """
    if (value := getenv(env, "CUDACXX")) and _is_file(Path(value)):
        return Path(value).resolve().parent.parent, "CUDACXX"
    for var in ("CUDAToolkit_ROOT", "CUDA_PATH"):
        if value := getenv(env, var):
            return Path(value), var
    if nvcc := find_program("nvcc", env):
        return Path(nvcc).resolve().parent.parent, "nvcc on PATH"
    if platforms.current_os() != "windows" and _exists(Path("/usr/local/cuda")):
        return Path("/usr/local/cuda"), "/usr/local/cuda"
    return None, ""


# ----------------------------------------------------------------------------------------------
# Probing each toolkit.


@dataclass(frozen=True)
class _Plan:
    """The commands one toolkit needs, run all at once with every other toolkit's."""

    program: Path | None  # nvcc, or ptxas for a ptxas-only pip toolkit
    commands: tuple[tuple[str, ...], ...]


def _plan(tk: _Toolkit) -> _Plan:
    nvcc = tk.root / "bin" / exe_name("nvcc")
    if not _is_file(nvcc) and tk.nvcc is not None:
        nvcc = tk.nvcc
    if _is_file(nvcc):
        n = str(nvcc)
        return _Plan(nvcc, ((n, "--version"), (n, "--list-gpu-code"), (n, "--list-gpu-arch")))
    ptxas = tk.root / "bin" / exe_name("ptxas")
    if _is_file(ptxas):
        p = str(ptxas)
        return _Plan(ptxas, ((p, "--version"), (p, "--help")))
    return _Plan(None, ())


def _version_from_files(tk: _Toolkit) -> tuple[str, str] | None:
    for name, parser in (("version.json", parse_version_json), ("version.txt", parse_version_txt)):
        try:
            text = (tk.root / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if parsed := parser(text):
            return parsed
    # pip wheels, and toolkits assembled from them (a dist-info folder inside the root)
    for folder in [*tk.dist_info_dirs, *_glob(str(tk.root / "dist-info" / "nvidia_cuda_nvcc*"))]:
        if parsed := parse_dist_info_version(folder.name):
            return parsed
    return None


def _info(tk: _Toolkit, plan: _Plan, answers: Sequence[Answer]) -> CudaToolkitInfo:
    version: tuple[str, str] | None = None
    sm: tuple[str, ...] = ()
    compute: tuple[str, ...] = ()
    errors: list[str] = []
    nvcc = str(plan.program) if plan.program and plan.program.name.startswith("nvcc") else None
    if not _exists(tk.root):
        errors.append(f"{tk.root} does not exist (named by {', '.join(tk.found_via)})")
    elif plan.program is None:
        errors.append(f"no {exe_name('nvcc')} in {tk.root / 'bin'}")
    elif nvcc is None:
        errors.append("a pip nvidia-cuda-nvcc-cu1x wheel: it ships ptxas but no nvcc")
    if answers:
        tool = plan.program.name if plan.program else "nvcc"
        version_answer = answers[0]
        if why := failure(version_answer, f"{tool} --version"):
            errors.append(why)
        elif not (version := parse_nvcc_version(version_answer.output)):
            errors.append(f"{tool} --version: no 'release X.Y' in its output")
        if nvcc is not None:
            sm, compute, why_lists = _lists(answers[1], answers[2])
            errors.extend(why_lists)
        elif ok_text(answers[1]):
            sm, compute = parse_gpu_names_from_help(answers[1].output)
    if version is None:
        version = _version_from_files(tk)
    return CudaToolkitInfo(
        root=_key(tk.root) if _exists(tk.root) else str(tk.root),
        version=version[0] if version else None,
        full_version=version[1] if version else None,
        nvcc=nvcc,
        found_via=tuple(tk.found_via),
        sm_targets=sm,
        compute_targets=compute,
        headers=_has_headers(tk.root) if _exists(tk.root) else None,
        error="; ".join(errors) or None,
    )


def ok_text(answer: Answer) -> bool:
    return answer.error is None and bool(answer.output.strip())


def _lists(code: Answer, arch: Answer) -> tuple[tuple[str, ...], tuple[str, ...], list[str]]:
    errors = []
    sm = parse_nvcc_list(code.output) if code.ok else ()
    compute = parse_nvcc_list(arch.output) if arch.ok else ()
    for answer, flag, got in ((code, "--list-gpu-code", sm), (arch, "--list-gpu-arch", compute)):
        if answer.error is not None:
            errors.append(answer.error)
        elif not got:
            # an nvcc too old for --list-gpu-*: the probe then reads the targets from --help
            said = answer.output.strip().splitlines()
            errors.append(f"{_LIST_FAILED} {flag}" + (f": {said[-1].strip()}" if said else ""))
    return sm, compute, errors


_LIST_FAILED = "this nvcc does not answer"


def _targets_from_help(
    infos: list[CudaToolkitInfo], timeout: float, env: Mapping[str, str] | None
) -> list[CudaToolkitInfo]:
    """Second round, only for an nvcc that has no ``--list-gpu-code``: parse ``nvcc --help``."""
    todo = [
        i
        for i, info in enumerate(infos)
        if info.nvcc and not info.sm_targets and _LIST_FAILED in (info.error or "")
    ]
    if not todo:
        return infos
    with ThreadPoolExecutor(max_workers=len(todo)) as pool:
        helps = list(
            pool.map(lambda i: ask([str(infos[i].nvcc), "--help"], timeout=timeout, env=env), todo)
        )
    out = list(infos)
    for i, answer in zip(todo, helps, strict=True):
        sm, compute = parse_gpu_names_from_help(answer.output) if answer.ok else ((), ())
        if sm:
            rest = [e for e in (infos[i].error or "").split("; ") if _LIST_FAILED not in e]
            error = "; ".join(rest) or None
            out[i] = replace(infos[i], sm_targets=sm, compute_targets=compute, error=error)
    return out


def _select(
    env: Mapping[str, str], infos: list[CudaToolkitInfo], toolkits: list[_Toolkit]
) -> list[CudaToolkitInfo]:
    home, reason = torch_cuda_home(env)
    if home is None:
        return infos
    wanted = _key(home)
    out = []
    for info, tk in zip(infos, toolkits, strict=True):
        if _key(tk.root) != wanted:
            out.append(info)
            continue
        notes = [reason, *_warnings(tk, info)]
        cmake_root, cmake_via = cmake_cuda_root(env)
        if cmake_root is not None and _key(cmake_root) != wanted:
            notes.append(
                f"CMake's FindCUDAToolkit would pick {cmake_root} ({cmake_via}) instead: "
                "it does not read CUDA_HOME"
            )
        out.append(replace(info, selected=True, selected_reason="; ".join(notes)))
    return out


def _warnings(tk: _Toolkit, info: CudaToolkitInfo) -> list[str]:
    notes = []
    if info.nvcc and (target := _wrapper_target(Path(info.nvcc))):
        notes.append(f"{info.nvcc} is a wrapper script for {target}")
    if _exists(tk.root) and not _has_headers(tk.root):
        notes.append(
            f"no cuda_runtime.h under {tk.root / 'include'}: C++ sources that include CUDA "
            "headers will not compile unless CUDA_HOME names the real toolkit"
        )
    return notes


def _has_headers(root: Path) -> bool:
    if _is_file(root / "include" / "cuda_runtime.h"):
        return True
    return any(
        _is_file(t / "include" / "cuda_runtime.h") for t in _glob(str(root / "targets" / "*"))
    )


def _wrapper_target(nvcc: Path) -> str | None:
    """The nvcc a small ``#!`` wrapper script execs (``exec /usr/local/cuda-13.0/bin/nvcc``)."""
    try:
        if nvcc.stat().st_size > 4096:
            return None
        text = nvcc.read_bytes()[:4096].decode("utf-8", errors="replace")
    except OSError:
        return None
    if not text.startswith("#!"):
        return None
    m = re.search(r"(/\S+/bin/nvcc)\b", text)
    return m.group(1) if m else None


# ----------------------------------------------------------------------------------------------
# The probe.


def probe_cuda_toolkits(
    env: Mapping[str, str] | None = None,
    *,
    site_packages: Sequence[Path] = (),
    standard_dirs: Sequence[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> tuple[CudaToolkitInfo, ...]:
    """Every CUDA toolkit found, the one a torch extension build would use marked ``selected``.

    ``site_packages``: the target interpreter's site-packages (for pip nvcc wheels).
    ``standard_dirs``: glob patterns replacing /usr/local/cuda, /usr/local/cuda-*, /opt/cuda
    (tests). Never raises: a failure becomes a toolkit's ``error``.
    """
    try:
        e = environ(env)
        toolkits = discover(e, site_packages, standard_dirs)
        plans = [_plan(tk) for tk in toolkits]
        jobs = [cmd for plan in plans for cmd in plan.commands]
        with ThreadPoolExecutor(max_workers=max(1, min(32, len(jobs)))) as pool:
            answers = list(pool.map(lambda argv: ask(argv, timeout=timeout, env=env), jobs))
        infos, at = [], 0
        for tk, plan in zip(toolkits, plans, strict=True):
            n = len(plan.commands)
            infos.append(_info(tk, plan, answers[at : at + n]))
            at += n
        infos = _targets_from_help(infos, timeout, env)
        return tuple(_select(e, infos, toolkits))
    except Exception as exc:  # noqa: BLE001 - a probe must never raise
        return (
            CudaToolkitInfo(
                root="", version=None, error=f"probe failed: {type(exc).__name__}: {exc}"
            ),
        )
