"""Archival storage: unbounded, searchable, cited facts on disk.

The agent writes facts here with `insert` and pages them back in with `search`, which
ranks with BM25 (in the SQLite backend, the numbers of FTS5's `bm25()`, the same as
`BM25Index(idf="fts5")`) and returns a `Page` of cited lines:
`[record 3 | session 1, turn 4 | time] text`.

Only the text is indexed; tags, scope, times and provenance filter results without
changing any document length or term statistic. Statistics are shared by every scope in
one file, so term statistics can leak between users: keep one file per user where that
matters. A store bound to a scope (`ArchivalStore(..., scope={"user_id": "ana"})`, as
`Memory` builds it) inserts, counts, lists, gets, searches, deletes and invalidates only
within that scope.

Facts change. `supersede` stores a correction and invalidates the record it replaces in
one transaction; `conflicts` finds the older records a new one may replace (searched by
the people it is about, read by the rules of `vmem.supersede`), and `retire_superseded`
invalidates those it replaces entirely: the offline policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from .bm25 import analyze
from .clock import Clock, utc_now
from .errors import InputTooLargeError, StoreError
from .messages import SOURCES, Page, Record
from .ranking import Priors, asks_current_state, rerank
from .storage.backends import Target, open_backend
from .storage.base import Filter, Ranked, Scope
from .store import (
    MAX_PAGE_SIZE,
    MAX_RECORD_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    check_paging,
    check_size,
)
from .supersede import Supersession, compare, full_names, namesakes, subject_words
from .text import visible
from .tier import check_period, reranked, search_page, within

TAG_MODES = ("any", "all")
CANDIDATES = 2 * MAX_PAGE_SIZE
"""How many older records about the same people `conflicts` reads, best ranked first."""


@dataclass(frozen=True)
class Conflict:
    """An older `record` that a new one may replace, and what it replaces of it: all of
    it (`supersession.complete`: safe to invalidate) or some claims (ask the model)."""

    record: Record
    supersession: Supersession


class ArchivalStore:
    """Archival records: ":memory:", a file path, a shared connection or a backend."""

    def __init__(self, path_or_connection: Target = ":memory:", *, clock: Clock | None = None,
                 scope: Scope | None = None, priors: Priors | None = None) -> None:
        self.backend = open_backend(path_or_connection)
        self.clock = clock or utc_now
        self.scope = within(None, scope) or None  # the scope every call acts within
        self.priors = priors or Priors()  # only questions about the present use them here

    # --- writing ---------------------------------------------------------------------
    def insert(self, text: str, tags: Iterable[str] | str = (), session_id: int | None = None,
               turn_id: int | None = None, source_url: str | None = None,
               scope: Scope | None = None, source: str = "agent", *,
               flagged: bool = False, flag_reasons: Iterable[str] = ()) -> int:
        """Store one fact and return its id (sequential; ids are never reused). Invisible
        characters that could hide words are removed first (`vmem.text.visible`)."""
        text = visible(text) if isinstance(text, str) else text
        if not isinstance(text, str) or not text.strip():
            raise StoreError("archival records need text: got an empty or whitespace-only "
                             "string. Pass the fact to remember as text.")
        check_size("the record text", text, MAX_RECORD_CHARS)
        clean_tags = _clean_tags(tags)
        scope = within(self.scope, scope)
        if source not in SOURCES:
            raise StoreError(f"source must be one of {', '.join(SOURCES)}; got {source!r}")
        for name, value in (("session_id", session_id), ("turn_id", turn_id)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise StoreError(f"{name} must be an integer or None, got {value!r}")
        if source_url is not None and not isinstance(source_url, str):
            raise StoreError(f"source_url must be a string or None, got {source_url!r}")
        reasons = [flag_reasons] if isinstance(flag_reasons, str) else list(flag_reasons)
        return self.backend.insert_record(Record(
            text=text, tags=tuple(clean_tags), scope=scope, session_id=session_id,
            turn_id=turn_id, source_url=source_url, created_at=self.clock(), source=source,
            flagged=bool(flagged), flag_reasons=tuple(str(reason) for reason in reasons)))

    def delete(self, record_id: int, *, scope: Scope | None = None) -> None:
        """Remove a record for good (only within the store's scope and `scope`)."""
        _check_id(record_id)
        scope = within(self.scope, scope)
        if not self.backend.delete_record(record_id, Filter(scope=scope)):
            raise _missing(record_id, scope)

    def invalidate(self, record_id: int, superseded_by: int | None = None, *,
                   scope: Scope | None = None) -> Record:
        """Mark a record as no longer true (kept for history, hidden from default search).

        `superseded_by` names the record that replaces it. Returns the updated record.
        """
        with self.backend.transaction():
            record = self.get(record_id, scope=scope)
            if not record.is_valid:
                raise StoreError(f"record {record_id} was already invalidated at "
                                 f"{record.invalid_at.isoformat()}")
            if superseded_by is not None:
                if superseded_by == record_id:
                    raise StoreError("a record cannot supersede itself; pass the id of the "
                                     "record that replaces it")
                self.get(superseded_by, scope=scope)
            self.backend.invalidate_record(record_id, self.clock(), superseded_by)
        return self.get(record_id, scope=scope)

    # --- correcting (issue 15: supersession) ------------------------------------------
    def supersede(self, record_id: int, text: str, *, tags: Iterable[str] | str | None = None,
                  session_id: int | None = None, turn_id: int | None = None,
                  scope: Scope | None = None, source: str = "agent") -> int:
        """Store `text` as the record that replaces `record_id` and invalidate the old one
        (`superseded_by` the new id), in one transaction; return the new id.

        The new record keeps the old one's scope, and its tags unless `tags` is given.
        When a valid record in that scope already says exactly `text` (the model saved
        the new fact, then was told it replaces an older one), that record is linked
        instead of storing the text twice.
        """
        with self.backend.transaction():
            old = self.get(record_id, scope=scope)
            if not old.is_valid:
                successor = (f", superseded by record {old.superseded_by}: correct that one "
                             "instead" if old.superseded_by else "")
                raise StoreError(f"record {record_id} was already invalidated at "
                                 f"{old.invalid_at.isoformat()}{successor}")
            if isinstance(text, str) and text.strip() == old.text.strip():
                raise StoreError(f"the correction is the same text as record {record_id}; "
                                 "write the fact as it is now")
            new_id = self._twin(text, old) or self.insert(
                text, tags=old.tags if tags is None else tags, session_id=session_id,
                turn_id=turn_id, scope=old.scope, source=source)
            self.backend.invalidate_record(record_id, self.clock(), new_id)
        return new_id

    def conflicts(self, record_id: int, *, scope: Scope | None = None) -> list[Conflict]:
        """The valid older records that record `record_id` supersedes, in whole or in
        part, oldest first: searched by the people it makes claims about (in its own
        scope, `CANDIDATES` at most), then read by `vmem.supersede.compare`."""
        new = self.get(record_id, scope=scope)
        terms = analyze(" ".join(subject_words(new.text)))
        if not terms:
            return []
        where = Filter(scope=new.scope, include_invalid=False)
        older: list[Record] = []
        for offset in range(0, CANDIDATES, MAX_PAGE_SIZE):
            ranked = self.backend.search("archival", terms, where, MAX_PAGE_SIZE, offset)
            older += [hit.record for hit in ranked.hits if hit.record.id < record_id]
            if offset + MAX_PAGE_SIZE >= ranked.total:
                break
        people = {name for record in (new, *older) for name in full_names(record.text)}
        others = {pair for record in (new, *older) for pair in namesakes(record.text)}
        found = [Conflict(record, change) for record in older
                 if (change := compare(new.text, record.text, people, others)) is not None]
        return sorted(found, key=lambda conflict: conflict.record.id)

    def retire_superseded(self, record_id: int, *, scope: Scope | None = None
                          ) -> list[Conflict]:
        """The offline policy: invalidate every older record that record `record_id`
        supersedes entirely (`superseded_by` it), in one transaction. Returns all its
        conflicts; the partial ones (`supersession.complete` False) are left valid."""
        with self.backend.transaction():
            found = self.conflicts(record_id, scope=scope)
            for conflict in found:
                if conflict.supersession.complete:
                    self.backend.invalidate_record(conflict.record.id, self.clock(), record_id)
        return found

    def _twin(self, text: str, old: Record) -> int | None:
        """A valid record in `old`'s scope that says exactly `text`, other than `old`."""
        terms = analyze(text) if isinstance(text, str) else []
        if not terms:
            return None
        ranked = self.backend.search("archival", terms[:64], Filter(
            scope=old.scope, include_invalid=False), 10, 0)
        return next((hit.record.id for hit in ranked.hits
                     if hit.record.text == text and hit.record.id != old.id), None)

    # --- reading ---------------------------------------------------------------------
    def get(self, record_id: int, *, scope: Scope | None = None) -> Record:
        """The record with this id (StoreError if unknown or outside the scope)."""
        _check_id(record_id)
        scope = within(self.scope, scope)
        found = self.backend.records(Filter(scope=scope, ids=(record_id,)))
        if not found:
            raise _missing(record_id, scope)
        return found[0]

    def records(self, include_invalid: bool = False, *,
                scope: Scope | None = None) -> list[Record]:
        """All records in insertion order (valid ones only unless asked)."""
        return self.backend.records(Filter(scope=within(self.scope, scope),
                                           include_invalid=include_invalid))

    def list_records_since(self, timestamp: datetime, *, include_invalid: bool = False,
                           scope: Scope | None = None) -> list[Record]:
        """Records created at or after `timestamp`, in insertion order."""
        check_period(timestamp, None)
        return self.backend.records(Filter(scope=within(self.scope, scope), start=timestamp,
                                           include_invalid=include_invalid))

    def __len__(self) -> int:
        """Number of records in the store's scope (all when it has none), invalidated ones
        included."""
        return self.backend.count("archival", Filter(scope=self.scope))

    def search(self, query: str, top_k: int = 5, page: int = 0, *,
               tags: Iterable[str] | str | None = None, tag_mode: str = "any",
               start: datetime | None = None, end: datetime | None = None,
               scope: Scope | None = None, include_invalid: bool = False) -> Page:
        """Records ranked by BM25 for `query`, `top_k` per page, best first.

        Filters: `tags` with `tag_mode` "any" (at least one) or "all"; `start`/`end`
        (creation time, inclusive); `scope` (narrows the store's own scope to every given
        key and value); invalidated records only with `include_invalid`. Any string is a
        safe query: it is searched as plain words. A question about the present ("where
        does Maya live now?") puts the newest of the close hits first
        (`vmem.ranking`).
        """
        check_paging(page, top_k, size_name="top_k")
        if tag_mode not in TAG_MODES:
            raise StoreError(f"tag_mode must be 'any' or 'all', got {tag_mode!r}")
        check_period(start, end)
        where = Filter(scope=within(self.scope, scope), start=start, end=end,
                       tags=tuple(_clean_tags(tags or ())), tag_mode=tag_mode,
                       include_invalid=include_invalid)
        def rank(terms: Sequence[str], limit: int, offset: int) -> Ranked:
            return self.backend.search("archival", terms, where, limit, offset)
        if self.priors.current_state and isinstance(query, str) and asks_current_state(query):
            rank = reranked(rank, lambda hits: rerank(hits, query, self.priors))
        return search_page(query, page, top_k, rank, self.priors)

    def close(self) -> None:
        """Close the backend (its connection); safe to call twice."""
        self.backend.close()


def _check_id(record_id: object) -> None:
    if isinstance(record_id, bool) or not isinstance(record_id, int):
        raise StoreError(f"record ids are integers, got {record_id!r}")


def _missing(record_id: int, scope: Scope) -> StoreError:
    where = " in this scope" if scope else ""
    return StoreError(f"no archival record {record_id}{where}; search archival memory to find "
                      "the right id")


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
