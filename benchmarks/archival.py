"""How fast is the disk tier?

    python benchmarks/archival.py archival [--sizes 10000,100000] [--million]

One seeded generator makes every document and query: sentences over a Zipf-like
vocabulary (a word's frequency falls with its rank, so "the" is in a third of the
records), and questions of 3 to 8 words drawn the same way after a question word, so
common words appear in them as in real questions.

Engines, all given the same terms: `vmem.bm25.analyze`'s, the analyzer the store indexes
and queries with (words from `tokenize`, stop words dropped, the rest lightly stemmed).
rank-bm25 and bm25s have no such analyzer of their own, so they get the terms already
analysed (token lists), and so index and score exactly the terms the store does:

- `ArchivalStore`: SQLite + FTS5, file-backed in a temporary folder (WAL,
  synchronous=NORMAL), exact pruned top-k (`vmem.storage.topk.SearchCache`); records are
  inserted in one transaction.
- `BM25Index`: the pure-Python index from `vmem.bm25`, with its default analyzer
  (`analyze`, the store's) and FTS5's idf, so it ranks exactly like the store.
- `rank-bm25` (`BM25Okapi`) and `bm25s`: optional (`pip install rank-bm25 bm25s`); a
  missing one gets a note instead of a column.

Each engine and size runs in its own Python process. Peak memory is that process's peak
resident set (`ru_maxrss`) at the end of the queries minus its resident set just before
indexing (corpus already in memory): it covers C and NumPy allocations and SQLite's page
cache, which tracemalloc would miss. Query latency is measured one query at a time over
200 queries (p50 and p95), in a fresh process: for `ArchivalStore` that is a cold cache,
each query word's postings read from the file at its first use. The "warm" rows run the
same 200 queries again in that process (only `ArchivalStore` caches between queries;
"-" for the others). "top-10 = exact" compares each engine's top 10 with exact BM25
under the same formula and terms (`BM25Index` with that engine's IDF variant and
parameters, analyzer `analyze`), ties allowed to come in any order.

The agent pattern: on a store of 10,000 records, 1,000 rounds of one durable insert
(its own committed transaction) then one search. `ArchivalStore` and `BM25Index` update
in place; the static indexes are rebuilt from scratch every 100 inserts (so a search sees
a record up to 99 inserts late) and their time includes the rebuilds.
"""

from __future__ import annotations

import argparse
import bisect
import gc
import itertools
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from vmem.bm25 import BM25Index, analyze

ENGINES = ("ArchivalStore", "BM25Index", "rank-bm25", "bm25s")
QUERIES = 200
TOP_K = 10
ROUNDS = 1_000  # agent pattern: inserts (and searches)
ROUNDS_BASE = 10_000
REBUILD_EVERY = 100

# The most frequent words of English (rank order), then made-up words from syllables.
_COMMON = tuple(" ".join((
    "the of and to a in is it you that he was for on are with as i his they be at one have",
    "this from or had by not word but what some we can out other were all there when up use",
    "your how said an each she which do their time if will way about many then them write",
    "would like so these her long make thing see him two has look more day could go come did",
    "number sound no most people my over know water than call first who may down side been",
    "now find")).split(" "))
_SYLLABLES = ("ka", "lo", "mi", "ter", "pa", "shu", "ren", "vo", "dax", "el", "qui", "sa",
              "mor", "tin", "bel", "gra", "nu", "fe", "zo", "rik")
_QUESTION_WORDS = ("what", "when", "where", "who", "which", "how", "did", "does", "is")


