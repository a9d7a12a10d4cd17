"""The analyzer's two steps as switches, for ablations: light stemming and stopwords.

The stores always use both (`vmem.bm25.analyze`). The ranking experiments of
`vmem.eval.runner` switch each on and off on top of `vmem.bm25.tokenize` to show what it
buys, and give text back as space-joined terms that a `BM25Index(analyzer=tokenize)`
indexes as they are.
"""

from __future__ import annotations

from ..bm25 import STOPWORDS, stem, tokenize

__all__ = ["STOPWORDS", "analyze", "stem"]


def analyze(text: str, *, stemming: bool = False, stopwords: bool = False) -> str:
    """`text` as space-joined terms, optionally without stopwords and stemmed."""
    terms = tokenize(text)
    if stopwords:
        terms = [term for term in terms if term not in STOPWORDS]
    if stemming:
        terms = [stem(term) for term in terms]
    return " ".join(terms)
