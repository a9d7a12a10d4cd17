"""The storage seam: what `Memory`, `ArchivalStore` and `RecallStore` need from a database.

Everything the library persists goes through one object that implements `Backend`:
archival records, recall messages, core blocks with their history, sessions, the main
context's saved state, transactions and read snapshots. The stores validate their
arguments and shape pages for the model; the backend stores, filters and ranks. Filters
are data (`Filter`), never SQL, so each backend translates them itself, and search
returns data (`Ranked`): the total, and one page of hits with their BM25 scores and
per-term contributions, computed by the backend with `vmem.bm25`'s formulas.

`vmem.storage.sqlite.SqliteBackend` is the one implementation today (one SQLite file per
agent); `vmem.storage.backends.open_backend` chooses the backend for a target, so a
server database adds a class and a branch there, and nothing above this layer changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from ..errors import StoreError
from ..messages import Hit, Message, Record

Tier = Literal["archival", "recall"]
Scope = Mapping[str, str]


@dataclass(frozen=True)
class Filter:
    """Which rows an operation sees: every condition given must hold (empty: all rows).

    - `scope`: rows stored with every key and value given ({} or None: any scope);
    - `ids`: only these ids (None: any id); `exclude`: never these ids;
    - `start`/`end`: created in that period, both inclusive, either optional;
    - `tags` with `tag_mode` "any" (at least one) or "all" (archival only);
    - `roles`: only messages of these roles (recall only; None: any role);
    - `include_invalid`: False hides invalidated archival records.
    """

    scope: Scope | None = None
    ids: tuple[int, ...] | None = None
    exclude: tuple[int, ...] = ()
    start: datetime | None = None
    end: datetime | None = None
    tags: tuple[str, ...] = ()
    tag_mode: str = "any"
    roles: tuple[str, ...] | None = None
    include_invalid: bool = True


def ids_in(ids: Sequence[int]) -> str:
    """`d.id IN (4, 9)`: an SQL condition for a few rows by id, with the ids written in (as
    integers), so a search cache can subtract them as a set (`Filter.exclude`)."""
    return f"d.id IN ({', '.join(str(int(row_id)) for row_id in ids)})"


def in_scope(stored: Mapping[str, str], scope: Mapping[str, str] | None) -> bool:
    """Whether the stored scope `stored` has every key and value of `scope`, as a
    `Filter`'s scope keeps rows (None or {}: every scope)."""
    return all(stored.get(key) == value for key, value in (scope or {}).items())


def scopes_to_forget(stored: Sequence[Mapping[str, str]], scope: Mapping[str, str]
                     ) -> list[dict[str, str]]:
    """The stored scopes `Backend.forget(scope)` deletes: each one `in_scope` `scope`.
    An empty scope is refused: it would forget every agent in the store."""
    if not scope:
        raise StoreError("forget needs a scope such as {'user_id': 'u1'}; an empty scope "
                         "would forget every agent in the store, so it is refused")
    return [dict(each) for each in stored if in_scope(each, scope)]


@dataclass(frozen=True)
class Ranked:
    """One page of a ranked search: how many rows match, and this page's hits best first
    (ties by id), each with its score and per-term contributions (they sum to it)."""

    total: int
    hits: tuple[Hit, ...] = field(default_factory=tuple)


