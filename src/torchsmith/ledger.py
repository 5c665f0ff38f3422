"""The attempts ledger: one SQLite file that remembers every build and install attempt.

This module is the only code that opens the ledger. The file lives under the user data dir
(platformdirs) unless ``TORCHSMITH_LEDGER`` names another path. It is opened in WAL mode with a
busy timeout and every operation is one short transaction, so two builds writing at once neither
block each other for long nor corrupt the file. The schema is versioned through SQLite's
``user_version`` and migrated forward on open; a file from a newer torchsmith, or one that is not
a SQLite database, is an error and is never overwritten.

An attempt is written twice: :meth:`Ledger.start` when the executor begins (status ``running``,
with the pid and that process's start time) and :meth:`Ledger.finish` when it ends. An attempt
still ``running`` whose process is gone reads back as ``died`` (killed with SIGKILL, power loss).

Text is stored as valid UTF-8. A file name that is not (POSIX names are bytes; Python carries the
bad bytes as surrogate escapes, as :func:`os.fsdecode` does) keeps its exact value in the JSON
columns (as a ``\\udcff`` escape); in a plain column (the tree, the command, the log's path) each
such byte is written ``\\xNN``, the way ``bytes.decode(errors="backslashreplace")`` writes it: the
record stays readable and names the file, though not byte for byte.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import platformdirs
import psutil

from torchsmith.errors import InputError, UsageError
from torchsmith.util.serialize import SURROGATE, json_text, to_jsonable

Kind = Literal["build", "install", "clean"]
# blocked: stopped by a check before anything ran (a build's preflight); nothing was changed
Status = Literal["running", "succeeded", "failed", "interrupted", "blocked", "died"]
FinalStatus = Literal["succeeded", "failed", "interrupted", "blocked"]
FINAL_STATUSES: tuple[str, ...] = ("succeeded", "failed", "interrupted", "blocked")

ENV_VAR = "TORCHSMITH_LEDGER"
_BUSY_TIMEOUT_MS = 15_000

# Each entry upgrades the schema from version i to i + 1. Append; never edit a shipped one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE attempts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        pid_started REAL,
        tree TEXT,
        git_commit TEXT,
        git_dirty INTEGER,
        project_kind TEXT,
        command TEXT NOT NULL DEFAULT '[]',
        config TEXT NOT NULL DEFAULT '{}',
        probe TEXT,
        tools TEXT NOT NULL DEFAULT '{}',
        log_path TEXT,
        exit_code INTEGER,
        duration_s REAL,
        peak_rss_bytes INTEGER,
        diagnoses TEXT NOT NULL DEFAULT '[]',
        archs TEXT NOT NULL DEFAULT '[]',
        result TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX attempts_kind_started ON attempts (kind, started_at);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


class LedgerError(InputError):
    """The ledger file cannot be used (not a database, from a newer torchsmith, unwritable)."""


@dataclass(frozen=True)
class Attempt:
    """One recorded attempt, as read back. JSON-valued columns come back parsed."""

    id: int
    kind: str
    status: str
    started_at: str
    finished_at: str | None
    host: str
    pid: int
    tree: str | None = None
    git_commit: str | None = None
    git_dirty: bool | None = None
    project_kind: str | None = None
    command: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    probe: dict[str, Any] | None = None
    tools: dict[str, Any] = field(default_factory=dict)
    log_path: str | None = None
    exit_code: int | None = None
    duration_s: float | None = None
    peak_rss_bytes: int | None = None
    diagnoses: list[dict[str, Any]] = field(default_factory=list)
    archs: list[str] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)


_MAX_ID = 2**63 - 1  # SQLite's largest INTEGER: an id above it is in no ledger
_DAMAGED = object()  # a column value that is not JSON


def default_path() -> Path:
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override).expanduser()
    return platformdirs.user_data_path("torchsmith", appauthor=False) / "ledger.sqlite3"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _escape_surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte os.fsdecode could not decode: write the byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"  # a lone surrogate from elsewhere (a Windows name, JSON)


def _text(value: str) -> str:
    """``value`` as text SQLite can store (valid UTF-8): see the module's docstring."""
    return SURROGATE.sub(_escape_surrogate, value)


