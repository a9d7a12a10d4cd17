"""Exercise 2's check: `bm25_scores` against the library's textbook BM25 (Lucene IDF,
every word `vmem.bm25.tokenize` finds counts: `BM25Index(analyzer=tokenize)`), and
`recall_at_k` on fixed rankings.

BM25 is probed one property at a time first (a match scores above zero, term frequency
counts but saturates, longer documents weigh less, rarer words weigh more), so a failure
can say which part is off; exact scores for several k1 and b follow. recall@k is checked
on made-up scores, so that only recall@k itself is under test.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ...bm25 import BM25Index, tokenize
from .common import calling, fail, learner_check

_BM25_DOCS = [
    "The cat sat on the mat.",
    "A dog chased the cat around the garden and the cat ran up a tree in the garden.",
    "Dogs and cats can live together.",
    "The quarterly report lists the cat food budget.",
    "Tea",
    "Garden tools: a spade, a rake, a hoe, shears, gloves, a watering can and a wheelbarrow.",
]
_BM25_QUERIES = ["cat garden", "the cat", "spade report", "tea dog", "unicorn"]


def _bm25_reference(query: str, docs: Sequence[str], k1: float, b: float) -> list[float]:
    index = BM25Index(k1=k1, b=b, idf="lucene", analyzer=tokenize)  # textbook: every word
    for position, doc in enumerate(docs):
        index.add(position, doc)
    scores = index.scores(query)
    return [scores.get(position, 0.0) for position in range(len(docs))]


def _scores(bm25_scores: Callable[..., list[float]], query: str, docs: Sequence[str],
            **params: float) -> list[float]:
    shown = ", ".join(f"{k}={v}" for k, v in params.items())
    with calling(f"bm25_scores({query!r}, docs{', ' + shown if shown else ''})"):
        got = bm25_scores(query, list(docs), **params)
    try:
        values = [float(value) for value in got]
    except (TypeError, ValueError):
        fail(f"bm25_scores must return a list of numbers, one per document; got {got!r}.")
    if len(values) != len(docs):
        fail(f"bm25_scores returned {len(values)} scores for {len(docs)} documents: return "
             "one score per document, in the documents' order (0.0 where nothing matches).")
    return values


@learner_check
def check_ex2(bm25_scores: Callable[..., list[float]],
              recall_at_k: Callable[..., float]) -> str:
    """Check `bm25_scores` against BM25 (Lucene IDF) and `recall_at_k` on fixed rankings."""
    _check_bm25_shape(bm25_scores)
    _check_bm25_values(bm25_scores)
    _check_recall(recall_at_k)
    return "ex02 passed: BM25 scores match (tf saturation, IDF, length norm) and recall@k holds."


def _check_bm25_shape(bm25_scores: Callable[..., list[float]]) -> None:
    """Probe one property at a time so that a failure can say which part is off."""
    same_length = ["apple x1 x2 x3 x4 x5 x6 x7 x8 x9", "apple " * 9 + "apple",
                   "y1 y2 y3 y4 y5 y6 y7 y8 y9 y10"]
    once, ten, _ = _scores(bm25_scores, "apple", same_length)
    if once <= 0 or ten <= 0:
        fail(f"a document containing the query word scored {min(once, ten):.4f}: a match "
             "must add a positive amount. Use the Lucene IDF, ln(1 + (N - n + 0.5) / "
             "(n + 0.5)), which is never negative, and check its sign.")
    if ten <= once:
        fail("a document with the query word ten times should outscore one with it once "
             "(same length): count how often each query term occurs in the document.")
    if ten / once >= 2.5:
        fail("ten occurrences score more than 2.5 times one occurrence: term frequency "
             "must saturate (with k1=1.5 its contribution can never exceed k1 + 1 times "
             "the IDF).")
    short_long = ["pear z1", "pear z1 z2 z3 z4 z5 z6 z7 z8 z9 z10 z11", "q1 q2 q3 q4 q5 q6"]
    short, long_, _ = _scores(bm25_scores, "pear", short_long)
    if not short > long_:
        fail("the same word once in a short and in a long document scored the same (or "
             "the long one higher): BM25 normalises by document length, using b and the "
             "average document length.")
    rare_common = ["rare w1 w2", "common w3 w4", "common w5 w6", "common w7 w8", "v1 v2 v3"]
    rare, common, *_ = _scores(bm25_scores, "rare common", rare_common)
    if rare <= common:
        fail("a word found in one document weighed no more than a word found in three: "
             "rarer words must weigh more (check the IDF and its sign).")


def _check_bm25_values(bm25_scores: Callable[..., list[float]]) -> None:
    for params in ({}, {"k1": 1.2, "b": 0.5}, {"k1": 2.0, "b": 0.0}, {"k1": 0.9, "b": 1.0}):
        k1, b = params.get("k1", 1.5), params.get("b", 0.75)
        for query in _BM25_QUERIES:
            got = _scores(bm25_scores, query, _BM25_DOCS, **params)
            want = _bm25_reference(query, _BM25_DOCS, k1, b)
            for position, (g, w) in enumerate(zip(got, want, strict=True)):
                if not math.isclose(g, w, rel_tol=1e-6, abs_tol=1e-9):
                    setting = f"k1={k1}, b={b}"
                    fail(f"for query {query!r} with {setting}, document {position} scored "
                         f"{g:.6f}, expected {w:.6f}. Check that you tokenize with "
                         "vmem.bm25.tokenize, use the k1 and b you were given (defaults "
                         "1.5 and 0.75), count each query word, and average the length "
                         "over all documents.")


# Fixed scores instead of a real ranker, so the checks isolate recall@k itself.
_RECALL_DOCS = ["d0", "d1", "d2", "d3", "d4", "d5"]
_RECALL_CASES = [
    # (query, relevant, scores per document, {k: expected recall}, hint when wrong); each
    # case isolates one rule, so the hint can say which.
    ("fraction", {2, 5, 1}, [0.0, 0.3, 0.3, 0.0, 0.0, 0.3], {1: 1 / 3, 2: 2 / 3, 3: 1.0},
     "recall is the fraction of the relevant documents found among exactly the top k "
     "(divide by how many are relevant, not by k)."),
    ("ties", {4}, [1.0] * 6, {2: 0.0, 5: 1.0},
     "documents with equal scores keep the documents' order: the lower index ranks first."),
    ("order", {0, 3}, [0.1, 0.9, 0.5, 0.7, 0.0, 0.2], {1: 0.0, 2: 0.5, 3: 0.5, 5: 1.0},
     "rank by score, highest first, and look only at the top k."),
]


def _check_recall(recall_at_k: Callable[..., float]) -> None:
    table = {query: scores for query, _, scores, _, _ in _RECALL_CASES}

    def rank(query: str, docs: Sequence[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
        return list(table[query])

    for query, relevant, scores, expected, hint in _RECALL_CASES:
        dataset = {"docs": list(_RECALL_DOCS), "queries": [(query, set(relevant))]}
        for k, want in expected.items():
            with calling(f"recall_at_k(rank, dataset, k={k})"):
                got = recall_at_k(rank, dataset, k)
            if not isinstance(got, (int, float)) or not math.isclose(got, want, abs_tol=1e-9):
                fail(f"recall_at_k returned {got!r} at k={k} for one query with relevant "
                     f"documents {sorted(relevant)} and scores {scores}; expected "
                     f"{want:.3f}: {hint}")
    dataset = {"docs": list(_RECALL_DOCS),
               "queries": [(query, set(relevant)) for query, relevant, *_ in _RECALL_CASES]}
    with calling("recall_at_k(rank, dataset, k=2)"):
        got = recall_at_k(rank, dataset, 2)
    want = (2 / 3 + 0.0 + 0.5) / 3
    if not isinstance(got, (int, float)) or not math.isclose(got, want, abs_tol=1e-9):
        fail(f"with three queries recall_at_k returned {got!r} at k=2, expected {want:.3f}: "
             "average the per-query recall over all queries.")
