"""The SQLite backend: every tier of an agent in one SQLite file (or one connection).

`SqliteBackend(target)` implements `vmem.storage.base.Backend`. `target` is ":memory:", a
file path or an open `sqlite3.Connection` (shared by every store built on it). Opening,
the schema, migrations and transactions are `vmem.store`'s; the FTS5 index and the
translation of filters to SQL are `vmem.search`'s; the exact pruned top-k is
`vmem.storage.topk`'s. This module is where they meet the stores' data: rows become
`Record`s and `Message`s, a `Filter` becomes a `Where`, a search becomes `Ranked` hits.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from ..errors import StoreError, StoreFormatError
from ..messages import Hit, Message, Record
from ..ranking import INDEX_VERSION, indexed_texts
from ..search import FtsIndex, Where
from ..store import (
    connect,
    from_json,
    snapshot,
    time_from_db,
    time_to_db,
    to_json,
    transaction,
)
from .base import Filter, Ranked, Scope, Tier, ids_in, scopes_to_forget
from .filelock import lock, unlock
from .topk import SearchCache

REINDEX_WAIT_S = 600  # how long an open waits for another process's re-index
_INDEXES: dict[Tier, FtsIndex] = {"archival": FtsIndex("archival_fts", "archival"),
                                  "recall": FtsIndex("messages_fts", "messages")}
_RECORD_COLUMNS = ("d.id, d.text, d.tags, d.scope, d.session_id, d.turn_id, d.source_url, "
                   "d.created_at, d.source, d.flagged, d.flag_reasons, d.invalid_at, "
                   "d.superseded_by")
_MESSAGE_COLUMNS = ("id, role, content, name, session_id, turn, created_at, tool_calls, "
                    "tool_call_id, meta")


class SqliteBackend:
    """Records, messages, core blocks, sessions and context state in SQLite + FTS5."""

    def __init__(self, target: str | os.PathLike[str] | sqlite3.Connection = ":memory:"
                 ) -> None:
        self.conn = connect(target)
        _index_again_if_older(self.conn)
        self._caches = {tier: SearchCache(index) for tier, index in _INDEXES.items()}
        self._file = None if isinstance(target, sqlite3.Connection) or os.fspath(target) in (
            "", ":memory:") else os.fspath(target)
        self._lock: TextIO | None = None

    # --- the store as a whole ---------------------------------------------------------
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with transaction(self.conn):
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        with snapshot(self.conn):
            yield

    @contextmanager
    def damaged(self, where: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.OperationalError):  # locked, missing table, ...
                raise
            raise StoreFormatError(
                f"{where} is corrupt or unreadable ({error}); it was left untouched (what "
                "was being written was rolled back). Restore it from a backup.") from error

    def close(self) -> None:
        self.conn.close()
        unlock(self._lock)
        self._lock = None

    def lock_writer(self, scope: Scope) -> None:
        """One writer per file (every scope in it): the advisory lock `<file>.lock`. A
        database in memory or a caller's connection has no other writer to keep out."""
        if self._file is not None and self._lock is None:
            self._lock = lock(self._file)

    # --- both searchable tiers --------------------------------------------------------
    def search(self, tier: Tier, terms: Sequence[str], where: Filter, limit: int,
               offset: int) -> Ranked:
        index, cache, sql = _INDEXES[tier], self._caches[tier], _where(where)
        cache.refresh(self.conn)  # before the snapshot: see SearchCache.refresh
        with snapshot(self.conn):  # rank, load and explain the same state of the file
            pruned = cache.search(self.conn, terms, sql, limit, offset)
            total, rows, idf = pruned or (*index.search(self.conn, terms, sql, limit, offset),
                                          None)
            if not rows:
                return Ranked(total)
            ids = tuple(rowid for rowid, _ in rows)
            loaded = self.records(Filter(ids=ids)) if tier == "archival" \
                else self.messages(Filter(ids=ids))
            by_id: dict[int, Any] = {value.id: value for value in loaded}
            parts = (pruned and cache.parts(terms, ids, idf)) or \
                index.contributions(self.conn, terms, ids, idf)
        return Ranked(total, tuple(Hit(by_id[rowid], score, terms_of)
                                   for (rowid, score), terms_of in zip(rows, parts, strict=True)))

    def count(self, tier: Tier, where: Filter) -> int:
        sql = _where(where)
        return self.conn.execute(f"SELECT count(*) FROM {_INDEXES[tier].docs} AS d "
                                 f"WHERE {sql.sql}", sql.params).fetchone()[0]

    # --- archival records -------------------------------------------------------------
    def insert_record(self, record: Record) -> int:
        try:
            with self._caches["archival"].writing(self.conn) as changes:
                rowid = self.conn.execute(
                    "INSERT INTO archival (id, text, tags, scope, session_id, turn_id, "
                    "source_url, created_at, source, flagged, flag_reasons) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (record.id, record.text, to_json(list(record.tags)),
                     to_json(dict(record.scope)), record.session_id, record.turn_id,
                     record.source_url, time_to_db(record.created_at), record.source,
                     int(record.flagged), to_json(list(record.flag_reasons)))).lastrowid
                changes.append((rowid, _INDEXES["archival"].add(self.conn, rowid, record.text),
                                1))
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"archival record {record.id} already exists") from exc
        return rowid

    def records(self, where: Filter) -> list[Record]:
        sql = _where(where)
        rows = self.conn.execute(f"SELECT {_RECORD_COLUMNS} FROM archival AS d WHERE {sql.sql} "
                                 "ORDER BY d.id", sql.params)
        return [_record(row) for row in rows]

    def delete_record(self, record_id: int, where: Filter) -> bool:
        with self._caches["archival"].writing(self.conn) as changes:
            if not self.count("archival", Filter(scope=where.scope, ids=(record_id,))):
                return False
            terms = _INDEXES["archival"].remove(self.conn, record_id)
            if terms is not None:
                changes.append((record_id, terms, -1))
            self.conn.execute("DELETE FROM archival WHERE id = ?", (record_id,))
        return True

    def invalidate_record(self, record_id: int, at: datetime, superseded_by: int | None
                          ) -> None:
        with self._caches["archival"].writing(self.conn):  # the index is unchanged
            self.conn.execute("UPDATE archival SET invalid_at = ?, superseded_by = ? "
                              "WHERE id = ?", (time_to_db(at), superseded_by, record_id))

    # --- recall messages --------------------------------------------------------------
    def add_message(self, message: Message, scope: Scope, *, document: str | None) -> int:
        try:
            with self._caches["recall"].writing(self.conn) as changes:
                rowid = self.conn.execute(
                    f"INSERT INTO messages ({_MESSAGE_COLUMNS}, scope) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (message.id, message.role, message.content, message.name,
                     message.session_id, message.turn, time_to_db(message.created_at),
                     None if message.tool_calls is None else to_json(message.tool_calls),
                     message.tool_call_id, to_json(message.meta), to_json(dict(scope)))
                ).lastrowid
                if document is not None:
                    changes.append((rowid, _INDEXES["recall"].add(self.conn, rowid, document),
                                    1))
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"message {message.id} is already in recall storage; "
                             "store a new Message (without an id) instead") from exc
        return rowid

    def messages(self, where: Filter) -> list[Message]:
        sql = _where(where)
        rows = self.conn.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages AS d "
                                 f"WHERE {sql.sql} ORDER BY d.id", sql.params)
        return [_message(row) for row in rows]

    def preceding_times(self, ids: Sequence[int], roles: Sequence[str], limit: int
                        ) -> dict[int, list[datetime | None]]:
        found: dict[int, list[datetime | None]] = {int(row_id): [] for row_id in ids}
        if not found or not roles or limit < 1:
            return found
        marks = ", ".join("?" * len(roles))
        rows = self.conn.execute(
            "SELECT d.id, p.created_at FROM messages AS d JOIN messages AS p ON p.id IN ("
            "SELECT q.id FROM messages AS q WHERE q.scope = d.scope AND "
            f"q.role IN ({marks}) AND q.id < d.id ORDER BY q.id DESC LIMIT ?) "
            f"WHERE {ids_in(list(found))} ORDER BY d.id, p.id DESC", (*roles, limit))
        parsed: dict[str | None, datetime | None] = {}  # hits of one sitting share rows
        for row_id, created_at in rows:
            if created_at not in parsed:
                parsed[created_at] = time_from_db(created_at)
            found[row_id].append(parsed[created_at])
        return found

    def latest_message(self, scope: Scope, roles: Sequence[str]) -> Message | None:
        sql = _where(Filter(roles=tuple(roles))).add("d.scope = ?", to_json(dict(scope)))
        row = self.conn.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages AS d WHERE "
                                f"{sql.sql} ORDER BY d.id DESC LIMIT 1", sql.params).fetchone()
        return None if row is None else _message(row)

    def last_turn(self, session_id: int, scope: Scope) -> int:
        sql = Where().add("d.session_id = ?", session_id).scope(dict(scope))
        row = self.conn.execute(f"SELECT max(d.turn) FROM messages AS d WHERE {sql.sql}",
                                sql.params).fetchone()
        return row[0] or 0

    # --- one agent: sessions, core memory, the context's state ------------------------
    def start_session(self, scope: Scope, at: datetime, session_id: int | None = None) -> int:
        try:
            with transaction(self.conn):
                return self.conn.execute(
                    "INSERT INTO sessions (id, scope, started_at) VALUES (?, ?, ?)",
                    (session_id, to_json(dict(scope)), time_to_db(at))).lastrowid
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"session {session_id} already exists") from exc

    def scopes(self) -> list[dict[str, str]]:
        rows = self.conn.execute(
            "SELECT scope FROM sessions UNION SELECT scope FROM messages UNION SELECT scope "
            "FROM archival UNION SELECT scope FROM core_blocks UNION SELECT scope FROM "
            "context_state ORDER BY 1")
        return [from_json(row[0]) for row in rows]

    def sessions(self, scope: Scope) -> list[tuple[int, datetime]]:
        rows = self.conn.execute("SELECT id, started_at FROM sessions WHERE scope = ? "
                                 "ORDER BY id", (to_json(dict(scope)),))
        return [(row[0], datetime.fromisoformat(row[1])) for row in rows]

    def load_core(self, scope: Scope) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT block FROM core_blocks WHERE scope = ? "
                                 "ORDER BY position", (to_json(dict(scope)),))
        return [from_json(row[0]) for row in rows]

    def create_core(self, scope: Scope, blocks: Sequence[dict[str, Any]]) -> None:
        key = to_json(dict(scope))
        with transaction(self.conn):
            self.conn.executemany(
                "INSERT INTO core_blocks (scope, position, label, block) VALUES (?, ?, ?, ?)",
                [(key, i, block["label"], to_json(block)) for i, block in enumerate(blocks)])

    def save_block(self, scope: Scope, block: dict[str, Any]) -> None:
        with transaction(self.conn):
            self.conn.execute("UPDATE core_blocks SET block = ? WHERE scope = ? AND label = ?",
                              (to_json(block), to_json(dict(scope)), block["label"]))

    def load_context(self, scope: Scope) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT state FROM context_state WHERE scope = ?",
                                (to_json(dict(scope)),)).fetchone()
        return None if row is None else from_json(row[0])

    def save_context(self, scope: Scope, state: dict[str, Any]) -> None:
        with transaction(self.conn):
            self.conn.execute("INSERT OR REPLACE INTO context_state (scope, state) "
                              "VALUES (?, ?)", (to_json(dict(scope)), json.dumps(state)))

    # --- forgetting a scope (issue 15) ------------------------------------------------
    def forget(self, scope: Scope) -> dict[str, int]:
        """Delete the agents `in_scope` of `scope` in every tier, then scrub the file
        (`_scrub`), so no byte of what was deleted is left in it or in its WAL. The
        writer lock is the file's: taken here when this backend does not hold it yet,
        and held until `close`, like a writer's."""
        if self.conn.in_transaction:
            raise StoreError("forget cannot run inside a transaction: it vacuums the "
                             "file afterwards; call it outside `transaction()`")
        self.lock_writer(scope)  # the file's lock: no agent starts while it is held
        owned = [to_json(each) for each in scopes_to_forget(self.scopes(), scope)]
        deleted: dict[str, int] = {}
        secure = self.conn.execute("PRAGMA secure_delete").fetchone()[0]
        self.conn.execute("PRAGMA secure_delete = ON")  # freed space is zeroed
        try:
            with transaction(self.conn):
                sql = _where(Filter(scope=scope))
                for index in _INDEXES.values():
                    ids = [row[0] for row in self.conn.execute(
                        f"SELECT d.id FROM {index.docs} AS d WHERE {sql.sql}", sql.params)]
                    for rowid in ids:
                        index.remove(self.conn, rowid)  # the statistics follow
                    self.conn.execute(f"DELETE FROM {index.docs} WHERE id IN "
                                      "(SELECT value FROM json_each(?))", (json.dumps(ids),))
                    deleted[index.docs] = len(ids)
                for table in ("sessions", "core_blocks", "context_state"):
                    deleted[table] = self.conn.execute(
                        f"DELETE FROM {table} WHERE scope IN (SELECT value FROM json_each(?))",
                        (json.dumps(owned),)).rowcount
            _scrub(self.conn)
        finally:
            self.conn.execute(f"PRAGMA secure_delete = {int(secure)}")
        return deleted


