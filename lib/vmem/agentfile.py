"""The agent file: an agent's contents as one versioned JSON document (docs/AGENT_FILE.md).

`python -m vmem export` writes it and `python -m vmem import` reads it. Both go through
`vmem.transfer`'s model of an agent (`AgentContents`, `read_agents`, `write_agents`),
which `python -m vmem copy` uses too, so an export imported into a new store renders the
same prompt, keeps every id and answers every search the same way.

`to_document(agents)` is the JSON form (names follow Letta's agent file, `.af`, where a
field means the same thing: `agents`, `blocks`, `block_ids`, `messages`,
`in_context_message_ids`). `from_document(data)` checks ALL of a document before
anything is written: its format and version (a newer one is refused, saying which
version this vmem reads), every field's type, the stores' size limits, duplicate ids
and every reference (`block_ids`, `superseded_by`, the context's message ids).
A problem raises `StoreFormatError` naming the field (`agents[0].messages[3].role:
...`); `import_document` then writes nothing, and otherwise writes in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from .core import Block
from .errors import StoreFormatError, VMemError
from .messages import ROLES, SOURCES, Message, Record
from .storage.base import Backend, Scope
from .store import (
    MAX_MESSAGE_CHARS,
    MAX_RECORD_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    check_scope,
    check_unicode,
)
from .transfer import AgentContents, CopyReport, read_agents, write_agents

FORMAT = "vmem-agent"
VERSION = 1  # the layout this vmem writes and the newest it reads
_CONTEXT_KEYS = ("summary", "warning_armed", "last_change", "evicted_count",
                 "unsummarized_ids", "clipped")


# --- writing ------------------------------------------------------------------------
def export_document(source: Backend, scope: Scope | None = None) -> dict[str, Any]:
    """The agent file of every agent of `source` whose scope has each key and value of
    `scope` (None: every agent)."""
    return to_document(read_agents(source, scope))


def to_document(agents: list[AgentContents]) -> dict[str, Any]:
    """The JSON form of `agents` (docs/AGENT_FILE.md)."""
    blocks: list[dict[str, Any]] = []
    shown = []
    for number, agent in enumerate(agents):
        ids = [f"block-{len(blocks) + i}" for i in range(len(agent.blocks))]
        blocks += [{"id": block_id, **block} for block_id, block in zip(ids, agent.blocks,
                                                                          strict=True)]
        records = {record.id for record in agent.records}
        state = agent.context
        shown.append({
            "id": f"agent-{number}", "scope": agent.scope, "block_ids": ids,
            "sessions": [{"id": session, "started_at": started.isoformat()}
                         for session, started in agent.sessions],
            "messages": [_message_json(message) for message in agent.messages],
            "in_context_message_ids": [] if state is None else list(state["message_ids"]),
            "context": None if state is None else {key: state.get(key)
                                                   for key in _CONTEXT_KEYS},
            # a link to a record deleted since is written as null: it stays invalidated
            "passages": [_record_json(record, records) for record in agent.records]})
    return {"format": FORMAT, "version": VERSION, "metadata": {"generator": "vmem"},
            "agents": shown, "blocks": blocks}


def _message_json(message: Message) -> dict[str, Any]:
    return {"id": message.id, "role": message.role, "content": message.content,
            "name": message.name, "session_id": message.session_id, "turn": message.turn,
            "created_at": _time(message.created_at), "tool_calls": message.tool_calls,
            "tool_call_id": message.tool_call_id, "meta": message.meta}


def _record_json(record: Record, present: set[int | None]) -> dict[str, Any]:
    return {"id": record.id, "text": record.text, "tags": list(record.tags),
            "session_id": record.session_id, "turn_id": record.turn_id,
            "source_url": record.source_url, "created_at": _time(record.created_at),
            "source": record.source, "flagged": record.flagged,
            "flag_reasons": list(record.flag_reasons), "invalid_at": _time(record.invalid_at),
            "superseded_by": record.superseded_by if record.superseded_by in present else None}


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


# --- reading ------------------------------------------------------------------------
def import_document(destination: Backend, data: Any, scope: Scope | None = None
                    ) -> CopyReport:
    """Check the whole document, then store its agents in `destination` in one
    transaction (`import_agents`)."""
    return import_agents(destination, from_document(data), scope)


def import_agents(destination: Backend, agents: list[AgentContents],
                  scope: Scope | None = None) -> CopyReport:
    """Store agents checked by `from_document` in `destination` in one transaction.
    `scope` stores the file's one agent under that scope instead of its own (a file of
    several agents is then refused)."""
    if scope:
        if len(agents) != 1:
            raise StoreFormatError(f"--scope needs a file of one agent; this one holds "
                                   f"{len(agents)}; nothing was imported")
        agents[0].scope = check_scope(dict(scope))
    return write_agents(destination, agents, verb="imported")


def parse(text: str | bytes, where: str = "the agent file") -> Any:
    """The JSON value of `text`, or `StoreFormatError` saying where it is not JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreFormatError(f"{where} is not JSON ({exc}); nothing was imported") from exc
    except UnicodeDecodeError as exc:
        raise StoreFormatError(f"{where} is not UTF-8 text ({exc}); nothing was "
                               "imported") from exc


