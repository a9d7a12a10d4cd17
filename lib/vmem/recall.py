"""Recall storage: the append-only log of every message that entered the main context.

Eviction only removes messages from the prompt; they stay here, searchable, so nothing
is ever lost. Messages keep every field (name, session, turn, tool calls, meta) and come
back exactly as they went in. Search ranks with BM25 through the storage backend, like
archival storage, then reranks BM25's best hits with the priors of `vmem.ranking` (hits
of the same sitting, the sender named in the query, the newest first on a question about
the present). Only user and assistant messages are indexed, each as
`vmem.ranking.recall_document` (with the message before it, the sender's name and the
date), since tool results and system notices (such as memory-pressure warnings) are
never worth paging back in.

A store bound to a scope (`RecallStore(..., scope={"user_id": "ana"})`, as `Memory`
builds it) stores, counts, gets and searches only that scope's messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from .clock import Clock, ensure_utc, utc_now
from .errors import StoreError
from .messages import ROLES, Hit, Message, Page
from .ranking import (
    OPENING_SPAN,
    SEARCHABLE_ROLES,
    Priors,
    recall_document,
    rerank,
    sitting_place,
)
from .storage.backends import Target, open_backend
from .storage.base import Backend, Filter, Ranked, Scope
from .store import MAX_MESSAGE_CHARS, check_paging, check_size, to_json
from .tier import check_period, reranked, search_page, within

__all__ = ["SEARCHABLE_ROLES", "RecallStore"]

PLACES_KEPT = 100_000
"""How many messages' sitting places a store keeps in memory (about 10 MB)."""


class RecallStore:
    """Every message ever appended: ":memory:", a file path, a connection or a backend."""

    def __init__(self, path_or_connection: Target = ":memory:", *, clock: Clock | None = None,
                 scope: Scope | None = None, priors: Priors | None = None) -> None:
        self.backend = open_backend(path_or_connection)
        self.clock = clock or utc_now
        self.scope = within(None, scope) or None  # the scope every call acts within
        self.priors = priors or Priors()
        self._known_places: dict[int, int | None] = {}  # message id -> its sitting place

    def add(self, message: Message, scope: Scope | None = None) -> Message:
        """Store `message`, filling in its `id` and `created_at` when missing; return it.

        The message object is only updated once it is safely committed.
        """
        if not isinstance(message, Message):
            raise StoreError(f"recall stores Message objects, got {type(message).__name__}")
        check_size("the message", message.content, MAX_MESSAGE_CHARS)
        scope = within(self.scope, scope)
        created_at = self.clock() if message.created_at is None else message.created_at
        try:
            ensure_utc(created_at)
            for value in (message.tool_calls, message.meta):
                to_json(value)
        except (TypeError, ValueError, AttributeError) as exc:
            raise StoreError(f"message cannot be stored: {exc} (created_at must be "
                             "timezone-aware; tool_calls and meta must be JSON)") from exc
        stored = replace(message, created_at=ensure_utc(created_at))  # as it is read back
        message.id = self.backend.add_message(stored, scope,
                                              document=_indexed_document(self.backend, stored,
                                                                         scope))
        message.created_at = created_at
        return message

    def get(self, message_id: int, *, scope: Scope | None = None) -> Message:
        """The message with this id (StoreError if there is none in the scope)."""
        return self.get_many([message_id], scope=scope)[0]

    def get_many(self, ids: Iterable[int], *, scope: Scope | None = None) -> list[Message]:
        """The messages with these ids, in the order given."""
        ids = list(ids)
        unique = tuple(dict.fromkeys(ids))
        found = {message.id: message for message in self.backend.messages(
            Filter(scope=within(self.scope, scope), ids=unique))}
        missing = [message_id for message_id in unique if message_id not in found]
        if missing:
            raise StoreError(f"no message with id {', '.join(map(str, missing))} in recall "
                             f"storage (it holds {len(self)} messages)")
        return [found[message_id] for message_id in ids]

    def __len__(self) -> int:
        """Messages stored in this store's scope (all of them when it has none)."""
        return self.backend.count("recall", Filter(scope=self.scope))

    def last_turn(self, session_id: int) -> int:
        """The highest turn number stored for `session_id` (0 before its first turn), so a
        new agent on a running session numbers its turns on from there."""
        return self.backend.last_turn(session_id, self.scope or {})

    def search(self, query: str, top_k: int = 5, page: int = 0, *,
               page_size: int | None = None, roles: Iterable[str] | str | None = None,
               start: datetime | None = None, end: datetime | None = None,
               scope: Scope | None = None, exclude: Iterable[int] = ()) -> Page:
        """Messages ranked for `query` (BM25, then the priors), `top_k` per page, best first.

        `page_size` is a synonym of `top_k` (it wins when given). `roles` keeps only
        those roles (tool results and system notices are never searched); `start`/`end`
        keep messages created in that period (both inclusive); `scope` narrows the
        store's own scope to messages stored with every given key and value; `exclude`
        leaves out these message ids (the question being answered, which matches itself).
        """
        size = top_k if page_size is None else page_size
        check_paging(page, size, size_name="top_k" if page_size is None else "page_size")
        check_period(start, end)
        if roles is not None:
            roles = [roles] if isinstance(roles, str) else list(roles)
            unknown = [role for role in roles if role not in ROLES]
            if unknown:
                raise StoreError(f"unknown role(s) {unknown}; roles are {', '.join(ROLES)}, "
                                 f"and only {' and '.join(SEARCHABLE_ROLES)} messages are "
                                 "searchable")
        where = Filter(scope=within(self.scope, scope), start=start, end=end,
                       roles=None if roles is None else tuple(roles),
                       exclude=tuple(exclude))

        def rank(terms: Sequence[str], limit: int, offset: int) -> Ranked:
            return self.backend.search("recall", terms, where, limit, offset)

        def reorder(hits: Sequence[Hit]) -> list[Hit]:
            return rerank(hits, query, self.priors, self._places(hits))
        return search_page(query, page, size, reranked(rank, reorder), self.priors)

    def _places(self, hits: Sequence[Hit]) -> dict[int, int | None]:
        """Each hit's `vmem.ranking.sitting_place` (none when the opening prior is off).

        A message's place never changes once it is stored: later messages come after it,
        and its scope's earlier ones go only with the whole scope (one writer per scope).
        So places are kept (up to `PLACES_KEPT`) and only new hits are looked up."""
        if not self.priors.opening or not hits:
            return {}
        new = [hit for hit in hits if hit.record.id not in self._known_places]
        if new:
            if len(self._known_places) + len(new) > PLACES_KEPT:
                self._known_places.clear()
            earlier = self.backend.preceding_times([hit.record.id for hit in new],
                                                   SEARCHABLE_ROLES, OPENING_SPAN)
            self._known_places.update(
                (hit.record.id, sitting_place(hit.record.created_at, earlier[hit.record.id]))
                for hit in new)
        return {hit.record.id: self._known_places[hit.record.id] for hit in hits}

    def close(self) -> None:
        """Close the backend (its connection); safe to call twice."""
        self.backend.close()


def _indexed_document(backend: Backend, message: Message, scope: Scope) -> str | None:
    """What recall indexes for `message` (stored in `scope`, after every message the
    backend already holds): `vmem.ranking.recall_document`, or None when its role is
    never searched."""
    if message.role not in SEARCHABLE_ROLES:
        return None
    return recall_document(message, backend.latest_message(scope, SEARCHABLE_ROLES))
