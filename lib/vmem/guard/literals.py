"""What a regular expression cannot match without: a cheap test run before it.

Most of the guard's patterns and signals start with `\\b` and an alternation of words,
which Python's regex engine must try at every position of a text; on a 200-word memory
that costs milliseconds. But every match of `\\byour (?:answer|reply)` contains "your ",
and `"your " in text` costs microseconds. `needs(regex)` reads a pattern's parse tree and
returns a set of strings of which every match contains at least one (None when it cannot
tell). A string can only be in a text whose triples of characters hold its
rarest triple, so `Gated` keeps one such key per string, and runs the regex only where a
key is among the text's `keys` (one set intersection, in C). It is exact: the test is a
necessary condition, so a gated regex finds what the regex alone finds (a test in
tests/lib/test_guard_speed.py checks it on every pattern and signal of the guard).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

try:  # Python 3.11+
    from re import _parser as _sre  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre  # type: ignore[no-redef]

__all__ = ["Gated", "keys", "needs"]

MIN_LENGTH = 3  # a required string is tested by one of its triples of characters
_RARITY = {ch: rank for rank, ch in enumerate(" etaoinshrdlcumwfgypbvkjxqz")}


def needs(regex: str) -> frozenset[str] | None:
    """Strings of which every match of `regex` (compiled without flags) contains one, each
    at least `MIN_LENGTH` characters long; None when no such set is found."""
    return _sequence(list(_sre.parse(regex)))[1]


Found = tuple[frozenset[str] | None, frozenset[str] | None]
"""(exact, needed): the strings one of which every match *is* (None unless the item is a
literal, or literals in groups and branches), and the best set one of which every match
*contains* (None when none is known)."""


def _best(*options: frozenset[str] | None) -> frozenset[str] | None:
    """The set with the longest shortest string, if that is at least `MIN_LENGTH`."""
    usable = [option for option in options if option and min(map(len, option)) >= MIN_LENGTH]
    return max(usable, key=lambda option: min(map(len, option)), default=None)


def _item(op: Any, av: Any) -> Found:
    name = str(op)
    if name == "LITERAL":
        return frozenset([chr(av)]), None
    if name == "SUBPATTERN":
        return _sequence(list(av[-1]))
    if name == "BRANCH":
        found = [_sequence(list(branch)) for branch in av[1]]
        exact = (frozenset().union(*(e for e, _n in found))
                 if all(e is not None for e, _n in found) else None)
        needed = [e if e is not None and _best(e) else n for e, n in found]
        return exact, (_best(frozenset().union(*needed))  # type: ignore[arg-type]
                       if all(option is not None for option in needed) else None)
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and av[0] >= 1:
        exact, needed = _sequence(list(av[2]))
        return (exact if av[0] == av[1] == 1 else None), _best(exact, needed)
    return None, None


def _sequence(items: list[tuple[Any, Any]]) -> Found:
    """A sequence: runs of exact items are joined (every pairing, up to `MAX_PRODUCT`
    strings); the best of the runs and of what each item needs is what it needs."""
    candidates: list[frozenset[str] | None] = []
    run: frozenset[str] | None = frozenset([""])
    whole_exact = True
    for op, av in items:
        if str(op) == "AT":
            continue  # zero width: what stands on either side is adjacent in the text
        exact, needed = _item(op, av)
        candidates.append(needed)
        if exact is not None and run is not None and len(run) * len(exact) <= MAX_PRODUCT:
            run = frozenset(a + b for a in run for b in exact)
            continue
        whole_exact = False
        candidates.append(run)
        run = exact
    candidates.append(run)
    return (run if whole_exact else None), _best(*candidates)


MAX_PRODUCT = 256


def keys(text: str) -> set[str]:
    """Every triple of adjacent characters in `text`: what `Gated.possible` tests."""
    return {text[i:i + 3] for i in range(len(text) - 2)}


def _key(part: str) -> str:
    """The rarest triple of characters in `part` (by English letter frequency): the one
    test that stands for `part`."""
    triples = [part[i:i + 3] for i in range(len(part) - 2)]
    return max(triples, key=lambda triple: sum(_RARITY.get(ch, 30) for ch in triple))


@dataclass(frozen=True)
class Gated:
    """A compiled regex with one key per string its matches need (None: always run)."""

    regex: re.Pattern[str]
    need: frozenset[str] | None

    @classmethod
    def compile(cls, regex: str) -> Gated:
        """`regex` compiled without flags, with the keys of what its matches need."""
        need = needs(regex)
        return cls(re.compile(regex), None if need is None else frozenset(map(_key, need)))

    def possible(self, present: set[str]) -> bool:
        """False when none of the keys is among the `keys` of the text: no match there."""
        return self.need is None or not self.need.isdisjoint(present)
