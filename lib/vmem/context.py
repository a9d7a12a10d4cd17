"""The main context: what the model sees, kept under a token budget (the "RAM").

The prompt `render()` returns has three parts:

1. one system message, the *stable prefix*: the system text, the core memory blocks and
   the running summary of evicted messages. It changes only when core memory is edited or
   the context flushes, so providers can cache it;
2. the FIFO queue of messages still in context;
3. a trailing system message with the *volatile* memory status (live counts of recall
   and archival records, time of the last change), placed last so it never breaks the
   cached prefix.

`append` stores every message in recall storage at once, then queues it (one too big to
fit even after a full flush is queued as a clipped view that names it, `vmem.clipping`).
At `warn_at` of the budget a memory-pressure notice is queued (once, re-armed by the next
flush). When the budget would be exceeded the context flushes: it evicts the oldest
messages down to about `flush_to` of the budget, never splitting an assistant tool call
from its tool results and always keeping the newest user message, and folds the evicted
messages into the summary. Every change is recorded as an `Event` so a widget can replay it, and
`plan_next_flush()` says what the next flush would evict without doing it.

This module keeps the books: it counts tokens, stores, queues and rolls back. The rules
for where the queue may be cut and how far a flush cuts are in `vmem.eviction`; the words
of the summary block, the status line and the pressure notice are in `vmem.prompt`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence, Sized
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import Any, Protocol

from .clipping import clipped_view, keep_for, keeps_of, priced, reclipped
from .clock import Clock, ensure_utc, utc_now
from .core import CoreMemory
from .errors import ContextOverflowError
from .events import Event, EventKind
from .eviction import PlannedFlush, evictable_groups, leading, plan_flush, protected, run_is_open
from .messages import Message
from .prompt import clip_note, pressure_text, status_text, summary_text, system_text
from .recall import RecallStore
from .summarize import ExtractiveSummarizer, Summarizer
from .text import plural
from .tokens import DEFAULT_COUNTER, Counter, chat_tokens


class Journal(Protocol):
    """Where a context persists itself (`vmem.Memory` is one).

    `append` runs inside `transaction()`, which also holds the message's write to recall
    storage, and calls `record(context)` at its end: the message, the queue, the summary
    and the counters commit together or not at all.
    """

    def transaction(self) -> AbstractContextManager[Any]:
        """A context manager: everything written inside commits together or not at all."""

    def record(self, context: MainContext) -> None:
        """Write the context's `state()`, inside the open transaction."""


