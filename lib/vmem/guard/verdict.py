"""The guard's answer about one text: flagged or not, why, and which parts are hostile."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..text import withhold

__all__ = ["Verdict"]


_UNREAD = object()  # the language of a verdict's text, before anyone asked for it


@dataclass(frozen=True, init=False)
class Verdict:
    """The result of a scan.

    `flagged`, one short human-readable reason per kind found, and `spans`: the
    `(start, end)` character ranges of the text that are hostile (sorted, not overlapping;
    the whole text when the guard cannot tell them apart). `source` is the provenance the
    text was judged under and `language` the text's language (an ISO 639-1 code such as
    "es", or only its script, such as "Latn"; None without letters), told from `text` the
    first time it is asked for (most verdicts are never asked). Verdicts compare by
    decision and reasons only.
    """

    flagged: bool
    reasons: tuple[str, ...] = ()
    spans: tuple[tuple[int, int], ...] = field(default=(), compare=False)
    source: str = field(default="tool", compare=False)
    _language: object = field(default=None, compare=False, repr=False)
    _text: str | None = field(default=None, compare=False, repr=False)

    def __init__(self, flagged: bool, reasons: tuple[str, ...] = (),
                 language: str | None = None, spans: tuple[tuple[int, int], ...] = (),
                 source: str = "tool", *, text: str | None = None) -> None:
        for name, value in (("flagged", flagged), ("reasons", tuple(reasons)),
                            ("spans", spans), ("source", source),
                            ("_language", _UNREAD if text is not None and language is None
                             else language), ("_text", text)):
            object.__setattr__(self, name, value)

    @property
    def language(self) -> str | None:
        """The language of the text the verdict is about (see the class docstring)."""
        if self._language is _UNREAD:
            from .languages import language  # read on first use, as the scan's tables are
            object.__setattr__(self, "_language", language(self._text or ""))
        return self._language  # type: ignore[return-value]

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
