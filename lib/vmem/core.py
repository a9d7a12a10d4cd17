"""Core memory: named, size-limited blocks pinned in the system prompt.

Core memory is the part of "RAM" the model edits itself: a `persona` block (who it is)
and a `human` block (who it talks to), each a few hundred characters it always sees.
Limits are in characters and small on purpose, so that pressure shows in class.

Every edit validates first and commits second: a refused edit raises a subclass of
`CoreMemoryError` whose message tells a model what to do instead, and changes nothing.
Each block keeps a short edit history (version, old value, new value, time).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .clock import Clock, ensure_utc, utc_now
from .errors import (
    BlockLimitError,
    CoreMemoryError,
    MatchError,
    ReadOnlyBlockError,
    UnknownBlockError,
)
from .text import visible

DEFAULT_LIMIT = 2000
HISTORY_SIZE = 20  # edits kept per block; `version` keeps counting past it
_LABEL = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_PREVIEW = 120  # characters of a block value quoted back in an error message

PERSONA_DESCRIPTION = (
    "Who you are: your name, personality and way of speaking; keep it consistent and "
    "update it only when asked to change.")
HUMAN_DESCRIPTION = (
    "What you know about the user: name, preferences and lasting facts; update it as "
    "you learn more.")
DEFAULT_PERSONA = "I am a helpful assistant with a long-term memory."


@dataclass(frozen=True)
class Edit:
    """One committed change to a block."""

    version: int
    old: str
    new: str
    time: datetime

    def to_dict(self) -> dict[str, Any]:
        """The edit as JSON-ready values (time as ISO 8601)."""
        return {"version": self.version, "old": self.old, "new": self.new,
                "time": self.time.isoformat()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Edit:
        """The edit `to_dict` wrote."""
        return cls(int(data["version"]), data["old"], data["new"],
                   ensure_utc(datetime.fromisoformat(data["time"])))


@dataclass
class Block:
    """A named section of core memory with a character limit.

    `version` counts committed edits; `history` keeps the last `HISTORY_SIZE` of them.
    Edit blocks through `CoreMemory`, which validates and records history.
    """

    label: str
    value: str = ""
    limit: int = DEFAULT_LIMIT
    description: str = ""
    read_only: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    version: int = 0
    history: list[Edit] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not _LABEL.fullmatch(self.label):
            raise ValueError(f"bad block label {self.label!r}: use letters, digits, '_' or '-', "
                             "starting with a letter, such as 'persona' or 'project_notes'")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit <= 0:
            raise ValueError(f"block {self.label!r}: limit must be a positive number of "
                             f"characters, got {self.limit!r}")
        if not isinstance(self.value, str):
            raise TypeError(f"block {self.label!r}: value must be a string")
        if len(self.value) > self.limit:
            raise BlockLimitError(
                f"block {self.label!r} starts with {len(self.value)} characters, over its "
                f"limit of {self.limit}: shorten the value or raise the limit")

    @property
    def chars(self) -> int:
        """Current size in characters."""
        return len(self.value)

    def render(self) -> str:
        """The block as the model sees it: description, size against limit, then value."""
        flags = " read_only" if self.read_only else ""
        return (f"<{self.label} chars={self.chars}/{self.limit}{flags}>\n"
                f"{self.description}\n<value>\n{self.value}\n</value>\n</{self.label}>")

    def to_dict(self, history: bool = False) -> dict[str, Any]:
        """The MemGPT/Letta block shape; `history=True` adds `version` and `history`."""
        out: dict[str, Any] = {
            "label": self.label, "value": self.value, "limit": self.limit,
            "description": self.description, "read_only": self.read_only,
            "metadata": dict(self.metadata),
        }
        if history:
            out["version"] = self.version
            out["history"] = [edit.to_dict() for edit in self.history]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Block:
        """Inverse of `to_dict` (with or without history)."""
        return cls(
            label=data["label"], value=data.get("value", ""),
            limit=data.get("limit", DEFAULT_LIMIT), description=data.get("description", ""),
            read_only=bool(data.get("read_only", False)),
            metadata=dict(data.get("metadata") or {}),
            version=int(data.get("version", 0)),
            history=[Edit.from_dict(edit) for edit in data.get("history", ())],
        )


class CoreMemory:
    """An ordered set of blocks with validated edits.

    >>> core = CoreMemory.default()
    >>> core.append("human", "Name: Ada.")
    >>> core.get("human").value
    'Name: Ada.'
    """

    def __init__(self, blocks: list[Block] | None = None, *, clock: Clock | None = None,
                 on_change: Callable[[Block], None] | None = None) -> None:
        """`on_change(block)` runs after every successful edit (persistence, widgets); if
        it raises, the edit is undone and the error propagates, so the block and whatever
        `on_change` keeps never disagree."""
        self.on_change = on_change
        self._blocks: dict[str, Block] = {}
        for block in blocks or ():
            if block.label in self._blocks:
                raise ValueError(f"two blocks are labelled {block.label!r}; labels must be unique")
            self._blocks[block.label] = block
        self._clock = clock or utc_now

    @classmethod
    def default(cls, *, clock: Clock | None = None, limit: int = DEFAULT_LIMIT) -> CoreMemory:
        """A `persona` block and an empty `human` block, each with its description."""
        return cls([
            Block("persona", DEFAULT_PERSONA, limit, PERSONA_DESCRIPTION),
            Block("human", "", limit, HUMAN_DESCRIPTION),
        ], clock=clock)

    # -- reading ---------------------------------------------------------------------

    @property
    def labels(self) -> list[str]:
        """The block labels, in prompt order."""
        return list(self._blocks)

    def __iter__(self) -> Iterator[Block]:
        return iter(self._blocks.values())

    def __len__(self) -> int:
        return len(self._blocks)

    def __contains__(self, label: object) -> bool:
        return label in self._blocks

    def get(self, label: str) -> Block:
        """The block called `label`; an `UnknownBlockError` lists the labels that exist."""
        block = self._blocks.get(label)
        if block is None:
            names = ", ".join(repr(name) for name in self._blocks) or "none"
            raise UnknownBlockError(
                f"there is no core memory block {label!r}; the blocks are: {names}. "
                "Use one of these labels.")
        return block

    @property
    def last_edit(self) -> datetime | None:
        """Time of the most recent edit of any block (None if never edited)."""
        times = [block.history[-1].time for block in self._blocks.values() if block.history]
        return max(times, default=None)

    def render(self) -> str:
        """The core memory section of the system prompt."""
        body = "\n".join(block.render() for block in self._blocks.values())
        return f"<core_memory>\n{body}\n</core_memory>"

    # -- editing ---------------------------------------------------------------------

    def append(self, label: str, text: str) -> None:
        """Add `text` as a new line at the end of the block."""
        block = self._writable(label)
        if not text:
            raise CoreMemoryError(
                f"nothing to append to block {label!r}: pass the text to add")
        self._commit(block, f"{block.value}\n{text}" if block.value else text)

    def replace(self, label: str, old: str, new: str, replace_all: bool = False) -> None:
        """Replace the exact text `old` with `new` (an empty `new` deletes `old`)."""
        block = self._writable(label)
        if not old:
            raise MatchError(
                f"old text is empty: copy the exact text to change from block {label!r}; "
                "to add text use append, to rewrite the whole block use rethink")
        count = block.value.count(old)
        if count == 0:
            raise MatchError(
                f"{old!r} does not occur in block {label!r}; copy the text exactly as shown "
                f"(case and spacing matter). The block starts: {_preview(block.value)}")
        if count > 1 and not replace_all:
            raise MatchError(
                f"{old!r} occurs {count} times in block {label!r}; include more surrounding "
                "text so it matches once, or pass replace_all=true to change every one")
        self._commit(block, block.value.replace(old, new))

    def insert(self, label: str, text: str, line: int = -1) -> None:
        """Insert `text` as line number `line` (0 = first; -1 = after the last line)."""
        block = self._writable(label)
        if not text:
            raise CoreMemoryError(
                f"nothing to insert into block {label!r}: pass the text to add")
        lines = block.value.split("\n") if block.value else []
        position = line if line >= 0 else len(lines) + 1 + line
        if not 0 <= position <= len(lines):
            raise CoreMemoryError(
                f"line {line} is out of range for block {label!r}, which has {len(lines)} "
                f"lines: use 0 to {len(lines)}, or -1 for the end")
        lines.insert(position, text)
        self._commit(block, "\n".join(lines))

    def rethink(self, label: str, new_value: str) -> None:
        """Rewrite the whole block (for reorganising or condensing it)."""
        self._commit(self._writable(label), new_value)

    # -- serialisation ---------------------------------------------------------------

    def to_dict(self, history: bool = False) -> dict[str, Any]:
        """`{"blocks": [...]}` in the MemGPT/Letta block shape (see `Block.to_dict`)."""
        return {"blocks": [block.to_dict(history) for block in self._blocks.values()]}

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, clock: Clock | None = None) -> CoreMemory:
        """Inverse of `to_dict`."""
        return cls([Block.from_dict(block) for block in data["blocks"]], clock=clock)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{b.label}={b.chars}/{b.limit}" for b in self._blocks.values())
        return f"CoreMemory({sizes})"

    # -- internals -------------------------------------------------------------------

    def _writable(self, label: str) -> Block:
        block = self.get(label)
        if block.read_only:
            raise ReadOnlyBlockError(
                f"block {label!r} is read-only and cannot be edited; keep new information "
                "in another block or in archival memory")
        return block

    def _commit(self, block: Block, new_value: str) -> None:
        if not isinstance(new_value, str):
            raise CoreMemoryError(f"block {block.label!r}: the new value must be text")
        new_value = visible(new_value)  # nothing invisible is pinned in every prompt
        if len(new_value) > block.limit:
            overflow = len(new_value) - block.limit
            raise BlockLimitError(
                f"block {block.label!r} would hold {len(new_value)} characters, over its limit "
                f"of {block.limit} by {overflow} (it holds {block.chars} now). Condense it "
                "first with replace, or move detail to archival memory and keep a short note "
                "here.")
        time = ensure_utc(self._clock())
        before = (block.value, block.version, list(block.history))
        block.version += 1
        block.history.append(Edit(block.version, block.value, new_value, time))
        del block.history[:-HISTORY_SIZE]
        block.value = new_value
        if self.on_change is None:
            return
        try:
            self.on_change(block)
        except BaseException:
            block.value, block.version, block.history = before
            raise


def _preview(value: str) -> str:
    if not value:
        return "(the block is empty)"
    text = value if len(value) <= _PREVIEW else value[:_PREVIEW] + "..."
    return repr(text)
