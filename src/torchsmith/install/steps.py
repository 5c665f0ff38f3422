"""Pure-ish planning of an install: requirements, sources and the exact installer commands.

Nothing here changes the machine; reading the user's index configuration and local find-links
folders is all it looks at.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from torchsmith import platforms
from torchsmith.errors import InputError, UsageError
from torchsmith.install.indexes import IndexConfig, local_wheel
from torchsmith.install.model import InstallOptions, InstallStep, Requirement
from torchsmith.plan.model import Recommendation
from torchsmith.util import cmd

HTTP_TIMEOUT_S = "10"


def load_plan_file(path: Path) -> Recommendation:
    """The recommendation of a ``torchsmith plan --json`` file; InputError when it is not one."""
    return read_plan_file(path)[0]


def read_plan_file(path: Path) -> tuple[Recommendation, list[tuple[str, str]]]:
    """A ``torchsmith plan --json`` file's recommendation and its error findings (message, fix),
    read once; InputError when it is not a plan."""
    recommendation, errors, _ = read_plan_file_with_machine(path)
    return recommendation, errors


def read_plan_file_with_machine(
    path: Path,
) -> tuple[Recommendation, list[tuple[str, str]], dict[str, Any]]:
    """:func:`read_plan_file` and the plan's machine (its ``os``, ``python`` ...; empty when the
    plan has none), from one read: a pipe (``--plan <(...)``, /dev/stdin) reads only once."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"--plan {path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError:
        raise InputError(
            f"--plan {path}: not JSON", tip="write it with `torchsmith plan --json > FILE`"
        ) from None
    rec = data.get("data", {}).get("recommendation") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("schema") != "torchsmith/plan"
        or not isinstance(rec, dict)
    ):
        raise InputError(
            f"--plan {path}: not a torchsmith plan (no torchsmith/plan envelope)",
            tip="write it with `torchsmith plan --json > FILE`",
        )
    try:
        recommendation = Recommendation(
            kind=rec["kind"],
            torch=rec.get("torch"),
            variant=rec.get("variant"),
            index_url=rec.get("index_url"),
            companions={str(k): str(v) for k, v in (rec.get("companions") or {}).items()},
            min_driver=rec.get("min_driver"),
        )
    except (KeyError, TypeError, AttributeError):
        raise InputError(f"--plan {path}: its recommendation is incomplete") from None
    found = data["data"].get("findings")
    errors = [
        (str(f.get("message", "")), str(f.get("fix", "")))
        for f in (found if isinstance(found, list) else [])
        if isinstance(f, dict) and f.get("severity") == "error"
    ]
    machine = data["data"].get("machine")
    return recommendation, errors, machine if isinstance(machine, dict) else {}


def torch_version(rec: Recommendation) -> str:
    """The exact torch the plan wants; the local tag pins the build ("2.13.0+cpu")."""
    if rec.kind not in ("wheel", "cpu") or not rec.torch:
        raise UsageError(
            f"the plan recommends {'a source build' if rec.kind == 'source' else 'no torch'};"
            " install carries out wheel plans only",
            tip="see `torchsmith plan` for the source-build steps",
        )
    if rec.index_url and rec.variant:
        return f"{rec.torch}+{rec.variant}"
    return rec.torch


def choose_sources(
    rec: Recommendation, config: IndexConfig, *, overridden: bool
) -> tuple[IndexConfig, str, str | None]:
    """The sources to install from, why, and the local source that holds torch (if any).

    The user's configuration wins when it already provides the exact torch build (find-links,
    a file:// index) or when the user passed --index-url/--find-links; otherwise the plan's
    index becomes the index (torch and companions come from the same one).
    """
    wanted = torch_version(rec)
    local = local_wheel(config, "torch", wanted)
    if overridden:
        return config, "your --index-url/--find-links", local
    if local is not None:
        where = config.origin.get(local, "config")
        return config, f"{local} ({where}) has torch {wanted}", local
    mirror = next((u for u in config.sources() if rec.variant and f"/whl/{rec.variant}" in u), None)
    if mirror is not None or not rec.index_url:
        return config, "your index configuration", None
    origin = dict(config.origin)
    origin[rec.index_url] = "plan"
    return replace(config, index_url=rec.index_url, origin=origin), "the plan's index", None


def requirements(
    rec: Recommendation, companions: tuple[str, ...], source: str | None, why: str
) -> list[Requirement]:
    reqs = [Requirement("torch", f"torch=={torch_version(rec)}", source, why)]
    for name in companions:
        minor = rec.companions.get(name)
        if minor is None:
            raise UsageError(
                f"the plan names no {name} version for torch {rec.torch}",
                tip="install without --with " + name,
            )
        reqs.append(Requirement(name, f"{name}=={minor}.*", source, why))
    return reqs


def find_uv() -> str | None:
    try:
        from uv import find_uv_bin  # noqa: PLC0415 (the uv wheel's own locator)

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        return cmd.which("uv")


def venv_python(venv: Path) -> Path:
    if platforms.current_os() == "windows":
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def venv_step(venv: Path) -> InstallStep:
    return InstallStep("create venv", (sys.executable, "-m", "venv", str(venv)))


def install_step(
    installer: str,
    *,
    uv: str | None,
    python: str,
    reqs: list[Requirement],
    index_args: list[str],
    report: Path | None,
) -> InstallStep:
    specs = [r.spec for r in reqs]
    if installer == "uv":
        assert uv is not None
        argv = (uv, "pip", "install", "--python", python, *specs, *index_args)
        env = {"UV_HTTP_TIMEOUT": HTTP_TIMEOUT_S, "UV_HTTP_RETRIES": "0", "UV_NO_PROGRESS": "1"}
        return InstallStep("install", argv, env)
    argv = (python, "-m", "pip", "install", *specs, *index_args)
    argv += ("--timeout", HTTP_TIMEOUT_S, "--retries", "0", "--progress-bar", "off")
    argv += ("--disable-pip-version-check",)
    if report is not None:
        argv += ("--report", str(report))
    return InstallStep("install", argv, {"PYTHONDONTWRITEBYTECODE": "1"})


def pick_installer(options: InstallOptions, uv: str | None) -> str:
    if options.installer == "uv" and uv is None:
        raise UsageError("--installer uv: uv is not installed", tip="pip install uv")
    if options.installer is not None:
        return options.installer
    return "uv" if uv is not None else "pip"
