"""The seams between the parts, as structural types: what the tools and the agent need.

`MemoryTools` and `Agent` are written against these protocols, not against `MainContext`,
`RecallStore`, `ArchivalStore` and `Memory` themselves: a test's small fake, or a second
storage backend, works as long as it has these members with these meanings. Python
protocols are structural, so the real classes satisfy them without importing this module.
Each protocol lists only what its user calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from .archival import Conflict
from .clock import Clock
from .context import Event
from .core import CoreMemory
from .messages import Message, Page


class ToolContext(Protocol):
    """What the memory tools need of a main context: the core memory they edit, the
    queued messages (the newest user message stamps an insert made outside the agent) and
    the clock that stamps results."""

    @property
    def core(self) -> CoreMemory: ...

    @property
    def messages(self) -> Sequence[Message]: ...

    @property
    def clock(self) -> Clock: ...


class AgentContext(ToolContext, Protocol):
    """What the agent loop needs of a main context, beyond the tools' needs: appending
    every message (the context stores, warns and evicts), the prompt, the tool schemas
    counted in its budget, and the event log a turn reports."""

    @property
    def events(self) -> Sequence[Event]: ...

    def append(self, message: Message) -> Message:
        """Store and queue `message`; return it with its id."""
        ...

    def render(self) -> list[dict[str, Any]]:
        """The prompt, as Chat Completions messages."""
        ...

    def set_tools(self, tools: Sequence[dict[str, Any]]) -> None:
        """Count these tool schemas against the budget."""
        ...


class RecallSearch(Protocol):
    """What `conversation_search` needs of recall storage."""

    def search(self, query: str, top_k: int = ..., page: int = ..., *,
               roles: Iterable[str] | None = ..., start: Any = ..., end: Any = ...,
               scope: dict[str, str] | None = ..., exclude: Iterable[int] = ...) -> Page:
        """One page of past messages ranked for `query` (without the `exclude` ids)."""
        ...


class AgentRecall(RecallSearch, Protocol):
    """Recall storage as the agent uses it: searched by the tools, and asked where a
    running session's turn numbering stands."""

    def last_turn(self, session_id: int) -> int:
        """The highest turn stored for `session_id` (0 before its first turn)."""
        ...


class Archive(Protocol):
    """What the archival tools (insert, update, search) need of archival storage."""

    def __len__(self) -> int:
        """How many records the store holds (invalidated ones included)."""
        ...

    def supersede(self, record_id: int, text: str, *, session_id: int | None = ...,
                  turn_id: int | None = ..., scope: dict[str, str] | None = ...) -> int:
        """Store `text` replacing record `record_id` (invalidated) in one transaction;
        return the new (or linked identical) record's id."""
        ...

    def conflicts(self, record_id: int, *, scope: dict[str, str] | None = ...
                  ) -> list[Conflict]:
        """The valid older records that record `record_id` supersedes, in whole or part."""
        ...

    def retire_superseded(self, record_id: int, *, scope: dict[str, str] | None = ...
                          ) -> list[Conflict]:
        """Invalidate the older records `record_id` supersedes entirely; all conflicts."""
        ...

    def insert(self, text: str, *, tags: Iterable[str] = ..., session_id: int | None = ...,
               turn_id: int | None = ..., scope: dict[str, str] | None = ...,
               source: str = ..., flagged: bool = ...,
               flag_reasons: Iterable[str] = ...) -> int:
        """Store one fact with its provenance and the guard's flag; return its id."""
        ...

    def search(self, query: str, top_k: int = ..., page: int = ..., *,
               tags: Iterable[str] | None = ..., start: Any = ..., end: Any = ...,
               scope: dict[str, str] | None = ...) -> Page:
        """One page of records ranked for `query`."""
        ...


class AgentMemory(Protocol):
    """What `Agent` needs of a memory: its main context and stores, the session that
    stamps each turn (None when there are no sessions), the scope its tools are bound to
    (None: no filter) and its clock. `vmem.Memory` is one."""

    @property
    def context(self) -> AgentContext: ...

    @property
    def recall(self) -> AgentRecall: ...

    @property
    def archival(self) -> Archive: ...

    @property
    def session_id(self) -> int | None: ...

    @property
    def scope(self) -> dict[str, str] | None: ...

    @property
    def clock(self) -> Clock: ...