def count_sessions(path: str) -> int:
    """How many sessions (of every scope) the agent file at `path` holds, read without
    writing to it: 0 for ":memory:", a missing file, or one that is not a vmem store."""
    file = Path(path)
    if path in ("", ":memory:") or not file.is_file():
        return 0
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _index_again_if_older(conn: sqlite3.Connection) -> None:
    """Index every record and searchable message again when the file's indexes were
    built by an older `INDEX_VERSION` (a query analysed today would miss their terms).

    It is one transaction (seconds for a large file). A second process that opens the
    file meanwhile waits for it, up to `REINDEX_WAIT_S`, instead of failing on the lock.
    """
    deadline = time.monotonic() + REINDEX_WAIT_S
    while conn.execute("SELECT version FROM index_state").fetchone()[0] < INDEX_VERSION:
        try:
            _index_again(conn)
        except sqlite3.OperationalError as error:
            if "locked" not in str(error):
                raise
            if time.monotonic() > deadline:
                raise StoreError("another process has been indexing this file again for "
                                 f"over {REINDEX_WAIT_S} s (an upgrade of vmem); try to "
                                 "open it again when it is done") from error


def _index_again(conn: sqlite3.Connection) -> None:
    """One transaction: every indexed row removed and added with today's analyzer."""
    version = "SELECT version FROM index_state"
    with transaction(conn):
        if conn.execute(version).fetchone()[0] >= INDEX_VERSION:
            return  # another connection did it meanwhile
        records = conn.execute("SELECT id, text FROM archival ORDER BY id").fetchall()
        stored = [(_message(row[:-1]), row[-1]) for row in conn.execute(
            f"SELECT {_MESSAGE_COLUMNS}, scope FROM messages ORDER BY id").fetchall()]
        for tier, rowid, text in indexed_texts(records, stored):
            _INDEXES[tier].remove(conn, rowid)
            _INDEXES[tier].add(conn, rowid, text)
        conn.execute("UPDATE index_state SET version = ?", (INDEX_VERSION,))


