"""Moving agents between backends: `python -m vmem copy SRC DEST`.

`copy_agents(source, destination)` copies every agent (scope) stored in `source` into
`destination`, through the `Backend` protocol only, so it works between any two backends
(an SQLite file to PostgreSQL and back): sessions, the recall log (every message, with
its session, turn, tool calls and meta), archival records (tags, scope, provenance,
guard flags, invalidation and what superseded them), core blocks with their edit
history, and each context's saved state (queue, summary, counters).

Ids are kept: a record, message or session gets the same id in the destination, so the
copy renders the same prompt, cites the same ids and answers every search with the same
hits. An id the destination already uses is not overwritten: that row takes a new id,
every reference to it (a message's or record's session, `superseded_by`, the context's
queue) follows, and the report counts it; text that quoted the old id still shows it. A
scope the destination already holds is refused, so copying twice never duplicates an
agent. It all runs in one destination transaction: a failure leaves nothing behind.

Search scores are equal when the destination's tier statistics are the source's (a new
database, or one holding only what was copied): statistics are per file or database,
shared by every agent in it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from .errors import StoreError
from .recall import SEARCHABLE_ROLES
from .storage.base import Backend, Filter, Scope


@dataclass
class CopyReport:
    """What `copy_agents` copied, and how many ids had to change."""

    scopes: int = 0
    sessions: int = 0
    messages: int = 0
    records: int = 0
    blocks: int = 0
    renumbered: int = 0

    def __str__(self) -> str:
        kept = "every id kept" if not self.renumbered else \
            f"{self.renumbered} ids taken in the destination, given new ones"
        return (f"copied {self.scopes} scopes: {self.sessions} sessions, {self.messages} "
                f"messages, {self.records} archival records, {self.blocks} core blocks "
                f"({kept})")


def copy_agents(source: Backend, destination: Backend) -> CopyReport:
    """Copy every agent of `source` into `destination` (see the module docstring)."""
    report = CopyReport()
    scopes = source.scopes()
    taken = [scope for scope in scopes if destination.sessions(scope)
             or destination.load_core(scope)]
    if taken:
        raise StoreError(f"the destination already holds the agent(s) {taken}; copy into "
                         "a new database or file, or remove them there first")

    def keep_id(store: Callable[[int | None], int], old: int) -> int:
        """Store a row under its old id, or under a new one when that is taken."""
        try:
            with destination.transaction():
                return store(old)
        except StoreError:
            report.renumbered += 1
            return store(None)

    with destination.transaction():
        session_ids: dict[int, int] = {}
        for scope in scopes:
            for old, started in source.sessions(scope):
                session_ids[old] = keep_id(
                    lambda new, scope=scope, started=started:
                    destination.start_session(scope, started, new), old)
                report.sessions += 1
        message_ids = _copy_messages(source, destination, scopes, session_ids, keep_id)
        report.messages = len(message_ids)
        report.records = _copy_records(source, destination, session_ids, keep_id)
        for scope in scopes:
            blocks = source.load_core(scope)
            if blocks:
                destination.create_core(scope, blocks)
                report.blocks += len(blocks)
            state = source.load_context(scope)
            if state is not None:
                destination.save_context(scope, {**state, **{
                    key: [message_ids[old] for old in state.get(key, [])]
                    for key in ("message_ids", "unsummarized_ids")}})
        report.scopes = len(scopes)
    return report


def _copy_messages(source: Backend, destination: Backend, scopes: list[dict[str, str]],
                   session_ids: dict[int, int], keep_id: Callable) -> dict[int, int]:
    """Copy the recall log in id order; old id -> new id.

    A message's own scope is not part of `Message`: a filter on a scope also matches the
    messages of its wider scopes, so scopes are taken widest (most keys) first and each
    message goes to the first that matches it, which is its own (every stored scope is
    in `scopes`)."""
    owner: dict[int, Scope] = {}
    for scope in sorted(scopes, key=len, reverse=True):
        for message in source.messages(Filter(scope=scope)):
            owner.setdefault(message.id, scope)
    ids: dict[int, int] = {}
    searchable = {message.id for message in source.messages(Filter(roles=SEARCHABLE_ROLES))}
    for message in source.messages(Filter()):
        copied = replace(message, session_id=session_ids.get(message.session_id,
                                                             message.session_id))
        ids[message.id] = keep_id(
            lambda new, copied=copied: destination.add_message(
                replace(copied, id=new), owner[copied.id], searchable=copied.id in searchable),
            message.id)
    return ids


def _copy_records(source: Backend, destination: Backend, session_ids: dict[int, int],
                  keep_id: Callable) -> int:
    """Copy archival records in id order, then their invalidations (a record may be
    superseded by a later one); return how many."""
    records = source.records(Filter())
    ids: dict[int, int] = {}
    for record in records:
        copied = replace(record, session_id=session_ids.get(record.session_id,
                                                            record.session_id))
        ids[record.id] = keep_id(lambda new, copied=copied: destination.insert_record(
            replace(copied, id=new)), record.id)
    for record in records:
        if record.invalid_at is not None:
            destination.invalidate_record(ids[record.id], record.invalid_at,
                                          ids.get(record.superseded_by, record.superseded_by))
    return len(records)
