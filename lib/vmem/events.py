"""The record of changes a main context keeps: one `Event` per change, in order.

A value type of its own, apart from `vmem.context` that records it, because its readers
are elsewhere: the trace of a turn (`vmem.turn`), the demo and the widgets replay a
conversation from these events alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

EventKind = Literal["appended", "clipped", "warned", "evicted", "summarized", "summary_failed",
                    "restored"]


@dataclass(frozen=True)
class Event:
    """One change to the main context, in order, so a widget can replay a conversation.

    kind: appended (a message joined the queue), clipped (the message just appended was
    too big to fit whole and is shown clipped: `size` is its whole size, `detail` the
    note that heads it), warned (the memory-pressure notice in `message_ids` joined the
    queue), evicted (`message_ids` left the queue), summarized (`detail` is the new
    summary of `message_ids`), summary_failed (`detail` says why; the old summary was
    kept), restored (the queue was loaded from a saved state). `size` is the tokens of the
    messages concerned (as the queue shows them), `tokens` the prompt total afterwards.
    """

    kind: EventKind
    time: datetime
    message_ids: tuple[int, ...] = ()
    size: int = 0
    tokens: int = 0
    detail: str = ""
