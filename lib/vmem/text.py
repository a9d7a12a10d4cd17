"""Small text helpers every part shares: shortening text for a line, and counting nouns.

Kept in one place so that a trace, a widget, a grader message and a tool result shorten
text the same way.
"""

from __future__ import annotations

ELLIPSIS = "…"


def clip(text: str, limit: int, *, show_length: bool = False) -> str:
    """`text` cut to at most `limit` characters, ending in "…" when cut.

    With `show_length`, a cut text also says how long the whole was ("… (12345
    characters)"), which a model needs to decide whether to ask for less.
    """
    if len(text) <= limit:
        return text
    cut = text[:max(limit - 1, 0)].rstrip() + ELLIPSIS
    return f"{cut} ({len(text)} characters)" if show_length else cut


def one_line(text: str, limit: int | None = None) -> str:
    """`text` with every run of whitespace (newlines included) made one space, clipped to
    `limit` characters when given."""
    flat = " ".join(text.split())
    return flat if limit is None else clip(flat, limit)


def plural(count: int, noun: str) -> str:
    """`1 record`, `2 records`: the count with its noun, plural unless exactly one."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
