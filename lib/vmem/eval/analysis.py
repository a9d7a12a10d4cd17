"""Switchable text normalisation for ranking experiments: light stemming and stopwords.

Every ranker in vmem splits text with the one analyzer, `vmem.bm25.tokenize`. The options
here run on top of it and give text back as space-joined terms, so the result goes through
`tokenize` unchanged (it is idempotent on lowercase letters and digits) and any BM25
engine sees exactly these terms. They are evaluation options, not part of the core
analyzer: `vmem.eval.runner` reports what each one buys.
"""

from __future__ import annotations

from functools import lru_cache

from ..bm25 import tokenize

_STOPWORD_TEXT = """
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its
itself just let me more most my myself no nor not now of off on once only or other ought our
ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself yourselves
s t d ll m re ve also get got really yeah oh wow hey hi just like lot so thanks
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@lru_cache(maxsize=65536)
def stem(term: str) -> str:
    """A light English stemmer: folds plurals, -ing, -ed, -ly and -ies to a shared stem.

    Deliberately small (no Porter rules): it only has to map a word and its common
    inflections to the same term, on documents and queries alike.

    >>> [stem(w) for w in ("painting", "painted", "paints", "hobbies", "classes", "running")]
    ['paint', 'paint', 'paint', 'hobby', 'class', 'run']
    """
    if len(term) <= 3 or not term.isalpha():
        return term
    for suffix, keep in (("ies", 4), ("sses", 4), ("ing", 5), ("ed", 4), ("ly", 5), ("s", 4)):
        if term.endswith(suffix) and len(term) >= keep + len(suffix) - 1:
            base = term[: -len(suffix)]
            if suffix == "ies":
                return base + "y"
            if suffix == "sses":
                return base + "ss"
            if suffix == "s":
                return term if term.endswith(("ss", "us", "is")) else base
            if len(base) >= 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                return base[:-1]  # running -> runn -> run
            return base
    return term


def analyze(text: str, *, stemming: bool = False, stopwords: bool = False) -> str:
    """`text` as space-joined terms, optionally without stopwords and stemmed."""
    terms = tokenize(text)
    if stopwords:
        terms = [term for term in terms if term not in STOPWORDS]
    if stemming:
        terms = [stem(term) for term in terms]
    return " ".join(terms)
