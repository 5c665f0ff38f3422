"""Restoring a snapshot checks files, not only names and versions (real pip, real wheels).

Two wheels that ship one module are written in the wheel format (PEP 427: a zip with
METADATA, WHEEL and RECORD) and installed with the venv's own pip, as a companion that
vendors a module does: the second overwrites the first's file. A restore must remove the
second and put the first's file back, though the first kept its version.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pytest

from tests.install.conftest import fresh_venv
from torchsmith.errors import InputError
from torchsmith.install import executor, snapshot
from torchsmith.install.model import InstallResult
from torchsmith.ledger import Ledger

pytestmark = pytest.mark.integration


def wheel(folder: Path, name: str, files: dict[str, str]) -> Path:
    path = folder / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    contents = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    rows = []
    for rel, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        rows.append(f"{rel},sha256={digest.decode()},{len(text.encode())}")
    rows.append(f"{info}/RECORD,,")
    with zipfile.ZipFile(path, "w") as archive:
        for rel, text in contents.items():
            archive.writestr(rel, text)
        archive.writestr(f"{info}/RECORD", "\n".join(rows) + "\n")
    return path


def test_a_file_another_wheel_wrote_over_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHSMITH_SNAPSHOTS", str(tmp_path / "snapshots"))
    venv = fresh_venv(tmp_path / "venv")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    first = wheel(tmp_path, "alpha", {"shared_mod.py": "WHO = 'alpha'\n"})
    second = wheel(tmp_path, "beta", {"shared_mod.py": "WHO = 'beta'\n", "beta.py": "x = 1\n"})
    subprocess.run([*pip, str(first)], check=True, timeout=300)
    sites = tuple(str(p) for p in venv.glob("lib/python3*/site-packages"))
    shared = Path(sites[0]) / "shared_mod.py"
    taken = snapshot.take(sites)
    subprocess.run([*pip, str(second)], check=True, timeout=300)
    assert shared.read_text() == "WHO = 'beta'\n"
    after = snapshot.restore(taken.path)
    assert after == taken.packages
    assert shared.read_text() == "WHO = 'alpha'\n"
    assert not (Path(sites[0]) / "beta.py").exists()


def test_only_the_last_installs_keep_their_snapshots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Audit: every install took a snapshot and none was ever removed (gigabytes for CUDA torch
    when hard links are not possible). The newest KEEP_SNAPSHOTS installs that can still be
    undone keep theirs, per environment; an older one says why it cannot be rolled back."""
    monkeypatch.setenv("TORCHSMITH_SNAPSHOTS", str(tmp_path / "snapshots"))
    venv = fresh_venv(tmp_path / "venv")
    sites = tuple(str(p) for p in venv.glob("lib/python3*/site-packages"))
    python = str(venv / "bin" / "python")
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    ids = []
    for _ in range(5):
        taken = snapshot.take(sites)
        attempt = ledger.start("install", config={}, tree=python)
        ledger.finish(
            attempt, status="succeeded", result={"python": python, "snapshot": taken.path}
        )
        ids.append(attempt)
    other = ledger.start("install", config={}, tree="/elsewhere/bin/python")
    elsewhere = snapshot.take(sites).path
    ledger.finish(
        other, status="succeeded", result={"python": "/x/bin/python", "snapshot": elsewhere}
    )
    failed = ledger.start("install", config={}, tree=python)  # its snapshot: the only copy
    kept_copy = snapshot.take(sites).path
    ledger.finish(failed, status="failed", result={"python": python, "snapshot": kept_copy})
    removed = executor.prune_snapshots(ledger, python)
    assert removed == [ids[1], ids[0]]  # newest first; the other environment's is kept
    assert Path(kept_copy).is_dir()  # review: a failed install's snapshot was pruned too
    assert Path(elsewhere).is_dir()
    for attempt in ids:
        kept = Path(ledger.get(attempt).result["snapshot"] or "/nonexistent").is_dir()
        assert kept is (attempt in ids[2:])
    with pytest.raises(InputError, match="snapshot was removed"):
        executor.rollback(ids[0], ledger=ledger)
    assert not snapshot.discard(tmp_path)  # a folder that is no snapshot is never deleted
    assert (tmp_path / "venv").is_dir()


