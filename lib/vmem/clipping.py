"""The clipped view of a message too big for the main context.

A message that alone cannot fit in the main context is still stored whole in recall
storage; the context's queue shows a *view* of it instead: the same message (id, role,
name, tool call ids) headed by a note with its id, its whole size and where the whole
message is (`vmem.prompt.clip_note`), followed by as much of its text as fits. The text
is the content, then the arguments of each tool call, kept from the start: what comes
first is shown first. A tool call's clipped arguments are shown as valid JSON,
`{"clipped": "<their first characters>…"}`, so the prompt stays one a provider accepts.

A view (`ClippedView`, a `Message`) is a pure function of the whole message and `keep`,
the number of characters of text it shows, so a context saves that one number and
rebuilds the same view after a reopen. `keep_for` decides how much a view shows: as much
as fits in half the room left to it, the other half being for the reply and the tool
calls that follow.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from .messages import Message
from .prompt import clip_note
from .text import clip
from .tokens import Counter, chat_tokens

WIDEST_ID = 10**12 - 1
"""The id a message not yet stored is priced with: no stored id is wider, so the note of
the view once stored costs no more tokens than planned."""


@dataclass
class ClippedView(Message):
    """A message as the queue shows it when it is too big to fit: `whole_tokens` is the
    whole message's size, `keep` the characters of its text shown after the note."""

    whole_tokens: int = 0
    keep: int = 0


def clipped_view(message: Message, tokens: int, keep: int) -> ClippedView:
    """The view of `message` (whole: `tokens` tokens) that shows `keep` characters of its
    text after the note. The whole message is left unchanged."""
    texts, shown, left = _texts(message), [], keep
    for text in texts:
        shown.append(text if len(text) <= left else clip(text, left) if left > 0 else "")
        left = max(left - len(text), 0)
    note = clip_note(message.id, message.role, tokens)
    content = f"{note}\n{shown[0]}" if shown[0] else note
    calls = None if message.tool_calls is None else [
        _with_arguments(call, whole, part)
        for call, whole, part in zip(message.tool_calls, texts[1:], shown[1:], strict=True)]
    values = {field.name: getattr(message, field.name) for field in fields(Message)}
    values.update(content=content, tool_calls=calls, meta=dict(message.meta))
    return ClippedView(**values, whole_tokens=tokens, keep=keep)


def keep_for(message: Message, tokens: int, room: int, counter: Counter) -> int | None:
    """How many characters the view of `message` (whole: `tokens` tokens, more than
    `room`) shows when `room` tokens are left for it: as many as fit in half the room,
    none when the note alone needs more than half, None when it needs more than all."""
    keep = fitting_keep(message, tokens, room // 2, counter)
    if keep is None and fitting_keep(message, tokens, room, counter) is not None:
        return 0
    return keep


def priced(message: Message, tokens: int, keep: int, counter: Counter) -> int:
    """Tokens of the view of `message` showing `keep` characters (`chat_tokens`), priced
    with `WIDEST_ID` when the message has no id yet."""
    return chat_tokens(clipped_view(_probe(message), tokens, keep).to_chat(), counter)


def fitting_keep(message: Message, tokens: int, room: int, counter: Counter) -> int | None:
    """The most characters of `message`'s text whose view costs at most `room` tokens
    (`chat_tokens`), or None when not even the note alone fits. A message without an id
    yet is priced as if it had the widest id (`WIDEST_ID`)."""
    def fits(keep: int) -> bool:
        return priced(message, tokens, keep, counter) <= room

    if not fits(0):
        return None
    low, high = 0, sum(len(text) for text in _texts(message))
    while low < high:  # low always fits: a counter that is not monotonic still gets a fit
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low


def keeps_of(messages: Iterable[Message]) -> list[list[int]]:
    """`[id, keep]` of each clipped view among `messages`: what a context saves to show
    them the same way after a reopen (see `reclipped`)."""
    return [[message.id, message.keep] for message in messages
            if isinstance(message, ClippedView) and message.id is not None]


def reclipped(messages: Iterable[Message], keeps: Iterable[Sequence[int]],
              counter: Counter) -> list[Message]:
    """`messages` (whole, as recall returns them) with those named in `keeps` (pairs from
    `keeps_of`) shown as the same clipped views again, their size counted with `counter`."""
    shown = {int(message_id): int(keep) for message_id, keep in keeps}
    return [message if message.id not in shown else clipped_view(
        message, chat_tokens(message.to_chat(), counter), shown[message.id])
        for message in messages]


def _probe(message: Message) -> Message:
    return message if message.id is not None else replace(message, id=WIDEST_ID)


def _texts(message: Message) -> list[str]:
    """The text a view cuts, in the order it is kept: the content, then each tool call's
    arguments."""
    return [message.content, *(_arguments(call) for call in message.tool_calls or ())]


def _arguments(call: dict[str, Any]) -> str:
    arguments = call.get("function", {}).get("arguments")
    return "" if arguments is None else str(arguments)


def _with_arguments(call: dict[str, Any], whole: str, shown: str) -> dict[str, Any]:
    """`call` as the view shows it: unchanged when its arguments are whole, else with them
    replaced by `{"clipped": shown}` (valid JSON)."""
    if shown == whole:
        return call
    arguments = json.dumps({"clipped": shown}, ensure_ascii=False)
    return {**call, "function": {**call.get("function", {}), "arguments": arguments}}
