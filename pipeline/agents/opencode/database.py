"""OpenCode's SQLite database, read without OpenCode ever noticing (standard library only).

OpenCode (1.18) keeps every session in one database, ``$XDG_DATA_HOME/opencode/opencode.db``
(``opencode-<channel>.db`` for other channels), in WAL mode: while it runs, and often after it
exits, the newest rows are in ``opencode.db-wal``. A session is not a file, so memd names it
``<database path>#<session id>`` (``session_path``): the path the scanner, the scan index, the store
and extraction key it by, like a transcript file's path.

How it is read (``read``):

- The database, its ``-wal`` and its ``-shm`` must be regular files (checked on a descriptor
  opened without blocking: SQLite's own ``open`` of a FIFO would hang forever); a symlink is
  followed to a regular file, and SQLite is handed the resolved path, so it finds the ``-wal``
  beside the real file.
- With a ``-wal`` (and its ``-shm`` index) present: ``mode=ro``. SQLite reads the log as well as
  the main file, in one read transaction (a consistent snapshot), takes only the shared read
  marks of a WAL reader (which never block OpenCode's writer) and, being read-only, never
  checkpoints or deletes the log when it closes. Works when the folder is not writable.
- Without a ``-wal``: every row is in the main file, and ``mode=ro`` would create a ``-wal`` and
  ``-shm`` of its own and leave them behind (and fail in a read-only folder). So the file is read
  ``immutable`` (no lock, no file created) and the read counts only when the file's identity,
  size and mtime are the same after it as before it: a writer that started meanwhile (its rows go
  to a new ``-wal``; a checkpoint would change the file) makes the read start again, with the
  ``-wal`` this time.
- A ``-wal`` without its ``-shm`` (left by a crash) is not read: SQLite would have to create the
  index. The session waits, with that reason, until OpenCode opens the database again.
- Read transactions are short (one listing, or one session), so OpenCode's checkpoints are never
  held back for long; a busy database is waited on for at most ``BUSY_TIMEOUT_S``.

What a database cannot make memd do (``_connect``, ``require_opencode``, ``value``): the database
is hostile like every file memd did not write.

- Size: the main file over ``DATABASE_MAX_BYTES`` or its ``-wal`` over ``WAL_MAX_BYTES`` is not
  opened. SQLite's own limits are lowered on every connection: no value (string or blob, stored
  or computed) longer than ``VALUE_MAX_BYTES`` is ever made (SQLite fails the statement with
  "string or blob too big" before it allocates), no schema statement longer than
  ``SCHEMA_SQL_MAX_BYTES`` is parsed, no database is attached, the page cache is
  ``CACHE_KIB`` whatever the file's header asks, nothing is memory-mapped.
- Schema: every table memd reads (``READ_TABLES``) must be a plain table with a rowid: a view, a
  virtual table, a generated column (VIRTUAL: computed at every read, the issue's
  ``zeroblob(700000000)`` in a 272 KB file; or STORED) or a column hiding the rowid is refused
  with its name, before a row is read. ``trusted_schema`` is off and the connection is
  ``query_only`` (nothing in the schema runs: no trigger fires on a read).
- Rows: a table's rows are streamed one at a time (``contents``: SQLite never sorts or holds
  more than one row's content; at most ``MAX_ROWS`` rows, their bytes counted against the
  session's budget as they come); a row over the value limit stops the statement before its value
  is made, and the rows are then listed by key and fetched alone, so that row alone is skipped.
  A listing holds at most ``MAX_SESSIONS`` sessions. Every key, id and path is length-checked in
  SQL before it is returned.
- Time: a read stops after ``READ_DEADLINE_S`` (SQLite's progress handler, and a check per
  row) with that reason; a listing stopped so is not tried again until the database or its
  ``-wal`` changes (``list_sessions``), a session so read is unreadable until it changes.

The scan's change check (``walk``) reads one row per session (its ``time_updated`` and the last
sequence number of its event log, bumped by every write OpenCode makes to it) and nothing else;
only sessions whose key moved are read (``pipeline.agents.opencode.transcripts``).
"""

from __future__ import annotations

import errno
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from pipeline.safefile import UnsafeFile, open_regular

T = TypeVar("T")