class Corpus:
    """Seeded sentences and questions over a Zipf-like vocabulary of `vocabulary` words.

    Word of rank r (1-based) is drawn with weight 1 / (r + 2.7) (Zipf-Mandelbrot, as
    word frequencies in text); documents are 6 to 24 words; a question is a question
    word and 2 to 7 more words drawn the same way.
    """

    def __init__(self, seed: int = 0, vocabulary: int = 50_000) -> None:
        self.rng = random.Random(seed)
        words = list(dict.fromkeys(_COMMON))
        for length in (3, 4):
            for parts in itertools.product(_SYLLABLES, repeat=length):
                if len(words) >= vocabulary:
                    break
                words.append("".join(parts))
        self.words = words[:vocabulary]
        self._cumulative = list(itertools.accumulate(1 / (rank + 2.7)
                                                     for rank in range(1, len(self.words) + 1)))

    def word(self) -> str:
        point = self.rng.random() * self._cumulative[-1]
        return self.words[bisect.bisect(self._cumulative, point)]

    def document(self) -> str:
        return " ".join(self.word() for _ in range(self.rng.randint(6, 24)))

    def question(self) -> str:
        rest = [self.word() for _ in range(self.rng.randint(2, 7))]
        return " ".join([self.rng.choice(_QUESTION_WORDS), *rest]) + "?"


def corpus(size: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """`size` documents and `QUERIES` questions, the same for every engine."""
    docs = Corpus(seed)
    questions = Corpus(seed + 1)
    return [docs.document() for _ in range(size)], [questions.question() for _ in range(QUERIES)]


# --- engines: build(texts) -> search(query, k) -> [(id, score)], ids 1-based -------------
Search = Callable[[str, int], list[tuple[int, float]]]


def _archival(texts: Sequence[str], folder: str) -> tuple[Search, Callable[[str], None]]:
    from vmem.archival import ArchivalStore
    store = ArchivalStore(os.path.join(folder, "archival.db"))
    with store.backend.transaction():
        for text in texts:
            store.insert(text)

    def search(query: str, k: int) -> list[tuple[int, float]]:
        return [(hit.record.id, hit.score) for hit in store.search(query, top_k=k)]
    return search, store.insert


def _bm25index(texts: Sequence[str], idf: str = "fts5", k1: float = 1.2
               ) -> tuple[Search, Callable[[str], None]]:
    index = BM25Index(k1=k1, b=0.75, idf=idf, analyzer=analyze)  # the store's terms
    for number, text in enumerate(texts, 1):
        index.add(number, text)

    def insert(text: str) -> None:
        index.add(len(index) + 1, text)
    return index.search, insert


def _rank_bm25(texts: Sequence[str]) -> Search:
    import numpy
    from rank_bm25 import BM25Okapi
    model = BM25Okapi([analyze(text) for text in texts], k1=1.5, b=0.75, epsilon=0.25)

    def search(query: str, k: int) -> list[tuple[int, float]]:
        terms = analyze(query)
        scores = model.get_scores(terms)  # every document, contains a query word or not
        best = numpy.argsort(-scores, kind="stable")[:k]
        return [(int(i) + 1, float(scores[i])) for i in best
                if any(term in model.doc_freqs[i] for term in terms)]
    return search


def _bm25s(texts: Sequence[str]) -> Search:
    import bm25s
    model = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    model.index([analyze(text) for text in texts], show_progress=False)

    def search(query: str, k: int) -> list[tuple[int, float]]:
        ids, scores = model.retrieve([analyze(query)], k=min(k, len(texts)),
                                     show_progress=False)
        # bm25s (Lucene) leaves out BM25's constant factor k1 + 1: put it back to compare
        pairs = zip(ids[0], scores[0], strict=True)
        return [(int(i) + 1, float(s) * 2.2) for i, s in pairs if s > 0]
    return search


def _reference(engine: str, texts: Sequence[str]) -> Search:
    """Exact BM25 with the formula the engine computes."""
    if engine == "rank-bm25":
        return _bm25index(texts, idf="okapi", k1=1.5)[0]
    if engine == "bm25s":
        return _bm25index(texts, idf="lucene")[0]
    return _bm25index(texts)[0]


def same_top(found: list[tuple[int, float]], exact: list[tuple[int, float]],
             tolerance: float = 1e-4) -> bool:
    """Same scores rank by rank and the same ids in the same order, except that rows with
    equal scores may come in any order, and the last group of ties may be cut anywhere."""
    def close(a: float, b: float) -> bool:
        return abs(a - b) <= tolerance * max(1.0, abs(b))

    if len(found) != len(exact) or not all(
            close(f[1], e[1]) for f, e in zip(found, exact, strict=True)):
        return False
    start = 0
    while start < len(exact):
        end = start + 1
        while end < len(exact) and close(exact[end][1], exact[start][1]):
            end += 1
        last = end == len(exact)  # ties at the cut: any of them may be shown
        if not last and {i for i, _ in found[start:end]} != {i for i, _ in exact[start:end]}:
            return False
        start = end
    return True


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_mib() -> float:
    """Resident memory now (Linux /proc; elsewhere the peak so far, which undercounts)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return _peak_mib()


def run_engine(engine: str, size: int, seed: int = 0) -> dict[str, Any]:
    """Index `size` documents and time the queries, in this process."""
    texts, queries = corpus(size, seed)
    gc.collect()
    base = _current_mib()
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        if engine == "ArchivalStore":
            search = _archival(texts, folder)[0]
        elif engine == "BM25Index":
            search = _bm25index(texts)[0]
        elif engine == "rank-bm25":
            search = _rank_bm25(texts)
        else:
            search = _bm25s(texts)
        index_s = time.perf_counter() - start
        results, latencies = _timed(search, queries)
        peak = _peak_mib() - base
        row = {"engine": engine, "size": size, "index_s": index_s,
               "p50_ms": _ms(latencies, 50), "p95_ms": _ms(latencies, 95), "peak_mib": peak,
               "results": results}
        if engine == "ArchivalStore":  # the only engine that caches between queries
            again = _timed(search, queries)[1]
            row["warm_p50_ms"], row["warm_p95_ms"] = _ms(again, 50), _ms(again, 95)
    return row


def _timed(search: Search, queries: Sequence[str]
           ) -> tuple[list[list[tuple[int, float]]], list[float]]:
    """Each query's top `TOP_K` and its latency in seconds, one query at a time."""
    results, latencies = [], []
    for query in queries:
        start = time.perf_counter()
        results.append(search(query, TOP_K))
        latencies.append(time.perf_counter() - start)
    return results, latencies


def _ms(values: list[float], percent: int) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, math.ceil(len(ordered) * percent / 100) - 1)]


