"""PostgreSQL's search cache never goes stale: whatever another connection commits, the
next search sees it, and the pages equal those ranked in SQL without a cache.

A reader keeps its cache warm while a writer on another connection (as another process
or machine would) inserts, deletes, invalidates, rolls back, commits a transaction that
was open when the reader last looked, prunes the change log past the reader, or empties
the tables. After each, the reader's pages (ids, order, scores to the last bit, totals,
per-term parts) equal those of `PgIndex.search`, which scores every matching row in SQL
and is itself proven equal to `BM25Index(idf="fts5")` in test_postgres_ranking.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vmem.archival import ArchivalStore
from vmem.bm25 import analyze
from vmem.clock import StepClock
from vmem.storage import postgres_schema, postgres_search

WORDS = [f"w{i}" for i in range(12)] + ["Café", "東京"]
ZIPF = [word for i, word in enumerate(WORDS) for _ in range(max(1, 12 // (i + 1)))]
TEXT = st.lists(st.sampled_from(ZIPF), min_size=1, max_size=10).map(" ".join)
QUERY = st.lists(st.sampled_from([*ZIPF, "unseen"]), min_size=1, max_size=5).map(" ".join)
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
SCHEMAS = itertools.count(1)


def _uncached(url: str) -> ArchivalStore:
    """A store that always ranks in SQL (`PgIndex.search`): the reference."""
    store = ArchivalStore(url)
    for cache in store.backend.caches.values():
        cache.search = lambda *args, **kwargs: None
    return store


def _assert_same(reader: ArchivalStore, reference: ArchivalStore, query: str, **filters
                 ) -> None:
    for page in range(2):
        got = reader.search(query, top_k=3, page=page, **filters)
        want = reference.search(query, top_k=3, page=page, **filters)
        assert got.ids == want.ids
        assert [hit.score for hit in got.hits] == [hit.score for hit in want.hits]
        assert [hit.terms for hit in got.hits] == [hit.terms for hit in want.hits]
        assert got.total == want.total


def _insert_and_roll_back(store: ArchivalStore, text: str,
                          inside: Callable[[int], None] = lambda new_id: None) -> None:
    """Insert `text` in a transaction, call `inside` with its id, then roll it back."""
    with pytest.raises(RuntimeError), store.backend.transaction():
        inside(store.insert(text))
        raise RuntimeError


@pytest.fixture
def stores(postgres_url: str):
    """(reader, writer, reference): three connections to one database."""
    opened = (ArchivalStore(postgres_url), ArchivalStore(postgres_url), _uncached(postgres_url))
    yield opened
    for store in opened:
        store.backend.close()


def test_a_committed_insert_by_another_connection_is_seen_by_the_next_search(stores):
    reader, writer, reference = stores
    first = writer.insert("the cat sat on the mat")
    assert reader.search("cat").ids == [first]  # the reader's cache is warm now
    second = writer.insert("a cat, a cat, a cat")
    assert reader.search("cat").ids == [second, first]
    _assert_same(reader, reference, "cat mat")


def test_deletes_and_invalidations_by_another_connection_are_seen(stores):
    reader, writer, reference = stores
    ids = [writer.insert(f"w1 w2 note {i}" + " w1" * i) for i in range(6)]
    _assert_same(reader, reference, "w1 w2")
    writer.delete(ids[5])
    writer.invalidate(ids[4])
    assert ids[5] not in reader.search("w1", top_k=10).ids
    assert ids[4] not in reader.search("w1", top_k=10).ids
    assert ids[4] in reader.search("w1", top_k=10, include_invalid=True).ids
    _assert_same(reader, reference, "w1 note")


def test_a_rolled_back_insert_never_reaches_the_cache(stores):
    reader, writer, reference = stores
    writer.insert("w3 kept")
    reader.search("w3")
    _insert_and_roll_back(writer, "w3 w3 w3 rolled back")
    assert reader.search("w3").total == 1
    _assert_same(reader, reference, "w3 rolled back")


def test_a_transaction_open_when_the_reader_looked_is_seen_once_it_commits(stores):
    reader, writer, reference = stores
    writer.insert("w4 before")
    with writer.backend.transaction():
        late = writer.insert("w4 w4 open while the reader searched")
        assert late not in reader.search("w4").ids  # not committed: invisible
    assert late in reader.search("w4").ids
    _assert_same(reader, reference, "w4 open")


def test_a_log_pruned_past_the_reader_reloads_it(stores, monkeypatch):
    reader, writer, reference = stores
    monkeypatch.setattr(postgres_search, "COMPACT_EVERY", 4)
    monkeypatch.setattr(postgres_search, "KEEP_CHANGES", 3)
    writer.insert("w5 first")
    reader.search("w5")
    ids = [writer.insert("w5 w5 later " + "x " * i) for i in range(12)]
    conn = writer.backend.conn
    assert conn.execute("SELECT count(*) FROM vmem_fts_changes").fetchone()[0] < 12
    assert conn.execute("SELECT count(*) FROM vmem_fts_horizon").fetchone()[0] == 1
    assert reader.search("w5", top_k=20).total == 13
    assert set(ids) <= set(reader.search("w5", top_k=20).ids)
    _assert_same(reader, reference, "w5 later")


def test_emptied_tables_reload_the_reader(stores):
    reader, writer, reference = stores
    old = writer.insert("w6 old text")
    reader.search("w6")
    writer.backend.conn.execute("TRUNCATE archival, archival_postings, vmem_fts_stats")
    new = writer.insert("w6 w6 new text")
    assert reader.search("w6").ids == [new] and new == old + 1
    assert reader.search("old").total == 0
    _assert_same(reader, reference, "w6 text old")


def test_a_reload_cut_short_is_done_again(stores, monkeypatch):
    reader, writer, reference = stores
    writer.insert("w8 one")
    reader.search("w8")
    cache = reader.backend.caches["archival"]
    emptied = cache._reset

    def cut_short() -> None:  # as a connection lost just after the cache was emptied
        emptied()
        raise RuntimeError("cut short")

    with monkeypatch.context() as patch:
        patch.setattr(cache, "max_postings", -1)  # the next search must reload
        patch.setattr(cache, "_reset", cut_short)
        with pytest.raises(RuntimeError, match="cut short"):
            reader.search("w8")
    writer.insert("w8 w8 two")
    _assert_same(reader, reference, "w8 one two")


def test_a_search_in_the_callers_transaction_sees_its_own_writes_only_there(stores):
    reader, _, reference = stores
    reader.insert("w7 committed")
    reader.search("w7")

    def inside(mine: int) -> None:
        assert reader.search("w7").ids[0] == mine

    _insert_and_roll_back(reader, "w7 w7 mine, uncommitted", inside)
    assert reader.search("w7").total == 1
    _assert_same(reader, reference, "w7 mine")


OPS = st.lists(st.tuples(st.sampled_from(["insert", "insert", "delete", "invalidate",
                                          "search"]), TEXT, st.integers(0, 10 ** 6)),
               min_size=1, max_size=25)
FILTERS = st.fixed_dictionaries({}, optional={
    "tags": st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=2),
    "tag_mode": st.sampled_from(["any", "all"]),
    "scope": st.sampled_from([{"user_id": "u1"}, {"user_id": "u2"}]),
    "include_invalid": st.booleans(),
    "start": st.integers(0, 20).map(lambda n: T0 + timedelta(seconds=n)),
})


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, data=st.data())
def test_interleaved_writers_and_filters_match_ranking_in_sql(postgres_server, ops, data):
    schema = f"cache_{next(SCHEMAS)}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = f"{postgres_server.url}&options=-c%20search_path%3D{schema}"
    writer = ArchivalStore(url, clock=StepClock(T0, timedelta(seconds=1)))
    reader, reference = ArchivalStore(url), _uncached(url)
    ids: list[int] = []
    try:
        for op, text, pick in ops:
            if op == "insert":
                ids.append(writer.insert(text, tags=[["a"], ["b", "c"], []][pick % 3],
                                         scope={"user_id": f"u{pick % 2 + 1}"}))
            elif op in ("delete", "invalidate") and ids:
                victim = ids.pop(pick % len(ids))
                getattr(writer, op)(victim)
            else:
                _assert_same(reader, reference, data.draw(QUERY), **data.draw(FILTERS))
        _assert_same(reader, reference, data.draw(QUERY), **data.draw(FILTERS))
    finally:
        for store in (writer, reader, reference):
            store.backend.close()
        with psycopg.connect(postgres_server.url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


# --- one database, many agents: what the cache knows of each row's scope and mark -----
def _scoped(url: str, agent: str) -> ArchivalStore:
    return ArchivalStore(url, scope={"agent_id": agent})


def test_a_scopes_search_stays_exact_while_other_scopes_write(postgres_url):
    """The reader ranks its scope from that scope's own postings; idf and avgdl count
    every scope, and other scopes' writes (which change them) are seen at once."""
    mine, other, third = (_scoped(postgres_url, name) for name in ("a1", "a2", "a3"))
    reader, reference = ArchivalStore(postgres_url), _uncached(postgres_url)
    try:
        kept = [mine.insert(f"w1 w2 mine {i}" + " w1" * (i % 3)) for i in range(8)]
        theirs = [other.insert(f"w1 w3 theirs {i}" + " w3" * i) for i in range(8)]
        for query in ("w1", "w1 w2 w3", "theirs w3"):
            _assert_same(reader, reference, query, scope={"agent_id": "a1"})
        assert mine.search("theirs").total == 0  # never another scope's rows
        for i in range(6):  # each changes N, avgdl and w1's document count
            theirs.append(other.insert("w1 " * (i + 1) + "more of theirs"))
            third.insert(f"w2 w1 third {i}")
            if i % 2:
                other.delete(theirs.pop(0))
            else:
                other.invalidate(theirs.pop(0))
            kept.append(mine.insert(f"w1 mine again {i}"))
            for query in ("w1", "w1 w2", "mine w3"):
                _assert_same(reader, reference, query, scope={"agent_id": "a1"})
                _assert_same(reader, reference, query, scope={"agent_id": "a2"})
            _assert_same(mine, reference, "w1 mine", scope={"agent_id": "a1"})
        mine.invalidate(kept[0])
        _assert_same(reader, reference, "w1 mine", scope={"agent_id": "a1"})
        _assert_same(reader, reference, "w1 mine", scope={"agent_id": "a1"},
                     include_invalid=True)
        _assert_same(reader, reference, "w1 w2 w3")  # every scope
    finally:
        for store in (mine, other, third, reader, reference):
            store.backend.close()


