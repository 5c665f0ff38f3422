"""Snapshots of an environment's distributions, and restoring one exactly and offline.

A snapshot keeps every file that RECORD lists for each distribution installed before the
install, hard-linked where the filesystem allows (installers unlink and rewrite files, so the
linked copy keeps the old content at no cost) and copied otherwise: every file under
site-packages, whoever owns it (an egg-info package, a file of the user's), and the files RECORD
lists outside it. Restoring removes every distribution that is not in the snapshot (or has
another version) through its RECORD, then puts back every kept file that is missing or is no
longer the snapshot's; undoing an install that just failed also removes what it added.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from torchsmith.errors import InputError
from torchsmith.install.envstate import (
    Dist,
    is_environment,
    package_set,
    read_dists,
    record_files,
)

MANIFEST = "manifest.json"


def snapshots_dir() -> Path:
    override = os.environ.get("TORCHSMITH_SNAPSHOTS")
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_cache_dir("torchsmith")) / "install-snapshots"


def _device(path: Path) -> int | None:
    """The filesystem of ``path``, or of its nearest folder that exists."""
    for folder in (path, *path.parents):
        try:
            return folder.stat().st_dev
        except OSError:
            continue
    return None


def _store_for(site_packages: tuple[str, ...]) -> Path:
    """Where a snapshot of ``site_packages`` goes: the snapshot folder, unless it is on another
    filesystem than the environment (hard links cannot cross one, and a copy of a CUDA torch
    environment is gigabytes per install): then beside the environment, in its own root
    (``.torchsmith-snapshots`` next to pyvenv.cfg or conda-meta), outside site-packages."""
    base = snapshots_dir()
    if os.environ.get("TORCHSMITH_SNAPSHOTS") or not site_packages:
        return base
    site = Path(site_packages[0])
    if _device(base) == _device(site):
        return base
    for root in site.parents:
        if is_environment(root):
            return root / ".torchsmith-snapshots"
    return base


# the empty lock file uv leaves in a virtual environment's root (sys.prefix), even when its install
# fails; in a conda environment uv locks a file in the temp folder instead
UV_LOCK = ".lock"


@dataclass(frozen=True)
class Snapshot:
    path: str
    site_packages: tuple[str, ...]
    packages: dict[str, str]  # name -> version
    files: int


def take(
    site_packages: tuple[str, ...], root: Path | None = None, *, uv_lock: Path | None = None
) -> Snapshot:
    """Keep every file under ``site_packages`` (whoever owns it: a dist-info or egg-info
    package, or a file of the user's) and every file a distribution's RECORD lists outside it
    (its scripts in bin/), each stored once; symlinks are kept as links. ``uv_lock``: the lock
    file uv will make in the virtual environment it installs into, noted with whether it is
    there now, so that undoing a failed install removes it only when uv made it."""
    dists = read_dists(site_packages)
    base = root or _store_for(site_packages)
    base.mkdir(parents=True, exist_ok=True)
    # a new folder each time, also for two snapshots of one process within a second
    dest = Path(
        tempfile.mkdtemp(prefix=f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-", dir=base)
    )
    store = dest / "files"
    store.mkdir()
    stored: dict[str, str] = {}  # original path -> its name in the store

    def keep(path: Path) -> str:
        key = str(path)
        if key not in stored:
            stored[key] = str(len(stored))
            _link_or_copy(path, store / stored[key])
        return stored[key]

    links: list[list[str]] = []
    for path in _files_under(site_packages):
        if path.is_symlink():
            links.append([str(path), str(path.readlink())])
        elif path.is_file():
            keep(path)
    entries: dict[str, list[list[str]]] = {}
    for name, dist in sorted(dists.items()):
        entries[name] = [
            [str(path), keep(path)]
            for path in record_files(dist)
            if path.is_file() and not path.is_symlink()
        ]
    inside = [[path, key] for path, key in stored.items() if _under(Path(path), site_packages)]
    manifest = {
        "site_packages": list(site_packages),
        # the folders there were: an installer stopped while unpacking leaves empty ones behind
        "site_dirs": [str(d) for d in _dirs_under(site_packages)],
        "packages": package_set(dists),
        "dist_info": {n: d.dist_info for n, d in dists.items()},
        "files": entries,
        "site_files": inside,
        "site_links": links,
        "uv_lock": str(uv_lock) if uv_lock else None,
        "uv_lock_there": bool(uv_lock and (uv_lock.exists() or uv_lock.is_symlink())),
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return Snapshot(str(dest), site_packages, package_set(dists), len(stored))


def _under(path: Path, sites: tuple[str, ...]) -> bool:
    return any(path.is_relative_to(site) for site in sites)


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


def restore(path: str | Path, *, exact: bool = False) -> dict[str, str]:
    """Make the environment's package set equal the snapshot's; returns the set afterwards.

    Every package that is not in the snapshot (or has another version, or lost files) goes
    through its RECORD, then every file the snapshot kept that is missing or no longer its own
    comes back, whoever owned it. ``exact`` (undoing an install that just failed) also removes
    every other file under site-packages that was not there (an egg-info package's files, say),
    so the folder is as it was; a rollback later keeps what was added since by other means.
    """
    data = load(path)
    sites = tuple(str(s) for s in data["site_packages"])  # type: ignore[attr-defined]
    wanted: dict[str, str] = dict(data["packages"])  # type: ignore[call-overload]
    files: dict[str, list[list[str]]] = dict(data["files"])  # type: ignore[call-overload]
    current = read_dists(sites)
    for name, dist in current.items():
        if wanted.get(name) != dist.version or not _intact(dist):
            _remove(dist, sites)
    store = Path(path) / "files"
    # each path once: a file RECORD lists under site-packages is a site file too
    kept = {Path(o): store / k for rows in files.values() for o, k in rows}
    if "site_files" in data:  # snapshots before the whole-folder ones kept RECORD files only
        kept |= {Path(o): store / k for o, k in data["site_files"]}  # type: ignore[attr-defined]
        links = {Path(o): t for o, t in data.get("site_links", [])}  # type: ignore[attr-defined]
        if exact:
            before = _noted_dirs(data)
            _remove_added(sites, set(kept) | set(links), keep=before or set())
            _remove_added_dirs(sites, before)
            for folder in sorted(before or ()):  # an empty one of the user's the install had used
                with contextlib.suppress(OSError):
                    folder.mkdir(parents=True, exist_ok=True)
        _remove_uv_lock(data)  # empty, and made by the install being undone
        for link, target in links.items():
            if not link.is_symlink() or str(link.readlink()) != target:
                _clear(link)
                link.symlink_to(target)
    for target, stored in kept.items():
        if not _unchanged(target, stored):
            _clear(target)
            shutil.copy2(stored, target)
    return package_set(read_dists(sites))


def differences(path: str | Path) -> list[str]:
    """The files under site-packages that are not as the snapshot kept them (missing, changed,
    or added outside __pycache__): empty when a restore put the folder back exactly."""
    data = load(path)
    if "site_files" not in data:
        return ["an older snapshot: only its packages' files were kept"]
    sites = tuple(str(s) for s in data["site_packages"])  # type: ignore[attr-defined]
    store = Path(path) / "files"
    rows = [(Path(o), store / k) for o, k in data["site_files"]]  # type: ignore[attr-defined]
    links = {Path(o) for o, _ in data.get("site_links", [])}  # type: ignore[attr-defined]
    out = [f"changed or missing: {p}" for p, s in rows if not _unchanged(p, s)]
    known = {p for p, _ in rows} | links
    out += [f"added: {p}" for p in _files_under(sites) if p not in known]
    before = _noted_dirs(data)
    if before is not None:
        now = set(_dirs_under(sites))
        out += [f"added folder: {d}" for d in sorted(now - before)]
        out += [f"missing folder: {d}" for d in sorted(before - now)]
    return out


def _dirs_under(sites: tuple[str, ...]) -> list[Path]:
    """Every folder under ``sites`` but __pycache__ (Python makes those on import), links to
    folders excluded (they are kept as links)."""
    found = []
    for dirpath, dirnames, _ in _walk(sites):
        found += [Path(dirpath, d) for d in dirnames if not Path(dirpath, d).is_symlink()]
    return found


def _remove_added_dirs(sites: tuple[str, ...], before: set[Path] | None) -> None:
    """Remove the folders under ``sites`` not ``before`` (those the snapshot saw), deepest first,
    when nothing but their __pycache__ is left in them (the files went already); a folder holding
    anything else stays. Snapshots before folders were noted (None) remove none."""
    if before is None:
        return
    for folder in sorted(_dirs_under(sites), key=lambda p: len(p.parts), reverse=True):
        if folder not in before:
            cache = folder / "__pycache__"  # all of it came with the folder (pip compiles)
            if cache.is_dir() and not cache.is_symlink():
                shutil.rmtree(cache, ignore_errors=True)
            with contextlib.suppress(OSError):
                folder.rmdir()  # only an empty one


def _walk(sites: tuple[str, ...]) -> Iterator[tuple[str, list[str], list[str]]]:
    """os.walk of each of ``sites``, links not followed, __pycache__ left out (Python makes
    those on import)."""
    for site in sites:
        for dirpath, dirnames, filenames in os.walk(site, followlinks=False):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            yield dirpath, dirnames, filenames


def _files_under(sites: tuple[str, ...]) -> list[Path]:
    """Every file, and every link to a folder, under ``sites``."""
    found = []
    for dirpath, dirnames, filenames in _walk(sites):
        found += [Path(dirpath, n) for n in filenames]
        found += [Path(dirpath, d) for d in dirnames if Path(dirpath, d).is_symlink()]
    return found


def _remove_added(sites: tuple[str, ...], known: set[Path], *, keep: set[Path]) -> None:
    """Remove the files that are not ``known``, and the folders that leaves empty, but never a
    folder in ``keep`` (those there before)."""
    roots = {Path(s).resolve() for s in sites}
    for path in _files_under(sites):
        if path not in known:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            _prune(path.parent, roots, keep=keep)


def _noted_dirs(data: dict[str, object]) -> set[Path] | None:
    """The folders the snapshot saw under site-packages; None for snapshots before they were
    noted."""
    dirs = data.get("site_dirs")
    return {Path(str(d)) for d in dirs} if isinstance(dirs, list) else None


def _remove_uv_lock(data: dict[str, object]) -> None:
    """The empty ``.lock`` uv made in the virtual environment it installed into, where the
    snapshot saw none (snapshots that noted no uv lock, as for a build's pip, keep it)."""
    path = data.get("uv_lock")
    if not isinstance(path, str) or data.get("uv_lock_there", True):
        return
    lock = Path(path)
    with contextlib.suppress(OSError):
        if lock.is_file() and not lock.is_symlink() and lock.stat().st_size == 0:
            lock.unlink()


def _clear(target: Path) -> None:
    """Make room for a kept file or link at ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        target.unlink()


def _unchanged(path: Path, stored: Path) -> bool:
    """Whether ``path`` still holds the snapshot's file: the same file (a hard link), or a copy
    of the same size and modification time (copy2 keeps it; installers write new files)."""
    try:
        now, then = path.lstat(), stored.stat()
    except OSError:
        return False
    if path.is_symlink():
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


def _prune(folder: Path, roots: set[Path], *, keep: set[Path] | None = None) -> None:
    """Remove ``folder`` and its parents while they are empty, stopping at site-packages and at
    a folder in ``keep``."""
    current = folder
    while current.resolve() not in roots and current != current.parent:
        if keep and current in keep:
            return
        try:
            current.rmdir()
        except OSError:
            return
        current = current.parent
