"""PostgreSQL ranks as BM25Index(idf="fts5") does: same ids, same order, same scores.

`vmem.storage.postgres_search.PgIndex` on a real server (the session's throwaway one),
against the pure-Python index on random Zipf-like corpora with repeated query words,
exact ties, deletions, pages and a filter: every page has the same ids in the same
order, with scores equal to the last bit, and the same number of matches.
"""

from __future__ import annotations

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vmem.bm25 import BM25Index, analyze
from vmem.storage.postgres_search import CHANGES_DDL, STATS_DDL, PgIndex

VOCAB = [f"w{i}" for i in range(40)] + ["Café", "naïve", "東京", "x2", "İstanbul"]
ZIPF = [word for i, word in enumerate(VOCAB) for _ in range(max(1, 40 // (i + 1)))]
WORD = st.sampled_from(ZIPF)
TEXT = st.lists(st.one_of(WORD, st.just("!?")), min_size=1, max_size=15).map(" ".join)
QUERY = st.lists(st.one_of(WORD, st.sampled_from(["unseen", "W1", "'; DROP TABLE docs"])),
                 min_size=1, max_size=8).map(" ".join)
INDEX = PgIndex("docs")


@pytest.fixture
def conn(postgres_url: str):
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE docs (id bigint PRIMARY KEY, text text NOT NULL, "
                     "length integer)")
        for statement in (*INDEX.ddl(), *STATS_DDL, *CHANGES_DDL, *INDEX.tracking_ddl()):
            conn.execute(statement)
        yield conn


def _add(conn: psycopg.Connection, index: BM25Index, doc: int, text: str) -> None:
    with conn.transaction():
        conn.execute("INSERT INTO docs (id, text) VALUES (%s, %s)", (doc, text))
        INDEX.add(conn, doc, text)
    index.add(doc, text)


def _remove(conn: psycopg.Connection, index: BM25Index, doc: int) -> None:
    with conn.transaction():
        INDEX.remove(conn, doc)
        conn.execute("DELETE FROM docs WHERE id = %s", (doc,))
    index.remove(doc)


def _assert_same(conn: psycopg.Connection, index: BM25Index, query: str, *, page_size: int,
                 keep=lambda doc: True, where: str = "") -> None:
    terms = analyze(query)
    expected = [(doc, score) for doc, score in index.search(query, k=len(index) or 1)
                if keep(doc)]
    for page in range(3):
        total, hits = INDEX.search(conn, terms, where, (), page_size, page * page_size)
        want = expected[page * page_size:(page + 1) * page_size]
        assert [hit.doc for hit in hits] == [doc for doc, _ in want]
        assert [hit.score for hit in hits] == [score for _, score in want]  # to the bit
        for hit in hits:
            assert sum(hit.parts.values()) == pytest.approx(hit.score, rel=1e-12)
        assert total == len(expected)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(TEXT, min_size=1, max_size=40), st.data())
def test_postgres_ranks_as_bm25index_fts5(conn, texts, data):
    conn.execute("TRUNCATE docs, docs_postings, vmem_fts_stats")
    index = BM25Index(k1=1.2, b=0.75, idf="fts5")
    for doc, text in enumerate(texts, start=1):
        _add(conn, index, doc, text)
    queries = data.draw(st.lists(QUERY, min_size=1, max_size=4))
    page_size = data.draw(st.integers(1, 7))
    for query in queries:
        _assert_same(conn, index, query, page_size=page_size)
        _assert_same(conn, index, query, page_size=page_size, where="d.id %% 3 <> 0",
                     keep=lambda doc: doc % 3 != 0)
    doomed = data.draw(st.sets(st.sampled_from(range(1, len(texts) + 1)),
                               max_size=len(texts) - 1))
    for doc in sorted(doomed):
        _remove(conn, index, doc)
    for doc, text in enumerate(data.draw(st.lists(TEXT, max_size=5)), start=len(texts) + 1):
        _add(conn, index, doc, text)
    for query in queries:
        _assert_same(conn, index, query, page_size=page_size)


def test_exact_ties_come_in_id_order_across_pages(conn):
    index = BM25Index(idf="fts5")
    for doc, text in enumerate(["twin words"] * 12 + ["third words"] * 3, start=1):
        _add(conn, index, doc, text)
    _assert_same(conn, index, "twin words twin", page_size=5)
    total, hits = INDEX.search(conn, ["twin"], "", (), 5, 5)
    assert total == 12 and [hit.doc for hit in hits] == [6, 7, 8, 9, 10]


def test_statistics_follow_writes_and_rollbacks(conn):
    index = BM25Index(idf="fts5")
    _add(conn, index, 1, "x b c")
    _add(conn, index, 2, "!!!")  # indexed with no terms: counts as a document, as in FTS5
    with pytest.raises(RuntimeError), conn.transaction():
        conn.execute("INSERT INTO docs (id, text) VALUES (3, 'f e')")
        INDEX.add(conn, 3, "f e")
        raise RuntimeError("rolled back")
    assert INDEX.stats(conn, ["x", "f"]) == (2, 3, {"x": 1, "f": 0})
    _remove(conn, index, 2)
    _remove(conn, index, 1)
    assert INDEX.stats(conn, ["x"]) == (0, 0, {"x": 0})
    assert INDEX.search(conn, ["x"], "", (), 5, 0) == (0, [])
