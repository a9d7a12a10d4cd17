"""What a regular expression cannot match without: a cheap test run before it.

Most of the guard's patterns and signals start with `\\b` and an alternation of words,
which Python's regex engine must try at every position of a text; on a 200-word memory
that costs milliseconds. But every match of `\\byour (?:answer|reply)\\b` holds the whole
word "your", and looking a word up in the set of a text's words costs nanoseconds.
`needs(regex)` reads a pattern's parse tree and returns a set of whole words of which
every match holds one (None when it cannot tell); `Gated` runs the regex only where one of
them is among the text's `words`. It is exact: the test is a necessary condition, so a
gated regex finds what the regex alone finds (tests/lib/test_guard_speed.py checks it on
every pattern and signal of the guard, over every labelled text of the project).

A word is whole when word boundaries (`\\b`, the start or end) or characters that are no
word characters stand on both sides of it in the pattern: then any text it matches has it
as one of its `\\w+` runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

try:  # Python 3.11+
    from re import _parser as _sre  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre  # type: ignore[no-redef]

__all__ = ["Gated", "needs", "words"]

_EDGE = "\x00"  # stands for a zero-width word boundary inside a literal string
_EDGES = ("AT_BOUNDARY", "AT_BEGINNING", "AT_BEGINNING_STRING", "AT_END", "AT_END_STRING")
_WORD = re.compile(r"\w+")
_WHOLE = re.compile(rf"(?:(?<=[{_EDGE}\W]))\w+(?=[{_EDGE}\W])")
MAX_PRODUCT = 4096  # joined alternatives kept per literal run
Found = tuple[frozenset[str] | None, frozenset[str] | None]
"""(exact, needed): the strings one of which every match *is* (with `_EDGE` where a
boundary stands; None unless the item is literals, groups and branches of them), and the
best set of whole words one of which every match *holds* (None when none is known)."""


def words(text: str) -> set[str]:
    """The `\\w+` runs of `text`: what `Gated.possible` looks its words up in."""
    return set(_WORD.findall(text))


def needs(regex: str) -> frozenset[str] | None:
    """Whole words of which every match of `regex` (compiled without flags) holds one;
    None when no such set is found."""
    return _sequence(list(_sre.parse(regex)))[1]


def _whole_word(part: str) -> str | None:
    """The longest whole word of a literal string, if it has one."""
    found = _WHOLE.findall(part)
    return max(found, key=len) if found else None


def _as_words(option: frozenset[str] | None) -> frozenset[str] | None:
    """A set of literal strings as the set of their longest whole words, or None when
    one string has no whole word."""
    if not option:
        return None
    chosen = [_whole_word(part) for part in option]
    return None if any(word is None for word in chosen) else frozenset(chosen)  # type: ignore


def _best(*options: frozenset[str] | None) -> frozenset[str] | None:
    """The set of words whose shortest word is longest (a longer word is rarer)."""
    usable = [option for option in options if option]
    return max(usable, key=lambda option: min(map(len, option)), default=None)


def _item(op: Any, av: Any, left: bool = False, right: bool = False) -> Found:
    """What one parsed item is and needs; `left` and `right` say that what stands just
    before and just after it is known to be an edge (then a group's or a branch's words
    can be whole at its ends: "\\b(?:nothing else|every answer)\\b")."""
    name = str(op)
    if name == "LITERAL":
        return frozenset([chr(av)]), None
    if name == "AT":
        return (frozenset([_EDGE]) if str(av) in _EDGES else frozenset([""])), None
    if name == "IN" and len(av) <= 8 and all(str(member) == "LITERAL" for member, _v in av):
        return frozenset(chr(value) for _member, value in av), None  # "[sz]"
    if name == "SUBPATTERN":
        return _sequence(list(av[-1]), left, right)
    if name == "BRANCH":
        found = [_sequence(list(branch), left, right) for branch in av[1]]
        exact = (frozenset().union(*(e for e, _n in found))
                 if all(e is not None for e, _n in found) else None)
        needed = [_best(_as_words(e), n) for e, n in found]
        return exact, (frozenset().union(*needed)  # type: ignore[arg-type]
                       if all(option is not None for option in needed) else None)
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and av[1] == 1:
        exact, needed = _sequence(list(av[2]), left, right)  # once, or at most once
        if av[0] == 0:
            return (None if exact is None else exact | {""}), None
        return exact, _best(_as_words(exact), needed)
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and av[0] >= 1:
        exact, needed = _sequence(list(av[2]))
        return None, _best(_as_words(exact), needed)
    return None, None


def _sequence(items: list[tuple[Any, Any]], left: bool = False, right: bool = False
              ) -> Found:
    """A sequence: runs of exact items are joined (every pairing, up to `MAX_PRODUCT`
    strings); the best of the runs' whole words and of what each item needs is what the
    sequence needs. Where an item that is not exact cuts a run, the cut is an edge when
    that item only ever matches characters that are no word characters (`\\s`, `[.!?]`,
    `^`): "[.!?]\\s{0,5}please" holds the whole word "please". `left` and `right`: an
    edge is known to stand just before and just after the sequence."""
    candidates: list[frozenset[str] | None] = []
    run: frozenset[str] = frozenset([_EDGE if left else ""])
    whole_exact = True
    for index, (op, av) in enumerate(items):
        before = all(part and (part[-1] == _EDGE or not _WORD.match(part[-1])) for part in run)
        after = _opens_with_edge(items[index + 1:], right)
        exact, needed = _item(op, av, before, after)
        candidates.append(needed)
        if exact is not None and len(run) * len(exact) <= MAX_PRODUCT:
            run = frozenset(a + b for a in run for b in exact)
            continue
        whole_exact = False
        edge = _EDGE if _opens_with_edge(items[index:], right) else ""
        candidates.append(_as_words(frozenset(part + edge for part in run)))
        after_edge = _ends_with_edge(items[:index + 1], left) or (
            _nonword(op, av) == 0 and before)
        run = exact if exact is not None else frozenset([_EDGE if after_edge else ""])
    if right:
        run = frozenset(part + _EDGE for part in run)
    if not whole_exact:
        candidates.append(_as_words(run))
    return (run if whole_exact else None), _best(*candidates, _as_words(run)
                                                   if whole_exact else None)


def _nonword(op: Any, av: Any) -> int | None:
    """The fewest characters an item matches when it only ever matches characters that
    are no word characters (a boundary or an edge of the text counts as one), else None."""
    name = str(op)
    if name == "AT":
        return 1 if str(av) in _EDGES else None
    if name == "LITERAL":
        return None if _WORD.match(chr(av)) else 1
    if name == "IN":
        return 1 if all(_nonword_member(member, value) for member, value in av) else None
    if name == "SUBPATTERN":
        return _nonword_sequence(list(av[-1]))
    if name == "BRANCH":
        widths = [_nonword_sequence(list(branch)) for branch in av[1]]
        return None if any(w is None for w in widths) else min(widths)  # type: ignore
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        width = _nonword_sequence(list(av[2]))
        return None if width is None else av[0] * width
    return None


def _nonword_member(op: Any, value: Any) -> bool:
    name = str(op)
    if name == "LITERAL":
        return not _WORD.match(chr(value))
    if name == "CATEGORY":
        return str(value) in ("CATEGORY_SPACE", "CATEGORY_NOT_WORD")
    if name == "RANGE":
        low, high = value
        return high - low < 256 and not any(_WORD.match(chr(c)) for c in range(low, high + 1))
    return False


def _nonword_sequence(items: list[tuple[Any, Any]]) -> int | None:
    widths = [_nonword(op, av) for op, av in items]
    return None if any(w is None for w in widths) else sum(widths)  # type: ignore[misc]


def _ends_with_edge(items: list[tuple[Any, Any]], default: bool = False) -> bool:
    """True when what `items` match always ends with an edge (a character that is no word
    character, or a boundary): the last item that must match something decides, and a
    group or branch decides by its own last items; `default` when they may match
    nothing."""
    for op, av in reversed(items):
        width = _nonword(op, av)
        if width is not None and width > 0:
            return True
        if width == 0:
            continue  # "\\s{0,5}" may match nothing: the item before decides
        name = str(op)
        if name == "SUBPATTERN":
            return _ends_with_edge(list(av[-1]))
        if name == "BRANCH":
            return all(_ends_with_edge(list(branch)) for branch in av[1])
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            if not _ends_with_edge(list(av[2])):
                return False
            if av[0] >= 1:
                return True
            continue  # "(?:\\w+ ){0,5}" may match nothing: the item before decides
        return name == "LITERAL" and not _WORD.match(chr(av))
    return default


def _opens_with_edge(items: list[tuple[Any, Any]], default: bool = False) -> bool:
    """True when what `items` match always begins with an edge: items that match no word
    character and may match nothing are skipped, and the first that must match one
    decides; `default` when they may all match nothing."""
    for op, av in items:
        width = _nonword(op, av)
        if width is not None and width > 0:
            return True
        if width == 0:
            continue
        name = str(op)
        if name == "ASSERT" and av[0] == 1:  # a lookahead: what follows opens with it
            return _opens_with_edge(list(av[1]))
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and _opens_with_edge(
                list(av[2])):
            if av[0] >= 1:
                return True
            continue  # "(?: \\w+){0,3}" may match nothing: the item after decides
        return False
    return default


@dataclass(frozen=True)
class Gated:
    """A compiled regex with the whole words one of which its matches need (None: always
    run it)."""

    regex: re.Pattern[str]
    need: frozenset[str] | None

    @classmethod
    def compile(cls, regex: str) -> Gated:
        """`regex` compiled without flags, with what its matches need."""
        return cls(re.compile(regex), needs(regex))

    def possible(self, present: set[str]) -> bool:
        """False when none of the needed words is among `present` (a text's `words`)."""
        return self.need is None or not self.need.isdisjoint(present)
