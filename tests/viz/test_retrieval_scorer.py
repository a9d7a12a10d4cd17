"""RetrievalExplorer's `scorer=`: a learner's BM25 ranks the BM25 column, headless."""

from __future__ import annotations

import pytest

from vmem.archival import ArchivalStore
from vmem.clock import StepClock
from vmem.course.lesson_checks import l03
from vmem.viz.retrieval import build_index, retrieval_view

pytest.importorskip("ipywidgets")
from vmem.viz import RetrievalExplorer  # noqa: E402

FACTS = ["My sister Maya was born on 3 May.", "The cafe on the corner is named after the owner.",
         "Maya likes tea.", "My dog Biscuit sees the vet on Friday.", "I live in Lisbon."]


@pytest.fixture
def store() -> ArchivalStore:
    store = ArchivalStore(clock=StepClock())
    for fact in FACTS:
        store.insert(fact)
    return store


def bm25_scores(query, texts, k1=1.2, b=0.75):
    """A correct BM25 written from the lesson's parts (the lesson's fallback ones)."""
    return [l03.bm25_score(*args) for args in _args(query, texts, k1, b)]


def _args(query, texts, k1, b):
    terms, df, avgdl = l03._stats(texts)
    return [(l03.tokenize(query), doc, df, len(texts), avgdl, k1, b) for doc in terms]


def test_a_correct_scorer_ranks_like_the_index_at_every_k1_and_b(store) -> None:
    explorer = RetrievalExplorer(store, query="maya tea sister", top_k=5, scorer=bm25_scores)
    for k1, b in ((1.2, 0.75), (0.0, 0.0), (3.0, 1.0), (0.5, 0.3)):
        explorer.k1.value, explorer.b.value = k1, b
        mine, theirs = explorer.view(), retrieval_view(
            explorer.index, explorer.records, "maya tea sister", k1=k1, b=b, top_k=5)
        assert [h.record_id for h in mine.bm25] == [h.record_id for h in theirs.bm25]
        assert [round(h.score, 9) for h in mine.bm25] == [round(h.score, 9) for h in theirs.bm25]


def test_the_scorer_decides_the_ranking_and_gets_the_sliders(store) -> None:
    seen = []

    def backwards(query, texts, k1=1.2, b=0.75):  # a wrong BM25: the last record wins
        seen.append((k1, b))
        return [float(i + 1) for i in range(len(texts))]

    explorer = RetrievalExplorer(store, query="maya", top_k=2, scorer=backwards)
    explorer.k1.value = 2.0
    view = explorer.view()
    assert [hit.record_id for hit in view.bm25] == [5, 4]
    assert [hit.score for hit in view.bm25] == [5.0, 4.0]
    assert seen[-1] == (2.0, 0.75)


def test_zero_scores_are_left_out_and_a_wrong_length_is_refused(store) -> None:
    records = tuple(store.records())
    index = build_index(records)
    view = retrieval_view(index, records, "maya", k1=1.2, b=0.75, top_k=5,
                          scorer=lambda q, texts, k1, b: [0.0, 0.0, 1.0, 0.0, 0.0])
    assert [hit.record_id for hit in view.bm25] == [3]
    with pytest.raises(ValueError, match="one score per text"):
        retrieval_view(index, records, "maya", k1=1.2, b=0.75, top_k=5,
                       scorer=lambda q, texts, k1, b: [1.0])
