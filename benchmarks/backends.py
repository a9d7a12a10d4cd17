"""SQLite beside PostgreSQL: the same stores, the same records, the same questions.

    python benchmarks/backends.py [--sizes 10000,100000] [--agents 8] [--rounds 200]

The corpus and the questions are `benchmarks/archival.py`'s (a Zipf-like vocabulary).
PostgreSQL is a throwaway server on a Unix socket (`scripts/postgres_server.py`) with
its default, durable settings (every commit flushed to disk); SQLite is a file in WAL
mode with `synchronous=NORMAL` (a commit survives the process, not a power cut).

- **Insert rate**: `ArchivalStore.insert` of every record, all in one transaction.
- **Query p50/p95**: the 200 questions, one at a time, top 10, right after loading (on
  both backends the pruned search's per-process cache fills as questions arrive: its
  first questions are cold; on PostgreSQL after `VACUUM ANALYZE`, which autovacuum runs
  on its own soon after a load: planner statistics, and index-only scans of the
  postings, which the cache reads a term at a time). Every question's
  top 10 (ids and scores) must be the same on both backends.
- **Agents**: N agents in N processes, each doing the agent pattern (one durable insert,
  its own committed transaction, then one search of its own scope) for `--rounds`
  rounds, on one PostgreSQL database or in N SQLite files; total rounds per second,
  beside one agent alone on the same backend. A third row puts each PostgreSQL agent in
  a schema of its own, sharing nothing (no statistics, no change log): the gap between
  it and one database is what sharing costs, the gap to SQLite what a server costs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from archival import corpus  # benchmarks/ is this script's folder

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from postgres_server import ThrowawayPostgres  # noqa: E402  (scripts/, added above)

from vmem.archival import ArchivalStore  # noqa: E402
from vmem.memory import Memory  # noqa: E402

QUERIES = 200
TOP_K = 10
AGENT_BASE = 1_000  # records each agent holds before its rounds


def load_and_query(target: str, texts: Sequence[str], questions: Sequence[str]) -> dict:
    """Insert `texts` into the store at `target`, then time `questions`."""
    store = ArchivalStore(target)
    began = time.perf_counter()
    with store.backend.transaction():
        for text in texts:
            store.insert(text)
    inserted = time.perf_counter() - began
    if target.startswith("postgresql://"):  # what autovacuum does within a minute of a load
        store.backend.conn.execute("VACUUM ANALYZE")
    times, tops = [], []
    for question in questions:
        began = time.perf_counter()
        page = store.search(question, top_k=TOP_K)
        times.append(time.perf_counter() - began)
        tops.append([(hit.record.id, hit.score) for hit in page])
    store.backend.close()
    times.sort()
    return {"insert_per_s": len(texts) / inserted, "p50_ms": 1000 * times[len(times) // 2],
            "p95_ms": 1000 * times[int(len(times) * 0.95)], "tops": tops}


def agent(target: str, number: int, rounds: int) -> None:
    """One agent (a worker process): the agent pattern, `rounds` times."""
    texts, questions = corpus(AGENT_BASE + rounds, seed=number)
    with Memory.open(target, scope={"agent_id": f"a{number}"}) as memory:
        with memory.backend.transaction():
            for text in texts[:AGENT_BASE]:
                memory.archival.insert(text)
        print("ready", flush=True)
        sys.stdin.readline()  # start together
        for i in range(rounds):
            memory.archival.insert(texts[AGENT_BASE + i])
            memory.archival.search(questions[i % len(questions)], top_k=TOP_K)
    print("done", flush=True)


def run_agents(targets: Sequence[str], rounds: int) -> float:
    """Total rounds per second of one agent process per target, started together."""
    workers = [subprocess.Popen(
        [sys.executable, __file__, "_agent", target, str(number), str(rounds)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for number, target in enumerate(targets)]
    for worker in workers:
        assert worker.stdout.readline() == "ready\n"
    began = time.perf_counter()
    for worker in workers:
        worker.stdin.write("go\n")
        worker.stdin.flush()
    for worker in workers:
        assert worker.stdout.readline() == "done\n"
        worker.wait()
    return len(targets) * rounds / (time.perf_counter() - began)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python benchmarks/backends.py",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    with ThrowawayPostgres(settings={}) as server, tempfile.TemporaryDirectory() as folder:
        schemas = iter(range(10**6))

        def postgres() -> str:
            name = f"bench{next(schemas)}"
            import psycopg

            with psycopg.connect(server.url, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {name}")
            return f"{server.url}&options=-c%20search_path%3D{name}"

        print("| records | backend | insert/s | query p50 ms | query p95 ms |")
        print("|---:|---|---:|---:|---:|")
        for size in sizes:
            texts, questions = corpus(size)
            results = {"SQLite": load_and_query(f"{folder}/{size}.db", texts, questions),
                       "PostgreSQL": load_and_query(postgres(), texts, questions)}
            same = all(_same(a, b) for a, b in zip(results["SQLite"]["tops"],
                                                   results["PostgreSQL"]["tops"], strict=True))
            for name, row in results.items():
                print(f"| {size:,} | {name} | {row['insert_per_s']:,.0f} | "
                      f"{row['p50_ms']:.1f} | {row['p95_ms']:.1f} |")
            print(f"\n{size:,} records: top {TOP_K} of every question the same on both "
                  f"backends: {'yes' if same else 'NO'}\n")
        print(f"\nagent pattern, {args.rounds} rounds per agent (insert, then search), "
              f"{AGENT_BASE:,} records each to start:\n")
        print("| backend | 1 agent rounds/s | "
              f"{args.agents} agents rounds/s (total) | speed-up |")
        print("|---|---:|---:|---:|")
        url = postgres()
        for name, one, many in (
                ("SQLite (a file per agent)", [f"{folder}/solo.db"],
                 [f"{folder}/agent{n}.db" for n in range(args.agents)]),
                ("PostgreSQL (one database)", [postgres()], [url] * args.agents),
                # sharing nothing (no statistics, no change log): what one database costs
                ("PostgreSQL (a schema per agent)", [postgres()],
                 [postgres() for _ in range(args.agents)])):
            alone = run_agents(one, args.rounds)
            together = run_agents(many, args.rounds)
            print(f"| {name} | {alone:.0f} | {together:.0f} | {together / alone:.2f}x |")


def _same(first: list, second: list) -> bool:
    return [doc for doc, _ in first] == [doc for doc, _ in second] and all(
        abs(a - b) <= 1e-9 * max(abs(a), 1e-300) for (_, a), (_, b) in zip(
            first, second, strict=True))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_agent":
        agent(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
