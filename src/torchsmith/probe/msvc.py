"""MSVC on Windows: every Visual Studio installation (via vswhere) and its C++ toolsets.

vswhere ships with the Visual Studio Installer (VS 2017 and later) at
``%ProgramFiles(x86)%\\Microsoft Visual Studio\\Installer\\vswhere.exe``. We ask it for all
instances, complete or not, release or preview, of every product (Build Tools included):
``vswhere -all -prerelease -products * -format json -utf8``. Each installation's toolsets
are the folders ``<installationPath>\\VC\\Tools\\MSVC\\<14.XY.ZZZZZ>``; the default one is
named in ``VC\\Auxiliary\\Build\\Microsoft.VCToolsVersion.default.txt``.

_MSC_VER: toolset 14.XY has ``cl`` version 19.XY and ``_MSC_VER`` 19XY for XY >= 10
(VS 2017 15.0 = 14.10 = 1910 ... VS 2022 17.14 = 14.44 = 1944, VS 2026 18.0 = 14.50 = 1950);
VS 2015's 14.00 is 1900. Source: Microsoft C++ docs, "Predefined macros", _MSC_VER
(https://learn.microsoft.com/en-us/cpp/preprocessor/predefined-macros), whose table pairs
each Visual Studio version with its _MSC_VER; cross-checked with cpprefjp's table
(14.42 -> 1942, 14.43 -> 1943, 14.44 -> 1944).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from torchsmith.probe.model import ToolInfo
from torchsmith.probe.tools import DEFAULT_TIMEOUT_S, Answer, ask, failure, find_program, getenv

VSWHERE_ARGS = ("-all", "-prerelease", "-products", "*", "-format", "json", "-utf8")
_VSWHERE_REL = ("Microsoft Visual Studio", "Installer", "vswhere.exe")
# Environment a Developer Command Prompt sets, reported with the cl on PATH.
_DEV_PROMPT_VARS = ("VCToolsVersion", "VSCMD_VER", "VSCMD_ARG_TGT_ARCH", "DISTUTILS_USE_SDK")


@dataclass(frozen=True)
class VsInstallation:
    """One Visual Studio instance as vswhere describes it."""

    instance_id: str
    display_name: str
    installation_path: str
    installation_version: str  # "17.14.36310.24"
    product_id: str = ""  # Microsoft.VisualStudio.Product.BuildTools
    product_line_version: str = ""  # catalog.productLineVersion: "2022"
    display_version: str = ""  # catalog.productDisplayVersion: "17.14.10"
    is_prerelease: bool = False
    is_complete: bool = True


def parse_vswhere_json(text: str) -> tuple[VsInstallation, ...]:
    """Parse ``vswhere -format json`` output (a JSON array; anything before ``[`` is skipped).

    Raises ValueError when there is no JSON array.
    """
    start = text.find("[")
    if start < 0:
        raise ValueError("vswhere printed no JSON array")
    data = json.loads(text[start:])
    if not isinstance(data, list):
        raise ValueError("vswhere JSON is not an array")  # noqa: TRY004
    out = []
    for item in data:
        if not isinstance(item, dict) or not item.get("installationPath"):
            continue
        catalog = item.get("catalog")
        if not isinstance(catalog, dict):
            catalog = {}
        out.append(
            VsInstallation(
                instance_id=str(item.get("instanceId", "")),
                display_name=str(item.get("displayName", "")),
                installation_path=str(item["installationPath"]),
                installation_version=str(item.get("installationVersion", "")),
                product_id=str(item.get("productId", "")),
                product_line_version=str(catalog.get("productLineVersion", "")),
                display_version=str(catalog.get("productDisplayVersion", "")),
                is_prerelease=item.get("isPrerelease") is True,
                is_complete=item.get("isComplete", True) is not False,
            )
        )
    return tuple(out)


def msc_ver_for_toolset(toolset: str) -> str | None:
    """MSVC toolset ``14.44.35207`` (or cl version ``19.44.35207``) -> ``_MSC_VER`` ``1944``."""
    m = re.match(r"(14|19)\.(\d+)", toolset)
    if not m:
        return None
    minor = int(m.group(2))
    if m.group(1) == "14" and minor < 10:
        return "1900"  # VS 2015: toolset 14.0, cl 19.00
    return str(1900 + minor)


def parse_cl_banner(text: str) -> dict[str, str]:
    """``Microsoft (R) C/C++ Optimizing Compiler Version 19.44.35207.1 for x64`` (printed on
    stderr by ``cl`` with no arguments; localized, but the version and target stay) ->
    ``{"version": "19.44.35207.1", "target": "x64", "msc_ver": "1944"}``."""
    out: dict[str, str] = {}
    m = re.search(r"Version (\d+\.\d+\.\d+(?:\.\d+)?)(?:\s+\S+\s+(x64|x86|ARM64|ARM))?", text)
    if m:
        out["version"] = m.group(1)
        if m.group(2):
            out["target"] = m.group(2)
        if msc := msc_ver_for_toolset(m.group(1)):
            out["msc_ver"] = msc
    return out


def find_vswhere(env: Mapping[str, str]) -> Path | None:
    for var in ("ProgramFiles(x86)", "ProgramFiles"):
        if base := getenv(env, var):
            candidate = Path(base).joinpath(*_VSWHERE_REL)
            if candidate.is_file():
                return candidate
    found = find_program("vswhere", env)
    return Path(found) if found else None


def toolsets(installation_path: str) -> list[tuple[str, Path | None, bool]]:
    """``(version, cl.exe for x64 hosts and targets or None, is_default)`` of each toolset."""
    vc = Path(installation_path) / "VC"
    try:
        default = (
            (vc / "Auxiliary" / "Build" / "Microsoft.VCToolsVersion.default.txt")
            .read_text(encoding="utf-8", errors="replace")
            .strip()
        )
    except OSError:
        default = ""
    try:
        folders = [p for p in (vc / "Tools" / "MSVC").iterdir() if p.is_dir()]
    except OSError:
        return []
    out = []
    for folder in sorted(folders, key=lambda p: _numeric(p.name)):
        cl = folder / "bin" / "Hostx64" / "x64" / "cl.exe"
        out.append((folder.name, cl if cl.is_file() else None, folder.name == default))
    return out


def _numeric(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def probe_msvc(
    env: Mapping[str, str], *, timeout: float = DEFAULT_TIMEOUT_S
) -> tuple[ToolInfo, ...]:
    """One ``msvc`` ToolInfo per installed toolset, plus ``cl`` when one is on PATH (a
    Developer Command Prompt is active). Never raises."""
    try:
        vswhere = find_vswhere(env)
        cl = find_program("cl", env)
        jobs = []
        if vswhere:
            jobs.append([str(vswhere), *VSWHERE_ARGS])
        if cl:
            jobs.append([cl])
        with ThreadPoolExecutor(max_workers=2) as pool:
            answers = list(pool.map(lambda argv: ask(argv, timeout=timeout), jobs))
        out: list[ToolInfo] = []
        if vswhere:
            out.extend(_from_vswhere(str(vswhere), answers.pop(0)))
        else:
            reason = "vswhere.exe not found: no Visual Studio 2017 or later installer"
            out.append(ToolInfo(name="msvc", path=None, version=None, details={"note": reason}))
        if cl:
            out.append(_cl_info(cl, answers.pop(0), env))
        return tuple(out)
    except Exception as exc:  # noqa: BLE001 - a probe must never raise
        error = f"probe failed: {type(exc).__name__}: {exc}"
        return (ToolInfo(name="msvc", path=None, version=None, error=error),)


def _from_vswhere(vswhere: str, answer: Answer) -> list[ToolInfo]:
    if why := failure(answer, "vswhere"):
        return [ToolInfo(name="msvc", path=None, version=None, error=why)]
    try:
        installs = parse_vswhere_json(answer.output)
    except ValueError as exc:
        return [ToolInfo(name="msvc", path=None, version=None, error=f"vswhere: {exc}")]
    out = []
    for vs in installs:
        base = {
            "vs": vs.display_name,
            "vs_version": vs.installation_version,
            "installation_path": vs.installation_path,
            "product_id": vs.product_id,
            "prerelease": str(vs.is_prerelease).lower(),
        }
        if not vs.is_complete:
            base["complete"] = "false"
        found = toolsets(vs.installation_path)
        if not found:
            note = "no C++ toolset (VC\\Tools\\MSVC is empty or missing)"
            out.append(ToolInfo("msvc", None, None, details={**base, "note": note}))
        for version, cl, is_default in found:
            details = {**base, "default": str(is_default).lower()}
            if msc := msc_ver_for_toolset(version):
                details["msc_ver"] = msc
            out.append(ToolInfo("msvc", str(cl) if cl else None, version, details=details))
    if not installs:
        note = f"{vswhere} found no Visual Studio installation"
        out.append(ToolInfo("msvc", None, None, details={"note": note}))
    return out


def _cl_info(cl: str, answer: Answer, env: Mapping[str, str]) -> ToolInfo:
    parsed = parse_cl_banner(answer.output)
    details = {k: v for k, v in parsed.items() if k != "version"}
    details.update({var: v for var in _DEV_PROMPT_VARS if (v := getenv(env, var))})
    error = answer.error
    if error is None and "version" not in parsed:
        error = failure(answer, "cl") or "cl: no version in its banner"
    return ToolInfo("cl", cl, parsed.get("version"), details=details, error=error)