def _scrub(conn: sqlite3.Connection) -> None:
    """Rewrite the file from its live rows only, and empty its WAL.

    A deleted row's bytes otherwise survive in three places: the full-text index (FTS5
    deletes by appending a delete marker; the old segment keeps the terms until merged:
    'optimize' merges every segment into one), free pages and cell gaps of the file
    (VACUUM rebuilds it; `secure_delete` zeroes what the deletes freed before that), and
    the WAL, which keeps every page written since its last reset (a TRUNCATE checkpoint
    copies it into the file and cuts it to zero bytes). VACUUM's scratch copy stays in
    memory (`temp_store`), not in a temporary file. A reader holding an old snapshot
    blocks the truncation: then this raises, and running forget again finishes it."""
    temp = conn.execute("PRAGMA temp_store").fetchone()[0]
    conn.execute("PRAGMA temp_store = MEMORY")
    try:
        with transaction(conn):
            for index in _INDEXES.values():
                conn.execute(f"INSERT INTO {index.table}({index.table}) VALUES ('optimize')")
        conn.execute("VACUUM")
    finally:
        conn.execute(f"PRAGMA temp_store = {int(temp)}")
    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    if busy:
        raise StoreError("the forgotten rows are deleted, but another connection is reading "
                         "an older state of the file, so its WAL still holds their old pages; "
                         "close the readers (ArchivalStore, RecallStore) and run forget again")


