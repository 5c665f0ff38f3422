"""The attempts ledger: real SQLite files, real concurrent processes, a real SIGKILL."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import torchsmith.ledger as ledger_module
from torchsmith.ledger import SCHEMA_VERSION, Ledger, LedgerError


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "ledger.sqlite3")


def test_start_finish_round_trip(ledger: Ledger, tmp_path: Path) -> None:
    attempt_id = ledger.start(
        "build",
        config={"env": {"TORCH_CUDA_ARCH_LIST": "9.0;12.0"}, "cmake_args": ["-GNinja"]},
        command=["torchsmith", "build", "."],
        tree=tmp_path,
        git_commit="abc123",
        git_dirty=True,
        project_kind="cmake",
        tools={"nvcc": "13.0.88"},
        log_path=tmp_path / "build.log",
    )
    running = ledger.get(attempt_id)
    assert running.status == "running"
    assert running.config["env"]["TORCH_CUDA_ARCH_LIST"] == "9.0;12.0"
    assert running.git_dirty is True

    done = ledger.finish(
        attempt_id,
        status="failed",
        exit_code=1,
        peak_rss_bytes=123,
        diagnoses=[{"category": "stale-build-cache"}],
        archs=["sm_90", "sm_120", "sm_90"],
    )
    assert done.status == "failed"
    assert done.archs == ["sm_120", "sm_90"]
    assert done.duration_s is not None
    assert done.duration_s >= 0
    assert done.diagnoses[0]["category"] == "stale-build-cache"
    assert [a.id for a in ledger.list()] == [attempt_id]
    assert ledger.latest(kind="install") is None


def test_missing_attempt_is_a_clear_error(ledger: Ledger) -> None:
    with pytest.raises(LedgerError, match="no attempt 42"):
        ledger.get(42)


def test_wal_mode_and_schema_version(ledger: Ledger) -> None:
    assert ledger.schema_version == SCHEMA_VERSION
    conn = sqlite3.connect(ledger.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_corrupt_file_is_reported_and_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    garbage = b"this is not a database\x00" * 100
    path.write_bytes(garbage)
    with pytest.raises(LedgerError, match="cannot be used"):
        Ledger(path).list()
    assert path.read_bytes() == garbage


def test_each_unusable_ledger_gets_the_tip_that_fits(tmp_path: Path) -> None:
    """audit: a ledger whose folder could not be made was told to 'move the file aside'."""
    garbage = tmp_path / "ledger.sqlite3"
    garbage.write_bytes(b"this is not a database\x00" * 100)
    with pytest.raises(LedgerError) as not_one:
        Ledger(garbage).list()
    assert "move the file aside" in (not_one.value.tip or "")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(LedgerError) as no_folder:
        Ledger(blocker / "sub" / "ledger.sqlite3").start("build", config={}, command=(), tree="/t")
    assert "its folder cannot be made" in no_folder.value.message
    tip = no_folder.value.tip or ""
    assert "move the file aside" not in tip
    assert "to a file in a folder you can write" in tip


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    with pytest.raises(LedgerError, match="newer than this torchsmith"):
        Ledger(path).list()


def test_old_schema_migrates_and_keeps_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ledger written by an older torchsmith (fewer migrations) gains the new ones on open."""
    path = tmp_path / "ledger.sqlite3"
    old = Ledger(path)
    first = old.start("build", config={"a": 1})
    # A pretend next release adds a column; the stored row must survive the upgrade.
    monkeypatch.setattr(
        ledger_module,
        "MIGRATIONS",
        (*ledger_module.MIGRATIONS, "ALTER TABLE attempts ADD COLUMN note TEXT"),
    )
    monkeypatch.setattr(ledger_module, "SCHEMA_VERSION", len(ledger_module.MIGRATIONS))
    upgraded = Ledger(path)
    assert upgraded.schema_version == SCHEMA_VERSION + 1
    assert upgraded.get(first).config == {"a": 1}


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from torchsmith.ledger import Ledger
    ledger = Ledger(Path(sys.argv[1]))
    for i in range(int(sys.argv[2])):
        n = ledger.start("build", config={"writer": sys.argv[3], "i": i})
        ledger.finish(n, status="succeeded", exit_code=0)
    """
)


_FIRST_OPEN = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from torchsmith.ledger import Ledger
    start = float(sys.argv[2])
    while time.time() < start:
        pass
    print(Ledger(Path(sys.argv[1])).schema_version)
    """
)


