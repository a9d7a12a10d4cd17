"""Recall storage: the append-only log of every message that entered the main context.

Eviction only removes messages from the prompt; they stay here, searchable, so nothing
is ever lost. Messages keep every field (name, session, turn, tool calls, meta) and come
back exactly as they went in. Search ranks with BM25 through the same SQLite/FTS5 path
as archival storage (`vmem.search`); only user and assistant messages are indexed, since
tool results and system notices (such as memory-pressure warnings) are never worth
paging back in.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from datetime import datetime

from .clock import Clock, utc_now
from .errors import StoreError
from .messages import ROLES, Message, Page
from .search import FtsIndex, SearchCache, Where, search_page
from .store import (
    MAX_MESSAGE_CHARS,
    check_paging,
    check_scope,
    check_size,
    connect,
    from_json,
    snapshot,
    time_from_db,
    time_to_db,
    to_json,
)

SEARCHABLE_ROLES = ("user", "assistant")
_INDEX = FtsIndex("messages_fts", "messages")
_COLUMNS = ("id, role, content, name, session_id, turn, created_at, tool_calls, "
            "tool_call_id, meta")


class RecallStore:
    """Every message ever appended, in SQLite (":memory:", a file path, or a connection)."""

    def __init__(self, path_or_connection: str | os.PathLike[str] | sqlite3.Connection
                 = ":memory:", *, clock: Clock | None = None) -> None:
        self.conn = connect(path_or_connection)
        self.clock = clock or utc_now
        self._cache = SearchCache(_INDEX)

    def add(self, message: Message, scope: dict[str, str] | None = None) -> Message:
        """Store `message`, filling in its `id` and `created_at` when missing; return it.

        The message object is only updated once it is safely committed.
        """
        if not isinstance(message, Message):
            raise StoreError(f"recall stores Message objects, got {type(message).__name__}")
        check_size("the message", message.content, MAX_MESSAGE_CHARS)
        scope = check_scope(scope)
        created_at = self.clock() if message.created_at is None else message.created_at
        try:
            created_text = time_to_db(created_at)
            tool_calls = None if message.tool_calls is None else to_json(message.tool_calls)
            meta = to_json(message.meta)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"message cannot be stored: {exc} (created_at must be "
                             "timezone-aware; tool_calls and meta must be JSON)") from exc
        try:
            with self._cache.writing(self.conn) as changes:
                cursor = self.conn.execute(
                    f"INSERT INTO messages ({_COLUMNS}, scope) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (message.id, message.role, message.content, message.name,
                     message.session_id, message.turn, created_text, tool_calls,
                     message.tool_call_id, meta, to_json(scope)))
                if message.role in SEARCHABLE_ROLES:
                    changes.append((cursor.lastrowid,
                                    _INDEX.add(self.conn, cursor.lastrowid, message.content), 1))
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"message {message.id} is already in recall storage; "
                             "store a new Message (without an id) instead") from exc
        message.id = cursor.lastrowid
        message.created_at = created_at
        return message

    def get(self, message_id: int) -> Message:
        """The message with this id (StoreError if there is none)."""
        return self.get_many([message_id])[0]

    def get_many(self, ids: Iterable[int]) -> list[Message]:
        """The messages with these ids, in the order given."""
        ids = list(ids)
        found: dict[int, Message] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            chunk = unique[start:start + 500]
            marks = ", ".join("?" * len(chunk))
            for row in self.conn.execute(
                    f"SELECT {_COLUMNS} FROM messages WHERE id IN ({marks})", chunk):
                found[row[0]] = _message(row)
        missing = [message_id for message_id in unique if message_id not in found]
        if missing:
            raise StoreError(f"no message with id {', '.join(map(str, missing))} in recall "
                             f"storage (it holds {len(self)} messages)")
        return [found[message_id] for message_id in ids]

    def __len__(self) -> int:
        return self.conn.execute("SELECT count(*) FROM messages").fetchone()[0]

    def last_turn(self, session_id: int) -> int:
        """The highest turn number stored for `session_id` (0 before its first turn), so a
        new agent on a running session numbers its turns on from there."""
        row = self.conn.execute("SELECT max(turn) FROM messages WHERE session_id = ?",
                                (session_id,)).fetchone()
        return row[0] or 0

    def search(self, query: str, roles: Iterable[str] | None = None,
               start: datetime | None = None, end: datetime | None = None,
               page: int = 0, page_size: int = 5,
               scope: dict[str, str] | None = None) -> Page:
        """Messages ranked by BM25 for `query`, best first, one page at a time.

        `roles` keeps only those roles (tool results and system notices are never
        searched); `start`/`end` keep messages created in that period (both inclusive);
        `scope` keeps messages stored with every given key and value.
        """
        check_paging(page, page_size)
        where = Where().period(start, end).scope(scope)
        if roles is not None:
            roles = [roles] if isinstance(roles, str) else list(roles)
            unknown = [role for role in roles if role not in ROLES]
            if unknown:
                raise StoreError(f"unknown role(s) {unknown}; roles are {', '.join(ROLES)}, "
                                 f"and only {' and '.join(SEARCHABLE_ROLES)} messages are "
                                 "searchable")
            where.add(f"d.role IN ({', '.join('?' * len(roles))})", *roles)
        self._cache.refresh(self.conn)  # before the snapshot: see SearchCache.refresh
        with snapshot(self.conn):  # rank and load the same state of the file
            return search_page(self.conn, _INDEX, query, where, page=page,
                               page_size=page_size, load=self.get_many,
                               text_of=lambda message: message.content, cache=self._cache)


def _message(row: tuple) -> Message:
    (message_id, role, content, name, session_id, turn, created_at, tool_calls,
     tool_call_id, meta) = row
    return Message(role=role, content=content, name=name, id=message_id,
                   session_id=session_id, turn=turn, created_at=time_from_db(created_at),
                   tool_calls=None if tool_calls is None else from_json(tool_calls),
                   tool_call_id=tool_call_id, meta=from_json(meta))