def _write(conn: sqlite3.Connection, statement: str, values: Sequence[Any]) -> sqlite3.Cursor:
    """Run a statement that writes, every string parameter made storable by :func:`_text`.
    Every write goes through here, so a name that is not UTF-8 reaches no column as it is."""
    return conn.execute(statement, tuple(_text(v) if isinstance(v, str) else v for v in values))


def _dumps(value: Any) -> str:
    """JSON for a column: a lone surrogate is written as its JSON escape (``\\udcff``), so what
    reads back is the same ``str``, byte for byte (install's snapshot names files to restore)."""
    return json_text(to_jsonable(value), sort_keys=True)


def _process_started(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, OSError):
        return None


def _set_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL. The switch needs the file to itself, and SQLite answers "database
    is locked" at once (without waiting out busy_timeout) while another process holds it, e.g. a
    second torchsmith migrating the same new ledger: retry until the busy timeout has passed."""
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


class Ledger:
    """The ledger at ``path`` (default: :func:`default_path`), created and migrated on first use."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else default_path()
        self._ready = False

    # -- connection -----------------------------------------------------------------------
    @contextlib.contextmanager
    def _connect(self, *, reading: bool = False) -> Iterator[sqlite3.Connection]:
        if reading and not self._ready and not self._writable():
            conn = self._read_only_connect()  # a ledger on a read-only mount can still be read
        else:
            if not self._ready:
                self._open_and_migrate()
            conn = self._raw_connect()
        try:
            with conn:  # one transaction: commit on success, roll back on error
                yield conn
        except sqlite3.DatabaseError as exc:
            raise self._unusable(exc) from exc
        finally:
            conn.close()

    def _writable(self) -> bool:
        return os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)

    def _read_only_connect(self) -> sqlite3.Connection:
        """The ledger opened for reading only, when this process may not write it or its folder;
        its schema must be this one's."""
        uri = self.path.absolute().as_uri() + "?mode=ro"
        try:
            try:
                conn = sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_MS / 1000)
                version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            except sqlite3.OperationalError:
                # read-only WAL needs its -shm: without it, immutable reads the file alone, which
                # is only right while no committed change waits in a -wal beside it
                wal = Path(f"{self.path}-wal")
                if wal.exists() and wal.stat().st_size:
                    raise
                conn = sqlite3.connect(uri + "&immutable=1", uri=True)
                version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.Error as exc:
            raise self._unusable(exc) from exc
        if version != SCHEMA_VERSION:
            conn.close()
            raise LedgerError(
                f"the ledger {self.path} is read-only here and has schema version {version}, "
                f"not this torchsmith's {SCHEMA_VERSION}",
                tip=f"read it with the torchsmith that wrote it, or set {ENV_VAR} to a copy",
            )
        conn.row_factory = sqlite3.Row
        return conn

    def _raw_connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as exc:
            raise self._unusable(exc) from exc
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        return conn

    def _unusable(self, exc: BaseException) -> LedgerError:
        """Why the ledger cannot be used, with the tip that fits: a file that is there but is
        no ledger is moved aside; one that cannot be made or written is a question of rights."""
        elsewhere = f"set {ENV_VAR} to a file in a folder you can write"
        if not self.path.exists():
            tip = f"{elsewhere} (the ledger is made there on first use)"
        elif self.path.is_file() and not self._writable():
            tip = f"let this user write {self.path} and its folder, or {elsewhere}"
        else:
            tip = f"move the file aside (torchsmith never overwrites it) or {elsewhere}"
        return LedgerError(f"the ledger {self.path} cannot be used: {exc}", tip=tip)

    def _open_and_migrate(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise self._unusable(OSError(f"its folder cannot be made ({why})")) from exc
        if self.path.exists() and not self.path.is_file():
            raise self._unusable(IsADirectoryError("not a regular file"))
        conn = self._raw_connect()
        try:
            _set_wal(conn)
            # BEGIN IMMEDIATE serialises two first openings racing to migrate.
            conn.execute("BEGIN IMMEDIATE")
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                conn.rollback()
                raise LedgerError(
                    f"the ledger {self.path} has schema version {version}, newer than this "
                    f"torchsmith's {SCHEMA_VERSION}",
                    tip="upgrade torchsmith, or set TORCHSMITH_LEDGER to another path",
                )
            for target, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {target}")
            conn.commit()
        except sqlite3.DatabaseError as exc:
            raise self._unusable(exc) from exc
        finally:
            conn.close()
        self._ready = True

    @property
    def schema_version(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])

    # -- writing --------------------------------------------------------------------------
    def start(
        self,
        kind: Kind,
        *,
        config: Any,
        command: Sequence[str] = (),
        tree: str | Path | None = None,
        git_commit: str | None = None,
        git_dirty: bool | None = None,
        project_kind: str | None = None,
        probe: Any = None,
        tools: Any = None,
        log_path: str | Path | None = None,
        pid: int | None = None,
    ) -> int:
        """Record that an attempt began; returns its id."""
        pid = os.getpid() if pid is None else pid
        row = {
            "kind": kind,
            "status": "running",
            "started_at": _now(),
            "host": socket.gethostname(),
            "pid": pid,
            "pid_started": _process_started(pid),
            "tree": str(tree) if tree is not None else None,
            "git_commit": git_commit,
            "git_dirty": None if git_dirty is None else int(git_dirty),
            "project_kind": project_kind,
            "command": _dumps(list(command)),
            "config": _dumps(config),
            "probe": None if probe is None else _dumps(probe),
            "tools": _dumps(tools or {}),
            "log_path": str(log_path) if log_path is not None else None,
        }
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._connect() as conn:
            insert = f"INSERT INTO attempts ({columns}) VALUES ({marks})"  # noqa: S608
            cursor = _write(conn, insert, list(row.values()))
            assert cursor.lastrowid is not None
            return int(cursor.lastrowid)

    def finish(
        self,
        attempt_id: int,
        *,
        status: FinalStatus,
        exit_code: int | None = None,
        duration_s: float | None = None,
        peak_rss_bytes: int | None = None,
        diagnoses: Any = (),
        archs: Sequence[str] = (),
        result: Any = None,
        log_path: str | Path | None = None,
    ) -> Attempt:
        """Record how an attempt ended; returns it as stored."""
        if status not in FINAL_STATUSES:
            raise UsageError(f"an attempt cannot finish as {status!r}")
        finished = _now()
        with self._connect() as conn:
            started = conn.execute(
                "SELECT started_at FROM attempts WHERE id = ?", (attempt_id,)
            ).fetchone()
            if started is None:
                raise self._missing(attempt_id)
            if duration_s is None:
                duration_s = (
                    datetime.fromisoformat(finished) - datetime.fromisoformat(started[0])
                ).total_seconds()
            _write(
                conn,
                "UPDATE attempts SET status = ?, finished_at = ?, exit_code = ?, duration_s = ?,"
                " peak_rss_bytes = ?, diagnoses = ?, archs = ?, result = ?,"
                " log_path = COALESCE(?, log_path) WHERE id = ?",
                (
                    status,
                    finished,
                    exit_code,
                    duration_s,
                    peak_rss_bytes,
                    _dumps(list(diagnoses)),
                    _dumps(sorted(set(archs))),
                    _dumps(result or {}),
                    None if log_path is None else str(log_path),
                    attempt_id,
                ),
            )
        return self.get(attempt_id)

    def update_result(self, attempt_id: int, result: Any) -> None:
        """Replace the kind-specific result of an attempt (install's snapshot while it runs, or
        its removal later)."""
        with self._connect() as conn:
            cursor = _write(
                conn, "UPDATE attempts SET result = ? WHERE id = ?", (_dumps(result), attempt_id)
            )
            if cursor.rowcount == 0:
                raise self._missing(attempt_id)

    # -- reading --------------------------------------------------------------------------
    def get(self, attempt_id: int) -> Attempt:
        if not 0 < attempt_id <= _MAX_ID or not self._exists():
            raise self._missing(attempt_id)
        with self._connect(reading=True) as conn:
            row = conn.execute("SELECT * FROM attempts WHERE id = ?", (attempt_id,)).fetchone()
        if row is None:
            raise self._missing(attempt_id)
        return self._attempt(row)

    def list(self, *, kind: str | None = None, limit: int | None = None) -> list[Attempt]:
        """Attempts, newest first."""
        query = "SELECT * FROM attempts"
        params: list[Any] = []
        if kind is not None:
            query += " WHERE kind = ?"
            params.append(kind)
        query += " ORDER BY id DESC"
        if limit is not None:
            query += " LIMIT ?"
            params.append(min(limit, _MAX_ID))
        if not self._exists():
            return []  # reading creates nothing: the ledger is made by the first attempt
        with self._connect(reading=True) as conn:
            rows = conn.execute(query, params).fetchall()
        return [self._attempt(row) for row in rows]

    def latest(self, *, kind: str | None = None, tree: str | Path | None = None) -> Attempt | None:
        for attempt in self.list(kind=kind):
            if tree is None or attempt.tree == _text(str(tree)):  # as start stored it
                return attempt
        return None

    def _exists(self) -> bool:
        return self._ready or self.path.exists()

    def _missing(self, attempt_id: int) -> LedgerError:
        return LedgerError(
            f"no attempt {attempt_id} in the ledger {self.path}",
            tip="'torchsmith attempts list' shows the recorded attempts",
        )

    def _attempt(self, row: sqlite3.Row) -> Attempt:
        status = row["status"]
        if status == "running" and not self._still_running(row):
            status = "died"
        unreadable: list[str] = []

        def loads(column: str, default: Any) -> Any:
            # a row written by hand or by a damaged file: that value is lost, not the ledger
            text = row[column]
            if text is None:
                return None if column == "probe" else default
            try:
                value = json.loads(text)
            except ValueError:
                value = _DAMAGED
            kind = dict if column == "probe" else type(default)
            if not isinstance(value, kind):  # not JSON, or JSON of another shape ('[1]', 'null')
                unreadable.append(column)
                return default
            return value

        command, config, probe = loads("command", []), loads("config", {}), loads("probe", None)
        tools, diagnoses, archs = loads("tools", {}), loads("diagnoses", []), loads("archs", [])
        result = loads("result", {})
        if unreadable and isinstance(result, dict):
            result["unreadable_columns"] = unreadable
        return Attempt(
            id=row["id"],
            kind=row["kind"],
            status=status,
            started_at=row["started_at"],
            finished_at=row["finished_at"],
            host=row["host"],
            pid=row["pid"],
            tree=row["tree"],
            git_commit=row["git_commit"],
            git_dirty=None if row["git_dirty"] is None else bool(row["git_dirty"]),
            project_kind=row["project_kind"],
            command=command,
            config=config,
            probe=probe,
            tools=tools,
            log_path=row["log_path"],
            exit_code=row["exit_code"],
            duration_s=row["duration_s"],
            peak_rss_bytes=row["peak_rss_bytes"],
            diagnoses=diagnoses,
            archs=archs,
            result=result,
        )

    @staticmethod
    def _still_running(row: sqlite3.Row) -> bool:
        """Whether the process that started a ``running`` attempt is still alive.

        On another host we cannot tell, so the attempt keeps its recorded status. A pid reused
        by another process is told apart by the process start time recorded at start.
        """
        if row["host"] != socket.gethostname():
            return True
        started = _process_started(int(row["pid"]))
        if started is None:
            return False
        recorded = row["pid_started"]
        return recorded is None or abs(started - float(recorded)) < 1.0
