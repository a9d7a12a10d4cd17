"""One persisted agent: every memory tier in one SQLite file, through one connection.

`Memory.open("agent.db")` gives an object with `core`, `context`, `recall`, `archival`
and `session_id`. The file holds core memory (with each block's edit history), the recall
log, archival records with their FTS5 index, the context's summary and in-context message
ids, and a sessions table: each open starts a new session. Every append to the context
commits its message, the queue and the summary in one transaction, and every core edit
commits with its history, so a killed process loses at most the write in flight. Closing
and reopening (in another process too) renders the same prompt.

One writer per agent: an open `Memory` holds an advisory lock on `<file>.lock` (released
by the operating system when the process dies) and a second `Memory.open` of the same
file, from any process, is refused with a message naming the holder. Two writers would
otherwise each keep their own copy of the context and overwrite each other's. Other
processes may still read and search the file (`ArchivalStore(path)`, `RecallStore(path)`)
or insert archival records, at any time: WAL lets readers run beside the writer.

A scope (`{"user_id": "u1"}`) binds the whole agent to one user or agent: its messages,
records, core memory and context state are kept apart from other scopes in the same file,
and its stores count only its own rows, so its prompt never shows another scope's activity.
The tools and the context apply the scope for you. `memory.archival` and `memory.recall`
are the file's stores, shared by every scope: when you call their `search`, `records`,
`get`, `insert`, `delete` or `invalidate` yourself, pass `scope=memory.scope`. Ranking
statistics (document counts and frequencies) are shared by all scopes of a file,
so where that matters, use one file per user.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from .archival import ArchivalStore
from .clock import Clock, utc_now
from .context import MainContext
from .core import Block, CoreMemory
from .errors import AgentLockedError, StoreError, StoreFormatError
from .recall import RecallStore
from .search import Where
from .store import check_scope, connect, from_json, time_to_db, to_json, transaction
from .summarize import Summarizer
from .tokens import Counter

DEFAULT_SYSTEM = ("You are a helpful assistant with a long-term memory. Use your memory "
                  "tools to remember what matters and to look up what is no longer in view.")
DEFAULT_MAX_TOKENS = 4000  # tool schemas alone take about 1,000 (ApproxCounter)


class Memory:
    """All tiers of one agent, sharing one SQLite connection. Build it with `Memory.open`."""

    def __init__(self, conn: sqlite3.Connection, *, scope: dict[str, str], session_id: int,
                 core: CoreMemory, context: MainContext, recall: RecallStore,
                 archival: ArchivalStore, clock: Clock, path: str,
                 lock: TextIO | None) -> None:
        self.conn = conn
        self.scope: dict[str, str] | None = scope or None
        self.session_id = session_id
        self.core = core
        self.context = context
        self.recall = recall
        self.archival = archival
        self.clock = clock
        self.path = path
        self._lock = lock

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ":memory:",
             scope: dict[str, str] | None = None, *, system: str = DEFAULT_SYSTEM,
             max_tokens: int = DEFAULT_MAX_TOKENS, core: CoreMemory | None = None,
             warn_at: float = 0.7, flush_to: float = 0.5,
             summarizer: Summarizer | None = None, counter: Counter | None = None,
             clock: Clock | None = None) -> Memory:
        """Open (or create) the agent stored at `path` and start a new session.

        `core` seeds core memory for a new agent (default: `CoreMemory.default()`); an
        existing file keeps its own. The context settings (`system`, `max_tokens`, ...)
        are not stored: pass the same ones each time. Raises `StoreFormatError` for a
        file that is not a vmem store (left untouched) and `AgentLockedError` when
        another `Memory` has the file open.
        """
        clock = clock or utc_now
        scope = check_scope(scope)
        where = os.fspath(path)
        lock = None if where in ("", ":memory:") else _lock(where)
        try:
            conn = connect(where)
        except BaseException:
            _unlock(lock)
            raise
        try:
            return cls._load(conn, scope, where, lock, clock, system=system,
                             max_tokens=max_tokens, core=core, warn_at=warn_at,
                             flush_to=flush_to, summarizer=summarizer, counter=counter)
        except BaseException as error:
            conn.close()
            _unlock(lock)
            if isinstance(error, sqlite3.DatabaseError) and \
                    not isinstance(error, sqlite3.OperationalError):  # corrupt pages
                raise StoreFormatError(
                    f"{where} is corrupt or unreadable ({error}); it was left untouched "
                    "(the session it started was rolled back). Restore it from a backup.") \
                    from error
            raise

    @classmethod
    def _load(cls, conn: sqlite3.Connection, scope: dict[str, str], path: str,
              lock: TextIO | None, clock: Clock, *, system: str, max_tokens: int,
              core: CoreMemory | None, warn_at: float, flush_to: float,
              summarizer: Summarizer | None, counter: Counter | None) -> Memory:
        key = to_json(scope)
        with transaction(conn):
            session_id = conn.execute(
                "INSERT INTO sessions (scope, started_at) VALUES (?, ?)",
                (key, time_to_db(clock()))).lastrowid
            core = _load_core(conn, key, clock) or _save_core(
                conn, key, core or CoreMemory.default(clock=clock), clock)
        if scope:
            recall: RecallStore = _ScopedRecall(conn, clock=clock, scope=scope)
            archival: ArchivalStore = _ScopedArchival(conn, clock=clock, scope=scope)
        else:
            recall, archival = RecallStore(conn, clock=clock), ArchivalStore(conn, clock=clock)
        journal = _Journal(conn, key)
        context = MainContext(system, core, max_tokens, recall=recall, archival=archival,
                              warn_at=warn_at, flush_to=flush_to, summarizer=summarizer,
                              counter=counter, clock=clock, scope=scope or None,
                              journal=journal)
        row = conn.execute("SELECT state FROM context_state WHERE scope = ?", (key,)).fetchone()
        if row is not None:
            context.restore(from_json(row[0]))
        context.fit()
        core.on_change = journal.save_block
        return cls(conn, scope=scope, session_id=session_id, core=core, context=context,
                   recall=recall, archival=archival, clock=clock, path=path, lock=lock)

    def sessions(self) -> list[tuple[int, datetime]]:
        """(session id, start time) of every session of this scope, oldest first."""
        rows = self.conn.execute("SELECT id, started_at FROM sessions WHERE scope = ? "
                                 "ORDER BY id", (to_json(self.scope or {}),))
        return [(row[0], datetime.fromisoformat(row[1])) for row in rows]

    def close(self) -> None:
        """Close the connection and release the writer lock; safe to call twice."""
        if self._lock is None and self.conn is None:
            return
        if self.conn is not None:
            self.conn.close()
            self.conn = None  # type: ignore[assignment]
        _unlock(self._lock)
        self._lock = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Memory({self.path!r}, session {self.session_id}, {len(self.recall)} "
                f"messages, {len(self.archival)} records)")


class _Journal:
    """Writes the context state and core blocks of one scope, in the caller's transaction."""

    def __init__(self, conn: sqlite3.Connection, scope_key: str) -> None:
        self.conn = conn
        self.scope_key = scope_key

    def transaction(self) -> AbstractContextManager[Any]:
        return transaction(self.conn)

    def record(self, context: MainContext) -> None:
        self.conn.execute("INSERT OR REPLACE INTO context_state (scope, state) VALUES (?, ?)",
                          (self.scope_key, json.dumps(context.state())))

    def save_block(self, block: Block) -> None:
        with transaction(self.conn):
            self.conn.execute("UPDATE core_blocks SET block = ? WHERE scope = ? AND label = ?",
                              (to_json(block.to_dict(history=True)), self.scope_key,
                               block.label))