def test_a_failed_install_puts_back_files_no_dist_info_owns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-audit: a wheel that writes over an egg-info package's module and a file of the
    user's in site-packages; undoing the failed install removed both and called it restored."""
    monkeypatch.setenv("TORCHSMITH_SNAPSHOTS", str(tmp_path / "snapshots"))
    venv = fresh_venv(tmp_path / "venv")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "dep").mkdir()
    (site / "dep" / "__init__.py").write_text("VERSION = 1\n")
    egg = site / "dep-1.0-py3.11.egg-info"  # the setup.py-install layout Debian and conda keep
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: dep\nVersion: 1.0\n")
    (egg / "installed-files.txt").write_text("../dep/__init__.py\nPKG-INFO\n")
    (site / "usercfg.py").write_text("MINE = True\n")
    taken = snapshot.take((str(site),))
    bad = wheel(
        tmp_path, "bad", {"dep/__init__.py": "VERSION = 2\n", "usercfg.py": "MINE = False\n"}
    )
    subprocess.run([*pip, str(bad)], check=True, timeout=300)
    (site / "added_by_it.py").write_text("x = 1\n")
    snapshot.restore(taken.path, exact=True)
    assert (site / "dep" / "__init__.py").read_text() == "VERSION = 1\n"
    assert (site / "usercfg.py").read_text() == "MINE = True\n"
    assert not (site / "added_by_it.py").exists()
    assert snapshot.differences(taken.path) == []
    # a rollback later keeps what came in since by other means (only an exact undo removes it)
    (site / "later.py").write_text("y = 2\n")
    snapshot.restore(taken.path)
    assert (site / "later.py").exists()
    assert snapshot.differences(taken.path) == [f"added: {site / 'later.py'}"]


