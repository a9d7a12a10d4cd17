"""The analyzer's two steps as switches, for ablations: light stemming and stopwords.

The stores always use both (`vmem.bm25.analyze`). The ranking experiments of
`vmem.eval.runner` switch each on and off to show what it buys, and get text back as
space-joined terms that a `BM25Index(analyzer=tokenize)` indexes as they are.
"""

from __future__ import annotations

from ..bm25 import STOPWORDS, stem
from ..bm25 import analyze as analyzed

__all__ = ["STOPWORDS", "analyze", "stem"]


def analyze(text: str, *, stemming: bool = False, stopwords: bool = False) -> str:
    """`text` as space-joined terms, optionally without stopwords and stemmed: the
    analyzer's steps as switches (`vmem.bm25.analyze`), both off by default."""
    return " ".join(analyzed(text, stopwords=stopwords, stemming=stemming))