def run_agent_pattern(engine: str, seed: int = 0) -> dict[str, Any]:
    """1,000 rounds of one durable insert then one search, on `ROUNDS_BASE` records."""
    texts, _ = corpus(ROUNDS_BASE, seed)
    extra = Corpus(seed + 2)
    asks = Corpus(seed + 3)
    new, queries = [extra.document() for _ in range(ROUNDS)], [asks.question()
                                                                for _ in range(ROUNDS)]
    with tempfile.TemporaryDirectory() as folder:
        if engine == "ArchivalStore":
            search, insert = _archival(texts, folder)
        elif engine == "BM25Index":
            search, insert = _bm25index(texts)
        else:
            build = _rank_bm25 if engine == "rank-bm25" else _bm25s
            seen = list(texts)
            search = build(seen)

            def insert(text: str) -> None:
                nonlocal search
                seen.append(text)
                if len(seen) % REBUILD_EVERY == 0:
                    search = build(seen)
        insert_s = search_s = 0.0
        for text, query in zip(new, queries, strict=True):
            start = time.perf_counter()
            insert(text)
            middle = time.perf_counter()
            search(query, TOP_K)
            insert_s += middle - start
            search_s += time.perf_counter() - middle
    return {"engine": engine, "inserts_per_s": ROUNDS / insert_s,
            "search_ms": 1000 * search_s / ROUNDS, "total_s": insert_s + search_s}