def test_a_snapshot_stays_on_the_environments_filesystem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hard links cannot cross filesystems: with the cache on another one, every install (and
    every build that installs) copied the whole environment there. The snapshot now goes beside
    the environment instead, outside site-packages."""
    other = Path("/dev/shm")
    if not other.is_dir() or other.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("needs a second filesystem (/dev/shm)")
    monkeypatch.delenv("TORCHSMITH_SNAPSHOTS", raising=False)
    cache = Path(tempfile.mkdtemp(dir=other))
    monkeypatch.setattr(snapshot.platformdirs, "user_cache_dir", lambda *_a, **_k: str(cache))
    venv = fresh_venv(tmp_path / "venv")
    sites = tuple(str(p) for p in venv.glob("lib/python3*/site-packages"))
    try:
        taken = snapshot.take(sites)
        assert Path(taken.path).parent == venv / ".torchsmith-snapshots"
        some = next(p for p in Path(taken.path, "files").iterdir())
        assert some.stat().st_nlink >= 2  # linked, not copied
        assert snapshot.differences(taken.path) == []
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def test_undoing_removes_only_the_empty_lock_uv_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # audit: the lock was looked for above the first site-packages (another venv's, with
    # PYTHONPATH) and removed for a build's pip and in conda, where uv makes none there
    monkeypatch.setenv("TORCHSMITH_SNAPSHOTS", str(tmp_path / "snapshots"))
    root = tmp_path / "env"
    site = root / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    lock = root / snapshot.UV_LOCK
    sites = (str(site),)

    def undo(*, uv_lock: Path | None, made: str | None, before: bool = False) -> bool:
        lock.unlink(missing_ok=True)
        if before:
            lock.write_text("")
        taken = snapshot.take(sites, uv_lock=uv_lock)
        if made is not None:
            lock.write_text(made)
        snapshot.restore(taken.path, exact=True)
        return lock.exists()

    assert not undo(uv_lock=lock, made="")  # uv made it: gone
    assert undo(uv_lock=lock, made="held")  # not empty: not uv's lock file as it leaves it
    assert undo(uv_lock=None, made="")  # a build's pip, or conda: no uv lock noted
    assert undo(uv_lock=lock, made=None, before=True)  # there before the install


def test_the_uv_lock_is_the_target_venvs_own(tmp_path: Path) -> None:
    root = tmp_path / "venv"
    (root / "bin").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = str(root / "bin" / "python")
    uv = InstallResult(python=python, installer="uv", status="planned", torch=None, variant="cpu")
    assert executor._uv_lock(uv) == root / ".lock"
    assert executor._uv_lock(dataclasses.replace(uv, installer="pip")) is None
    conda = dataclasses.replace(uv, python=str(tmp_path / "conda" / "bin" / "python"))
    assert executor._uv_lock(conda) is None


def test_an_undone_install_and_a_rollback_say_what_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """audit: install #2, its rollback #3, install #4: #4 pruned #2's snapshot, and then
    `--rollback 2` blamed the last-3 limit (two installs had gone there); `--rollback 3` (a
    rollback) ran into the newer-install check, whose tip ended 'then it'."""
    monkeypatch.setenv("TORCHSMITH_SNAPSHOTS", str(tmp_path / "snapshots"))
    venv = fresh_venv(tmp_path / "venv")
    sites = tuple(str(p) for p in venv.glob("lib/python3*/site-packages"))
    python = str(venv / "bin" / "python")
    ledger = Ledger(tmp_path / "ledger.sqlite3")

    def install() -> int:
        attempt = ledger.start("install", config={}, tree=python)
        taken = snapshot.take(sites).path
        ledger.finish(attempt, status="succeeded", result={"python": python, "snapshot": taken})
        return attempt

    first = install()
    undo = executor.rollback(first, ledger=ledger).ledger_id
    assert undo is not None
    # review: before its snapshot was pruned, rolling back an undone install ran again, and took
    # away what had been installed since by other means
    with pytest.raises(InputError, match=f"was rolled back already \\(by #{undo}\\)"):
        executor.rollback(first, ledger=ledger)
    second = install()
    assert executor.prune_snapshots(ledger, python) == [first]
    with pytest.raises(InputError, match=f"was rolled back already \\(by #{undo}\\)"):
        executor.rollback(first, ledger=ledger)
    with pytest.raises(InputError, match=f"is a rollback \\(of install #{first}\\)"):
        executor.rollback(undo, ledger=ledger)
    assert ledger.get(second).result["snapshot"]


def test_an_exact_restore_keeps_the_empty_folders_that_were_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review: empty folders of the user's under site-packages that the install put files in
    went with those files, and differences() did not see it."""
    monkeypatch.setenv("TORCHSMITH_SNAPSHOTS", str(tmp_path / "snapshots"))
    site = tmp_path / "site-packages"
    (site / "userdir").mkdir(parents=True)
    (site / "userdir2" / "sub").mkdir(parents=True)
    taken = snapshot.take((str(site),))
    (site / "userdir" / "added.py").write_text("x = 1\n")
    (site / "userdir2" / "sub" / "added.py").write_text("x = 1\n")
    (site / "newpkg" / "deep").mkdir(parents=True)
    (site / "newpkg" / "deep" / "m.py").write_text("x = 1\n")
    snapshot.restore(taken.path, exact=True)
    assert (site / "userdir").is_dir()
    assert (site / "userdir2" / "sub").is_dir()
    assert not (site / "userdir" / "added.py").exists()
    assert not (site / "newpkg").exists()
    assert snapshot.differences(taken.path) == []
    (site / "userdir2" / "sub").rmdir()
    assert snapshot.differences(taken.path) == [f"missing folder: {site / 'userdir2' / 'sub'}"]