def test_updates_by_hand_of_a_rows_scope_or_mark_are_seen(stores):
    """Updates that bypass vmem (another tool, a migration by hand) reach every cache
    through the trigger on the docs table (schema version 4)."""
    reader, writer, reference = stores
    first = writer.insert("w9 moved later", scope={"agent_id": "a1"})
    second = writer.insert("w9 w9 stays", scope={"agent_id": "a1"})
    writer.insert("w9 elsewhere", scope={"agent_id": "a2"})
    assert reader.search("w9", scope={"agent_id": "a1"}).ids == [second, first]
    conn = writer.backend.conn
    conn.execute("UPDATE archival SET scope = '{\"agent_id\": \"a2\"}' WHERE id = %s", (first,))
    conn.execute("UPDATE archival SET invalid_at = now() WHERE id = %s", (second,))
    assert reader.search("w9", scope={"agent_id": "a1"}).total == 0
    assert first in reader.search("w9", scope={"agent_id": "a2"}).ids
    for filters in ({"scope": {"agent_id": "a2"}}, {"include_invalid": True}, {}):
        _assert_same(reader, reference, "w9 moved", **filters)


def test_documents_without_terms_are_counted_as_the_statistics_count_them(stores):
    """N and avgdl come from the cached lengths: a document of stop words only (no
    postings to log) must still reach every cache, when added and when removed."""
    reader, writer, reference = stores
    writer.insert("w13 first")
    _assert_same(reader, reference, "w13")
    empty = writer.insert("the of and it is")
    _assert_same(reader, reference, "w13 first")
    writer.delete(empty)
    _assert_same(reader, reference, "w13 first")


