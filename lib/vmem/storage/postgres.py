"""The PostgreSQL backend: many agents in one database, served to many machines.

Optional extra: postgres (psycopg 3; imported only when a PostgreSQL URL is used).

`PostgresBackend(url)` implements `vmem.storage.base.Backend` with the same behaviour as
`SqliteBackend`: the same tables (in PostgreSQL types), the same filters, and search that
ranks exactly as FTS5 (`vmem.storage.postgres_search`). One database holds many agents:
an agent is its scope, and every row carries it. Each backend has one connection, in
autocommit mode, so every write runs in an explicit transaction (`transaction()`, nested
ones become savepoints) and a client killed mid-write leaves nothing half-applied.
Reads that must agree (a search: rank, load, explain) run in one REPEATABLE READ
transaction (`snapshot()`).

One writer per agent (`lock_writer`): a session-level advisory lock keyed by the schema
and the scope, held by this connection, so the server releases it when the connection
ends, however the client died (a second writer waits up to `LOCK_WAIT_MS` for that).
A refused writer is told who holds it: the holder's `application_name`, set to its
process, host and start time when it took the lock.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ..clock import utc_now
from ..errors import AgentLockedError, StoreError, StoreFormatError
from ..messages import Hit, Message, Record
from ..ranking import INDEX_VERSION, indexed_texts
from ..store import from_json, to_json
from .base import Filter, Ranked, Scope, Tier, scopes_to_forget
from .postgres_cache import PgSearchCache
from .postgres_schema import INDEXES, connect, lock_key, safe_url, schema_version

LOCK_WAIT_MS = 1000
_HIDDEN = "d.invalid_at IS NOT NULL"  # archival rows hidden by default (few; indexed)
_TABLES: dict[Tier, str] = {"archival": "archival", "recall": "messages"}
_TIERS: dict[str, Tier] = {table: tier for tier, table in _TABLES.items()}
_RECORD_COLUMNS = ("d.id, d.text, d.tags, d.scope, d.session_id, d.turn_id, d.source_url, "
                   "d.created_at, d.source, d.flagged, d.flag_reasons, d.invalid_at, "
                   "d.superseded_by")
_MESSAGE_COLUMNS = ("d.id, d.role, d.content, d.name, d.session_id, d.turn, d.created_at, "
                    "d.tool_calls, d.tool_call_id, d.meta")


class PostgresBackend:
    """Records, messages, core blocks, sessions and context state in PostgreSQL."""

    def __init__(self, url: str, *, conn: psycopg.Connection | None = None,
                 caches: dict[Tier, PgSearchCache] | None = None) -> None:
        """Connect to `url`, or use `conn` (autocommit, in UTC, the schema current; then
        `close` leaves it open to its owner, e.g. a pool) and share `caches`."""
        self.url = url
        self.where = safe_url(url)
        self._owned = conn is None
        self.conn = connect(url) if conn is None else conn
        _index_again_if_older(self.conn)
        self.caches = caches if caches is not None else new_caches()

    # --- the store as a whole ---------------------------------------------------------
    def schema_version(self) -> int:
        return schema_version(self.conn)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.conn.transaction():
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        if not self._idle():
            yield  # the caller's transaction is the snapshot
            return
        # One statement opens it (not BEGIN, then SET TRANSACTION), in pipeline mode: the
        # BEGIN goes with the first query and the COMMIT needs no wait of its own, so a
        # search waits for the server once per query it reads, not once per statement.
        try:
            with self.conn.pipeline():
                self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield
                self.conn.execute("COMMIT")
        except BaseException:
            self.conn.rollback()  # out of the pipeline: after an error it runs nothing
            raise

    def _idle(self) -> bool:
        """Whether no transaction is open on the connection (each statement commits)."""
        return self.conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

    @contextmanager
    def damaged(self, where: str) -> Iterator[None]:
        try:
            yield
        except (psycopg.errors.DataCorrupted, psycopg.errors.IndexCorrupted) as error:
            raise StoreFormatError(
                f"{where} is damaged ({error}); what was being written was rolled back. "
                "Restore it from a backup.") from error

    def close(self) -> None:
        if self._owned:
            self.conn.close()

    def lock_writer(self, scope: Scope) -> None:
        """Hold the one-writer lock of the agent `scope` until this backend closes, or
        raise `AgentLockedError` naming the holder."""
        key = lock_key("vmem agent", self._schema(), to_json(dict(scope)))
        if self._take(key):
            holder = (f"process {os.getpid()} on {socket.gethostname()} since "
                      f"{utc_now().isoformat(timespec='seconds')}")
            self.conn.execute("SELECT set_config('application_name', %s, false)",
                              (f"vmem {holder}"[:63],))
            return
        row = self.conn.execute(
            "SELECT a.application_name, a.client_addr, a.pid FROM pg_locks AS l "
            "JOIN pg_stat_activity AS a ON a.pid = l.pid WHERE l.locktype = 'advisory' "
            "AND l.granted AND ((l.classid::bigint << 32) | l.objid::bigint) = %s "
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            (key,)).fetchone()
        name, address, pid = row if row else ("", None, None)
        holder = (name.removeprefix("vmem ") if name.startswith("vmem ") else
                  f"server process {pid} (client {address or 'on a local socket'})"
                  if pid else "another connection")
        raise AgentLockedError(
            f"the agent {dict(scope) or '(no scope)'} in {self.where} is already open for "
            f"writing by {holder}. Close that Memory first, or read and search it with "
            "ArchivalStore(url) / RecallStore(url), which may run beside it.")

    def _take(self, key: int) -> bool:
        """Take the advisory lock `key`, waiting up to `LOCK_WAIT_MS` for a holder whose
        connection is ending (a process that just exited or was killed: the server ends
        its session when it sees the connection close)."""
        try:
            with self.conn.transaction():
                self.conn.execute(f"SET LOCAL lock_timeout = {LOCK_WAIT_MS}")
                self.conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        except psycopg.errors.LockNotAvailable:
            return False
        return True

    def _schema(self) -> str:
        return self.conn.execute("SELECT current_schema()").fetchone()[0] or ""

    # --- both searchable tiers --------------------------------------------------------
    def search(self, tier: Tier, terms: Sequence[str], where: Filter, limit: int,
               offset: int) -> Ranked:
        # The cache serves a snapshot of its own, never a caller's transaction (which may
        # hold uncommitted writes); PgIndex ranks the rest, identically. It knows each
        # row's scope and whether it is invalid: only other conditions are asked in SQL.
        own = self._idle()
        with self.snapshot():  # rank, load and explain the same state of the database
            found = None
            if own:
                visible = replace(where, include_invalid=True, exclude=())
                sql, params = (None, []) if replace(visible, scope=None) == Filter() \
                    else _where(visible)
                found = self.caches[tier].search(
                    self.conn, terms, where.scope, sql, params, where.include_invalid,
                    where.exclude, limit, offset)
            if found is None:
                sql, params = _where(where)
                found = INDEXES[tier].search(self.conn, terms, sql, params, limit, offset)
            total, scored = found
            if not scored:
                return Ranked(total)
            ids = tuple(hit.doc for hit in scored)
            # Sent here, read after the snapshot ends: its COMMIT goes with this query.
            rows = self._select(tier, Filter(ids=ids))
        loaded = map(_record if tier == "archival" else _message, rows)
        by_id: dict[int, Any] = {value.id: value for value in loaded}
        return Ranked(total, tuple(Hit(by_id[hit.doc], hit.score, hit.parts)
                                   for hit in scored))

    def count(self, tier: Tier, where: Filter) -> int:
        sql, params = _where(where)
        return self.conn.execute(f"SELECT count(*) FROM {_TABLES[tier]} AS d WHERE {sql}",
                                 params).fetchone()[0]

    # --- archival records -------------------------------------------------------------
    def insert_record(self, record: Record) -> int:
        _refuse_nul("the archival record", record.text, record.source_url, *record.tags,
                    *record.scope.values(), *record.flag_reasons)
        columns = ("text, tags, scope, session_id, turn_id, source_url, created_at, source, "
                   "flagged, flag_reasons")
        values = (record.text, Jsonb(list(record.tags)), Jsonb(dict(record.scope)),
                  record.session_id, record.turn_id, record.source_url, record.created_at,
                  record.source, bool(record.flagged), to_json(list(record.flag_reasons)))
        try:
            return self._insert("archival", columns, values, record.id, record.text)
        except psycopg.errors.UniqueViolation as exc:
            raise StoreError(f"archival record {record.id} already exists") from exc

    def _insert(self, table: str, columns: str, values: tuple, row_id: int | None,
                document: str | None = None) -> int:
        """Insert one row, indexed with `document` unless None, and return its id:
        `row_id` when given (later ids continue after it), else the next of the table's
        identity sequence. A new row without a caller's transaction is one statement,
        atomic on its own; else it runs in a transaction (a savepoint in the caller's, so
        a refused row leaves the caller's transaction usable)."""
        names = [name.strip() for name in columns.split(",")]
        if row_id is not None:
            names, values = ["id", *names], (row_id, *values)
        with self.conn.transaction() if row_id is not None or not self._idle() \
                else nullcontext():
            if document is None:
                new_id = self.conn.execute(
                    f"INSERT INTO {table} ({', '.join(names)}) VALUES "
                    f"({', '.join(['%s'] * len(values))}) RETURNING id", values).fetchone()[0]
            else:
                new_id = INDEXES[_TIERS[table]].insert_indexed(self.conn, names, values,
                                                               document)
            if row_id is not None:
                self.conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                                  f"(SELECT max(id) FROM {table}))")
        return new_id

    def records(self, where: Filter) -> list[Record]:
        return [_record(row) for row in self._select("archival", where)]

    def _select(self, tier: Tier, where: Filter) -> psycopg.Cursor:
        """The query of the records or messages `where` keeps, in id order (sent; its rows
        are read from the cursor)."""
        sql, params = _where(where)
        columns = _RECORD_COLUMNS if tier == "archival" else _MESSAGE_COLUMNS
        return self.conn.execute(f"SELECT {columns} FROM {_TABLES[tier]} AS d WHERE {sql} "
                                 "ORDER BY d.id", params)

    def delete_record(self, record_id: int, where: Filter) -> bool:
        with self.conn.transaction():
            if not self.count("archival", Filter(scope=where.scope, ids=(record_id,))):
                return False
            INDEXES["archival"].remove(self.conn, record_id)
            self.conn.execute("DELETE FROM archival WHERE id = %s", (record_id,))
        return True

    def invalidate_record(self, record_id: int, at: datetime, superseded_by: int | None
                          ) -> None:
        with self.conn.transaction():
            self.conn.execute("UPDATE archival SET invalid_at = %s, superseded_by = %s "
                              "WHERE id = %s", (at, superseded_by, record_id))

    # --- recall messages --------------------------------------------------------------
    def add_message(self, message: Message, scope: Scope, *, document: str | None) -> int:
        _refuse_nul("the message", message.content, message.name, message.tool_call_id,
                    *scope.values())
        columns = ("role, content, name, session_id, turn, created_at, tool_calls, "
                   "tool_call_id, meta, scope")
        values = (message.role, message.content, message.name, message.session_id,
                  message.turn, message.created_at,
                  None if message.tool_calls is None else to_json(message.tool_calls),
                  message.tool_call_id, to_json(message.meta), Jsonb(dict(scope)))
        if document is not None:
            _refuse_nul("the message's indexed text", document)
        try:
            message_id = self._insert("messages", columns, values, message.id, document)
        except psycopg.errors.UniqueViolation as exc:
            raise StoreError(f"message {message.id} is already in recall storage; "
                             "store a new Message (without an id) instead") from exc
        return message_id

    def messages(self, where: Filter) -> list[Message]:
        return [_message(row) for row in self._select("recall", where)]

    def preceding_times(self, ids: Sequence[int], roles: Sequence[str], limit: int
                        ) -> dict[int, list[datetime | None]]:
        found: dict[int, list[datetime | None]] = {int(row_id): [] for row_id in ids}
        if not found or not roles or limit < 1:
            return found
        rows = self.conn.execute(
            "SELECT d.id, p.created_at FROM messages AS d CROSS JOIN LATERAL ("
            "SELECT q.id, q.created_at FROM messages AS q WHERE q.scope = d.scope AND "
            "q.role = ANY(%s) AND q.id < d.id ORDER BY q.id DESC LIMIT %s) AS p "
            "WHERE d.id = ANY(%s) ORDER BY d.id, p.id DESC",
            (list(roles), limit, list(found))).fetchall()
        for row_id, created_at in rows:
            found[row_id].append(_utc(created_at))
        return found

    def latest_message(self, scope: Scope, roles: Sequence[str]) -> Message | None:
        sql, params = _where(Filter(roles=tuple(roles)))
        row = self.conn.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages AS d WHERE {sql} "
                                "AND d.scope = %s ORDER BY d.id DESC LIMIT 1",
                                (*params, Jsonb(dict(scope)))).fetchone()
        return None if row is None else _message(row)

    def last_turn(self, session_id: int, scope: Scope) -> int:
        sql, params = _where(Filter(scope=scope))
        row = self.conn.execute(f"SELECT max(d.turn) FROM messages AS d WHERE "
                                f"d.session_id = %s AND {sql}", (session_id, *params)).fetchone()
        return row[0] or 0

    # --- one agent: sessions, core memory, the context's state ------------------------
    def start_session(self, scope: Scope, at: datetime, session_id: int | None = None) -> int:
        try:
            return self._insert("sessions", "scope, started_at", (to_json(dict(scope)), at),
                                session_id)
        except psycopg.errors.UniqueViolation as exc:
            raise StoreError(f"session {session_id} already exists") from exc

    def scopes(self) -> list[dict[str, str]]:
        rows = self.conn.execute(
            "SELECT scope FROM sessions UNION SELECT scope::text FROM messages UNION "
            "SELECT scope::text FROM archival UNION SELECT scope FROM core_blocks UNION "
            "SELECT scope FROM context_state")
        unique = {to_json(from_json(row[0])) for row in rows}  # jsonb orders keys its own way
        return [from_json(text) for text in sorted(unique)]

    def sessions(self, scope: Scope) -> list[tuple[int, datetime]]:
        rows = self.conn.execute("SELECT id, started_at FROM sessions WHERE scope = %s "
                                 "ORDER BY id", (to_json(dict(scope)),))
        return [(row[0], _utc(row[1])) for row in rows]

    def load_core(self, scope: Scope) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT block FROM core_blocks WHERE scope = %s "
                                 "ORDER BY position", (to_json(dict(scope)),))
        return [from_json(row[0]) for row in rows]

    def create_core(self, scope: Scope, blocks: Sequence[dict[str, Any]]) -> None:
        key = to_json(dict(scope))
        with self.conn.transaction(), self.conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO core_blocks (scope, position, label, block) VALUES (%s, %s, %s, %s)",
                [(key, i, block["label"], to_json(block)) for i, block in enumerate(blocks)])

    def save_block(self, scope: Scope, block: dict[str, Any]) -> None:
        with self.conn.transaction():
            self.conn.execute("UPDATE core_blocks SET block = %s WHERE scope = %s AND label = %s",
                              (to_json(block), to_json(dict(scope)), block["label"]))

    def load_context(self, scope: Scope) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT state FROM context_state WHERE scope = %s",
                                (to_json(dict(scope)),)).fetchone()
        return None if row is None else from_json(row[0])

    def save_context(self, scope: Scope, state: dict[str, Any]) -> None:
        with self.conn.transaction():
            self.conn.execute("INSERT INTO context_state (scope, state) VALUES (%s, %s) "
                              "ON CONFLICT (scope) DO UPDATE SET state = excluded.state",
                              (to_json(dict(scope)), json.dumps(state)))

    # --- forgetting a scope (issue 15) ------------------------------------------------
    def forget(self, scope: Scope) -> dict[str, int]:
        """Delete the agents `in_scope` of `scope` in every tier in one transaction, then
        VACUUM the tables it touched. Each agent's writer lock is taken first (the
        scope's own too, so no writer opens it meanwhile) and released afterwards. What
        VACUUM does and does not erase: docs/RELIABILITY.md."""
        owned = scopes_to_forget(self.scopes(), scope)
        if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            raise StoreError("forget cannot run inside a transaction: it vacuums the "
                             "tables afterwards; call it outside `transaction()`")
        locked = list({to_json(each): each for each in (dict(scope), *owned)}.values())
        held: list[int] = []
        try:
            for each in locked:
                self.lock_writer(each)
                held.append(lock_key("vmem agent", self._schema(), to_json(each)))
            deleted = self._delete_scope(scope)
            tables = [*_TABLES.values(), *(index.postings for index in INDEXES.values()),
                      "vmem_fts_stats", "sessions", "core_blocks", "context_state"]
            self.conn.execute(f"VACUUM (ANALYZE) {', '.join(tables)}")
        finally:
            for key in held:
                self.conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        return deleted

    def _delete_scope(self, scope: Scope) -> dict[str, int]:
        """Delete the rows of `scope` and of every stored agent in it, with their postings
        and statistics, in one transaction (the agents read inside it, so one that starts
        meanwhile goes whole or stays whole)."""
        deleted: dict[str, int] = {}
        sql, params = _where(Filter(scope=scope))
        with self.conn.transaction():
            owned = [to_json(each) for each in scopes_to_forget(self.scopes(), scope)]
            for tier, table in _TABLES.items():
                ids = [row[0] for row in self.conn.execute(
                    f"SELECT d.id FROM {table} AS d WHERE {sql}", params)]
                for doc in ids:
                    INDEXES[tier].remove(self.conn, doc)  # postings and statistics
                self.conn.execute(f"DELETE FROM {table} WHERE id = ANY(%s)", (ids,))
                deleted[table] = len(ids)
            for table in ("sessions", "core_blocks", "context_state"):
                deleted[table] = self.conn.execute(
                    f"DELETE FROM {table} WHERE scope = ANY(%s)", (owned,)).rowcount
        return deleted