def _where(where: Filter) -> Where:
    """The SQL conditions (on the table aliased `d`) that `where` stands for."""
    sql = Where()
    if where.ids is not None:
        sql.add("d.id IN (SELECT value FROM json_each(?))", json.dumps(list(where.ids)))
    if where.exclude:
        sql.hide(ids_in(where.exclude))
    sql.period(where.start, where.end).scope(None if where.scope is None else dict(where.scope))
    if not where.include_invalid:
        sql.hide("d.invalid_at IS NOT NULL")
    if where.tags:
        marks = ", ".join("?" * len(where.tags))
        if where.tag_mode == "any":
            sql.add(f"EXISTS (SELECT 1 FROM json_each(d.tags) WHERE value IN ({marks}))",
                    *where.tags)
        else:
            sql.add(f"(SELECT count(*) FROM json_each(d.tags) WHERE value IN ({marks})) = ?",
                    *where.tags, len(where.tags))
    if where.roles is not None:
        sql.add(f"d.role IN ({', '.join('?' * len(where.roles))})", *where.roles)
    return sql


def _record(row: tuple) -> Record:
    (record_id, text, tags, scope, session_id, turn_id, source_url, created_at, source,
     flagged, flag_reasons, invalid_at, superseded_by) = row
    return Record(text=text, id=record_id, tags=tuple(from_json(tags)), scope=from_json(scope),
                  session_id=session_id, turn_id=turn_id, source_url=source_url,
                  created_at=time_from_db(created_at), source=source, flagged=bool(flagged),
                  flag_reasons=tuple(from_json(flag_reasons)),
                  invalid_at=time_from_db(invalid_at), superseded_by=superseded_by)


def _message(row: tuple) -> Message:
    (message_id, role, content, name, session_id, turn, created_at, tool_calls,
     tool_call_id, meta) = row
    return Message(role=role, content=content, name=name, id=message_id,
                   session_id=session_id, turn=turn, created_at=time_from_db(created_at),
                   tool_calls=None if tool_calls is None else from_json(tool_calls),
                   tool_call_id=tool_call_id, meta=from_json(meta))
