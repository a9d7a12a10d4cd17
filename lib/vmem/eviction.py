"""Eviction planning for the main context: where its queue may be cut, and how far a flush
cuts.

The queue is evicted in *groups*, oldest first: an assistant message that calls tools
together with the tool results right after it (a call must never be separated from its
results, or providers refuse the prompt), any other message alone. Two things always
stay: the newest user message (the request being served) and the newest group (a
tool-call run may still be open).

How many groups a flush takes depends on the summary it produces: a longer summary may
force one more group out, and a failed one leaves a note in the prompt instead.
`plan_flush` makes that decision from two callbacks, so this module holds the rules and
`vmem.context` holds the token accounting and applies the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .messages import Message

Groups = list[list[int]]  # queue indices, one list per unit evicted whole, oldest first


def groups(queue: Sequence[Message]) -> Groups:
    """Split the queue into units that are evicted whole: an assistant message with tool
    calls together with the tool messages right after it; any other message alone."""
    found: Groups = []
    in_run = False
    for index, message in enumerate(queue):
        if message.role == "tool" and in_run:
            found[-1].append(index)
            continue
        in_run = message.role == "assistant" and bool(message.tool_calls)
        found.append([index])
    return found


def protected(queue: Sequence[Message]) -> set[int]:
    """Indices that must stay: the newest user message and the newest message's group
    (an open tool-call run stays together with the call that started it)."""
    if not queue:
        return set()
    kept = set(groups(queue)[-1])
    users = [index for index, message in enumerate(queue) if message.role == "user"]
    if users:
        kept.add(users[-1])
    return kept


def evictable_groups(queue: Sequence[Message]) -> Groups:
    """The groups a flush may evict, oldest first: those with no protected message."""
    kept = protected(queue)
    return [group for group in groups(queue) if not kept.intersection(group)]


def run_is_open(queue: Sequence[Message]) -> bool:
    """True while the newest assistant tool call still waits for some of its results."""
    if not queue:
        return False
    group = [queue[index] for index in groups(queue)[-1]]
    calls = group[0].tool_calls if group[0].role == "assistant" else None
    if not calls:
        return False
    answered = {message.tool_call_id for message in group[1:]}
    return any(call.get("id") not in answered for call in calls)


def leading(queue: Sequence[Message], evictable: Groups, count: int) -> list[Message]:
    """The messages of the first `count` groups, oldest first: what evicting them removes."""
    return [queue[index] for group in evictable[:count] for index in group]


@dataclass(frozen=True)
class FlushPlan:
    """What a flush does: evict the first `count` groups; then `summary` replaces the old
    summary, or `failure` says why summarizing failed (the old summary stays, and the
    evicted messages are noted as left out of it). Both are None when the evicted messages
    hold nothing to summarize."""

    count: int
    summary: str | None
    failure: str | None


@dataclass(frozen=True)
class PlannedFlush:
    """A flush worked out but not yet done (`MainContext.plan_next_flush`): `messages`
    leave the queue, oldest first; `summary` and `failure` as in `FlushPlan`."""

    messages: tuple[Message, ...]
    summary: str | None
    failure: str | None

    @property
    def ids(self) -> tuple[int | None, ...]:
        """The ids of the messages that leave the queue, oldest first."""
        return tuple(message.id for message in self.messages)


TotalAfter = Callable[[int, str | None, int], int]
Summarize = Callable[[int], tuple[str | None, str | None]]


def plan_flush(evictable: Groups, *, summary: str | None, unsummarized: int,
               total_after: TotalAfter, summarize: Summarize, target: float,
               limit: int) -> FlushPlan | None:
    """Evict the fewest leading `evictable` groups that bring the prompt down to `target`
    tokens (all of them if none do), and fold them into a new summary that fits `limit`.

    `summary` is the current summary and `unsummarized` the number of evicted messages
    already left out of it. `total_after(count, summary, unsummarized)` is the prompt's
    size after evicting the first `count` groups with that summary and that many messages
    left out. `summarize(count)` returns (new summary, None), (None, why it failed), or
    (None, None) when those groups hold nothing to summarize. None: nothing needs to go
    (or nothing may).
    """

    def fewest(total: Callable[[int], int]) -> int:
        return next((count for count in range(len(evictable) + 1) if total(count) <= target),
                    len(evictable))

    count = fewest(lambda n: total_after(n, summary, unsummarized))
    if count == 0:
        return None
    new, failure = summarize(count)
    if new is not None and count < len(evictable) and total_after(count, new, 0) > target:
        count = fewest(lambda n: total_after(n, new, 0))  # the summary grew: evict more
        new, failure = summarize(count)
    if new is not None and total_after(count, new, 0) > limit:
        new, failure = None, "the new summary is too long for the token budget"
    if failure is not None:
        count = fewest(lambda n: total_after(
            n, summary, unsummarized + sum(len(group) for group in evictable[:n])))
    return FlushPlan(count, new, failure)