def from_document(data: Any) -> list[AgentContents]:
    """The agents of an agent file, every field checked (see the module docstring)."""
    check = _Checker()
    try:
        return check.document(data)
    except _Bad as bad:
        raise StoreFormatError(f"the agent file is malformed: {bad}; nothing was "
                               "imported") from None


class _Bad(Exception):
    """One problem in a document, with the path of the field."""


class _Checker:
    """Checks a document's values one by one; each raises `_Bad` naming its path."""

    def __init__(self) -> None:
        self.seen: dict[str, set[Any]] = {"message": set(), "record": set(),
                                          "session": set(), "scope": set()}

    def document(self, data: Any) -> list[AgentContents]:
        top = self.mapping(data, "the document")
        if top.get("format") != FORMAT:
            raise _Bad(f"format: expected {FORMAT!r}, got {top.get('format')!r} (not a vmem "
                       "agent file)")
        version = self.integer(top.get("version"), "version")
        if version > VERSION:
            raise _Bad(f"version: the file is format version {version}, written by a "
                       f"newer vmem; this vmem reads up to version {VERSION}. Upgrade vmem")
        if version < 1:
            raise _Bad(f"version: expected 1 to {VERSION}, got {version}")
        blocks: dict[str, dict[str, Any]] = {}
        for i, block in self.items(top, "blocks", "the document"):
            block_id = self.text(block.get("id"), f"blocks[{i}].id")
            if block_id in blocks:
                raise _Bad(f"blocks[{i}].id: {block_id!r} is used twice")
            blocks[block_id] = self.block(block, f"blocks[{i}]")
        used: set[str] = set()
        agents = [self.agent(agent, f"agents[{i}]", blocks, used)
                  for i, agent in self.items(top, "agents", "the document")]
        self.strings(top, "")
        return agents

    def agent(self, data: dict[str, Any], path: str, blocks: dict[str, dict[str, Any]],
              used: set[str]) -> AgentContents:
        scope = self.scope(data.get("scope"), f"{path}.scope")
        self.unique("scope", json.dumps(scope, sort_keys=True), f"{path}.scope")
        agent = AgentContents(scope)
        labels: set[str] = set()
        for i, block_id in enumerate(self.listing(data.get("block_ids"), f"{path}.block_ids")):
            where = f"{path}.block_ids[{i}]"
            if block_id not in blocks:
                raise _Bad(f"{where}: no block {block_id!r} in the file's blocks")
            if block_id in used:
                raise _Bad(f"{where}: block {block_id!r} is used twice (vmem agents share "
                           "no blocks)")
            used.add(block_id)
            if blocks[block_id]["label"] in labels:
                raise _Bad(f"{where}: a second block labelled {blocks[block_id]['label']!r}")
            labels.add(blocks[block_id]["label"])
            agent.blocks.append(blocks[block_id])
        for i, session in self.items(data, "sessions", path):
            where = f"{path}.sessions[{i}]"
            agent.sessions.append((self.unique("session", self.integer(
                session.get("id"), f"{where}.id"), f"{where}.id"),
                self.time(session.get("started_at"), f"{where}.started_at")))
        agent.messages = [self.message(m, f"{path}.messages[{i}]")
                          for i, m in self.items(data, "messages", path)]
        agent.records = [self.record(r, f"{path}.passages[{i}]", scope)
                         for i, r in self.items(data, "passages", path)]
        ids = {record.id for record in agent.records}
        for i, record in enumerate(agent.records):
            if record.superseded_by is not None and record.superseded_by not in ids:
                raise _Bad(f"{path}.passages[{i}].superseded_by: no passage "
                           f"{record.superseded_by} in this agent")
        agent.context = self.context(data, path, {message.id for message in agent.messages})
        return agent

    def block(self, data: dict[str, Any], path: str) -> dict[str, Any]:
        for key, kind in (("label", str), ("value", str), ("limit", int),
                          ("description", str), ("read_only", bool), ("metadata", dict),
                          ("version", int), ("history", list)):
            if key in data and (not isinstance(data[key], kind) or
                                (kind is int and isinstance(data[key], bool))):
                raise _Bad(f"{path}.{key}: expected {kind.__name__}, got "
                           f"{type(data[key]).__name__}")
        try:
            return Block.from_dict(data).to_dict(history=True)
        except (VMemError, ValueError, TypeError, KeyError) as exc:
            raise _Bad(f"{path}: {exc}") from None

    def message(self, data: dict[str, Any], path: str) -> Message:
        role = self.text(data.get("role"), f"{path}.role")
        if role not in ROLES:
            raise _Bad(f"{path}.role: expected one of {', '.join(ROLES)}, got {role!r}")
        content = self.text(data.get("content"), f"{path}.content", MAX_MESSAGE_CHARS,
                            empty=True)
        calls = data.get("tool_calls")
        if calls is not None and not (isinstance(calls, list) and
                                      all(isinstance(call, dict) for call in calls)):
            raise _Bad(f"{path}.tool_calls: expected null or a list of objects")
        return Message(
            role=role, content=content, id=self.unique("message", self.integer(
                data.get("id"), f"{path}.id"), f"{path}.id"),
            name=self.optional(data.get("name"), f"{path}.name", self.string),
            session_id=self.optional(data.get("session_id"), f"{path}.session_id",
                                     self.integer),
            turn=self.optional(data.get("turn"), f"{path}.turn", self.integer),
            created_at=self.time(data.get("created_at"), f"{path}.created_at"),
            tool_calls=calls,
            tool_call_id=self.optional(data.get("tool_call_id"), f"{path}.tool_call_id",
                                       self.string),
            meta=self.mapping(data.get("meta", {}), f"{path}.meta"))

    def record(self, data: dict[str, Any], path: str, scope: dict[str, str]) -> Record:
        source = data.get("source", "import")
        if source not in SOURCES:
            raise _Bad(f"{path}.source: expected one of {', '.join(SOURCES)}, got {source!r}")
        tags = self.listing(data.get("tags", []), f"{path}.tags", MAX_TAG_CHARS)
        if len(tags) > MAX_TAGS:
            raise _Bad(f"{path}.tags: {len(tags)} tags; the limit is {MAX_TAGS}")
        flagged = data.get("flagged", False)
        if not isinstance(flagged, bool):
            raise _Bad(f"{path}.flagged: expected true or false, got {flagged!r}")
        return Record(
            text=self.text(data.get("text"), f"{path}.text", MAX_RECORD_CHARS),
            id=self.unique("record", self.integer(data.get("id"), f"{path}.id"), f"{path}.id"),
            tags=tuple(tags), scope=scope,
            session_id=self.optional(data.get("session_id"), f"{path}.session_id",
                                     self.integer),
            turn_id=self.optional(data.get("turn_id"), f"{path}.turn_id", self.integer),
            source_url=self.optional(data.get("source_url"), f"{path}.source_url",
                                     self.string),
            created_at=self.time(data.get("created_at"), f"{path}.created_at"),
            source=source, flagged=flagged,
            flag_reasons=tuple(self.listing(data.get("flag_reasons", []),
                                            f"{path}.flag_reasons")),
            invalid_at=self.optional(data.get("invalid_at"), f"{path}.invalid_at", self.time),
            superseded_by=self.optional(data.get("superseded_by"), f"{path}.superseded_by",
                                        self.integer))

    def context(self, data: dict[str, Any], path: str, messages: set[int | None]
                ) -> dict[str, Any] | None:
        """The context state (`MainContext.state()`), its message ids in this agent."""
        queue = [self.integer(value, f"{path}.in_context_message_ids[{i}]") for i, value
                 in enumerate(self.listing(data.get("in_context_message_ids", []),
                                           f"{path}.in_context_message_ids", kind=int))]
        state = data.get("context")
        if state is None:
            if queue:
                raise _Bad(f"{path}.in_context_message_ids: a context queue without a "
                           "context (give `context` too)")
            return None
        state = self.mapping(state, f"{path}.context")
        pending = self.listing(state.get("unsummarized_ids", []),
                               f"{path}.context.unsummarized_ids", kind=int)
        for key, ids in (("in_context_message_ids", queue),
                         ("context.unsummarized_ids", pending)):
            missing = [value for value in ids if value not in messages]
            if missing:
                raise _Bad(f"{path}.{key}: no message {missing[0]} in this agent")
        summary = self.optional(state.get("summary"), f"{path}.context.summary", self.string)
        armed = state.get("warning_armed", True)
        if not isinstance(armed, bool):
            raise _Bad(f"{path}.context.warning_armed: expected true or false")
        last = self.optional(state.get("last_change"), f"{path}.context.last_change",
                             self.time)
        evicted = self.integer(state.get("evicted_count", 0), f"{path}.context.evicted_count")
        return {"summary": summary, "message_ids": queue, "warning_armed": armed,
                "last_change": None if last is None else last.isoformat(),
                "evicted_count": evicted, "unsummarized_ids": pending,
                "clipped": self.clipped(state.get("clipped") or [], f"{path}.context.clipped",
                                        {*queue, *pending})}

    def clipped(self, value: Any, path: str, shown: set[int]) -> list[list[int]]:
        """The `[message id, characters shown]` pairs of the messages a context shows
        clipped (`vmem.clipping.keeps_of`), each naming a message in that context."""
        pairs = []
        for index, pair in enumerate(self.listing(value, path, kind=list)):
            if len(pair) != 2:
                raise _Bad(f"{path}[{index}]: expected [message id, characters shown]")
            message_id, keep = (self.integer(item, f"{path}[{index}]") for item in pair)
            if message_id not in shown:
                raise _Bad(f"{path}[{index}]: message {message_id} is not in the context")
            pairs.append([message_id, keep])
        return pairs

    # --- one value ------------------------------------------------------------------
    def items(self, data: dict[str, Any], key: str, path: str
              ) -> Iterator[tuple[int, dict[str, Any]]]:
        where = f"{path}.{key}" if path != "the document" else key
        return enumerate(self.listing(data.get(key, []), where, kind=dict))

    @staticmethod
    def mapping(value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _Bad(f"{path}: expected an object, got {_kind(value)}")
        return value

    @staticmethod
    def listing(value: Any, path: str, limit: int | None = None, kind: type = str
                ) -> list[Any]:
        if not isinstance(value, list):
            raise _Bad(f"{path}: expected a list, got {_kind(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, kind) or (kind is int and isinstance(item, bool)):
                raise _Bad(f"{path}[{i}]: expected {kind.__name__}, got {_kind(item)}")
            if limit is not None and len(item) > limit:
                raise _Bad(f"{path}[{i}]: {len(item)} characters; the limit is {limit}")
        return value

    @staticmethod
    def text(value: Any, path: str, limit: int | None = None, empty: bool = False) -> str:
        if not isinstance(value, str) or (not empty and not value):
            raise _Bad(f"{path}: expected a non-empty string, got {_kind(value)}")
        if limit is not None and len(value) > limit:
            raise _Bad(f"{path}: {len(value):,} characters; the limit is {limit:,}")
        return value

    def string(self, value: Any, path: str) -> str:
        return self.text(value, path, empty=True)

    @staticmethod
    def integer(value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _Bad(f"{path}: expected a whole number of 0 or more, got {_kind(value)}")
        return value

    @staticmethod
    def time(value: Any, path: str) -> datetime:
        try:
            parsed = datetime.fromisoformat(value)
        except (TypeError, ValueError):
            raise _Bad(f"{path}: expected an ISO 8601 time such as "
                       f"2024-03-04T09:00:00+00:00, got {_kind(value)}") from None
        if parsed.tzinfo is None:
            raise _Bad(f"{path}: {value!r} has no time zone (write +00:00 for UTC)")
        return parsed

    @staticmethod
    def optional(value: Any, path: str, check: Callable[[Any, str], Any]) -> Any:
        return None if value is None else check(value, path)

    def scope(self, value: Any, path: str) -> dict[str, str]:
        try:
            return check_scope(self.mapping(value, path))
        except VMemError as exc:
            raise _Bad(f"{path}: {exc}") from None

    def unique(self, kind: str, value: Any, path: str) -> Any:
        if value in self.seen[kind]:
            raise _Bad(f"{path}: {kind} {value} appears twice in the file")
        self.seen[kind].add(value)
        return value

    def strings(self, value: Any, path: str) -> None:
        """Every string in the document is storable Unicode (no unpaired surrogate)."""
        if isinstance(value, str):
            try:
                check_unicode(path or "a string", value)
            except VMemError as exc:
                raise _Bad(str(exc)) from None
        elif isinstance(value, dict):
            for key, item in value.items():
                self.strings(key, path)
                self.strings(item, f"{path}.{key}" if path else key)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                self.strings(item, f"{path}[{i}]")


def _kind(value: Any) -> str:
    """A value as an error message shows it: short, with its JSON type."""
    shown = json.dumps(value, ensure_ascii=False) if not isinstance(value, bytes) else "bytes"
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "number",
             float: "number", type(None): "null"}
    return f"{names.get(type(value), type(value).__name__)} {shown}"
