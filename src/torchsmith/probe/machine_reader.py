"""What the host and GPU probes may read from the machine, behind one seam.

The probes never open files, list folders or start tools themselves: they ask a
:class:`Machine`. :class:`LiveMachine` reads the real machine; :class:`ReplayMachine`
answers from recorded outputs, so tests (and what-if probes) replay a recording of another
machine through exactly the same code.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import psutil

from torchsmith.util import cmd
from torchsmith.util.cmd import CommandNotFoundError, CommandResult

_READ_LIMIT = 4 << 20  # no probed text file is larger; /proc files report size 0


@dataclass(frozen=True)
class Resources:
    """Memory and CPU counts as psutil reports them; None where it cannot tell."""

    ram_total_bytes: int | None = None
    ram_available_bytes: int | None = None
    cores_logical: int | None = None
    cores_physical: int | None = None


class Machine(Protocol):
    """The reads a probe may do. Every method answers; none raises except :meth:`run`."""

    @property
    def env(self) -> Mapping[str, str]: ...

    def read_text(self, path: str) -> str | None:
        """The file's text, or None when it is absent or unreadable."""

    def exists(self, path: str) -> bool: ...

    def listdir(self, path: str) -> tuple[str, ...]:
        """Sorted entry names; empty when the folder is absent or unreadable."""

    def realpath(self, path: str) -> str: ...

    def which(self, name: str) -> str | None: ...

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult:
        """Run a tool; raises :class:`torchsmith.errors.ToolError` subclasses like ``cmd.run``."""

    def machine(self) -> str:
        """``platform.machine()``: x86_64, AMD64, arm64, aarch64."""

    def kernel_release(self) -> str:
        """``platform.release()``."""

    def mac_version(self) -> str:
        """``platform.mac_ver()[0]``; empty off macOS."""

    def resources(self) -> Resources:
        """RAM and core counts (psutil on the real machine, on every OS)."""

    def disk_free(self, path: str) -> int:
        """Free bytes at ``path``; raises OSError."""


class LiveMachine:
    """The real machine."""

    @property
    def env(self) -> Mapping[str, str]:
        return os.environ

    def read_text(self, path: str) -> str | None:
        try:
            with Path(path).open("rb") as fh:
                data = fh.read(_READ_LIMIT)
        except (OSError, ValueError):
            return None
        return cmd.decode(data)

    def exists(self, path: str) -> bool:
        try:
            return Path(path).exists()
        except OSError:
            return False

    def listdir(self, path: str) -> tuple[str, ...]:
        try:
            return tuple(sorted(p.name for p in Path(path).iterdir()))
        except OSError:
            return ()

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def which(self, name: str) -> str | None:
        return shutil.which(name)

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult:
        return cmd.run(argv, timeout=timeout)

    def machine(self) -> str:
        return platform.machine()

    def kernel_release(self) -> str:
        return platform.release()

    def mac_version(self) -> str:
        return platform.mac_ver()[0]

    def resources(self) -> Resources:
        total: int | None = None
        available: int | None = None
        try:
            memory = psutil.virtual_memory()
            total, available = int(memory.total), int(memory.available)
        except (OSError, RuntimeError, psutil.Error):
            pass
        return Resources(
            ram_total_bytes=total,
            ram_available_bytes=available,
            cores_logical=_cpu_count(logical=True),
            cores_physical=_cpu_count(logical=False),
        )

    def disk_free(self, path: str) -> int:
        return int(psutil.disk_usage(path).free)


def _cpu_count(*, logical: bool) -> int | None:
    """psutil's count, None where the OS does not say (it answers None, or fails)."""
    try:
        return psutil.cpu_count(logical=logical) or None
    except (OSError, RuntimeError, psutil.Error):
        return None


@dataclass
class ReplayMachine:
    """A machine replayed from recordings: files by path, command outputs by argv.

    ``commands`` maps an argv (its first item a bare tool name) to a result or to the
    exception the gateway raised. ``on_path`` lists the tools :meth:`which` finds; by default
    every tool in ``commands``. Folders are implied by the file paths.
    """

    files: Mapping[str, str] = field(default_factory=dict)
    commands: Mapping[tuple[str, ...], CommandResult | Exception] = field(default_factory=dict)
    on_path: Sequence[str] | None = None
    environ: Mapping[str, str] = field(default_factory=dict)
    links: Mapping[str, str] = field(default_factory=dict)
    arch: str = "x86_64"
    release: str = "6.8.0-45-generic"
    mac_ver: str = ""
    resources_seen: Resources = field(default_factory=Resources)
    free_bytes: int | Exception = 100 << 30
    ran: list[tuple[str, ...]] = field(default_factory=list)

    @property
    def env(self) -> Mapping[str, str]:
        return self.environ

    def read_text(self, path: str) -> str | None:
        return self.files.get(path)

    def exists(self, path: str) -> bool:
        prefix = path.rstrip("/") + "/"
        return path in self.files or any(p.startswith(prefix) for p in self.files)

    def listdir(self, path: str) -> tuple[str, ...]:
        prefix = path.rstrip("/") + "/"
        names = {p[len(prefix) :].split("/", 1)[0] for p in self.files if p.startswith(prefix)}
        return tuple(sorted(names))

    def realpath(self, path: str) -> str:
        return self.links.get(path, path)

    def which(self, name: str) -> str | None:
        known = self.on_path if self.on_path is not None else {a[0] for a in self.commands}
        return f"/usr/bin/{name}" if name in known else None

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult:
        key = (tool_name(argv[0]), *argv[1:])
        self.ran.append(key)
        answer = self.commands.get(key)
        if answer is None:
            raise CommandNotFoundError(f"{key[0]}: not found ({argv[0]})")
        if isinstance(answer, Exception):
            raise answer
        return answer

    def machine(self) -> str:
        return self.arch

    def kernel_release(self) -> str:
        return self.release

    def mac_version(self) -> str:
        return self.mac_ver

    def resources(self) -> Resources:
        return self.resources_seen

    def disk_free(self, path: str) -> int:
        if isinstance(self.free_bytes, Exception):
            raise self.free_bytes
        return self.free_bytes


def result(argv: Sequence[str], stdout: str = "", stderr: str = "", rc: int = 0) -> CommandResult:
    """A recorded command result (for :class:`ReplayMachine`)."""
    return CommandResult(tuple(argv), rc, stdout, stderr, 0.0)


def tool_name(path: str) -> str:
    """``/usr/bin/nvidia-smi`` and ``C:\\Windows\\System32\\nvidia-smi.exe`` → ``nvidia-smi``."""
    name = re.split(r"[\\/]", path)[-1]
    return name[:-4] if name.lower().endswith(".exe") else name