# --- the parent: one subprocess per measurement --------------------------------------
def available(engine: str) -> bool:
    module = {"rank-bm25": "rank_bm25", "bm25s": "bm25s"}.get(engine)
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _child(*args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "_child", *args],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def archival_table(sizes: Sequence[int], *, rounds: bool = True, seed: int = 0) -> str:
    """Run every available engine at every size (each in its own process) and print-ready
    text: the table, the agent-pattern table and notes."""
    engines = [engine for engine in ENGINES if available(engine)]
    missing = [engine for engine in ENGINES if engine not in engines]
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    agree: dict[tuple[str, int], float] = {}
    for size in sizes:
        texts, queries = corpus(size, seed)
        references: dict[str, Search] = {}
        for engine in engines:
            row = _child("engine", engine, str(size), str(seed))
            variant = engine if engine in ("rank-bm25", "bm25s") else "fts5"
            exact = references.setdefault(variant, _reference(engine, texts))
            matches = [same_top(found, exact(query, TOP_K))
                       for found, query in zip(row["results"], queries, strict=True)]
            rows[engine, size] = row
            agree[engine, size] = sum(matches) / len(matches)
    lines = [_format_main(engines, sizes, rows, agree)]
    if rounds:
        lines.append(_format_rounds([_child("rounds", engine, str(seed)) for engine in engines]))
    notes = [f"notes: {os.cpu_count()} CPUs, load average "
             f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} at the end; peak memory = "
             "growth of each engine's own process peak RSS (ru_maxrss) while indexing and "
             "querying; ArchivalStore is file-backed (WAL, synchronous=NORMAL)."]
    notes += [f"{engine}: not installed (pip install {engine}); column skipped."
              for engine in missing]
    return "\n\n".join(lines + notes)


def _format_main(engines: Sequence[str], sizes: Sequence[int],
                 rows: dict[tuple[str, int], dict[str, Any]],
                 agree: dict[tuple[str, int], float]) -> str:
    header = ["metric", *(f"{engine} {size:,}" for size in sizes for engine in engines)]
    metrics = [("index/insert s", lambda r, a: f"{r['index_s']:.2f}"),
               ("query p50 ms", lambda r, a: f"{r['p50_ms']:.2f}"),
               ("query p95 ms", lambda r, a: f"{r['p95_ms']:.2f}"),
               ("peak memory MiB", lambda r, a: f"{r['peak_mib']:.1f}"),
               ("top-10 = exact", lambda r, a: f"{a:.0%}"),
               ("warm p50 ms (2nd pass)", lambda r, a: _cell(r, "warm_p50_ms")),
               ("warm p95 ms (2nd pass)", lambda r, a: _cell(r, "warm_p95_ms"))]
    body = [[name, *(fmt(rows[engine, size], agree[engine, size])
                     for size in sizes for engine in engines)] for name, fmt in metrics]
    for size in sizes:
        if ("ArchivalStore", size) in rows and ("rank-bm25", size) in rows:
            ratio = rows["rank-bm25", size]["p50_ms"] / rows["ArchivalStore", size]["p50_ms"]
            body.append([f"p50 vs rank-bm25 @{size:,}", *(
                (f"{ratio:.0f}x faster" if engine == "ArchivalStore" and s == size else "")
                for s in sizes for engine in engines)])
    return _grid(header, body)


def _cell(row: dict[str, Any], key: str) -> str:
    return f"{row[key]:.2f}" if key in row else "-"


def _format_rounds(results: list[dict[str, Any]]) -> str:
    header = [f"agent pattern: {ROUNDS:,} x (durable insert + search) on {ROUNDS_BASE:,}",
              "inserts/s", "search ms", "total s"]
    body = [[r["engine"] + ("" if r["engine"] in ("ArchivalStore", "BM25Index") else
                            f" (rebuilt every {REBUILD_EVERY})"),
             f"{r['inserts_per_s']:,.0f}", f"{r['search_ms']:.2f}", f"{r['total_s']:.1f}"]
            for r in results]
    return _grid(header, body)


def _grid(header: list[str], body: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                       for i, (cell, width) in enumerate(zip(row, widths, strict=True)))
             for row in [header, *body]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python benchmarks/archival.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["archival", "_child"])
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="10000,100000",
                        help="comma-separated record counts (default 10000,100000)")
    parser.add_argument("--million", action="store_true", help="also run 1,000,000 records")
    parser.add_argument("--no-rounds", action="store_true", help="skip the agent pattern")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.what == "_child":
        kind, *params = args.rest
        if kind == "engine":
            result = run_engine(params[0], int(params[1]), int(params[2]))
        else:
            result = run_agent_pattern(params[0], int(params[1]))
        print(json.dumps(result))
        return
    sizes = [int(size) for size in args.sizes.split(",") if size]
    if args.million:
        sizes.append(1_000_000)
    print(archival_table(sizes, rounds=not args.no_rounds, seed=args.seed))


if __name__ == "__main__":
    main()
