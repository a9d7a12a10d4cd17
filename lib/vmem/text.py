"""Small text helpers every part shares: shortening text for a line, counting nouns, and
removing invisible characters.

Kept in one place so that a trace, a widget, a grader message and a tool result shorten
text the same way.
"""

from __future__ import annotations

import re

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


# Invisible format characters that carry or hide text: Unicode tag characters (U+E0000 to
# U+E007F, which some models read as the ASCII they mirror), bidirectional controls,
# zero-width spaces and joiners of words, the soft hyphen, the byte-order mark inside text,
# and variation selectors 17-256 (which can smuggle bytes). Kept: the zero-width joiner and
# non-joiner (U+200D, U+200C), which shape emoji and Indic and Persian script, and
# variation selectors 1-16, which choose how an emoji or a letter is drawn.
_INVISIBLE = re.compile("[\u00ad\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200e\u200f"
                        "\u202a-\u202e\u2060-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb"
                        "\U000e0000-\U000e007f\U000e0100-\U000e01ef]")


def visible(text: str) -> str:
    """`text` without the invisible characters that can hide words from a reader (see
    `_INVISIBLE`): what every tier stores, so nothing a person cannot see reaches a prompt."""
    return _INVISIBLE.sub("", text) if not text.isascii() else text


WITHHELD = "[withheld: quarantined by the memory guard]"
"""What stands in place of a span of text the guard quarantined."""


def withhold(text: str, spans: tuple[tuple[int, int], ...]) -> str:
    """`text` with each `(start, end)` span (sorted, not overlapping) replaced by `WITHHELD`."""
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], WITHHELD]
        last = end
    return "".join([*parts, text[last:]])