SEPARATOR = "#"
BUSY_TIMEOUT_S = 1.0
"""How long a read waits on a database another process holds (a WAL reader almost never waits)."""
READ_ATTEMPTS = 3
"""Reads of a WAL-less file that a writer changed meanwhile, before the session waits for a scan."""
SEQ_BITS = 21
"""The version of a session is ``time_updated`` (epoch ms) shifted left by this, plus its event
sequence number (capped): a writer that adds a part without touching ``time_updated`` still moves it."""
MAX_TIME_MS = (1 << 41) - 1
REQUIRED_TABLES = frozenset({"session", "message", "part"})
READ_TABLES = ("event_sequence", "message", "part", "project", "session")
"""Every table memd's queries name (``_schema_problem``)."""

DATABASE_MAX_BYTES = 16 << 30
"""A main file larger than this is not opened (OpenCode's own databases are far below it)."""
WAL_MAX_BYTES = 4 << 30
"""A ``-wal`` larger than this is not read (OpenCode checkpoints it at a few MB)."""
VALUE_MAX_BYTES = 16 << 20
"""``SQLITE_LIMIT_LENGTH``: SQLite makes no string or blob longer than this (a message or part
holding more is skipped)."""
SCHEMA_SQL_MAX_BYTES = 256 << 10
"""``SQLITE_LIMIT_SQL_LENGTH``: no statement, the schema's included, longer than this is parsed."""
CACHE_KIB = 8192
"""The page cache of a connection, whatever the database's header suggests."""
READ_DEADLINE_S = 30.0
"""How long one read (one listing, or one session) may take before SQLite is told to stop."""
PROGRESS_STEPS = 1000
"""SQLite's virtual machine steps between two looks at the clock."""
MAX_SESSIONS = 100_000
"""A database listing more sessions than this is not read."""
MAX_ROWS = 250_000
"""A session with more messages, or more parts, than this is not read."""
KEY_MAX_CHARS = 256
"""An id longer than this is not OpenCode's: its row is not listed."""
TEXT_MAX_CHARS = 4096
"""A session's directory, version, parent or project worktree longer than this is read as absent."""
_ROWID_NAMES = frozenset({"rowid", "_rowid_", "oid"})

Walked = tuple[str, tuple[int, int, int, int] | None, str | None]


class DatabaseUnreadable(Exception):
    """Why the database cannot be read now; ``retryable`` when it may be readable at the next scan."""

    def __init__(self, reason: str, *, retryable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable


class ReadStopped(DatabaseUnreadable):
    """The read ran past ``READ_DEADLINE_S`` and was stopped."""

    def __init__(self) -> None:
        super().__init__(f"the read took over {READ_DEADLINE_S:g} s and was stopped")


class _ChangedDuringRead(Exception):
    pass


def is_database_name(name: str) -> bool:
    """``opencode.db`` or ``opencode-<channel>.db`` (never the ``-wal``/``-shm`` beside it)."""
    return name == "opencode.db" or (name.startswith("opencode-") and name.endswith(".db"))


def session_path(db: str, session_id: str) -> str:
    return f"{db}{SEPARATOR}{session_id}"


def split_session_path(path: str) -> tuple[str, str] | None:
    """``(database path, session id)`` of a ``session_path``, or None."""
    db, sep, session_id = path.rpartition(SEPARATOR)
    if not sep or not db or not session_id or "/" in session_id:
        return None
    return db, session_id


def version_of(time_updated: object, seq: object) -> int:
    """A session's version: monotone in every write OpenCode makes to it (see ``SEQ_BITS``)."""
    ms = time_updated if isinstance(time_updated, int) and not isinstance(time_updated, bool) else 0
    n = seq if isinstance(seq, int) and not isinstance(seq, bool) else 0
    return (min(max(ms, 0), MAX_TIME_MS) << SEQ_BITS) + min(max(n, 0) + 1, (1 << SEQ_BITS) - 1)


def time_ms_of(version: int) -> int:
    return version >> SEQ_BITS


# -- the one way in ---------------------------------------------------------------------------


def _check_regular(path: str, what: str) -> os.stat_result | None:
    """The ``fstat`` of the regular file at ``path`` (None when there is none); anything else at
    that name is ``DatabaseUnreadable``."""
    try:
        fd, info = open_regular(path)
    except FileNotFoundError:
        return None
    except UnsafeFile as exc:
        raise DatabaseUnreadable(f"{what} {exc.reason}") from None
    except PermissionError:
        raise DatabaseUnreadable(f"{what}: permission denied") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DatabaseUnreadable(f"{what} is a symlink loop") from None
        raise DatabaseUnreadable(f"{what} cannot be opened: {exc.strerror or exc}") from None
    os.close(fd)
    return info


def _identity(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


class _Connection(sqlite3.Connection):
    """A connection that knows when its read must stop."""

    deadline: float = math.inf


def check_deadline(conn: sqlite3.Connection) -> None:
    """``DatabaseUnreadable`` once the read on ``conn`` is past its deadline (a reader calls it
    between rows, where SQLite's progress handler does not run)."""
    if time.monotonic() >= getattr(conn, "deadline", math.inf):
        raise ReadStopped()


def _harden(conn: _Connection) -> None:
    """SQLite's limits and settings for a database memd did not write (see the module's docstring)."""
    conn.deadline = time.monotonic() + READ_DEADLINE_S
    deadline = conn.deadline
    conn.set_progress_handler(lambda: int(time.monotonic() >= deadline), PROGRESS_STEPS)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, VALUE_MAX_BYTES)
    conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, SCHEMA_SQL_MAX_BYTES)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.setlimit(sqlite3.SQLITE_LIMIT_WORKER_THREADS, 0)
    for pragma in (
        "query_only = ON",
        "trusted_schema = OFF",
        "mmap_size = 0",
        "cell_size_check = ON",
        f"cache_size = -{CACHE_KIB}",
    ):
        conn.execute(f"PRAGMA {pragma}")


