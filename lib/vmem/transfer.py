"""An agent's contents as data, and moving them: `python -m vmem copy SRC DEST`.

One model of "what an agent is" serves copy, export and import (`vmem.agentfile`):
`AgentContents` holds one agent (one scope) as plain values: its sessions, its recall log
(every message, with its session, turn, tool calls and meta), its archival records (tags,
provenance, guard flags, invalidation and what superseded them), its core blocks with
their edit history, and its context's saved state (queue, summary, counters).
`read_agents(backend)` reads them through the `Backend` protocol only and
`write_agents(backend, agents)` stores them, so any two backends can trade agents (an
SQLite file to PostgreSQL and back, or through an agent file). `copy_agents` is the two
in a row.

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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from .errors import StoreError
from .messages import Message, Record
from .ranking import recall_documents
from .storage.base import Backend, Filter, Scope, in_scope
from .store import to_json


@dataclass
class AgentContents:
    """Everything one agent (one scope) stores, as values; ids as stored."""

    scope: dict[str, str]
    sessions: list[tuple[int, datetime]] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    blocks: list[dict[str, Any]] = field(default_factory=list)  # with version and history
    context: dict[str, Any] | None = None  # `MainContext.state()`, or None


@dataclass
class CopyReport:
    """What `write_agents` stored, and how many ids had to change."""

    scopes: int = 0
    sessions: int = 0
    messages: int = 0
    records: int = 0
    blocks: int = 0
    renumbered: int = 0
    verb: str = "copied"

    def __str__(self) -> str:
        kept = "every id kept" if not self.renumbered else \
            f"{self.renumbered} ids taken in the destination, given new ones"
        return (f"{self.verb} {self.scopes} scopes: {self.sessions} sessions, {self.messages} "
                f"messages, {self.records} archival records, {self.blocks} core blocks "
                f"({kept})")


def read_agents(source: Backend, scope: Scope | None = None) -> list[AgentContents]:
    """Every agent of `source` whose scope has every key and value of `scope` (None:
    every agent), in `source.scopes()` order, read in one snapshot."""
    with source.snapshot():
        scopes = source.scopes()
        owners = _message_owners(source, scopes)
        agents = {_key(stored): AgentContents(dict(stored)) for stored in scopes
                  if in_scope(stored, scope)}
        for message in source.messages(Filter(scope=scope or None)):
            agent = agents.get(_key(owners[message.id]))
            if agent is not None:
                agent.messages.append(message)
        for record in source.records(Filter(scope=scope or None)):
            agent = agents.get(_key(record.scope))
            if agent is not None:
                agent.records.append(record)
        for agent in agents.values():
            agent.sessions = source.sessions(agent.scope)
            agent.blocks = source.load_core(agent.scope)
            agent.context = source.load_context(agent.scope)
    return list(agents.values())


def write_agents(destination: Backend, agents: Sequence[AgentContents],
                 verb: str = "copied") -> CopyReport:
    """Store `agents` in `destination` in one transaction (see the module docstring);
    refused with `StoreError`, before any write, when it already holds one of them."""
    report = CopyReport(verb=verb)
    taken = [agent.scope for agent in agents if destination.sessions(agent.scope)
             or destination.load_core(agent.scope)]
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
        for agent in agents:
            for old, started in agent.sessions:
                session_ids[old] = keep_id(
                    lambda new, scope=agent.scope, started=started:
                    destination.start_session(scope, started, new), old)
                report.sessions += 1
        message_ids = _write_messages(destination, agents, session_ids, keep_id)
        report.messages = len(message_ids)
        report.records = _write_records(destination, agents, session_ids, keep_id)
        for agent in agents:
            if agent.blocks:
                destination.create_core(agent.scope, agent.blocks)
                report.blocks += len(agent.blocks)
            if agent.context is not None:
                destination.save_context(agent.scope, {**agent.context, **{
                    key: [message_ids[old] for old in agent.context.get(key, [])]
                    for key in ("message_ids", "unsummarized_ids")}, "clipped": [
                    [message_ids[old], keep] for old, keep in agent.context.get("clipped", [])]})
        report.scopes = len(agents)
    return report


def copy_agents(source: Backend, destination: Backend) -> CopyReport:
    """Copy every agent of `source` into `destination` (see the module docstring)."""
    return write_agents(destination, read_agents(source))


def _key(scope: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(scope.items()))


def _message_owners(source: Backend, scopes: list[dict[str, str]]) -> dict[int, Scope]:
    """Each message's own scope (message id -> scope).

    A message's own scope is not part of `Message`: a filter on a scope also matches the
    messages of its wider scopes, so scopes are taken widest (most keys) first and each
    message goes to the first that matches it, which is its own (every stored scope is
    in `scopes`)."""
    owner: dict[int, Scope] = {}
    for scope in sorted(scopes, key=len, reverse=True):
        for message in source.messages(Filter(scope=scope)):
            owner.setdefault(message.id, scope)
    return owner


def _write_messages(destination: Backend, agents: Sequence[AgentContents],
                    session_ids: dict[int, int], keep_id: Callable) -> dict[int, int]:
    """Store the agents' recall logs in id order; old id -> new id. Only user and
    assistant messages are indexed for search, each after the one before it in the
    source (`vmem.ranking.recall_documents`), as `RecallStore.add` indexed them."""
    owned = sorted(((message, agent.scope) for agent in agents for message in agent.messages),
                   key=lambda pair: pair[0].id)
    documents = dict(recall_documents((message, to_json(dict(scope)))
                                      for message, scope in owned))
    ids: dict[int, int] = {}
    for message, scope in owned:
        copied = replace(message, session_id=session_ids.get(message.session_id,
                                                             message.session_id))
        ids[message.id] = keep_id(
            lambda new, copied=copied, scope=scope: destination.add_message(
                replace(copied, id=new), scope, document=documents.get(copied.id)),
            message.id)
    return ids


def _write_records(destination: Backend, agents: Sequence[AgentContents],
                   session_ids: dict[int, int], keep_id: Callable) -> int:
    """Store the agents' archival records in id order, then their invalidations (a
    record may be superseded by a later one); return how many."""
    records = sorted((replace(record, scope=agent.scope) for agent in agents
                      for record in agent.records), key=lambda record: record.id)
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