class _ScopedRecall(RecallStore):
    """Recall storage as a scoped agent sees it: `len` counts only the messages of its
    scope, so its prompt's memory status never shows, or depends on, other scopes."""

    def __init__(self, conn: sqlite3.Connection, *, clock: Clock, scope: dict[str, str]) -> None:
        super().__init__(conn, clock=clock)
        self.scope = scope

    def __len__(self) -> int:
        return _count(self.conn, "messages", self.scope)


class _ScopedArchival(ArchivalStore):
    """Archival storage as a scoped agent sees it: `len` counts only its scope's records."""

    def __init__(self, conn: sqlite3.Connection, *, clock: Clock, scope: dict[str, str]) -> None:
        super().__init__(conn, clock=clock)
        self.scope = scope

    def __len__(self) -> int:
        return _count(self.conn, "archival", self.scope)


def _count(conn: sqlite3.Connection, table: str, scope: dict[str, str]) -> int:
    """Rows of `table` whose scope has every key and value of `scope`, as searches match."""
    where = Where().scope(scope)
    return conn.execute(f"SELECT count(*) FROM {table} AS d WHERE {where.sql}",
                        where.params).fetchone()[0]


def _load_core(conn: sqlite3.Connection, key: str, clock: Clock) -> CoreMemory | None:
    rows = conn.execute("SELECT block FROM core_blocks WHERE scope = ? ORDER BY position",
                        (key,)).fetchall()
    if not rows:
        return None
    return CoreMemory.from_dict({"blocks": [from_json(row[0]) for row in rows]}, clock=clock)


def _save_core(conn: sqlite3.Connection, key: str, core: CoreMemory, clock: Clock
               ) -> CoreMemory:
    """Store a new agent's core memory and return a copy bound to `clock`."""
    blocks = core.to_dict(history=True)["blocks"]
    conn.executemany("INSERT INTO core_blocks (scope, position, label, block) VALUES (?,?,?,?)",
                     [(key, i, block["label"], to_json(block)) for i, block in enumerate(blocks)])
    return CoreMemory.from_dict({"blocks": blocks}, clock=clock)


# --- the writer lock -------------------------------------------------------------------
def _lock(path: str) -> TextIO:
    """Take the advisory writer lock `<path>.lock`, or say who holds it."""
    lock_path = Path(path + ".lock")
    try:
        handle = lock_path.open("a+", encoding="utf-8")
    except OSError as exc:
        raise StoreError(f"cannot open {path}: {exc.strerror} ({lock_path}); check that its "
                         "folder exists and is writable") from exc
    try:
        _try_lock(handle)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise AgentLockedError(
            f"{path} is already open for writing by {holder}. Close that Memory first, or "
            "read and search the file with ArchivalStore(path) / RecallStore(path), which "
            "may run beside it.") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"process {os.getpid()} on {socket.gethostname()} since "
                 f"{utc_now().isoformat(timespec='seconds')}")
    handle.flush()
    return handle


def _try_lock(handle: TextIO) -> None:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        return
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def _unlock(handle: TextIO | None) -> None:
    if handle is not None:
        handle.close()  # closing the descriptor releases the lock

