"""The pruned search (`SearchCache`) returns exactly what scoring every row returns.

The reference scores every indexed record with `BM25Index(idf="fts5")` (statistics over
the whole index, as FTS5 keeps them), then applies the filters and pages: same ids in
the same order (ties by id), same scores, same total. Corpora are random with Zipf-like
words and many duplicate texts (heavy ties); the cache must also stay exact through
interleaved writes, rolled-back writes, writes inside a caller's transaction and writes
by another connection.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmem.archival import ArchivalStore
from vmem.bm25 import BM25Index, analyze, tokenize
from vmem.clock import StepClock
from vmem.search import FtsIndex, Where
from vmem.storage.sqlite import _INDEXES
from vmem.storage.topk import SearchCache
from vmem.store import connect, transaction

VOCAB = [f"w{i}" for i in range(30)]
ZIPF = [word for i, word in enumerate(VOCAB) for _ in range(max(1, 30 // (i + 1)))]
WORD = st.sampled_from(ZIPF)
TEXT = st.one_of(st.lists(WORD, min_size=1, max_size=12).map(" ".join),
                 st.sampled_from(["w0 w1", "w0 w1", "w2 w0", "w0"]))  # exact duplicates
QUERY = st.lists(st.one_of(WORD, st.just("unseen")), min_size=1, max_size=8).map(" ".join)
TAGS = st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True)
SCOPES = [None, {"user_id": "u1"}, {"user_id": "u2"}]


class Mirror:
    """An ArchivalStore and the reference it must agree with."""

    def __init__(self, store: ArchivalStore) -> None:
        self.store, self.index, self.meta = store, BM25Index(idf="fts5"), {}

    def insert(self, text: str, tags=(), scope=None) -> int:
        record_id = self.store.insert(text, tags=tags, scope=scope)
        self.index.add(record_id, text)
        return record_id

    def delete(self, record_id: int) -> None:
        self.store.delete(record_id)
        self.index.remove(record_id)

    def expected(self, query, top_k=5, page=0, tags=None, tag_mode="any", start=None,
                 end=None, scope=None, include_invalid=False):
        records = {r.id: r for r in self.store.records(include_invalid=True)}

        def keep(record_id: int) -> bool:
            record = records[record_id]
            wanted = set(tags or ())
            return ((include_invalid or record.is_valid)
                    and (not wanted or (wanted <= set(record.tags) if tag_mode == "all"
                                        else bool(wanted & set(record.tags))))
                    and (start is None or record.created_at >= start)
                    and (end is None or record.created_at <= end)
                    and all(record.scope.get(k) == v for k, v in (scope or {}).items()))

        ranked = [(doc_id, score) for doc_id, score in
                  self.index.search(query, k=len(self.index) + 1) if keep(doc_id)]
        return len(ranked), ranked[page * top_k:(page + 1) * top_k]

    def check(self, query, **options) -> None:
        found = self.store.search(query, **options)
        total, expected = self.expected(query, **options)
        assert found.total == total
        assert found.ids == [doc_id for doc_id, _ in expected]
        for hit, (_, score) in zip(found.hits, expected, strict=True):
            assert hit.score == pytest.approx(score, rel=1e-12, abs=1e-15)
            assert sum(hit.terms.values()) == pytest.approx(hit.score, abs=1e-9)
        # each term's part, from the cache's postings on a pruned search, is what the
        # index computes from the row's indexed terms
        index = _INDEXES["archival"]
        parts = index.contributions(self.store.backend.conn, analyze(query), found.ids) \
            if found.ids else []
        for hit, expected_parts in zip(found.hits, parts, strict=True):
            assert hit.terms.keys() == expected_parts.keys()
            for term, part in expected_parts.items():
                assert hit.terms[term] == pytest.approx(part, rel=1e-12, abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(TEXT, TAGS, st.sampled_from(SCOPES)), min_size=1, max_size=60),
       st.data())
def test_pruned_search_equals_scoring_every_row(rows, data):
    mirror = Mirror(ArchivalStore(clock=StepClock(step=timedelta(minutes=1))))
    ids = [mirror.insert(text, tags, scope) for text, tags, scope in rows]
    for record_id in data.draw(st.sets(st.sampled_from(ids), max_size=len(ids) // 3)):
        mirror.store.invalidate(record_id)
    for record_id in data.draw(st.sets(st.sampled_from(ids), max_size=len(ids) // 4)):
        if record_id in mirror.index:
            mirror.delete(record_id)
    times = sorted(r.created_at for r in mirror.store.records(include_invalid=True))
    for _ in range(6):
        options = {"top_k": data.draw(st.integers(1, 6)), "page": data.draw(st.integers(0, 4))}
        if data.draw(st.booleans()):
            options["tags"] = data.draw(TAGS) or None
            options["tag_mode"] = data.draw(st.sampled_from(["any", "all"]))
        if data.draw(st.booleans()) and times:
            options["start"] = data.draw(st.sampled_from(times))
        if data.draw(st.booleans()):
            options["scope"] = data.draw(st.sampled_from(SCOPES))
        options["include_invalid"] = data.draw(st.booleans())
        query = data.draw(QUERY)
        mirror.check(query, **options)
        mirror.check(query, **options)  # the second time from a warm cache


@settings(max_examples=30, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=30), st.lists(st.tuples(TEXT, QUERY), max_size=15))
def test_interleaved_inserts_and_searches_stay_exact(texts, rounds):
    mirror = Mirror(ArchivalStore())
    for text in texts:
        mirror.insert(text)
    for text, query in rounds:
        mirror.check(query, top_k=5)
        mirror.insert(text)
        mirror.check(query, top_k=5, page=1)


def test_heavy_ties_page_by_insertion_order():
    mirror = Mirror(ArchivalStore())
    for _ in range(40):
        mirror.insert("twin words dup")
    mirror.insert("words")
    for page in range(10):
        mirror.check("twin words", top_k=4, page=page)
    assert mirror.store.search("twin", top_k=3, page=2).ids == [7, 8, 9]


def test_a_rolled_back_insert_never_reaches_the_ranking():
    mirror = Mirror(ArchivalStore())
    for text in ["w1 w2", "w1", "w3 w1 w1"]:
        mirror.insert(text)
    mirror.check("w1 w3")  # fills the cache
    with pytest.raises(RuntimeError), transaction(mirror.store.backend.conn):
        mirror.store.insert("w1 w3 w3 w3")
        assert mirror.store.search("w3").total == 2  # inside: sees its own write
        raise RuntimeError("roll back")
    mirror.check("w1 w3")
    with transaction(mirror.store.backend.conn):  # committed by the caller's transaction
        new = mirror.store.insert("w3 w3")
    mirror.index.add(new, "w3 w3")
    mirror.check("w1 w3")


def test_writes_by_another_connection_are_seen(tmp_path):
    path = tmp_path / "shared.db"
    mirror, other = Mirror(ArchivalStore(path)), ArchivalStore(path)
    for text in ["alpha beta", "beta", "gamma beta beta"]:
        mirror.insert(text)
    mirror.check("beta gamma")
    record_id = other.insert("gamma gamma gamma")
    mirror.index.add(record_id, "gamma gamma gamma")
    mirror.check("beta gamma")
    other.delete(1)
    mirror.index.remove(1)
    mirror.check("beta gamma alpha")


def test_a_row_with_one_frequent_word_beats_rows_with_more_words():
    # The pruning is only safe if a word's bound covers its highest frequency in the
    # shortest row: "gamma" x5 alone must beat rows holding all three words once.
    mirror = Mirror(ArchivalStore())
    for text in ["alpha beta gamma filler filler filler"] * 3 + ["beta filler"] * 20 + \
            ["gamma filler filler filler filler filler"] * 6 + ["alpha other"] * 8:
        mirror.insert(text)
    short = mirror.insert("gamma gamma gamma gamma gamma")
    for top_k in (1, 2, 3):
        mirror.check("alpha beta gamma", top_k=top_k)
    assert mirror.store.search("alpha beta gamma", top_k=1).ids == [short]


def _cache_search(cache, conn, query, top_k=5):
    total, rows, _ = cache.search(conn, tokenize(query), Where(), top_k, 0)
    return total, rows


def test_common_words_stay_exact_for_rowids_no_bitmask_can_hold():
    # Common words are counted as bitmasks over rowids; a rowid far beyond the others
    # (or below zero: recall storage takes explicit message ids) must not make the cache
    # allocate a mask that large, nor change the ranking or the count.
    conn = connect()
    index = FtsIndex("archival_fts", "archival")
    cache, reference = SearchCache(index), BM25Index(idf="fts5")
    texts = {rowid: f"w0 w{rowid % 7} w{rowid % 3}" for rowid in range(1, 200)}

    def add(rowid: int, text: str) -> None:
        with cache.writing(conn) as changes:
            changes.append((rowid, index.add(conn, rowid, text), 1))
        reference.add(rowid, text)
        texts[rowid] = text

    for rowid, text in list(texts.items()):
        add(rowid, text)

    def check(query: str) -> None:
        terms = set(tokenize(query))
        total, rows = _cache_search(cache, conn, query)
        assert total == sum(1 for text in texts.values() if terms & set(text.split()))
        expected = reference.search(query, k=5)
        assert [rowid for rowid, _ in rows] == [rowid for rowid, _ in expected]
        assert [score for _, score in rows] == pytest.approx([s for _, s in expected],
                                                              rel=1e-12)

    check("w0 w1 w5")  # loads the postings: w0 is in every row, so it gets a mask
    add(10**15, "w0 w1 w1 w1")
    add(-3, "w0 w5 w5")
    check("w0 w1 w5")
    with cache.writing(conn) as changes:
        changes.append((10**15, index.remove(conn, 10**15), -1))
    reference.remove(10**15)
    del texts[10**15]
    check("w0 w1 w5 w2")


def test_the_lengths_table_follows_the_index_through_writes(tmp_path):
    # The cache reads document lengths from archival_lengths instead of the texts.
    store = ArchivalStore(tmp_path / "a.db")
    ids = [store.insert(text) for text in ["alpha beta gamma, Ünïcode", "two", "Alpha!"]]
    store.delete(ids[1])
    with pytest.raises(RuntimeError), transaction(store.backend.conn):
        store.insert("rolled back words")
        raise RuntimeError("roll back")
    lengths = dict(store.backend.conn.execute("SELECT id, length FROM archival_lengths"))
    assert lengths == {record.id: len(tokenize(record.text))
                       for record in store.records(include_invalid=True)}
    assert lengths == {ids[0]: 4, ids[2]: 1}
    # another connection (cold cache) ranks by them: the shorter record first
    assert ArchivalStore(tmp_path / "a.db").search("alpha two").ids == [ids[2], ids[0]]


def test_deletes_after_searches_leave_counts_and_ranking_exact():
    # The cached postings (and the common words' bitmasks) must drop a deleted row.
    mirror = Mirror(ArchivalStore())
    ids = [mirror.insert(f"common w{i % 4}" + " common" * (i % 3)) for i in range(40)]
    mirror.check("common w1")  # fills the cache
    for record_id in ids[::3]:
        mirror.delete(record_id)
        mirror.check("common w1")
        mirror.check("w1 w2 common", page=1)
