"""One persisted agent: every memory tier in one store (by default one SQLite file).

`Memory.open("agent.db")` gives an object with `core`, `context`, `recall`, `archival`
and `session_id`. The file holds core memory (with each block's edit history), the recall
log, archival records with their full-text index, the context's summary and in-context
message ids, and a sessions table: each open starts a new session. Every append to the
context commits its message, the queue and the summary in one transaction, and every core
edit commits with its history, so a killed process loses at most the write in flight.
Closing and reopening (in another process too) renders the same prompt. All of it goes
through one storage backend (`vmem.storage`), chosen from the path by `open_backend`.

One writer per agent: an open `Memory` holds its backend's writer lock (`<file>.lock` for
an SQLite file, an advisory lock per scope on PostgreSQL; released when the process or
its connection dies) and a second `Memory.open` of the same agent, from any process, is
refused with a message naming the holder. Two writers would
otherwise each keep their own copy of the context and overwrite each other's. Other
processes may still read and search the file (`ArchivalStore(path)`, `RecallStore(path)`)
or insert archival records, at any time: WAL lets readers run beside the writer.

A scope (`{"user_id": "u1"}`) binds the whole agent to one user or agent: its messages,
records, core memory and context state are kept apart from other scopes in the same file.
`memory.archival` and `memory.recall` are bound to the scope: their `search`, `records`,
`get`, `insert`, `delete`, `invalidate` and `len()` act within it without being asked
(an explicit `scope=` may narrow it, never leave it), and so do the tools and the
context. Ranking statistics (document counts and frequencies) are shared by all scopes of
a file, so where that matters, use one file per user. `memory.forget(scope)` deletes
another scope's agent in every tier (`python -m vmem forget` any agent, this one closed).
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from datetime import datetime

from .archival import ArchivalStore
from .clock import Clock, utc_now
from .context import MainContext
from .core import Block, CoreMemory
from .errors import StoreError
from .recall import RecallStore
from .storage.backends import open_backend, sessions_in, shown
from .storage.base import Backend, in_scope
from .store import check_scope
from .summarize import Summarizer
from .tokens import Counter

DEFAULT_SYSTEM = ("You are a helpful assistant with a long-term memory. Use your memory "
                  "tools to remember what matters and to look up what is no longer in view.")
DEFAULT_MAX_TOKENS = 4000  # tool schemas alone take about 1,000 (ApproxCounter)


class Memory:
    """All tiers of one agent, sharing one storage backend. Build it with `Memory.open`."""

    def __init__(self, backend: Backend, *, scope: dict[str, str], session_id: int,
                 core: CoreMemory, context: MainContext, recall: RecallStore,
                 archival: ArchivalStore, clock: Clock, path: str) -> None:
        self.backend = backend
        self.scope: dict[str, str] | None = scope or None
        self.session_id = session_id
        self.core = core
        self.context = context
        self.recall = recall
        self.archival = archival
        self.clock = clock
        self.path = path
        self._closed = False

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
        backend = open_backend(os.fspath(path))
        where = shown(os.fspath(path))  # a URL without its password, for messages
        try:
            backend.lock_writer(scope)
            with backend.damaged(where):
                return cls._load(backend, scope, where, clock, system=system,
                                 max_tokens=max_tokens, core=core, warn_at=warn_at,
                                 flush_to=flush_to, summarizer=summarizer, counter=counter)
        except BaseException:
            backend.close()
            raise

    @classmethod
    def _load(cls, backend: Backend, scope: dict[str, str], path: str, clock: Clock, *,
              system: str, max_tokens: int, core: CoreMemory | None, warn_at: float,
              flush_to: float,
              summarizer: Summarizer | None, counter: Counter | None) -> Memory:
        with backend.transaction():
            session_id = backend.start_session(scope, clock())
            blocks = backend.load_core(scope)
            if not blocks:  # a new agent
                blocks = (core or CoreMemory.default(clock=clock)).to_dict(history=True)["blocks"]
                backend.create_core(scope, blocks)
            core = CoreMemory.from_dict({"blocks": blocks}, clock=clock)
        recall = RecallStore(backend, clock=clock, scope=scope)
        archival = ArchivalStore(backend, clock=clock, scope=scope)
        journal = _Journal(backend, scope)
        context = MainContext(system, core, max_tokens, recall=recall, archival=archival,
                              warn_at=warn_at, flush_to=flush_to, summarizer=summarizer,
                              counter=counter, clock=clock, scope=scope or None,
                              journal=journal)
        state = backend.load_context(scope)
        if state is not None:
            context.restore(state)
        context.fit()
        core.on_change = journal.save_block
        return cls(backend, scope=scope, session_id=session_id, core=core, context=context,
                   recall=recall, archival=archival, clock=clock, path=path)

    @staticmethod
    def count_sessions(path: str | os.PathLike[str]) -> int:
        """How many sessions (of every scope) the agent stored at `path` holds, read
        without writing to it or locking it: 0 for a new path or a file that is not a
        vmem store (`Memory.open` then says why)."""
        return sessions_in(os.fspath(path))

    def sessions(self) -> list[tuple[int, datetime]]:
        """(session id, start time) of every session of this scope, oldest first."""
        return self.backend.sessions(self.scope or {})

    def forget(self, scope: dict[str, str]) -> dict[str, int]:
        """Forget another agent stored beside this one: delete every agent whose scope
        has each key and value of `scope`, in every tier, and leave none of its text
        readable (`Backend.forget`; what each backend guarantees: docs/RELIABILITY.md).
        Returns the rows deleted, per table.

        Refused with `StoreError`, deleting nothing: an empty scope (it would forget
        every agent), and a scope that covers this Memory's own agent (its context and
        core memory live in this object, which would write them back on the next
        append: close it, then forget it from another Memory or `python -m vmem
        forget`). `AgentLockedError` when another process has one of them open."""
        scope = check_scope(scope)
        if scope and in_scope(self.scope or {}, scope):
            raise StoreError(f"{scope} covers this Memory's own agent "
                             f"({self.scope or 'no scope'}), which it holds open; close it, "
                             "then run `python -m vmem forget` or forget it from another "
                             "Memory")
        return self.backend.forget(scope)

    def close(self) -> None:
        """Close the backend and release the writer lock; safe to call twice."""
        if not self._closed:
            self.backend.close()
            self._closed = True

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Memory({self.path!r}, session {self.session_id}, {len(self.recall)} "
                f"messages, {len(self.archival)} records)")


class _Journal:
    """Writes the context state and core blocks of one scope, in the caller's transaction."""

    def __init__(self, backend: Backend, scope: dict[str, str]) -> None:
        self.backend = backend
        self.scope = scope

    def transaction(self) -> AbstractContextManager[None]:
        return self.backend.transaction()

    def record(self, context: MainContext) -> None:
        self.backend.save_context(self.scope, context.state())

    def save_block(self, block: Block) -> None:
        self.backend.save_block(self.scope, block.to_dict(history=True))