class MainContext:
    """System text + core memory + summary + FIFO queue under `max_tokens`.

    `recall` defaults to a fresh in-memory `RecallStore`; `archival` is anything with a
    length (only its count is shown); `tools` are Chat Completions tool schemas, counted
    (JSON-serialised) against the budget and assumed fixed. `scope` is passed to
    `recall.add` for every stored message. Events are kept in memory only; use `state()`
    and `restore()` to persist the rest.
    """

    def __init__(
        self,
        system: str,
        core: CoreMemory,
        max_tokens: int,
        *,
        recall: RecallStore | None = None,
        archival: Sized | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
        warn_at: float = 0.7,
        flush_to: float = 0.5,
        summarizer: Summarizer | None = None,
        counter: Counter | None = None,
        clock: Clock | None = None,
        scope: dict[str, str] | None = None,
        journal: Journal | None = None,
    ) -> None:
        if not isinstance(system, str):
            raise TypeError("system must be the system prompt text")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        if not 0 < flush_to < warn_at <= 1:
            raise ValueError(f"need 0 < flush_to < warn_at <= 1, got flush_to={flush_to}, "
                             f"warn_at={warn_at}")
        self.system = system
        self.core = core
        self.max_tokens = max_tokens
        self.warn_at = warn_at
        self.flush_to = flush_to
        self.counter: Counter = counter or DEFAULT_COUNTER
        self.summarizer: Summarizer = summarizer or ExtractiveSummarizer()
        self._clock: Clock = clock or utc_now
        self.recall = recall if recall is not None else RecallStore(clock=self._clock)
        self.archival = archival
        self.tools = list(tools or ())
        self.scope = scope
        self.journal = journal
        self.events: list[Event] = []
        self._queue: list[Message] = []
        self._sizes: dict[int, int] = {}  # message id -> tokens (as shown)
        self._summary: str | None = None
        self._evicted = 0  # messages evicted so far
        self._unsummarized: list[Message] = []  # evicted but not in the summary (it failed)
        self._armed = True
        self._last_change: datetime | None = None
        self._tools_tokens = self._schema_tokens(self.tools)
        fixed = self._fixed_tokens(self._prefix_tokens(), len(self.recall))
        if fixed > max_tokens:
            raise ContextOverflowError(self._fixed_overflow_text(fixed))

    def set_tools(self, tools: Sequence[dict[str, Any]]) -> None:
        """Count these tool schemas against the budget from now on (the agent calls this
        with its tools' schemas). Refused, changing nothing, if the prompt would no longer
        fit; the next append flushes as usual when it is merely over."""
        schemas, previous = list(tools), self._tools_tokens
        self._tools_tokens = self._schema_tokens(schemas)
        fixed = self._fixed_tokens(self._prefix_tokens(), len(self.recall))
        if fixed > self.max_tokens:
            self._tools_tokens = previous
            raise ContextOverflowError(self._fixed_overflow_text(fixed))
        self.tools = schemas

    def _schema_tokens(self, tools: Sequence[dict[str, Any]]) -> int:
        return self.counter.count(json.dumps(list(tools), ensure_ascii=False)) if tools else 0

    @property
    def clock(self) -> Clock:
        """The clock that stamps this context's messages and events."""
        return self._clock

    # -- what the model sees ---------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The messages still in context, oldest first (a copy)."""
        return list(self._queue)

    @property
    def summary(self) -> str | None:
        """The running summary of evicted messages (None before the first one)."""
        return self._summary

    def render(self) -> list[dict[str, Any]]:
        """The prompt as Chat Completions messages: stable prefix, queue, memory status."""
        return [
            {"role": "system", "content": self._system_text(
                self._summary, self._evicted, len(self._unsummarized))},
            *(message.to_chat() for message in self._queue),
            {"role": "system", "content": self._status_text(len(self.recall))},
        ]

    def tokens(self) -> int:
        """Tokens of everything `render()` returns (see `chat_tokens`) plus the tool schemas."""
        return self._fixed_tokens(self._prefix_tokens(), len(self.recall)) + \
            sum(self._sizes[message.id] for message in self._queue)

    def overview(self) -> dict[str, int]:
        """Tokens per section; `system` + `core` + `summary` is the system message exactly
        (`system` holds the system text plus framing), and the sections add up to `total`."""
        prefix = self._prefix_tokens()
        core = self.counter.count(self.core.render())
        summary_block = summary_text(self._summary, self._evicted, len(self._unsummarized))
        summary = self.counter.count(summary_block) if summary_block else 0
        status = self._status_tokens(len(self.recall))
        queue = sum(self._sizes[message.id] for message in self._queue)
        return {
            "system": prefix - core - summary, "core": core, "summary": summary,
            "messages": queue, "status": status, "tools": self._tools_tokens,
            "total": prefix + queue + status + self._tools_tokens,
            "max_tokens": self.max_tokens, "in_context": len(self._queue),
            "evicted": self._evicted,
        }

    # -- the one way in --------------------------------------------------------------

    def append(self, message: Message) -> Message:
        """Store `message` in recall, queue it, then warn or flush as the budget requires.

        A message that cannot fit even after a full flush is queued clipped (`_clip_keep`).
        Raises, changing nothing, `ContextOverflowError` when not even its note fits, and
        what recall refuses (`InputTooLargeError` over its limit). Returns the message."""
        if not isinstance(message, Message):
            raise TypeError(f"append takes a vmem.Message, got {type(message).__name__}")
        if message.id is not None:
            raise ValueError(f"message {message.id} is already stored; append a new Message")
        now = ensure_utc(self._clock())
        size = chat_tokens(message.to_chat(), self.counter)
        keep = self._clip_keep(message, size, now)
        saved = self._snapshot()
        try:
            with self.journal.transaction() if self.journal else nullcontext():
                self.recall.add(message, scope=self.scope)
                shown = message if keep is None else clipped_view(message, size, keep)
                self._queue.append(shown)
                self._sizes[message.id] = chat_tokens(shown.to_chat(), self.counter)
                self._last_change = now
                self._record("appended", now, [shown])
                if keep is not None:
                    self._record("clipped", now, [shown], clip_note(message.id, message.role,
                                                                    size), size)
                if self.tokens() > self.max_tokens:
                    self._flush(now)
                self._maybe_warn(now)
                if self.journal:
                    self.journal.record(self)
        except BaseException:
            self._rollback(saved, message)
            raise
        return message

    def fit(self) -> None:
        """Flush now if the prompt is over budget. Only growth outside `append` causes
        that: a core memory edit, higher counts in the memory status line, or a smaller
        `max_tokens` than the saved context was built with (`Memory.open` calls this
        after restoring, so a reopened agent always renders within its budget)."""
        if self.tokens() <= self.max_tokens:
            return
        saved = self._snapshot()
        try:
            with self.journal.transaction() if self.journal else nullcontext():
                self._flush(ensure_utc(self._clock()))
                if self.journal:
                    self.journal.record(self)
        except BaseException:
            self._rollback(saved)
            raise

    def _snapshot(self) -> tuple[Any, ...]:
        return (list(self._queue), dict(self._sizes), self._summary, self._evicted,
                list(self._unsummarized), self._armed, self._last_change, len(self.events))

    def _rollback(self, saved: tuple[Any, ...], message: Message | None = None) -> None:
        """Undo an append that failed part way (e.g. the disk refused the write): the
        stores rolled back in their transaction, so memory goes back to match them."""
        (self._queue, self._sizes, self._summary, self._evicted, self._unsummarized,
         self._armed, self._last_change, events) = saved
        del self.events[events:]
        if self.journal and message is not None:
            message.id = None  # its row was rolled back with the transaction

    # -- persistence -----------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Everything but the stores and the events, as JSON-ready values (see `restore`)."""
        return {
            "summary": self._summary,
            "message_ids": [message.id for message in self._queue],
            "warning_armed": self._armed,
            "last_change": self._last_change.isoformat() if self._last_change else None,
            "evicted_count": self._evicted,
            "unsummarized_ids": [message.id for message in self._unsummarized],
            "clipped": keeps_of([*self._queue, *self._unsummarized]),
        }

    def restore(self, state: dict[str, Any], messages: Sequence[Message] | None = None) -> None:
        """Load a saved `state()`: the queue becomes `messages` (by default fetched from
        recall by `state["message_ids"]`, whole), shown clipped as they were when saved, and
        the summary, counters and flag come back. Records one `restored` event; earlier
        events are not restored."""
        ids = list(state["message_ids"])
        queue = list(self.recall.get_many(ids) if messages is None else messages)
        if [message.id for message in queue] != ids:
            raise ValueError(f"restore needs the messages {ids} in that order; got "
                             f"{[message.id for message in queue]}")
        pending = list(self.recall.get_many(list(state.get("unsummarized_ids", ()))))
        keeps = state.get("clipped", ())
        queue, pending = (reclipped(messages, keeps, self.counter) for messages in (queue, pending))
        self._queue = queue
        self._sizes = {m.id: chat_tokens(m.to_chat(), self.counter) for m in queue}
        self._summary = state.get("summary")
        self._evicted = int(state.get("evicted_count", 0))
        self._unsummarized = pending
        self._armed = bool(state.get("warning_armed", True))
        last = state.get("last_change")
        self._last_change = ensure_utc(datetime.fromisoformat(last)) if last else None
        self._record("restored", ensure_utc(self._clock()), queue)

    # -- budget checks ---------------------------------------------------------------

    def _clip_keep(self, message: Message, size: int, now: datetime | None) -> int | None:
        """None when `message` (`size` tokens) fits whole after a full flush; else the
        characters its clipped view shows in the room a full flush leaves (`keep_for`).
        Refuses, before any change, a message whose note alone cannot fit."""
        queue = [*self._queue, message]
        kept_indices = protected(queue)
        evictable = len(queue) - len(kept_indices)
        recall_count = len(self.recall) + 1
        worst_prefix = max(  # eviction grows the counts in the summary note
            self._prefix_tokens(evicted=self._evicted + evictable),
            self._prefix_tokens(evicted=self._evicted + evictable,
                                unsummarized=len(self._unsummarized) + evictable))
        fixed_now = self._fixed_tokens(self._prefix_tokens(), recall_count, now)
        if fixed_now > self.max_tokens:
            raise ContextOverflowError(self._fixed_overflow_text(fixed_now))
        fixed = self._fixed_tokens(worst_prefix, recall_count, now)
        kept = sum(self._sizes[queue[index].id] for index in kept_indices
                   if index < len(queue) - 1)
        room = self.max_tokens - fixed - kept
        if size <= room:
            return None
        keep = keep_for(message, size, room, self.counter)
        if keep is not None:
            return keep
        also = f", and {kept} by the newest user message or the tool call it belongs to, " \
               "which must stay" if kept else ""
        raise ContextOverflowError(
            f"this {message.role} message is {size} tokens and cannot be shown in the main "
            f"context even clipped to a note naming it: the budget is {self.max_tokens} "
            f"tokens, {fixed} of them always taken by the system prompt, core memory, "
            f"summary, memory status and tool schemas{also}. Raise max_tokens or shorten "
            "the system text or core memory.")

    def _fixed_overflow_text(self, fixed: int) -> str:
        core = self.counter.count(self.core.render())
        return (f"the system prompt and core memory alone take {fixed} tokens (core memory "
                f"{core}, the rest system text, summary, memory status and tool schemas), "
                f"over the budget of {self.max_tokens}: shorten the system text or the core "
                "memory blocks, or raise max_tokens.")

    def _fixed_tokens(self, prefix: int, recall_count: int,
                      last_change: datetime | None = None) -> int:
        return prefix + self._status_tokens(recall_count, last_change) + self._tools_tokens

    # -- warning and flush -----------------------------------------------------------

    def _maybe_warn(self, now: datetime) -> None:
        """Queue the memory-pressure notice once the total reaches `warn_at` of the budget.

        Waits while a tool-call run is open (a notice there would separate a call from its
        results). If the notice itself would not fit, flush instead.
        """
        if not self._armed or run_is_open(self._queue):
            return
        threshold = self.warn_at * self.max_tokens
        total = self.tokens()
        if total < threshold:
            return
        if self._warning_flushes(total, self._queue, len(self.recall)):
            self._flush(now)
            total = self.tokens()
            if total < threshold or \
                    total + self._notice_cost(total, len(self.recall)) > self.max_tokens:
                return
        notice = Message("system", pressure_text(total, self.max_tokens),
                         meta={"notice": "memory_pressure"})
        self.recall.add(notice, scope=self.scope)
        self._queue.append(notice)
        self._sizes[notice.id] = chat_tokens(notice.to_chat(), self.counter)
        self._armed = False
        self._record("warned", now, [notice])

    def _warning_flushes(self, total: int, queue: Sequence[Message], recall_count: int,
                         last_change: datetime | None = None) -> bool:
        """True when the prompt (`total` tokens, this `queue`) is due a warning that does
        not fit, so `_maybe_warn` flushes instead of warning."""
        return self._armed and not run_is_open(queue) and \
            total >= self.warn_at * self.max_tokens and \
            total + self._notice_cost(total, recall_count, last_change) > self.max_tokens

    def _notice_cost(self, total: int, count: int, last_change: datetime | None = None) -> int:
        """Tokens the notice adds: itself, plus any change in the status line's count."""
        notice = {"role": "system", "content": pressure_text(total, self.max_tokens)}
        return chat_tokens(notice, self.counter) + \
            self._status_tokens(count + 1, last_change) - \
            self._status_tokens(count, last_change)

    def plan_next_flush(self, incoming: Message | None = None, *,
                        now: datetime | None = None) -> PlannedFlush | None:
        """What the next flush would do, worked out by the planner the flush itself uses
        and changing nothing: which messages leave the queue and the summary that replaces
        the old one. Without `incoming`: a flush run now (whether or not one is due).
        With it: the flush that `append(incoming)` would run at time `now` (default: the
        last change), with `incoming` as the queue would show it (clipped when too big),
        or None when that append would not flush or would be refused. None also when the
        flush would evict nothing: the prompt is already at `flush_to`, or nothing may go.
        Exact for a deterministic summarizer; it calls the summarizer as the flush would (an LLM
        summarizer makes one call), never the clock."""
        queue, sizes = list(self._queue), [self._sizes[message.id] for message in self._queue]
        recall_count, last = len(self.recall), now or self._last_change
        if incoming is not None:
            size = chat_tokens(incoming.to_chat(), self.counter)
            try:
                keep = self._clip_keep(incoming, size, last)
            except ContextOverflowError:
                return None
            queue.append(incoming)
            sizes.append(size if keep is None else priced(incoming, size, keep, self.counter))
            recall_count += 1
            total = self._fixed_tokens(self._prefix_tokens(), recall_count, last) + sum(sizes)
            if total <= self.max_tokens and not self._warning_flushes(
                    total, queue, recall_count, last):
                return None
        return self._plan(queue, sizes, recall_count, last)

    def _plan(self, queue: list[Message], sizes: list[int], recall_count: int,
              last_change: datetime | None = None) -> PlannedFlush | None:
        """Plan a flush of `queue` (token `sizes` alongside) with `recall_count` messages
        in recall: the fewest oldest groups down to `flush_to`, see `plan_flush`."""
        groups = evictable_groups(queue)
        pending = self._unsummarized

        def total_after(count: int, summary: str | None, unsummarized: int) -> int:
            evicted = [index for group in groups[:count] for index in group]
            prefix = self._prefix_tokens(summary, self._evicted + len(evicted), unsummarized)
            return self._fixed_tokens(prefix, recall_count, last_change) + sum(sizes) - \
                sum(sizes[index] for index in evicted)

        plan = plan_flush(
            groups, summary=self._summary, unsummarized=len(pending), total_after=total_after,
            summarize=lambda count: self._summarize([*pending, *leading(queue, groups, count)]),
            target=self.flush_to * self.max_tokens, limit=self.max_tokens)
        return None if plan is None else PlannedFlush(
            tuple(leading(queue, groups, plan.count)), plan.summary, plan.failure)

    def _flush(self, now: datetime) -> None:
        """Evict the oldest evictable messages down to about `flush_to` of the budget and
        fold them into the summary (or keep the old summary if summarizing fails)."""
        plan = self.plan_next_flush()
        if plan is None:
            return
        pending, evicted = self._unsummarized, list(plan.messages)
        gone = {id(message) for message in evicted}
        self._queue = [message for message in self._queue if id(message) not in gone]
        self._evicted += len(evicted)
        self._armed = True
        self._record("evicted", now, evicted)
        if plan.summary is not None:
            self._summary, self._unsummarized = plan.summary, []
            self._record("summarized", now, [*pending, *evicted], detail=plan.summary)
        elif plan.failure is not None:
            self._unsummarized = [*pending, *evicted]
            self._record("summary_failed", now, evicted, detail=plan.failure)
        for message in evicted:
            del self._sizes[message.id]

    def _summarize(self, evicted: list[Message]) -> tuple[str | None, str | None]:
        """(new summary, None) on success; (None, reason) on failure; (None, None) when
        the evicted messages hold nothing to summarize (only system notices)."""
        if all(message.role == "system" for message in evicted):
            return None, None
        try:
            new = self.summarizer.summarize(self._summary, evicted)
        except Exception as error:  # any summarizer failure must not stop the loop
            return None, f"the summarizer failed: {type(error).__name__}: {error}"
        if not isinstance(new, str) or not new.strip():
            return None, "the summarizer returned no summary"
        return new.strip(), None

    # -- text of the system and status messages --------------------------------------

    def _prefix_tokens(self, summary: str | None = None, evicted: int | None = None,
                       unsummarized: int | None = None) -> int:
        """Tokens of the system message, by default as it is now."""
        text = self._system_text(
            self._summary if summary is None else summary,
            self._evicted if evicted is None else evicted,
            len(self._unsummarized) if unsummarized is None else unsummarized)
        return chat_tokens({"role": "system", "content": text}, self.counter)

    def _system_text(self, summary: str | None, evicted: int, unsummarized: int) -> str:
        return system_text(self.system, self.core.render(),
                           summary_text(summary, evicted, unsummarized))

    def _status_text(self, recall_count: int, last_change: datetime | None = None) -> str:
        """The memory status line; `last_change` defaults to the current one."""
        archival = len(self.archival) if self.archival is not None else None
        return status_text(recall_count, archival, last_change or self._last_change)

    def _status_tokens(self, recall_count: int, last_change: datetime | None = None) -> int:
        return chat_tokens({"role": "system",
                            "content": self._status_text(recall_count, last_change)},
                           self.counter)

    def _record(self, kind: EventKind, time: datetime, messages: Iterable[Message],
                detail: str = "", size: int | None = None) -> None:
        messages = list(messages)
        if size is None:
            size = sum(self._sizes[message.id] if message.id in self._sizes
                       else chat_tokens(message.to_chat(), self.counter) for message in messages)
        self.events.append(Event(kind, time, tuple(message.id for message in messages), size,
                                 self.tokens(), detail))

    def __repr__(self) -> str:
        return f"MainContext({self.tokens()}/{self.max_tokens} tokens, " \
               f"{plural(len(self._queue), 'message')} in context, {self._evicted} evicted)"

