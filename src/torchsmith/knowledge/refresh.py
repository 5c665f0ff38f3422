"""`kb refresh`: compare the shipped knowledge base with what PyPI (and the PyTorch index) say now.

Pure diff functions over parsed JSON/HTML, plus a small fetcher (stdlib urllib, with a timeout).
Nothing here writes into the installed package: the CLI prints the report and, on request,
writes TOML entries for new releases to a file of the user's choosing.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

from torchsmith.errors import InputError, ToolError
from torchsmith.knowledge.base import Knowledge
from torchsmith.knowledge.model import PLATFORMS, minor_of

PYPI_TORCH_JSON = "https://pypi.org/pypi/torch/json"
PYTORCH_INDEX = "https://download.pytorch.org/whl/torch/"
FETCH_TIMEOUT_S = 30.0
MIN_VERSION = Version("2.0.0")


@dataclass(frozen=True)
class ReleaseFacts:
    version: str
    date: str
    requires_python: str | None
    python: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class Change:
    what: str  # "new-release", "python-tags", "pypi-default", "index-variants"
    subject: str  # "2.16.0", "2.15.0 linux-x86_64"
    shipped: str
    live: str
    text: str = ""  # the change as a sentence (describe())


def describe(change: Change) -> str:
    """One change as a sentence a person reads."""
    if change.what == "new-release":
        return (
            f"{change.subject} is new: released {change.live} (not in the shipped knowledge base)"
        )
    if change.what == "python-tags":
        return (
            f"{change.subject}: PyPI has wheels for Python {change.live}; "
            f"the shipped knowledge base says {change.shipped}"
        )
    if change.what == "pypi-default":
        return (
            f"{change.subject}: the wheel on PyPI is now {change.live}; "
            f"the shipped knowledge base says {change.shipped}"
        )
    if change.what == "index-variants":
        return (
            f"torch {change.subject} on download.pytorch.org has {change.live}; "
            f"the shipped knowledge base has {change.shipped}"
        )
    return f"{change.what} {change.subject}: shipped {change.shipped}, live {change.live}"


def _change(what: str, subject: str, shipped: str, live: str) -> Change:
    plain = Change(what, subject, shipped, live)
    return Change(what, subject, shipped, live, describe(plain))


@dataclass(frozen=True)
class RefreshReport:
    newest_on_pypi: str
    newest_shipped: str
    changes: tuple[Change, ...] = ()
    new_releases: tuple[ReleaseFacts, ...] = ()
    newest_cuda_pins: tuple[str, ...] = ()  # CUDA-related Requires-Dist of the newest release
    notes: tuple[str, ...] = field(default=())


def fetch(url: str, timeout: float = FETCH_TIMEOUT_S) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "torchsmith-kb-refresh"})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            data: bytes = response.read()
            return data
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ToolError(
            f"cannot reach {url}: {reason}",
            tip="run it where the network is reachable, or pass a saved copy with --pypi-json FILE",
        ) from None


def parse_pypi_json(raw: bytes | str, origin: str | None = None) -> dict[str, Any]:
    """The PyPI JSON document, its shape checked where the diff reads it.

    ``origin``: the file it was read from (a bad file is bad input, InputError naming it);
    None for an answer from PyPI itself (ToolError).
    """
    if not raw.strip():
        raise _bad(origin, "is empty")
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(origin, f"is not JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("releases"), dict):
        raise _bad(origin, "has no 'releases': not the JSON API of a project")
    for version, files in doc["releases"].items():
        if not isinstance(files, list) or not all(_is_file_entry(f) for f in files):
            raise _bad(origin, f"has a malformed 'releases' entry for {version!r}")
    info = doc.get("info")
    deps = info.get("requires_dist") if isinstance(info, dict) else None
    if (info is not None and not isinstance(info, dict)) or not (
        deps is None or (isinstance(deps, list) and all(isinstance(d, str) for d in deps))
    ):
        raise _bad(origin, "has a malformed 'info' object")
    return doc


def _is_file_entry(entry: object) -> bool:
    if not isinstance(entry, dict):
        return False
    strings = ("filename", "upload_time")
    return all(isinstance(entry.get(k, ""), str) for k in strings) and isinstance(
        entry.get("requires_python"), (str, type(None))
    )


def _bad(origin: str | None, what: str) -> InputError | ToolError:
    if origin is None:
        return ToolError(f"PyPI answer {what}")
    return InputError(
        f"{origin} {what}",
        tip="save https://pypi.org/pypi/torch/json again, or leave out --pypi-json to fetch it",
    )


def releases_from_pypi(doc: dict[str, Any]) -> list[ReleaseFacts]:
    out = []
    for version, files in doc["releases"].items():
        try:
            parsed = Version(version)
        except InvalidVersion:
            continue
        wheels = [
            f for f in files if f.get("filename", "").endswith(".whl") and not f.get("yanked")
        ]
        if parsed < MIN_VERSION or parsed.is_prerelease or not wheels:
            continue
        python: dict[str, set[str]] = {}
        for f in wheels:
            platform, tag = _platform(f["filename"]), _python_tag(f["filename"])
            if platform and tag:
                python.setdefault(platform, set()).add(tag)
        out.append(
            ReleaseFacts(
                version=version,
                date=min(f.get("upload_time", "") for f in wheels)[:10],
                requires_python=next(
                    (f["requires_python"] for f in wheels if f.get("requires_python")), None
                ),
                python={p: tuple(sorted(t, key=_tag_key)) for p, t in python.items()},
            )
        )
    return sorted(out, key=lambda r: Version(r.version))


def diff(kb: Knowledge, doc: dict[str, Any], index_html: str | None = None) -> RefreshReport:
    live = releases_from_pypi(doc)
    shipped = {r.version: r for r in kb.releases}
    changes: list[Change] = []
    new: list[ReleaseFacts] = []
    for release in live:
        known = shipped.get(release.version)
        if known is None:
            new.append(release)
            changes.append(_change("new-release", release.version, "absent", release.date))
            continue
        for platform in PLATFORMS:
            have = known.python.get(platform, ())
            now = release.python.get(platform, ())
            if have != now:
                changes.append(
                    _change(
                        "python-tags",
                        f"{release.version} {platform}",
                        ", ".join(have) or "none",
                        ", ".join(now) or "none",
                    )
                )
    pins = _cuda_pins(doc)
    newest = live[-1].version if live else "?"
    notes: list[str] = []
    pinned = _variant_from_pins(pins)
    shipped_default = kb.pypi_default(newest, "linux-x86_64") if newest in shipped else None
    if pinned and shipped_default and pinned != shipped_default:
        changes.append(_change("pypi-default", f"{newest} linux-x86_64", shipped_default, pinned))
    if index_html is not None and index_variants(index_html):
        changes.extend(_index_changes(kb, index_html))
    elif index_html is not None:  # an error page or a portal's answer: nothing was compared
        notes.append("the PyTorch index page lists no torch wheels: index variants not checked")
    else:
        notes.append("download.pytorch.org was not read: index variants not checked")
    return RefreshReport(
        newest_on_pypi=newest,
        newest_shipped=kb.newest_release().version,
        changes=tuple(changes),
        new_releases=tuple(new),
        newest_cuda_pins=tuple(pins),
        notes=tuple(notes),
    )


def index_variants(html: str) -> dict[str, set[str]]:
    """torch minor -> variants, from the file names of a PyTorch simple index page."""
    out: dict[str, set[str]] = {}
    for version, variant in re.findall(r"torch-(\d+\.\d+\.\d+)%2B([a-z0-9.]+)-", html) + re.findall(
        r"torch-(\d+\.\d+\.\d+)\+([a-z0-9.]+)-", html
    ):
        if Version(version) >= MIN_VERSION:
            out.setdefault(minor_of(version), set()).add(variant)
    return out


def _index_changes(kb: Knowledge, html: str) -> list[Change]:
    changes = []
    for minor, variants in sorted(index_variants(html).items(), key=lambda kv: Version(kv[0])):
        shipped = {w.variant for w in kb.wheels if w.torch == minor}
        if shipped and variants != shipped:
            changes.append(
                _change(
                    "index-variants",
                    minor,
                    ", ".join(sorted(shipped)),
                    ", ".join(sorted(variants)),
                )
            )
    return changes


def toml_for(releases: tuple[ReleaseFacts, ...]) -> str:
    """[[release]] entries for torch_releases.toml, ready to review and paste."""
    lines = []
    for r in releases:
        lines += [
            "[[release]]",
            f'version = "{r.version}"',
            f'date = "{r.date}"',
            f'requires_python = "{r.requires_python or ""}"',
            'source = "pypi_json"',
            "[release.python]",
        ]
        for platform in PLATFORMS:
            if platform in r.python:
                tags = ", ".join(f'"{t}"' for t in r.python[platform])
                lines.append(f'"{platform}" = [{tags}]')
        lines.append("")
    return "\n".join(lines)


def _cuda_pins(doc: dict[str, Any]) -> list[str]:
    info = doc.get("info") or {}
    deps = info.get("requires_dist") or []
    return [d for d in deps if re.match(r"^(nvidia-|cuda-toolkit|cuda-bindings)", d)]


def _variant_from_pins(pins: list[str]) -> str | None:
    for pin in pins:
        m = re.match(r"^cuda-toolkit\[[^\]]*\]==(\d+)\.(\d+)", pin) or re.match(
            r"^nvidia-cuda-runtime(?:-cu\d+)?==(\d+)\.(\d+)", pin
        )
        if m:
            return f"cu{m.group(1)}{m.group(2)}"
    return None


def _platform(filename: str) -> str | None:
    if "manylinux" in filename and "x86_64" in filename:
        return "linux-x86_64"
    if "manylinux" in filename and "aarch64" in filename:
        return "linux-aarch64"
    if filename.endswith("win_amd64.whl"):
        return "windows-x86_64"
    if "macosx" in filename and "arm64" in filename:
        return "macos-arm64"
    if "macosx" in filename and "x86_64" in filename:
        return "macos-x86_64"
    return None


def _python_tag(filename: str) -> str | None:
    parts = filename[: -len(".whl")].split("-")
    if len(parts) < 5:
        return None
    m = re.fullmatch(r"cp3(\d+)", parts[-3])
    if not m:
        return None
    return f"3.{m.group(1)}" + ("t" if parts[-2].endswith("t") else "")


def _tag_key(tag: str) -> tuple[int, bool]:
    return int(tag.rstrip("t").split(".")[1]), tag.endswith("t")
