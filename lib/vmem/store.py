"""The SQLite backend's files: opening, schema, transactions; and the size limits.

It owns four things, each in one place:

- **Opening a file** (`connect`): WAL journal, `synchronous=NORMAL` (a committed write
  survives a killed process), a busy timeout, foreign keys. A file that is not SQLite,
  is corrupt or truncated, is somebody else's SQLite database, or was written by a newer
  vmem is refused with `StoreFormatError` *before anything is written to it*: it is first
  inspected through a read-only connection, so it stays byte-identical.
- **The schema** (`SCHEMA_V1`, `MIGRATIONS`): versioned with `PRAGMA user_version` and
  marked as ours with `PRAGMA application_id`. Opening an older file runs the missing
  migrations in one transaction.
- **Transactions** (`transaction`): `BEGIN IMMEDIATE` (take the write lock up front, so
  a read-modify-write never fails half way with "database is locked"), or a savepoint
  inside a transaction that is already open, so callers can group several writes into
  one commit.
- **The size limits** (`MAX_*`) and the checks that enforce them.

Full-text search over these tables lives in `vmem.search` and `vmem.storage.topk`; the
backend that uses all of them is `vmem.storage.sqlite.SqliteBackend`. The limits and
their checks are not SQLite's: the stores apply them before any backend sees a value.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from .clock import ensure_utc
from .errors import InputTooLargeError, StoreError, StoreFormatError

# --- Limits: one place, each enforced with InputTooLargeError ------------------------
MAX_RECORD_CHARS = 50_000  # one archival record; store longer documents as several
MAX_MESSAGE_CHARS = 200_000  # one message in recall storage
MAX_QUERY_CHARS = 20_000  # one search query
MAX_PAGE_SIZE = 100  # hits per page (top_k / page_size)
MAX_TAGS = 32  # tags on one archival record
MAX_TAG_CHARS = 64  # characters in one tag

BUSY_TIMEOUT_MS = 5_000
APPLICATION_ID = 0x766D656D  # "vmem" in ASCII: marks a file as ours
SQLITE_MAGIC = b"SQLite format 3\x00"

# --- Schema ------------------------------------------------------------------------
# Version 1: every table of an agent file. Add new tables of version 1 here; after a
# release, a change becomes a new entry in MIGRATIONS instead.
SCHEMA_V1: tuple[str, ...] = (
    """CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        name TEXT,
        session_id INTEGER,
        turn INTEGER,
        created_at TEXT NOT NULL,
        tool_calls TEXT,
        tool_call_id TEXT,
        meta TEXT NOT NULL,
        scope TEXT NOT NULL
    )""",
    "CREATE INDEX messages_created_at ON messages(created_at)",
    "CREATE VIRTUAL TABLE messages_fts USING fts5(terms, tokenize='ascii')",
    # read by vmem.storage.topk.SearchCache: each term's postings (fts5vocab), each row's length
    "CREATE VIRTUAL TABLE messages_vocab USING fts5vocab(messages_fts, instance)",
    "CREATE TABLE messages_lengths (id INTEGER PRIMARY KEY, length INTEGER NOT NULL)",
    """CREATE TABLE archival (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        text TEXT NOT NULL,
        tags TEXT NOT NULL,
        scope TEXT NOT NULL,
        session_id INTEGER,
        turn_id INTEGER,
        source_url TEXT,
        created_at TEXT NOT NULL,
        source TEXT NOT NULL,
        flagged INTEGER NOT NULL,
        flag_reasons TEXT NOT NULL,
        invalid_at TEXT,
        superseded_by INTEGER
    )""",
    "CREATE INDEX archival_created_at ON archival(created_at)",
    # finds the few invalidated records without reading the table (search hides them)
    "CREATE INDEX archival_invalid ON archival(id) WHERE invalid_at IS NOT NULL",
    "CREATE VIRTUAL TABLE archival_fts USING fts5(terms, tokenize='ascii')",
    "CREATE VIRTUAL TABLE archival_vocab USING fts5vocab(archival_fts, instance)",
    "CREATE TABLE archival_lengths (id INTEGER PRIMARY KEY, length INTEGER NOT NULL)",
    """CREATE TABLE fts_stats (
        name TEXT PRIMARY KEY,
        docs INTEGER NOT NULL,
        tokens INTEGER NOT NULL
    )""",
    "INSERT INTO fts_stats VALUES ('messages_fts', 0, 0), ('archival_fts', 0, 0)",
    # One agent (vmem.memory): sessions, core memory and context state, per scope.
    """CREATE TABLE sessions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        scope TEXT NOT NULL,
        started_at TEXT NOT NULL
    )""",
    """CREATE TABLE core_blocks (
        scope TEXT NOT NULL,
        position INTEGER NOT NULL,
        label TEXT NOT NULL,
        block TEXT NOT NULL,
        PRIMARY KEY (scope, label)
    )""",
    """CREATE TABLE context_state (
        scope TEXT PRIMARY KEY,
        state TEXT NOT NULL
    )""",
)

# Version 2: which analyzer built the full-text indexes (`vmem.ranking.INDEX_VERSION`);
# a file of version 1 was indexed with version 1. The backend re-indexes an older one.
SCHEMA_V2: tuple[str, ...] = (
    "CREATE TABLE index_state (version INTEGER NOT NULL)",
    "INSERT INTO index_state VALUES (1)",
    # a new message is indexed after its scope's newest one: found without a scan
    "CREATE INDEX messages_scope_id ON messages(scope, id)",
)

# MIGRATIONS[v] takes a file from schema version v to v + 1 (version 0 = empty file).
MIGRATIONS: tuple[tuple[str, ...], ...] = (SCHEMA_V1, SCHEMA_V2)
SCHEMA_VERSION = len(MIGRATIONS)


# --- Opening -----------------------------------------------------------------------
def connect(target: str | os.PathLike[str] | sqlite3.Connection = ":memory:"
            ) -> sqlite3.Connection:
    """Open (or adopt) a vmem store and make sure its schema is current.

    `target` is ":memory:", a file path (created if missing) or an open connection,
    which is used as it is (its journal mode stays the caller's choice), so that one
    connection can hold every tier of an agent.
    """
    if isinstance(target, sqlite3.Connection):
        conn = target
        if not conn.in_transaction:
            conn.execute("PRAGMA foreign_keys = ON")
    else:
        conn = _open(os.fspath(target))
    try:
        _ensure_schema(conn, where="this connection" if conn is target else str(target))
    except BaseException:
        if conn is not target:
            conn.close()
        raise
    return conn


def _open(path: str) -> sqlite3.Connection:
    in_memory = path in ("", ":memory:")
    if not in_memory:
        _inspect_file(path)
    try:
        conn = sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}; check that its folder exists and "
                         "is writable") from exc
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if not in_memory:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _inspect_file(path: str) -> None:
    """Refuse a file we must not write to, looking at it read-only."""
    file = Path(path)
    if not file.exists() or file.stat().st_size == 0:
        return  # a new store
    with file.open("rb") as handle:
        header = handle.read(100)
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise StoreFormatError(
            f"{path} is not an SQLite database (or its header is damaged), so it is "
            "not a vmem store; it was left untouched. Open a new path instead.")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    header_size_valid = header[24:28] == header[92:96] and pages > 0
    wal = Path(path + "-wal")
    pending_wal = wal.exists() and wal.stat().st_size > 0
    if header_size_valid and not pending_wal and file.stat().st_size < pages * page_size:
        raise StoreFormatError(
            f"{path} is truncated ({file.stat().st_size} bytes, its header says "
            f"{pages * page_size}); it was left untouched. Restore it from a backup.")
    try:
        probe = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
        try:
            _check_identity(*_identity(probe), where=path)
        finally:
            probe.close()
    except sqlite3.DatabaseError as exc:
        raise StoreFormatError(f"{path} is corrupt or unreadable ({exc}); it was left "
                               "untouched. Restore it from a backup.") from exc


def _identity(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """(application_id, user_version, number of schema objects) of a database."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    objects = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    return app_id, version, objects


def _check_identity(app_id: int, version: int, objects: int, *, where: str) -> None:
    if app_id == 0 and version == 0 and objects == 0:
        return  # empty: ours to initialise
    if app_id != APPLICATION_ID:
        raise StoreFormatError(
            f"{where} is an SQLite database of another application, not a vmem store; "
            "it was left untouched. Open a new path instead.")
    if version > SCHEMA_VERSION:
        raise StoreFormatError(
            f"{where} was written by a newer vmem (schema version {version}; this vmem "
            f"reads up to {SCHEMA_VERSION}); it was left untouched. Upgrade vmem.")


def _ensure_schema(conn: sqlite3.Connection, *, where: str) -> None:
    identity = _identity(conn)
    _check_identity(*identity, where=where)
    if identity[1] == SCHEMA_VERSION:
        return
    with transaction(conn):
        app_id, version, objects = _identity(conn)  # again, now holding the write lock
        _check_identity(app_id, version, objects, where=where)
        if version == 0:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        for migration in MIGRATIONS[version:]:
            for statement in migration:
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


# --- Transactions ------------------------------------------------------------------
_savepoints = itertools.count(1)


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Reads that all see one committed state of the file, whatever other connections
    commit meanwhile (a deferred read transaction, or the transaction already open).

    A search ranks, then loads the ranked rows, then explains their scores: without one
    snapshot, a record deleted by another process in between would vanish half way.
    """
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One atomic unit of work: all of it commits, or none of it does.

    Outside a transaction this runs `BEGIN IMMEDIATE` ... `COMMIT`. Inside one (opened by
    an outer `transaction` or by the caller) it joins it through a savepoint: an error
    rolls back only the inner block, and nothing is durable until the outer one commits.
    """
    if conn.in_transaction:
        name = f"vmem_{next(_savepoints)}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


# --- Values in columns -------------------------------------------------------------
def time_to_db(value: datetime) -> str:
    """A fixed-width UTC ISO string, so text order is time order."""
    return ensure_utc(value).isoformat(timespec="microseconds")


def time_from_db(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def from_json(text: str) -> Any:
    return json.loads(text)


_SCOPE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def check_scope(scope: dict[str, str] | None) -> dict[str, str]:
    """Validate a scope such as {"user_id": "u1"}; None means no scope ({})."""
    if scope is None:
        return {}
    if not isinstance(scope, dict):
        raise StoreError(f"scope must be a dict such as {{'user_id': 'u1'}}, got "
                         f"{type(scope).__name__}")
    for key, value in scope.items():
        if not isinstance(key, str) or not _SCOPE_KEY.fullmatch(key):
            raise StoreError(f"scope key {key!r} must be a name such as 'user_id'")
        if not isinstance(value, str) or not value:
            raise StoreError(f"scope value for {key!r} must be a non-empty string, got "
                             f"{value!r}")
        check_unicode(f"scope value for {key!r}", value)
    return dict(scope)


def check_size(what: str, text: str, limit: int) -> None:
    """Refuse text over `limit` characters, or text SQLite cannot store as UTF-8."""
    if len(text) > limit:
        raise InputTooLargeError(
            f"{what} is {len(text):,} characters; the limit is {limit:,}. "
            "Split it into smaller pieces or shorten it.")
    check_unicode(what, text)


def check_unicode(what: str, text: str) -> None:
    """Refuse a string with an unpaired surrogate, which SQLite cannot store."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise StoreError(f"{what} contains an unpaired surrogate at position {exc.start}; "
                         "send valid Unicode text.") from None


def check_paging(page: int, page_size: int, *, size_name: str = "page_size") -> None:
    for name, value in (("page", page), (size_name, page_size)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise StoreError(f"{name} must be an integer, got {value!r}")
    if page < 0:
        raise StoreError(f"page must be 0 or more (0 is the first page), got {page}")
    if page_size < 1:
        raise StoreError(f"{size_name} must be at least 1, got {page_size}")
    if page_size > MAX_PAGE_SIZE:
        raise InputTooLargeError(f"{size_name}={page_size} is over the limit of "
                                 f"{MAX_PAGE_SIZE}; ask for more pages instead")
