"""The benchmark at smoke size: its table has the promised shape, and every engine it
times returns the exact top-k of the formula it computes (a correctness check, not a
timing).

"Exact" is `brute_force` below: BM25 written out from its formula, scoring every document
for every query, independent of `vmem.bm25` except for the shared analyzer (`analyze`,
the store's: every engine, rank-bm25 and bm25s included, is given its terms).
"""

from __future__ import annotations

import math
from collections import Counter

import archival as bench  # benchmarks/archival.py: conftest puts benchmarks/ on sys.path
import pytest

from vmem.bm25 import BM25Index, analyze, tokenize

SIZE = 300
# the formula each engine computes: (idf variant, k1, b)
FORMULAS = {"ArchivalStore": ("fts5", 1.2, 0.75), "BM25Index": ("fts5", 1.2, 0.75),
            "rank-bm25": ("okapi", 1.5, 0.75), "bm25s": ("lucene", 1.2, 0.75)}


def brute_force(texts, variant: str, k1: float, b: float, epsilon: float = 0.25):
    """search(query, k) -> the k best (1-based id, score), ties by id: every document
    scored as the sum over query terms t (repeats included) of
    idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |D| / avgdl))."""
    docs = [Counter(analyze(text)) for text in texts]
    n, avgdl = len(docs), sum(sum(doc.values()) for doc in docs) / len(docs)
    df = Counter(term for doc in docs for term in doc)
    ratio = {term: (n - count + 0.5) / (count + 0.5) for term, count in df.items()}
    floor = epsilon * sum(math.log(r) for r in ratio.values()) / len(ratio)

    def idf(term: str) -> float:
        if variant == "lucene":
            return math.log(1 + ratio[term])
        value = math.log(ratio[term])
        if variant == "fts5":  # SQLite's bm25(): non-positive idf becomes 1e-6
            return value if value > 0 else 1e-6
        return value if value >= 0 else floor  # rank-bm25's BM25Okapi

    def search(query: str, k: int) -> list[tuple[int, float]]:
        terms = analyze(query)
        scores = {}
        for number, doc in enumerate(docs, 1):
            if any(term in doc for term in terms):
                norm = 1 - b + b * sum(doc.values()) / avgdl
                scores[number] = sum(idf(t) * doc[t] * (k1 + 1) / (doc[t] + k1 * norm)
                                     for t in terms if t in doc)
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
    return search


def test_the_generator_is_seeded_zipf_like_and_asks_questions():
    texts, queries = bench.corpus(SIZE, seed=3)
    assert (texts, queries) == bench.corpus(SIZE, seed=3)
    assert texts != bench.corpus(SIZE, seed=4)[0]
    assert len(queries) == bench.QUERIES
    assert all(3 <= len(tokenize(q)) <= 8 and q.endswith("?") for q in queries)
    index = BM25Index(analyzer=tokenize)  # the generator's words, stop words included
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
    exact = brute_force(texts, *FORMULAS[engine])
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
