"""Snapshots of an environment's distributions, and restoring one exactly and offline.

A snapshot keeps every file that RECORD lists for each distribution installed before the
install, hard-linked where the filesystem allows (installers unlink and rewrite files, so the
linked copy keeps the old content at no cost) and copied otherwise. Restoring removes every
distribution that is not in the snapshot (or has another version) through its RECORD, then puts
the snapshot's files back: all of them for a package that changed, and for one that kept its
version every file that is missing or is no longer the snapshot's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from torchsmith.errors import InputError
from torchsmith.install.envstate import Dist, package_set, read_dists, record_files

MANIFEST = "manifest.json"


def snapshots_dir() -> Path:
    override = os.environ.get("TORCHSMITH_SNAPSHOTS")
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_cache_dir("torchsmith")) / "install-snapshots"


@dataclass(frozen=True)
class Snapshot:
    path: str
    site_packages: tuple[str, ...]
    packages: dict[str, str]  # name -> version
    files: int


def take(site_packages: tuple[str, ...], root: Path | None = None) -> Snapshot:
    dists = read_dists(site_packages)
    base = root or snapshots_dir()
    base.mkdir(parents=True, exist_ok=True)
    # a new folder each time, also for two snapshots of one process within a second
    dest = Path(
        tempfile.mkdtemp(prefix=f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-", dir=base)
    )
    store = dest / "files"
    store.mkdir()
    entries: dict[str, list[list[str]]] = {}
    count = 0
    for name, dist in sorted(dists.items()):
        kept: list[list[str]] = []
        for path in record_files(dist):
            if not path.is_file():
                continue
            target = store / str(count)
            _link_or_copy(path, target)
            kept.append([str(path), str(count)])
            count += 1
        entries[name] = kept
    manifest = {
        "site_packages": list(site_packages),
        "packages": package_set(dists),
        "dist_info": {n: d.dist_info for n, d in dists.items()},
        "files": entries,
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return Snapshot(str(dest), site_packages, package_set(dists), count)


def discard(path: str | Path) -> bool:
    """Delete the snapshot at ``path``: only a folder holding exactly a snapshot (its manifest
    and its files folder), so a damaged ledger entry cannot point this at anything else."""
    folder = Path(path)
    try:
        names = {p.name for p in folder.iterdir()}
    except OSError:
        return False
    if names != {MANIFEST, "files"} or folder.is_symlink():
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return not folder.exists()


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def load(path: str | Path) -> dict[str, object]:
    manifest = Path(path) / MANIFEST
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(
            f"snapshot {path} cannot be read ({exc})",
            tip="it was deleted or damaged; reinstall the packages by hand",
        ) from None
    assert isinstance(data, dict)
    return data


def restore(path: str | Path) -> dict[str, str]:
    """Make the environment's package set equal the snapshot's; returns the set afterwards."""
    data = load(path)
    sites = tuple(str(s) for s in data["site_packages"])  # type: ignore[attr-defined]
    wanted: dict[str, str] = dict(data["packages"])  # type: ignore[call-overload]
    files: dict[str, list[list[str]]] = dict(data["files"])  # type: ignore[call-overload]
    current = read_dists(sites)
    for name, dist in current.items():
        if wanted.get(name) != dist.version or not _intact(dist):
            _remove(dist, sites)
    now = read_dists(sites)
    store = Path(path) / "files"
    for name, version in wanted.items():
        # a package that kept its version may still have lost or changed a file another one
        # wrote over (two wheels shipping one module): every file is checked, not the version
        same = name in now and now[name].version == version
        for original, stored in files.get(name, []):
            target = Path(original)
            if same and _unchanged(target, store / stored):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
            shutil.copy2(store / stored, target)
    return package_set(read_dists(sites))


def _unchanged(path: Path, stored: Path) -> bool:
    """Whether ``path`` still holds the snapshot's file: the same file (a hard link), or a copy
    of the same size and modification time (copy2 keeps it; installers write new files)."""
    try:
        now, then = path.lstat(), stored.stat()
    except OSError:
        return False
    if (now.st_dev, now.st_ino) == (then.st_dev, then.st_ino):
        return True
    return (now.st_size, now.st_mtime_ns) == (then.st_size, then.st_mtime_ns)


def _intact(dist: Dist) -> bool:
    return all(p.exists() for p in record_files(dist) if p.suffix != ".pyc")


def _remove(dist: Dist, sites: tuple[str, ...]) -> None:
    roots = {Path(s).resolve() for s in sites}
    dirs: set[Path] = set()
    for path in record_files(dist):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            path.unlink()
        dirs.add(path.parent)
        if path.suffix == ".py":
            cache = path.parent / "__pycache__"
            for pyc in cache.glob(f"{path.stem}.*.pyc"):
                pyc.unlink(missing_ok=True)
            dirs.add(cache)
    shutil.rmtree(dist.dist_info, ignore_errors=True)
    for folder in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        _prune(folder, roots)


def _prune(folder: Path, roots: set[Path]) -> None:
    """Remove ``folder`` and its parents while they are empty, stopping at site-packages."""
    current = folder
    while current.resolve() not in roots and current != current.parent:
        try:
            current.rmdir()
        except OSError:
            return
        current = current.parent