def _connect(real: str) -> tuple[sqlite3.Connection, tuple[int, int, int, int] | None]:
    """A read-only connection to ``real`` and, when it was opened ``immutable``, the file's
    identity to compare after the read."""
    info = _check_regular(real, "the database")
    if info is None:
        raise DatabaseUnreadable("the database disappeared", retryable=True)
    if info.st_size > DATABASE_MAX_BYTES:
        raise DatabaseUnreadable(f"the database file is over {DATABASE_MAX_BYTES} bytes: not read")
    wal = _check_regular(real + "-wal", "its write-ahead log (-wal)")
    if wal is not None and wal.st_size > WAL_MAX_BYTES:
        raise DatabaseUnreadable(f"its write-ahead log (-wal) is over {WAL_MAX_BYTES} bytes: not read")
    shm = _check_regular(real + "-shm", "its WAL index (-shm)")
    journal = _check_regular(real + "-journal", "its rollback journal")
    if journal is not None and journal.st_size > 0:
        raise DatabaseUnreadable("a rollback journal is present (a write is in progress)", retryable=True)
    if wal is not None and shm is None:
        raise DatabaseUnreadable(
            "its write-ahead log has no index (-shm): memd reads it once OpenCode has opened the database "
            "again, rather than create one",
            retryable=True,
        )
    guard = None if wal is not None else _identity(info)
    mode = "mode=ro" if wal is not None else "mode=ro&immutable=1"
    uri = f"file:{quote(real)}?{mode}"
    conn = sqlite3.connect(
        uri,
        uri=True,
        timeout=BUSY_TIMEOUT_S,
        isolation_level=None,
        check_same_thread=False,
        factory=_Connection,
    )
    try:
        _harden(conn)
    except BaseException:
        conn.close()
        raise
    return conn, guard


def _describe(exc: sqlite3.Error) -> DatabaseUnreadable:
    text = str(exc)
    lowered = text.lower()
    if "locked" in lowered or "busy" in lowered:
        return DatabaseUnreadable(
            f"locked by another process ({text}); read again at the next scan", retryable=True
        )
    if "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
        return DatabaseUnreadable(f"not a readable SQLite database ({text})")
    if "unable to open" in lowered:
        return DatabaseUnreadable(f"cannot be opened read-only ({text})", retryable=True)
    if "interrupted" in lowered:
        return ReadStopped()
    if "no such column" in lowered or "no such table" in lowered:
        return DatabaseUnreadable(f"not OpenCode's schema ({text})")
    if "too big" in lowered:
        return DatabaseUnreadable(f"holds a value or schema statement over memd's limits ({text})")
    return DatabaseUnreadable(f"SQLite error: {text}")


def read(db: str, query: Callable[[sqlite3.Connection], T]) -> T:
    """``query(conn)`` run in one read transaction of the database at ``db`` (see the module's
    docstring); ``DatabaseUnreadable`` with the reason when it cannot be read."""
    real = os.path.realpath(db)
    for _ in range(READ_ATTEMPTS):
        try:
            conn, guard = _connect(real)
        except sqlite3.Error as exc:
            raise _describe(exc) from None
        try:
            conn.execute("BEGIN")
            check_deadline(conn)
            result = query(conn)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise _describe(exc) from None
        finally:
            conn.close()
        if guard is None:
            return result
        after = _check_regular(real, "the database")
        if after is not None and _identity(after) == guard:
            return result
    raise DatabaseUnreadable(
        "the database changed during every read; read again at the next scan", retryable=True
    )


