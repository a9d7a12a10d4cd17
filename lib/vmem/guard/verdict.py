"""The guard's answer about one text: flagged or not, why, and which parts are hostile."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..text import withhold

__all__ = ["Verdict"]


@dataclass(frozen=True)
class Verdict:
    """The result of a scan.

    `flagged`, one short human-readable reason per kind found, and `spans`: the
    `(start, end)` character ranges of the text that are hostile (sorted, not overlapping;
    the whole text when the guard cannot tell them apart). `source` is the provenance the
    text was judged under and `language` the text's language (an ISO 639-1 code such as
    "es", or only its script, such as "Latn"; None without letters). Verdicts compare by
    decision and reasons only.
    """

    flagged: bool
    reasons: tuple[str, ...] = ()
    language: str | None = field(default=None, compare=False)
    spans: tuple[tuple[int, int], ...] = field(default=(), compare=False)
    source: str = field(default="tool", compare=False)

    def kept(self, text: str) -> str | None:
        """`text` (the text this verdict is about) with the hostile spans withheld and
        marked, or None when nothing usable is left (no span known, or no letter outside
        the spans)."""
        if not self.flagged:
            return text
        if not self.spans:
            return None
        rest = withhold(text, self.spans)
        outside = "".join(text[start:end] for start, end in _gaps(self.spans, len(text)))
        return rest if any(ch.isalnum() for ch in outside) else None


def _gaps(spans: tuple[tuple[int, int], ...], length: int) -> list[tuple[int, int]]:
    """The ranges of a text of `length` characters that no span covers."""
    gaps, last = [], 0
    for start, end in spans:
        gaps.append((last, start))
        last = end
    return [*gaps, (last, length)]
