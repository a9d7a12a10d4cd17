"""The database computes the formula we wrote: each backend (SQLite's FTS5, PostgreSQL's
tables) and BM25Index(idf="fts5") agree exactly.

On random corpora (Zipf-like word frequencies, so common words appear in most documents
and get the 1e-6 IDF floor), after random deletes, both return the same top-10 ids in the
same order, ties included, with scores equal to 1e-6.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vmem.archival import ArchivalStore
from vmem.bm25 import BM25Index

VOCAB = [f"w{i}" for i in range(40)] + ["Café", "naïve", "東京", "x2"]
# Zipf-like: word i is drawn with weight 1 / (i + 1), by repeating early words.
ZIPF = [word for i, word in enumerate(VOCAB) for _ in range(max(1, 40 // (i + 1)))]
WORD = st.sampled_from(ZIPF)
TEXT = st.lists(WORD, min_size=1, max_size=15).map(" ".join)
QUERY = st.lists(st.one_of(WORD, st.sampled_from(["unseen", "?!", "W1"])), min_size=1,
                 max_size=8).map(" ".join)


def _assert_same_ranking(store: ArchivalStore, index: BM25Index, query: str) -> None:
    page = store.search(query, top_k=10)
    expected = index.search(query, k=10)
    assert page.ids == [doc_id for doc_id, _ in expected]
    for hit, (_, score) in zip(page.hits, expected, strict=True):
        assert hit.score == pytest.approx(score, abs=1e-6)  # the contract
        assert hit.score == pytest.approx(score, rel=1e-9, abs=1e-15)  # in fact: exact
        assert sum(hit.terms.values()) == pytest.approx(hit.score, abs=1e-9)
    assert page.total == len(index.scores(query))


@settings(max_examples=80, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])  # new_target makes a new store per example
@given(st.lists(TEXT, min_size=1, max_size=40), st.data())
def test_fts5_and_bm25index_rank_identically(new_target, texts, data):
    store = ArchivalStore(new_target())
    index = BM25Index(k1=1.2, b=0.75, idf="fts5")
    for text in texts:
        index.add(store.insert(text), text)
    queries = data.draw(st.lists(QUERY, min_size=1, max_size=5))
    for query in queries:
        _assert_same_ranking(store, index, query)
    doomed = data.draw(st.sets(st.sampled_from(range(1, len(texts) + 1)),
                               max_size=len(texts) - 1))
    for record_id in sorted(doomed):
        store.delete(record_id)
        index.remove(record_id)
    for text in data.draw(st.lists(TEXT, max_size=5)):
        index.add(store.insert(text), text)
    for query in queries:
        _assert_same_ranking(store, index, query)


def test_many_exact_ties_follow_insertion_order(agent_target):
    store = ArchivalStore(agent_target)
    index = BM25Index(idf="fts5")
    for text in ["twin words"] * 12 + ["third words"] * 3:
        index.add(store.insert(text), text)
    _assert_same_ranking(store, index, "twin")
    assert store.search("twin", top_k=10).ids == list(range(1, 11))