def new_caches() -> dict[Tier, PgSearchCache]:
    """One search cache per tier, for the backends of one process on one database."""
    return {tier: PgSearchCache(index, hidden=_HIDDEN if tier == "archival" else None)
            for tier, index in INDEXES.items()}


def count_sessions(url: str) -> int:
    """How many sessions (of every scope) the database at `url` holds, read without
    writing to it: 0 when it cannot be reached or is not a vmem store."""
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            found = conn.execute("SELECT to_regclass('vmem_meta') IS NOT NULL AND "
                                 "to_regclass('sessions') IS NOT NULL").fetchone()[0]
            return conn.execute("SELECT count(*) FROM sessions").fetchone()[0] if found else 0
    except psycopg.Error:
        return 0


def _index_again_if_older(conn: psycopg.Connection) -> None:
    """Index every record and searchable message again when the schema's indexes were
    built by an older `INDEX_VERSION` (a query analysed today would miss their terms)."""
    version = "SELECT value::int FROM vmem_meta WHERE key = 'index_version'"
    if conn.execute(version).fetchone()[0] >= INDEX_VERSION:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("vmem index version"),))
        if conn.execute(version).fetchone()[0] >= INDEX_VERSION:
            return  # another connection did it meanwhile
        records = conn.execute("SELECT id, text FROM archival ORDER BY id").fetchall()
        stored = [(_message(row[:-1]), to_json(row[-1])) for row in conn.execute(
            f"SELECT {_MESSAGE_COLUMNS}, d.scope FROM messages AS d ORDER BY d.id").fetchall()]
        for tier, rowid, text in indexed_texts(records, stored):
            INDEXES[tier].remove(conn, rowid)
            INDEXES[tier].add(conn, rowid, text)
        conn.execute("UPDATE vmem_meta SET value = %s WHERE key = 'index_version'",
                     (str(INDEX_VERSION),))