def test_a_version_3_schema_is_migrated_and_then_logs_updates(postgres_url):
    with psycopg.connect(postgres_url, autocommit=True) as conn, conn.transaction():
        for migration in postgres_schema.MIGRATIONS[:3]:
            for statement in migration:
                conn.execute(statement)
        conn.execute("INSERT INTO vmem_meta VALUES ('application', 'vmem'), "
                     "('schema_version', '3')")
    writer, reader = ArchivalStore(postgres_url), ArchivalStore(postgres_url)
    try:
        assert reader.backend.schema_version() == postgres_schema.SCHEMA_VERSION == 4
        doc = writer.insert("w10 soon invalid")
        assert reader.search("w10").ids == [doc]
        writer.backend.conn.execute("UPDATE archival SET invalid_at = now()")
        assert reader.search("w10").total == 0
    finally:
        writer.backend.close()
        reader.backend.close()


def test_a_failed_search_leaves_the_connection_usable(stores, monkeypatch):
    """A search's snapshot runs in pipeline mode; after an error there, it is rolled
    back, so the next search on the same connection works."""
    reader, writer, reference = stores
    writer.insert("w11 text")
    cache = reader.backend.caches["archival"]
    with monkeypatch.context() as patch:
        patch.setattr(cache, "hidden", "d.no_such_column IS NOT NULL")
        with pytest.raises(psycopg.errors.UndefinedColumn):
            reader.search("w11")
    assert reader.backend.conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    _assert_same(reader, reference, "w11 text")


def test_writers_compacting_in_long_transactions_never_wait_for_each_other(
        stores, monkeypatch):
    """Folding the statistics deletes their rows: a second writer folding while the
    first one's transaction is open would wait for it (and two could deadlock). It
    skips the fold instead; the sums stay exact."""
    _, writer, reference = stores
    other = ArchivalStore(writer.backend.url)
    monkeypatch.setattr(postgres_search, "COMPACT_EVERY", 2)
    try:
        for i in range(3):
            writer.insert(f"w12 committed {i}")
        other.backend.conn.execute("SET lock_timeout = '2s'")
        with writer.backend.transaction():
            writer.insert("w12 first open")
            writer.insert("w12 first open again")  # one of these two folded
            with other.backend.transaction():
                for i in range(4):  # would fold too, and wait for the first writer
                    other.insert(f"w12 second open {i}")
        assert reference.search("w12", top_k=20).total == 9
        docs, tokens = writer.backend.conn.execute(
            "SELECT sum(docs), sum(tokens) FROM vmem_fts_stats WHERE tier = 'archival'"
        ).fetchone()
        assert (docs, tokens) == (9, sum(len(analyze(record.text))
                                          for record in reference.records()))
    finally:
        other.backend.close()
