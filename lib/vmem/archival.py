"""Archival storage: unbounded, searchable, cited facts on disk (SQLite + FTS5).

The agent writes facts here with `insert` and pages them back in with `search`, which
ranks with BM25 (FTS5's `bm25()`, the same numbers as `BM25Index(idf="fts5")`) and
returns a `Page` of cited lines: `[record 3 | session 1, turn 4 | time] text`.

Only the text is indexed; tags, scope, times and provenance live in ordinary columns and
filter results without changing any document length or term statistic. Statistics are
shared by every scope in one file, so term statistics can leak between users: keep one
file per user where that matters.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from datetime import datetime

from .clock import Clock, utc_now
from .errors import InputTooLargeError, StoreError
from .messages import SOURCES, Page, Record
from .search import FtsIndex, SearchCache, Where, search_page
from .store import (
    MAX_RECORD_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
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

TAG_MODES = ("any", "all")
_INDEX = FtsIndex("archival_fts", "archival")
_COLUMNS = ("d.id, d.text, d.tags, d.scope, d.session_id, d.turn_id, d.source_url, "
            "d.created_at, d.source, d.flagged, d.flag_reasons, d.invalid_at, d.superseded_by")


class ArchivalStore:
    """Archival records in SQLite (":memory:", a file path, or a shared connection)."""

    def __init__(self, path_or_connection: str | os.PathLike[str] | sqlite3.Connection
                 = ":memory:", *, clock: Clock | None = None) -> None:
        self.conn = connect(path_or_connection)
        self.clock = clock or utc_now
        self._cache = SearchCache(_INDEX)

    # --- writing ---------------------------------------------------------------------
    def insert(self, text: str, tags: Iterable[str] | str = (), session_id: int | None = None,
               turn_id: int | None = None, source_url: str | None = None,
               scope: dict[str, str] | None = None, source: str = "agent", *,
               flagged: bool = False, flag_reasons: Iterable[str] = ()) -> int:
        """Store one fact and return its id (sequential; ids are never reused)."""
        if not isinstance(text, str) or not text.strip():
            raise StoreError("archival records need text: got an empty or whitespace-only "
                             "string. Pass the fact to remember as text.")
        check_size("the record text", text, MAX_RECORD_CHARS)
        tags = _clean_tags(tags)
        scope = check_scope(scope)
        if source not in SOURCES:
            raise StoreError(f"source must be one of {', '.join(SOURCES)}; got {source!r}")
        for name, value in (("session_id", session_id), ("turn_id", turn_id)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise StoreError(f"{name} must be an integer or None, got {value!r}")
        if source_url is not None and not isinstance(source_url, str):
            raise StoreError(f"source_url must be a string or None, got {source_url!r}")
        reasons = [flag_reasons] if isinstance(flag_reasons, str) else list(flag_reasons)
        with self._cache.writing(self.conn) as changes:
            cursor = self.conn.execute(
                "INSERT INTO archival (text, tags, scope, session_id, turn_id, source_url, "
                "created_at, source, flagged, flag_reasons) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (text, to_json(tags), to_json(scope), session_id, turn_id, source_url,
                 time_to_db(self.clock()), source, int(bool(flagged)),
                 to_json([str(reason) for reason in reasons])))
            changes.append((cursor.lastrowid, _INDEX.add(self.conn, cursor.lastrowid, text), 1))
        return cursor.lastrowid

    def delete(self, record_id: int, *, scope: dict[str, str] | None = None) -> None:
        """Remove a record for good (only within `scope`, when given)."""
        with self._cache.writing(self.conn) as changes:
            self.get(record_id, scope=scope)
            terms = _INDEX.remove(self.conn, record_id)
            if terms is not None:
                changes.append((record_id, terms, -1))
            self.conn.execute("DELETE FROM archival WHERE id = ?", (record_id,))

    def invalidate(self, record_id: int, superseded_by: int | None = None, *,
                   scope: dict[str, str] | None = None) -> Record:
        """Mark a record as no longer true (kept for history, hidden from default search).

        `superseded_by` names the record that replaces it. Returns the updated record.
        """
        with self._cache.writing(self.conn):  # the index is unchanged: the cache stays
            record = self.get(record_id, scope=scope)
            if not record.is_valid:
                raise StoreError(f"record {record_id} was already invalidated at "
                                 f"{record.invalid_at.isoformat()}")
            if superseded_by is not None:
                if superseded_by == record_id:
                    raise StoreError("a record cannot supersede itself; pass the id of the "
                                     "record that replaces it")
                self.get(superseded_by, scope=scope)
            self.conn.execute("UPDATE archival SET invalid_at = ?, superseded_by = ? "
                              "WHERE id = ?",
                              (time_to_db(self.clock()), superseded_by, record_id))
        return self.get(record_id)

    # --- reading ---------------------------------------------------------------------
    def get(self, record_id: int, *, scope: dict[str, str] | None = None) -> Record:
        """The record with this id (StoreError if unknown or outside `scope`)."""
        if isinstance(record_id, bool) or not isinstance(record_id, int):
            raise StoreError(f"record ids are integers, got {record_id!r}")
        found = self._select(Where().add("d.id = ?", record_id).scope(scope))
        if not found:
            where = " in this scope" if scope else ""
            raise StoreError(f"no archival record {record_id}{where}; search archival "
                             "memory to find the right id")
        return found[0]

    def records(self, include_invalid: bool = False, *,
                scope: dict[str, str] | None = None) -> list[Record]:
        """All records in insertion order (valid ones only unless asked)."""
        return self._select(_validity(Where(), include_invalid).scope(scope))

    def list_records_since(self, timestamp: datetime, *, include_invalid: bool = False,
                           scope: dict[str, str] | None = None) -> list[Record]:
        """Records created at or after `timestamp`, in insertion order."""
        return self._select(_validity(Where(), include_invalid).period(timestamp, None)
                            .scope(scope))

    def __len__(self) -> int:
        """Number of stored records, invalidated ones included."""
        return self.conn.execute("SELECT count(*) FROM archival").fetchone()[0]

    def search(self, query: str, top_k: int = 5, page: int = 0,
               tags: Iterable[str] | str | None = None, tag_mode: str = "any",
               start: datetime | None = None, end: datetime | None = None,
               scope: dict[str, str] | None = None, include_invalid: bool = False) -> Page:
        """Records ranked by BM25 for `query`, `top_k` per page, best first.

        Filters: `tags` with `tag_mode` "any" (at least one) or "all"; `start`/`end`
        (creation time, inclusive); `scope` (every given key and value); invalidated
        records only with `include_invalid`. Any string is a safe query: it is searched
        as plain words.
        """
        check_paging(page, top_k, size_name="top_k")
        if tag_mode not in TAG_MODES:
            raise StoreError(f"tag_mode must be 'any' or 'all', got {tag_mode!r}")
        where = _validity(Where(), include_invalid).period(start, end).scope(scope)
        wanted = _clean_tags(tags or ())
        if wanted:
            marks = ", ".join("?" * len(wanted))
            if tag_mode == "any":
                where.add(f"EXISTS (SELECT 1 FROM json_each(d.tags) WHERE value IN ({marks}))",
                          *wanted)
            else:
                where.add(f"(SELECT count(*) FROM json_each(d.tags) WHERE value IN ({marks}))"
                          " = ?", *wanted, len(wanted))
        self._cache.refresh(self.conn)  # before the snapshot: see SearchCache.refresh
        with snapshot(self.conn):  # rank and load the same state of the file
            return search_page(self.conn, _INDEX, query, where, page=page, page_size=top_k,
                               load=self._load, text_of=lambda record: record.text,
                               cache=self._cache)

    def _load(self, ids: list[int]) -> list[Record]:
        marks = ", ".join("?" * len(ids))
        found = {record.id: record
                 for record in self._select(Where().add(f"d.id IN ({marks})", *ids))}
        return [found[record_id] for record_id in ids]

    def _select(self, where: Where) -> list[Record]:
        rows = self.conn.execute(f"SELECT {_COLUMNS} FROM archival AS d WHERE {where.sql} "
                                 "ORDER BY d.id", where.params)
        return [_record(row) for row in rows]


def _validity(where: Where, include_invalid: bool) -> Where:
    return where if include_invalid else where.hide("d.invalid_at IS NOT NULL")


def _clean_tags(tags: Iterable[str] | str) -> list[str]:
    """Tags are compared stripped and lowercased; duplicates are dropped, order kept."""
    items = [tags] if isinstance(tags, str) else list(tags)
    if len(items) > MAX_TAGS:
        raise InputTooLargeError(f"{len(items)} tags; the limit is {MAX_TAGS}. Keep the few "
                                 "that matter for finding the record.")
    clean = []
    for tag in items:
        if not isinstance(tag, str) or not tag.strip():
            raise StoreError(f"tags must be non-empty strings, got {tag!r}")
        check_size(f"tag {tag[:20]!r}", tag, MAX_TAG_CHARS)
        clean.append(tag.strip().lower())
    return list(dict.fromkeys(clean))


def _record(row: tuple) -> Record:
    (record_id, text, tags, scope, session_id, turn_id, source_url, created_at, source,
     flagged, flag_reasons, invalid_at, superseded_by) = row
    return Record(text=text, id=record_id, tags=tuple(from_json(tags)), scope=from_json(scope),
                  session_id=session_id, turn_id=turn_id, source_url=source_url,
                  created_at=time_from_db(created_at), source=source, flagged=bool(flagged),
                  flag_reasons=tuple(from_json(flag_reasons)),
                  invalid_at=time_from_db(invalid_at), superseded_by=superseded_by)
