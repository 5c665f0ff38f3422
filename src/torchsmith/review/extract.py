"""From a parsed script section to the build configuration it would really use.

Every value keeps the line it came from, so each finding can point at the line to change.
Keys are the names PyTorch's build and CMake read: environment variables (TORCH_CUDA_ARCH_LIST,
MAX_JOBS, USE_*, CUDA_HOME, ...) and CMake cache entries from ``-D`` (CMAKE_CUDA_ARCHITECTURES,
CUDA_TOOLKIT_ROOT_DIR, ...); the generator and job count get the pseudo keys ``generator`` and
``jobs``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from torchsmith.review.parse import Command, Section

Via = Literal["env", "cmake-define", "cmake-arg", "build-arg", "vcvars"]
Tool = Literal["cmake", "cmake-build", "setup.py", "pip", "ninja", "make", "vcvars", "other"]


@dataclass(frozen=True)
class Setting:
    key: str
    value: str
    line: int
    via: Via


@dataclass(frozen=True)
class BuildCommand:
    tool: Tool
    argv: tuple[str, ...]
    line: int
    end_line: int = 0  # the last physical line of the logical line it is on


@dataclass(frozen=True)
class ExtractedConfig:
    section: int
    title: str | None
    dialect: str
    first_line: int
    settings: tuple[Setting, ...]  # in script order; a later one overrides an earlier one
    commands: tuple[BuildCommand, ...]
    problems: tuple[tuple[int, str], ...] = ()

    def get(self, *keys: str) -> Setting | None:
        """The effective (last) setting among ``keys``."""
        found = [s for s in self.settings if s.key in keys]
        return found[-1] if found else None

    def effective(self) -> dict[str, Setting]:
        out: dict[str, Setting] = {}
        for setting in self.settings:
            out[setting.key] = setting
        return out

    @property
    def has_build(self) -> bool:
        return any(c.tool != "other" for c in self.commands)


def extract(section: Section) -> ExtractedConfig:
    events: list[tuple[int, int, Setting | BuildCommand]] = []
    for order, assignment in enumerate(section.assignments):
        key = assignment.name.upper() if section.dialect != "bash" else assignment.name
        events.append(
            (assignment.line, order, Setting(key, assignment.value, assignment.line, "env"))
        )
    base = len(events)
    for order, command in enumerate(section.commands, start=base):
        tool, settings = _classify(command)
        built = BuildCommand(tool, command.argv, command.line, command.end_line)
        events.append((command.line, order, built))
        for setting in settings:
            needle = setting.key if setting.via == "cmake-define" else setting.value
            line = section.line_of(needle, command.line, command.end_line)
            events.append((command.line, order, replace(setting, line=line)))
    events.sort(key=lambda e: (e[0], e[1]))
    settings_out = tuple(e[2] for e in events if isinstance(e[2], Setting))
    commands_out = tuple(e[2] for e in events if isinstance(e[2], BuildCommand))
    return ExtractedConfig(
        section=section.index,
        title=section.title,
        dialect=section.dialect,
        first_line=section.first_line,
        settings=settings_out,
        commands=commands_out,
        problems=section.problems,
    )


def _basename(arg: str) -> str:
    name = re.split(r"[\\/]", arg)[-1].lower()
    return name[:-4] if name.endswith((".exe", ".bat", ".cmd")) else name


def _classify(command: Command) -> tuple[Tool, list[Setting]]:
    argv = list(command.argv)
    head = _basename(argv[0])
    if head.startswith("vcvars") or head == "vsdevcmd":
        return "vcvars", [Setting("vcvars", argv[0], command.line, "vcvars")]
    if head == "cmake":
        if "--build" in argv:
            return "cmake-build", _cmake_build_settings(argv, command.line)
        return "cmake", _cmake_settings(argv, command.line)
    if head in ("ninja", "make", "mingw32-make", "nmake", "jom"):
        jobs = _jobs_from(argv[1:])
        tool: Tool = "ninja" if head == "ninja" else "make"
        return tool, [Setting("jobs", jobs, command.line, "build-arg")] if jobs else []
    if any(a.endswith(("setup.py", _DRIVER)) for a in argv):
        return "setup.py", _python(argv, command.line) + _setup_settings(argv, command.line)
    if head.startswith("pip") or (len(argv) > 2 and argv[1:3] == ["-m", "pip"]):
        return "pip", _python(argv, command.line)
    if head.startswith(("python", "py")) and "setup.py" in " ".join(argv):
        return "setup.py", _python(argv, command.line)
    return "other", []


# torchsmith build's own driver of a parallel extension build (what `build --emit` writes): it
# runs the project's setup.py
_DRIVER = "cpp_ext_parallel.py"


def _python(argv: list[str], line: int) -> list[Setting]:
    """The interpreter a setup.py or ``python -m pip`` line runs, where the script names one by
    its path (/venv/bin/python): the environment the build installs into. A bare ``python`` is
    whichever one is first on PATH, as for `torchsmith build` itself."""
    head = _basename(argv[0])
    if re.search(r"[\\/]", argv[0]) and head.startswith("python"):
        return [Setting("python", argv[0], line, "build-arg")]
    return []


def _cmake_settings(argv: list[str], line: int) -> list[Setting]:
    out: list[Setting] = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-D" and i + 1 < len(argv):
            arg = "-D" + argv[i + 1]
            i += 1
        if arg.startswith("-D") and "=" in arg:
            name, value = arg[2:].split("=", 1)
            name = name.split(":", 1)[0]  # -DNAME:TYPE=VALUE
            out.append(Setting(name, value, line, "cmake-define"))
        elif arg == "-G" and i + 1 < len(argv):
            out.append(Setting("generator", argv[i + 1], line, "cmake-arg"))
            i += 1
        elif arg.startswith("-G") and len(arg) > 2:
            out.append(Setting("generator", arg[2:], line, "cmake-arg"))
        elif arg in ("-S", "-B") and i + 1 < len(argv):
            key = "source_dir" if arg == "-S" else "build_dir"
            out.append(Setting(key, argv[i + 1], line, "cmake-arg"))
            i += 1
        elif not arg.startswith("-"):
            out.append(Setting("source_dir", arg, line, "cmake-arg"))
        i += 1
    return out


def _cmake_build_settings(argv: list[str], line: int) -> list[Setting]:
    out: list[Setting] = []
    jobs = _jobs_from(argv[1:])
    if jobs:
        out.append(Setting("jobs", jobs, line, "build-arg"))
    if "--config" in argv:
        at = argv.index("--config")
        if at + 1 < len(argv):
            out.append(Setting("CMAKE_BUILD_TYPE", argv[at + 1], line, "build-arg"))
    return out


def _jobs_from(args: list[str]) -> str | None:
    for i, arg in enumerate(args):
        if arg in ("-j", "--parallel") and i + 1 < len(args) and args[i + 1].isdigit():
            return args[i + 1]
        match = re.fullmatch(r"(?:-j|--parallel=?|/maxcpucount:|/m:)(\d+)", arg)
        if match:
            return match.group(1)
    return None


def _setup_settings(argv: list[str], line: int) -> list[Setting]:
    out: list[Setting] = []
    jobs = _jobs_from(argv)
    if jobs:
        out.append(Setting("jobs", jobs, line, "build-arg"))
    for arg in argv:
        if arg in ("develop", "install", "bdist_wheel", "build", "build_ext", "clean"):
            out.append(Setting("setup_command", arg, line, "build-arg"))
    return out