def _refuse_nul(what: str, *values: str | None) -> None:
    """PostgreSQL text cannot hold the character NUL (SQLite's can): refuse it, saying so."""
    if any(value is not None and "\x00" in value for value in values):
        raise StoreError(f"{what} contains the character NUL (\\x00), which PostgreSQL "
                         "cannot store; remove it.")


def _where(where: Filter) -> tuple[str, list[Any]]:
    """The SQL condition (on the table aliased `d`) that `where` stands for, and its
    parameters. A tag or scope value with NUL matches nothing: none can be stored."""
    wanted = [*where.tags, *(where.scope or {}).values(), *(where.roles or ())]
    if any("\x00" in value for value in wanted):
        return "false", []
    clauses: list[str] = []
    params: list[Any] = []
    if where.ids is not None:
        clauses.append("d.id = ANY(%s)")
        params.append(list(where.ids))
    if where.exclude:
        clauses.append("d.id <> ALL(%s)")
        params.append(list(where.exclude))
    if where.start is not None:
        clauses.append("d.created_at >= %s")
        params.append(where.start)
    if where.end is not None:
        clauses.append("d.created_at <= %s")
        params.append(where.end)
    if where.scope:
        clauses.append("d.scope @> %s")
        params.append(Jsonb(dict(where.scope)))
    if not where.include_invalid:
        clauses.append(f"NOT ({_HIDDEN})")
    if where.tags:
        clauses.append("d.tags ?| %s" if where.tag_mode == "any" else "d.tags ?& %s")
        params.append(list(where.tags))
    if where.roles is not None:
        clauses.append("d.role = ANY(%s)")
        params.append(list(where.roles))
    return " AND ".join(clauses) or "true", params


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(timezone.utc)


def _record(row: tuple) -> Record:
    (record_id, text, tags, scope, session_id, turn_id, source_url, created_at, source,
     flagged, flag_reasons, invalid_at, superseded_by) = row
    return Record(text=text, id=record_id, tags=tuple(tags), scope=dict(sorted(scope.items())),
                  session_id=session_id, turn_id=turn_id, source_url=source_url,
                  created_at=_utc(created_at), source=source, flagged=flagged,
                  flag_reasons=tuple(from_json(flag_reasons)), invalid_at=_utc(invalid_at),
                  superseded_by=superseded_by)


def _message(row: tuple) -> Message:
    (message_id, role, content, name, session_id, turn, created_at, tool_calls,
     tool_call_id, meta) = row
    return Message(role=role, content=content, name=name, id=message_id,
                   session_id=session_id, turn=turn, created_at=_utc(created_at),
                   tool_calls=None if tool_calls is None else from_json(tool_calls),
                   tool_call_id=tool_call_id, meta=from_json(meta))