def tables(conn: sqlite3.Connection) -> frozenset[str]:
    return frozenset(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))


def _schema_problem(conn: sqlite3.Connection) -> str | None:
    """Why a table memd reads is not a plain table of stored values (``READ_TABLES``), or None.
    (A table without a rowid fails memd's first query that lists its rowids.)"""
    marks = ", ".join("?" for _ in READ_TABLES)
    found = conn.execute(
        "SELECT lower(name), type, upper(substr(ltrim(sql), 1, 20)) FROM sqlite_master "
        f"WHERE lower(name) IN ({marks}) ORDER BY 1",
        READ_TABLES,
    ).fetchall()
    for name, kind, head in found:
        if kind != "table":
            return f"{name} is a {kind}"
        if isinstance(head, str) and head.startswith("CREATE VIRTUAL"):
            return f"{name} is a virtual table"
        for column, hidden in conn.execute("SELECT name, hidden FROM pragma_table_xinfo(?)", (name,)):
            if hidden:
                return f"{name}.{column} is a generated column"
            if str(column).lower() in _ROWID_NAMES:
                return f"{name}.{column} hides the rowid"
    return None


def require_opencode(conn: sqlite3.Connection) -> frozenset[str]:
    """The database's tables; ``DatabaseUnreadable`` when it has not OpenCode's, or when a table memd
    reads is not a plain table (a view, a virtual table, a generated column: ``_schema_problem``)."""
    found = tables(conn)
    missing = REQUIRED_TABLES - found
    problem = _schema_problem(conn)
    if problem is not None:
        raise DatabaseUnreadable(f"{problem} (not OpenCode's schema)")
    if missing:
        raise DatabaseUnreadable(f"not an OpenCode database (no {', '.join(sorted(missing))} table)")
    return found


def text_or_null(column: str, limit: int = TEXT_MAX_CHARS) -> str:
    """SQL for ``column`` when it is text of at most ``limit`` characters, else NULL (its length is
    learnt in SQLite, within ``VALUE_MAX_BYTES``, before anything is returned)."""
    return f"CASE WHEN typeof({column}) = 'text' AND length({column}) <= {limit} THEN {column} END"


def int_or_null(column: str) -> str:
    """SQL for ``column`` when it is an integer, else NULL."""
    return f"CASE WHEN typeof({column}) = 'integer' THEN {column} END"


def short_key(column: str) -> str:
    """SQL that holds when ``column`` is an id memd lists: text of 1 to ``KEY_MAX_CHARS`` characters."""
    return f"(typeof({column}) = 'text' AND length({column}) BETWEEN 1 AND {KEY_MAX_CHARS})"


class TooBig:
    """A value SQLite refused to make: longer than ``VALUE_MAX_BYTES``."""

    __slots__ = ()


TOO_BIG = TooBig()
Content = bytes | None | TooBig


class Budget:
    """The bytes of content one read may fetch; ``DatabaseUnreadable`` naming ``what`` past them."""

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.what = what
        self.used = 0

    def take(self, content: Content) -> None:
        if isinstance(content, bytes):
            self.used += len(content)
            if self.used > self.limit:
                raise DatabaseUnreadable(f"{self.what} holds over {self.limit} bytes")


