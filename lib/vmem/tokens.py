"""Counting tokens.

A counter is anything with `count(text) -> int`. The default, `ApproxCounter`, is the
lesson's rule of thumb (about 1.3 tokens per word): stdlib-only and deterministic.
`TiktokenCounter` counts real BPE tokens when the optional extra is installed.
"""

from __future__ import annotations

import math
import os
from typing import Protocol, runtime_checkable


@runtime_checkable
class Counter(Protocol):
    """Anything that can count the tokens of a text."""

    def count(self, text: str) -> int: ...


class ApproxCounter:
    """ceil(number of whitespace-separated words x `ratio`); 0 for empty text."""

    def __init__(self, ratio: float = 1.3) -> None:
        self.ratio = ratio

    def count(self, text: str) -> int:
        words = len(text.split())
        return math.ceil(words * self.ratio) if words else 0

    def __repr__(self) -> str:
        return f"ApproxCounter(ratio={self.ratio})"


DEFAULT_COUNTER = ApproxCounter()


def count_tokens(text: str, counter: Counter | None = None) -> int:
    """Count the tokens of `text` with `counter` (the default `ApproxCounter` if None)."""
    return (counter or DEFAULT_COUNTER).count(text)