def test_two_processes_creating_the_same_ledger_both_succeed(tmp_path: Path) -> None:
    # Switching a new file to WAL needs it to itself; SQLite refuses the loser of that race at once
    # instead of waiting (about a quarter of such races failed before the switch was retried).
    for round_ in range(8):
        path = tmp_path / f"ledger{round_}.sqlite3"
        start = f"{time.time() + 0.5:.3f}"  # both processes up before they open it together
        openers = [
            subprocess.Popen(
                [sys.executable, "-c", _FIRST_OPEN, str(path), start],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        results = [o.communicate(timeout=60) for o in openers]
        assert [o.returncode for o in openers] == [0, 0], [err for _, err in results]
        assert [out.strip() for out, _ in results] == [str(SCHEMA_VERSION)] * 2


def test_two_writers_at_once(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), "40", name])
        for name in ("a", "b")
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    attempts = Ledger(path).list()
    assert len(attempts) == 80
    assert {a.status for a in attempts} == {"succeeded"}
    for name in ("a", "b"):
        assert sorted(a.config["i"] for a in attempts if a.config["writer"] == name) == list(
            range(40)
        )


def test_killed_process_reads_back_as_died(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    script = textwrap.dedent(
        """
        import sys, time
        from pathlib import Path
        from torchsmith.ledger import Ledger
        print(Ledger(Path(sys.argv[1])).start("build", config={}), flush=True)
        time.sleep(60)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    attempt_id = int(child.stdout.readline())
    ledger = Ledger(path)
    assert ledger.get(attempt_id).status == "running"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    assert ledger.get(attempt_id).status == "died"


def test_reading_a_missing_ledger_creates_nothing(tmp_path: Path) -> None:
    # audit: `attempts list` with TORCHSMITH_LEDGER at a new path created the file (and folders)
    path = tmp_path / "deep" / "ledger.sqlite3"
    ledger = Ledger(path)
    assert ledger.list() == []
    with pytest.raises(LedgerError):
        ledger.get(1)
    assert not path.parent.exists()


def test_ids_beyond_sqlite_and_damaged_rows_are_one_line(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    attempt = ledger.start("build", config={"jobs": 4}, command=["torchsmith", "build"])
    with pytest.raises(LedgerError, match="no attempt"):
        ledger.get(10**23)  # audit: OverflowError: Python int too large to convert to SQLite
    with sqlite3.connect(ledger.path) as conn:
        conn.execute("UPDATE attempts SET command = 'not json' WHERE id = ?", (attempt,))
    (read,) = ledger.list()  # audit: one damaged row made the whole ledger unreadable
    assert read.command == []
    assert read.config == {"jobs": 4}
    assert read.result["unreadable_columns"] == ["command"]
    with sqlite3.connect(ledger.path) as conn:  # review: JSON of another shape broke it too
        conn.execute("UPDATE attempts SET config = '[1]', result = 'null' WHERE id = ?", (attempt,))
    (read,) = ledger.list()
    assert read.config == {}
    assert read.result == {"unreadable_columns": ["command", "config", "result"]}


def test_a_ledger_on_a_read_only_mount_can_be_read(tmp_path: Path) -> None:
    # review: every read set WAL and began a write transaction, so a read-only ledger failed
    folder = tmp_path / "ro"
    folder.mkdir()
    writer = Ledger(folder / "ledger.sqlite3")
    attempt = writer.start("build", config={"jobs": 2})
    writer.finish(attempt, status="succeeded")
    folder.chmod(0o555)
    (folder / "ledger.sqlite3").chmod(0o444)
    try:
        with pytest.MonkeyPatch.context() as patch:  # as root, access() says yes: make it say no
            patch.setattr(ledger_module.os, "access", lambda *_args, **_kw: False)
            reader = Ledger(folder / "ledger.sqlite3")
            assert [a.id for a in reader.list()] == [attempt]
            assert reader.get(attempt).status == "succeeded"
    finally:
        folder.chmod(0o755)


def test_a_read_only_ledger_still_sees_what_waits_in_its_wal(tmp_path: Path) -> None:
    # re-review: an immutable read ignored committed attempts still in the -wal file
    folder = tmp_path / "ro"
    folder.mkdir()
    writer = Ledger(folder / "ledger.sqlite3")
    first = writer.start("build", config={})
    holder = sqlite3.connect(writer.path)  # an open reader keeps the WAL from being merged
    holder.execute("BEGIN")
    holder.execute("SELECT count(*) FROM attempts").fetchone()
    second = writer.start("build", config={})
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ledger_module.os, "access", lambda *_args, **_kw: False)
            reader = Ledger(folder / "ledger.sqlite3")
            assert [a.id for a in reader.list()] == [second, first]
    finally:
        holder.rollback()
        holder.close()