def value(conn: sqlite3.Connection, table: str, column: str, rowid: int) -> Content:
    """The content of one row's ``column`` as bytes (text as its UTF-8), None when it is NULL or
    the row is gone, ``TOO_BIG`` when SQLite refused to make it (its size is known from the row's
    header before anything is allocated); past the read's deadline, ``DatabaseUnreadable``."""
    check_deadline(conn)
    try:
        row = conn.execute(f"SELECT CAST({column} AS BLOB) FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
    except sqlite3.DataError as exc:
        if "too big" in str(exc).lower():
            return TOO_BIG
        raise
    found = row[0] if row is not None else None
    return found if isinstance(found, bytes) else None


def contents(
    conn: sqlite3.Connection,
    table: str,
    keys: tuple[str, ...],
    column: str,
    where: str,
    params: tuple[object, ...],
    budget: Budget,
) -> list[tuple[Any, ...]]:
    """``keys`` (SQL expressions) and the content of ``column`` (``Content``) of every row of
    ``table`` that ``where`` holds for, unordered, at most ``MAX_ROWS`` (more is
    ``DatabaseUnreadable``), each counted against ``budget`` as it comes. One statement streams them
    (SQLite holds one row at a time); when a row is over ``VALUE_MAX_BYTES`` SQLite stops it before
    making the value, and the rows are listed by key and fetched one at a time (``value``), so that
    row alone is ``TOO_BIG``."""
    cols = ", ".join(keys)
    used = budget.used
    out: list[tuple[Any, ...]] = []
    try:
        sql = f"SELECT {cols}, CAST({column} AS BLOB) FROM {table} WHERE {where} LIMIT ?"
        for n, row in enumerate(conn.execute(sql, (*params, MAX_ROWS + 1))):
            if n % 1024 == 0:
                check_deadline(conn)
            budget.take(row[-1])
            out.append(row)
    except sqlite3.DataError as exc:
        if "too big" not in str(exc).lower():
            raise
        budget.used = used
        listed = conn.execute(
            f"SELECT rowid, {cols} FROM {table} WHERE {where} LIMIT ?", (*params, MAX_ROWS + 1)
        ).fetchall()
        out = []
        for rowid, *key in listed:
            content = value(conn, table, column, rowid)
            budget.take(content)
            out.append((*key, content))
    if len(out) > MAX_ROWS:
        raise DatabaseUnreadable(f"the session has over {MAX_ROWS} rows in {table}")
    return out


# -- the scan's change check --------------------------------------------------------------------

LIST_SQL = (
    f"SELECT s.id, {int_or_null('s.time_updated')}, {int_or_null('e.seq')} "
    f"FROM session s LEFT JOIN event_sequence e ON e.aggregate_id = s.id WHERE {short_key('s.id')} LIMIT ?"
)
LIST_SQL_NO_EVENTS = (
    f"SELECT id, {int_or_null('time_updated')}, NULL FROM session WHERE {short_key('id')} LIMIT ?"
)


def _list(conn: sqlite3.Connection) -> list[tuple[object, object, object]]:
    found = require_opencode(conn)
    sql = LIST_SQL if "event_sequence" in found else LIST_SQL_NO_EVENTS
    rows = conn.execute(sql, (MAX_SESSIONS + 1,)).fetchall()
    if len(rows) > MAX_SESSIONS:
        raise DatabaseUnreadable(f"the database lists over {MAX_SESSIONS} sessions: not read")
    return rows


_STOPPED: dict[str, tuple[tuple[object, ...], str]] = {}
"""The databases whose listing was stopped at its deadline, by path, with their files' identity
then: not listed again (the reason is given again) until the database or its ``-wal`` changes."""


def _files_identity(db: str) -> tuple[object, ...]:
    real = os.path.realpath(db)
    found: list[object] = []
    for name in (real, real + "-wal"):
        try:
            found.append(_identity(os.stat(name)))
        except OSError:
            found.append(None)
    return tuple(found)


def list_sessions(db: str) -> list[Walked]:
    """One entry per session of the database: its path and change key ``(0, 0, version,
    time_updated in ns)`` (the database file's own identity stays out, so a database copied back
    is not read again from the start); a database that cannot be read is one entry with the reason.
    A database whose listing was stopped at its deadline costs that time once, not at every scan."""
    identity = _files_identity(db)
    stopped = _STOPPED.get(db)
    if stopped is not None and stopped[0] == identity:
        return [(db, None, stopped[1])]
    _STOPPED.pop(db, None)
    try:
        rows = read(db, _list)
    except DatabaseUnreadable as exc:
        reason = f"OpenCode database: {exc.reason}"
        if isinstance(exc, ReadStopped):
            _STOPPED[db] = (identity, reason)
        return [(db, None, reason)]
    out: list[Walked] = []
    for session_id, time_updated, seq in rows:
        if not isinstance(session_id, str) or not session_id or SEPARATOR in session_id or "/" in session_id:
            continue
        version = version_of(time_updated, seq)
        out.append((session_path(db, session_id), (0, 0, version, time_ms_of(version) * 1_000_000), None))
    out.sort()
    return out


def databases(root: Path) -> list[str]:
    """The OpenCode databases directly in ``root`` (its data folder), sorted."""
    try:
        with os.scandir(root) as listing:
            return sorted(e.path for e in listing if is_database_name(e.name))
    except OSError:
        return []


def walk(root: Path) -> list[Walked]:
    """Every session of every OpenCode database in ``root``, with its change key."""
    out: list[Walked] = []
    for db in databases(root):
        out.extend(list_sessions(db))
    return out


def discover(root: Path) -> Iterator[str]:
    return (path for path, key, _ in walk(root) if key is not None)
