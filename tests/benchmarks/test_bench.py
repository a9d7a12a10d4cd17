"""The benchmark at smoke size: its table has the promised shape, and every engine it
times returns the exact top-k of the formula it computes (a correctness check, not a
timing)."""

from __future__ import annotations

import archival as bench  # benchmarks/archival.py: conftest puts benchmarks/ on sys.path
import pytest

from vmem.bm25 import BM25Index, tokenize

SIZE = 300


def test_the_generator_is_seeded_zipf_like_and_asks_questions():
    texts, queries = bench.corpus(SIZE, seed=3)
    assert (texts, queries) == bench.corpus(SIZE, seed=3)
    assert texts != bench.corpus(SIZE, seed=4)[0]
    assert len(queries) == bench.QUERIES
    assert all(3 <= len(tokenize(q)) <= 8 and q.endswith("?") for q in queries)
    index = BM25Index()
    for number, text in enumerate(texts):
        index.add(number, text)
    # the commonest word is in a large share of records, a rare one in few
    assert index.df("the") > SIZE / 5 > index.df(bench.Corpus().words[5_000])
    # common words appear in questions, as in real ones
    assert sum("the" in tokenize(q) or "of" in tokenize(q) for q in queries) > 10


@pytest.mark.parametrize("engine", [e for e in bench.ENGINES if bench.available(e)])
def test_every_engine_returns_the_exact_top_k(engine):
    texts, queries = bench.corpus(SIZE)
    row = bench.run_engine(engine, SIZE)
    exact = bench._reference(engine, texts)
    assert len(row["results"]) == len(queries)
    for found, query in zip(row["results"], queries, strict=True):
        assert bench.same_top(found, exact(query, bench.TOP_K)), query
    assert row["p50_ms"] <= row["p95_ms"]


def test_archival_store_and_bm25index_agree_id_for_id():
    texts, queries = bench.corpus(SIZE)
    store = bench.run_engine("ArchivalStore", SIZE)["results"]
    python = bench.run_engine("BM25Index", SIZE)["results"]
    assert [[i for i, _ in hits] for hits in store] == [[i for i, _ in hits] for hits in python]


def test_same_top_allows_ties_at_the_cut_only():
    exact = [(1, 3.0), (2, 2.0), (3, 1.0), (4, 1.0)]
    assert bench.same_top([(1, 3.0), (2, 2.0), (4, 1.0), (3, 1.0)], exact)
    assert not bench.same_top([(2, 3.0), (1, 2.0), (3, 1.0), (4, 1.0)], exact)
    assert not bench.same_top([(1, 3.0), (2, 2.5), (3, 1.0), (4, 1.0)], exact)
    assert not bench.same_top(exact[:3], exact)


def test_the_table_has_a_column_per_engine_and_size():
    engines = [e for e in bench.ENGINES if bench.available(e)]
    table = bench.archival_table([120, 150], rounds=False)
    lines = table.splitlines()
    header = lines[0]
    for size in ("120", "150"):
        for engine in engines:
            assert f"{engine} {size}" in header
    metrics = [line.split("  ")[0] for line in lines[2:9]]
    assert metrics == ["index/insert s", "query p50 ms", "query p95 ms", "peak memory MiB",
                       "top-10 = exact", "warm p50 ms (2nd pass)", "warm p95 ms (2nd pass)"]
    assert lines[6].split()[3:] == ["100%"] * (2 * len(engines))
    # a second pass only where a cache can make it differ
    for line in lines[7:9]:
        cells = line.split()[5:]
        for column, engine in enumerate(engines * 2):
            assert (cells[column] == "-") == (engine != "ArchivalStore"), line
    assert "notes:" in table