class Backend(Protocol):
    """Everything vmem persists, for one store (a file, a database).

    Writes run in the caller's `transaction()` when one is open, else in their own.
    Reads inside `snapshot()` all see one committed state.
    """

    # --- the store as a whole ---------------------------------------------------------
    def schema_version(self) -> int:
        """The version of the stored layout (opening a store migrates it forward)."""

    def transaction(self) -> AbstractContextManager[None]:
        """One atomic unit of work; a nested one joins the outer one (an error inside it
        rolls back only its own writes, nothing is durable before the outer commit)."""

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads that all see one committed state, whatever other writers commit."""

    def damaged(self, where: str) -> AbstractContextManager[None]:
        """Inside it, an error meaning the stored data is damaged becomes a
        `StoreFormatError` naming `where`."""

    def close(self) -> None:
        """Release the connection and the writer lock; safe to call twice."""

    def lock_writer(self, scope: Scope) -> None:
        """Hold the one-writer lock of the agent `scope` until `close`, or raise
        `AgentLockedError` naming its holder. The lock dies with its holder's process or
        connection, so a crash never leaves an agent locked."""

    # --- both searchable tiers --------------------------------------------------------
    def search(self, tier: Tier, terms: Sequence[str], where: Filter, limit: int,
               offset: int) -> Ranked:
        """BM25 over `tier` for analysed `terms` (a repeated term counts each time):
        rows `where` keeps, best first, ties by id; statistics cover the whole tier."""

    def count(self, tier: Tier, where: Filter) -> int:
        """How many rows of `tier` `where` keeps."""

    # --- archival records -------------------------------------------------------------
    def insert_record(self, record: Record) -> int:
        """Store a new record and index its text; return its id: the record's own `id`
        when it has one (StoreError when taken), else a new one."""

    def records(self, where: Filter) -> list[Record]:
        """The records `where` keeps, in insertion order."""

    def delete_record(self, record_id: int, where: Filter) -> bool:
        """Remove the record if `where` keeps it; False when it does not."""

    def invalidate_record(self, record_id: int, at: datetime, superseded_by: int | None
                          ) -> None:
        """Mark a record invalid since `at`, replaced by `superseded_by`."""

    # --- recall messages --------------------------------------------------------------
    def add_message(self, message: Message, scope: Scope, *, document: str | None) -> int:
        """Store a message (with its id, or a new one when it has none) and return the
        id; index `document` for it (`vmem.ranking.recall_document`; None: not
        searchable). An id already stored: StoreError."""

    def latest_message(self, scope: Scope, roles: Sequence[str]) -> Message | None:
        """The newest message stored with exactly `scope` and one of `roles`, or None:
        the message a new one of that agent is indexed after."""

    def messages(self, where: Filter) -> list[Message]:
        """The messages `where` keeps, in id order."""

    def preceding_times(self, ids: Sequence[int], roles: Sequence[str], limit: int
                        ) -> dict[int, list[datetime | None]]:
        """For each message of `ids`, the times of the (at most `limit`) messages stored
        just before it with exactly its scope and one of `roles`, newest first: what
        `vmem.ranking.sitting_place` needs."""

    def last_turn(self, session_id: int, scope: Scope) -> int:
        """The highest turn stored for `session_id` (0 before its first turn)."""

    # --- one agent: sessions, core memory, the context's state ------------------------
    def start_session(self, scope: Scope, at: datetime, session_id: int | None = None) -> int:
        """Record a new session of `scope` starting `at`; return its id (`session_id`
        when given, StoreError when taken; else a new one)."""

    def scopes(self) -> list[dict[str, str]]:
        """Every distinct scope stored with a session, message, record, core block or
        context state (each once, `{}` included when used), in a stable order."""

    def sessions(self, scope: Scope) -> list[tuple[int, datetime]]:
        """(id, start time) of every session of `scope`, oldest first."""

    def load_core(self, scope: Scope) -> list[dict[str, Any]]:
        """The core blocks of `scope` (JSON form, with history) in order; [] for none."""

    def create_core(self, scope: Scope, blocks: Sequence[dict[str, Any]]) -> None:
        """Store a new agent's core blocks, in this order."""

    def save_block(self, scope: Scope, block: dict[str, Any]) -> None:
        """Replace one stored core block (matched by its label)."""

    def load_context(self, scope: Scope) -> dict[str, Any] | None:
        """The context state saved for `scope`, or None."""

    def save_context(self, scope: Scope, state: dict[str, Any]) -> None:
        """Save the context state of `scope` (replacing the previous one)."""

    # --- forgetting a scope (issue 15) ------------------------------------------------
    def forget(self, scope: Scope) -> dict[str, int]:
        """Delete every agent whose scope has each key and value of `scope` (not empty:
        `scopes_to_forget`), in every tier: sessions, recall messages, archival records,
        core blocks with their history, context state; the search statistics follow.
        Takes the writer lock of each such agent first (`AgentLockedError` when another
        process holds one) and runs outside any transaction (it vacuums afterwards,
        which a transaction cannot hold). Returns the rows deleted, per table.
        docs/RELIABILITY.md says what each backend guarantees is left on disk."""
