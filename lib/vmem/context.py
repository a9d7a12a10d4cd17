"""The main context: what the model sees, kept under a token budget (the "RAM").

The prompt `render()` returns has three parts:

1. one system message, the *stable prefix*: the system text, the core memory blocks and
   the running summary of evicted messages. It changes only when core memory is edited or
   the context flushes, so providers can cache it;
2. the FIFO queue of messages still in context;
3. a trailing system message with the *volatile* memory status (live counts of recall
   and archival records, time of the last change), placed last so it never breaks the
   cached prefix.

`append` stores every message in recall storage at once, then queues it. At `warn_at`
of the budget a memory-pressure notice is queued (once, re-armed by the next flush). When
the budget would be exceeded the context flushes: it evicts the oldest messages down to
about `flush_to` of the budget, never splitting an assistant tool call from its tool
results and always keeping the newest user message, and folds the evicted messages into
the summary. Every change is recorded as an `Event` so a widget can replay it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence, Sized
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from .clock import Clock, ensure_utc, format_time, utc_now
from .core import CoreMemory
from .errors import ContextOverflowError
from .messages import Message
from .recall import RecallStore
from .summarize import ExtractiveSummarizer, Summarizer
from .text import plural
from .tokens import DEFAULT_COUNTER, Counter, chat_tokens

EventKind = Literal["appended", "warned", "evicted", "summarized", "summary_failed", "restored"]
SEARCH_TOOL = "conversation_search"  # the tool named in the prompt for finding evicted messages


@dataclass(frozen=True)
class Event:
    """One change to the main context, in order, so a widget can replay a conversation.

    kind: appended (a message joined the queue), warned (the memory-pressure notice in
    `message_ids` joined the queue), evicted (`message_ids` left the queue), summarized
    (`detail` is the new summary of `message_ids`), summary_failed (`detail` says why;
    the old summary was kept), restored (the queue was loaded from a saved state).
    `size` is the tokens of the messages concerned, `tokens` the prompt total afterwards.
    """

    kind: EventKind
    time: datetime
    message_ids: tuple[int, ...] = ()
    size: int = 0
    tokens: int = 0
    detail: str = ""


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
        self._sizes: dict[int, int] = {}  # message id -> tokens
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
        summary_text = self._summary_text(self._summary, self._evicted, len(self._unsummarized))
        summary = self.counter.count(summary_text) if summary_text else 0
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

        Raises `ContextOverflowError` (and changes nothing) if the message cannot fit
        even after evicting everything that may be evicted. Returns the stored message.
        """
        if not isinstance(message, Message):
            raise TypeError(f"append takes a vmem.Message, got {type(message).__name__}")
        if message.id is not None:
            raise ValueError(f"message {message.id} is already stored; append a new Message")
        now = ensure_utc(self._clock())
        size = chat_tokens(message.to_chat(), self.counter)
        self._check_fits(message, size, now)
        saved = self._snapshot()
        try:
            with self.journal.transaction() if self.journal else nullcontext():
                self.recall.add(message, scope=self.scope)
                self._queue.append(message)
                self._sizes[message.id] = size
                self._last_change = now
                self._record("appended", now, [message])
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
        }

    def restore(self, state: dict[str, Any], messages: Sequence[Message] | None = None) -> None:
        """Load a saved `state()`: the queue becomes `messages` (by default fetched from
        recall by `state["message_ids"]`), and the summary, counters and flag come back.
        Records one `restored` event; earlier events are not restored."""
        ids = list(state["message_ids"])
        queue = list(self.recall.get_many(ids) if messages is None else messages)
        if [message.id for message in queue] != ids:
            raise ValueError(f"restore needs the messages {ids} in that order; got "
                             f"{[message.id for message in queue]}")
        pending = list(self.recall.get_many(list(state.get("unsummarized_ids", ()))))
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

    def _check_fits(self, message: Message, size: int, now: datetime) -> None:
        """Refuse, before any change, a message that cannot fit even after a full flush."""
        queue = [*self._queue, message]
        protected = self._protected(queue)
        evictable = len(queue) - len(protected)
        recall_count = len(self.recall) + 1
        worst_prefix = max(  # eviction grows the counts in the summary note
            self._prefix_tokens(evicted=self._evicted + evictable),
            self._prefix_tokens(evicted=self._evicted + evictable,
                                unsummarized=len(self._unsummarized) + evictable))
        fixed_now = self._fixed_tokens(self._prefix_tokens(), recall_count, now)
        if fixed_now > self.max_tokens:
            raise ContextOverflowError(self._fixed_overflow_text(fixed_now))
        fixed = self._fixed_tokens(worst_prefix, recall_count, now)
        kept = sum(self._sizes[queue[index].id] for index in protected if index < len(queue) - 1)
        if fixed + kept + size <= self.max_tokens:
            return
        also = f", and {kept} by the newest user message or the tool call it belongs to, " \
               "which must stay" if kept else ""
        raise ContextOverflowError(
            f"this {message.role} message is {size} tokens and cannot fit in the main "
            f"context: the budget is {self.max_tokens} tokens, {fixed} of them always taken "
            f"by the system prompt, core memory, summary, memory status and tool schemas"
            f"{also}. Shorten the message (store long text in archival memory and pass a "
            "short note) or raise max_tokens.")

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
        if not self._armed or self._run_is_open():
            return
        threshold = self.warn_at * self.max_tokens
        total = self.tokens()
        if total < threshold:
            return
        if total + self._notice_cost(total) > self.max_tokens:
            self._flush(now)
            total = self.tokens()
            if total < threshold or total + self._notice_cost(total) > self.max_tokens:
                return
        notice = Message("system", self._notice_text(total), meta={"notice": "memory_pressure"})
        self.recall.add(notice, scope=self.scope)
        self._queue.append(notice)
        self._sizes[notice.id] = chat_tokens(notice.to_chat(), self.counter)
        self._armed = False
        self._record("warned", now, [notice])

    def _notice_text(self, total: int) -> str:
        percent = round(100 * total / self.max_tokens)
        return (f"Memory pressure: the context is at {percent}% of its {self.max_tokens} "
                "tokens. The oldest messages will soon be evicted to recall memory and "
                "summarized; save important facts to core or archival memory now.")

    def _notice_cost(self, total: int) -> int:
        """Tokens the notice adds: itself, plus any change in the status line's count."""
        count = len(self.recall)
        return chat_tokens({"role": "system", "content": self._notice_text(total)}, self.counter) \
            + self._status_tokens(count + 1) - self._status_tokens(count)

    def _flush(self, now: datetime) -> None:
        """Evict the oldest evictable messages down to about `flush_to` of the budget and
        fold them into the summary (or keep the old summary if summarizing fails)."""
        groups = self._evictable_groups()
        target = self.flush_to * self.max_tokens
        old, pending = self._summary, self._unsummarized

        def after(count: int, summary: str | None, unsummarized: int) -> int:
            evicted = _count(groups, count)
            prefix = self._prefix_tokens(summary, self._evicted + evicted, unsummarized)
            return self._total_after(groups, count, prefix)

        def needed(summary: str | None, failed: bool) -> int:
            """The fewest leading groups to evict to reach the target (or all of them)."""
            return next((count for count in range(len(groups) + 1) if after(
                count, summary, len(pending) + _count(groups, count) if failed else 0
            ) <= target), len(groups))

        count = next((n for n in range(len(groups) + 1)
                      if after(n, old, len(pending)) <= target), len(groups))
        if count == 0:
            return
        new, reason = self._summarize(pending, groups, count)
        if new is not None and count < len(groups) and after(count, new, 0) > target:
            count = needed(new, failed=False)  # the summary grew: evict a little more
            new, reason = self._summarize(pending, groups, count)
        if new is not None and after(count, new, 0) > self.max_tokens:
            new, reason = None, "the new summary is too long for the token budget"
        if reason is not None:
            count = needed(old, failed=True)
        evicted = [self._queue[index] for group in groups[:count] for index in group]
        gone = {id(message) for message in evicted}
        self._queue = [message for message in self._queue if id(message) not in gone]
        self._evicted += len(evicted)
        self._armed = True
        self._record("evicted", now, evicted)
        if new is not None:
            self._summary, self._unsummarized = new, []
            self._record("summarized", now, [*pending, *evicted], detail=new)
        elif reason is not None:
            self._unsummarized = [*pending, *evicted]
            self._record("summary_failed", now, evicted, detail=reason)
        for message in evicted:
            del self._sizes[message.id]

    def _summarize(self, pending: list[Message], groups: list[list[int]],
                   count: int) -> tuple[str | None, str | None]:
        """(new summary, None) on success; (None, reason) on failure; (None, None) when
        the evicted messages hold nothing to summarize (only system notices)."""
        evicted = [*pending, *(self._queue[index] for group in groups[:count] for index in group)]
        if all(message.role == "system" for message in evicted):
            return None, None
        try:
            new = self.summarizer.summarize(self._summary, evicted)
        except Exception as error:  # any summarizer failure must not stop the loop
            return None, f"the summarizer failed: {type(error).__name__}: {error}"
        if not isinstance(new, str) or not new.strip():
            return None, "the summarizer returned no summary"
        return new.strip(), None

    def _total_after(self, groups: list[list[int]], count: int, prefix: int) -> int:
        gone = {index for group in groups[:count] for index in group}
        queue = sum(self._sizes[message.id] for index, message in enumerate(self._queue)
                    if index not in gone)
        return self._fixed_tokens(prefix, len(self.recall)) + queue

    # -- cut points ------------------------------------------------------------------

    def _evictable_groups(self) -> list[list[int]]:
        protected = self._protected(self._queue)
        return [group for group in _groups(self._queue) if not protected.intersection(group)]

    @staticmethod
    def _protected(queue: Sequence[Message]) -> set[int]:
        """Indices that must stay: the newest user message and the newest message's group
        (an open tool-call run stays together with the call that started it)."""
        if not queue:
            return set()
        groups = _groups(queue)
        protected = set(groups[-1])
        users = [index for index, message in enumerate(queue) if message.role == "user"]
        if users:
            protected.add(users[-1])
        return protected

    def _run_is_open(self) -> bool:
        """True while the newest assistant tool call still waits for some of its results."""
        if not self._queue:
            return False
        group = [self._queue[index] for index in _groups(self._queue)[-1]]
        calls = group[0].tool_calls if group[0].role == "assistant" else None
        if not calls:
            return False
        answered = {message.tool_call_id for message in group[1:]}
        return any(call.get("id") not in answered for call in calls)

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
        parts = [self.system, self.core.render()]
        summary_text = self._summary_text(summary, evicted, unsummarized)
        if summary_text:
            parts.append(summary_text)
        return "\n\n".join(part for part in parts if part)

    @staticmethod
    def _summary_text(summary: str | None, evicted: int, unsummarized: int) -> str:
        if not evicted and not summary:
            return ""
        lines = ["<summary>"]
        if evicted:
            lines.append(f"{plural(evicted, 'earlier message')} no longer in this context "
                         f"{'is' if evicted == 1 else 'are'} stored in recall memory (find "
                         f"them with {SEARCH_TOOL}).")
        lines.append(summary or "No summary of them is available.")
        if unsummarized:
            lines.append(f"Note: summarizing failed, so this summary leaves out the last "
                         f"{plural(unsummarized, 'evicted message')}; search recall memory "
                         "for them.")
        lines.append("</summary>")
        return "\n".join(lines)

    def _status_text(self, recall_count: int, last_change: datetime | None = None) -> str:
        """The memory status line; `last_change` defaults to the current one."""
        archival = f", {plural(len(self.archival), 'record')} in archival memory" \
            if self.archival is not None else ""
        last_change = last_change or self._last_change
        last = format_time(last_change) if last_change else "none yet"
        return f"Memory status: {plural(recall_count, 'message')} in recall memory{archival}; " \
               f"last change {last}."

    def _status_tokens(self, recall_count: int, last_change: datetime | None = None) -> int:
        return chat_tokens({"role": "system",
                            "content": self._status_text(recall_count, last_change)},
                           self.counter)

    def _record(self, kind: EventKind, time: datetime, messages: Iterable[Message],
                detail: str = "") -> None:
        messages = list(messages)
        size = sum(self._sizes[message.id] if message.id in self._sizes
                   else chat_tokens(message.to_chat(), self.counter) for message in messages)
        self.events.append(Event(kind, time, tuple(message.id for message in messages), size,
                                 self.tokens(), detail))

    def __repr__(self) -> str:
        return f"MainContext({self.tokens()}/{self.max_tokens} tokens, " \
               f"{plural(len(self._queue), 'message')} in context, {self._evicted} evicted)"


def _groups(queue: Sequence[Message]) -> list[list[int]]:
    """Split the queue into units that are evicted whole: an assistant message with tool
    calls together with the tool messages right after it; any other message alone."""
    groups: list[list[int]] = []
    in_run = False
    for index, message in enumerate(queue):
        if message.role == "tool" and in_run:
            groups[-1].append(index)
            continue
        in_run = message.role == "assistant" and bool(message.tool_calls)
        groups.append([index])
    return groups


def _count(groups: list[list[int]], count: int) -> int:
    return sum(len(group) for group in groups[:count])

