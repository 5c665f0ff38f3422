"""The target environment's package set, read from its dist-info files (nothing is imported)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

from packaging.utils import canonicalize_name


@dataclass(frozen=True)
class Dist:
    name: str  # canonical
    version: str  # with its local tag: "2.13.0+cpu"
    dist_info: str  # absolute path of the .dist-info directory
    installer: str | None = None  # INSTALLER: "pip", "uv"
    url: str | None = None  # direct_url.json's url, when the installer wrote one

    @property
    def local(self) -> str | None:
        return self.version.split("+", 1)[1] if "+" in self.version else None


def is_environment(folder: Path) -> bool:
    """Whether ``folder`` is the root of a virtual environment or a conda environment."""
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()


def read_dists(site_packages: tuple[str, ...]) -> dict[str, Dist]:
    """Every distribution installed under ``site_packages``, by canonical name."""
    found: dict[str, Dist] = {}
    for site in site_packages:
        root = Path(site)
        if not root.is_dir():
            continue
        for info in sorted(root.glob("*.dist-info")):
            dist = _read_dist(info)
            if dist is not None and dist.name not in found:
                found[dist.name] = dist
    return found


def _read_dist(info: Path) -> Dist | None:
    meta = info / "METADATA"
    if not meta.is_file():
        return None
    headers = HeaderParser().parsestr(meta.read_text(encoding="utf-8", errors="replace"))
    name, version = headers.get("Name"), headers.get("Version")
    if not name or not version:
        return None
    installer = _text(info / "INSTALLER")
    url = None
    direct = _text(info / "direct_url.json")
    if direct:
        try:
            url = str(json.loads(direct).get("url")) or None
        except (ValueError, AttributeError):
            url = None
    return Dist(canonicalize_name(name), version, str(info), installer, url)


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip() or None
    except OSError:
        return None


def record_files(dist: Dist) -> list[Path]:
    """The absolute paths RECORD lists for ``dist`` (those outside site-packages included)."""
    info = Path(dist.dist_info)
    site = info.parent
    text = _text(info / "RECORD") or ""
    paths: list[Path] = []
    for row in csv.reader(io.StringIO(text)):
        if row and row[0]:
            paths.append(Path(site, row[0]).resolve() if ".." in row[0] else site / row[0])
    if not any(p.parent == info for p in paths):
        paths += [p for p in info.iterdir() if p.is_file()]
    return paths


def package_set(dists: dict[str, Dist]) -> dict[str, str]:
    """name -> version, the comparable form the ledger records."""
    return {name: dists[name].version for name in sorted(dists)}
