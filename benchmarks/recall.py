"""How fast is recall storage as an agent uses it: one append per turn, one search per question?

    python benchmarks/recall.py [--size 30000] [--data ../shared/data/locomo/locomo10.json]
                                [--against OTHER/lib]

LoCoMo's turns (repeated to `--size` messages, 30 seconds apart, both speakers as named
user messages) are appended one by one to a `RecallStore` in a file, then its first 300
questions are searched for 10 hits each, twice (the second pass is "warm": the search
cache holds their words). Beside it, in the same process, the same texts as archival
records ("speaker: text") in an `ArchivalStore` of the same size answer the same
questions, so recall's cost over archival's shows at one size and on one machine.
`--against` runs the same in another copy of vmem (for example
an older checkout's `lib/`), so the table shows the two side by side from one command.
Each runs in its own process. LoCoMo is not part of the repository: without it the
benchmark says where to get it and skips.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

QUESTIONS = 300


def measure(data: str, size: int) -> dict[str, float]:
    """Append `size` turns to a new file-backed RecallStore, then time the searches."""
    from vmem.archival import ArchivalStore
    from vmem.eval.locomo import load_locomo
    from vmem.recall import RecallStore

    conversations = load_locomo(data)
    turns = [turn for conversation in conversations for turn in conversation.messages()]
    questions = [q.question for c in conversations for q in c.questions][:QUESTIONS]
    with tempfile.TemporaryDirectory() as folder:
        store = RecallStore(os.path.join(folder, "recall.db"))
        began = time.perf_counter()
        fill_recall(store, turns, size)
        appends = size / (time.perf_counter() - began)
        cold, warm = (_latencies(store, questions) for _ in range(2))
        store.close()
        archival = ArchivalStore(os.path.join(folder, "archival.db"))
        fill_archival(archival, turns, size)
        records_cold, records_warm = (_latencies(archival, questions) for _ in range(2))
        archival.close()
    return {"appends_per_s": appends, "p50": _percentile(cold, 50),
            "p95": _percentile(cold, 95), "warm_p50": _percentile(warm, 50),
            "archival_p50": _percentile(records_cold, 50),
            "archival_warm_p50": _percentile(records_warm, 50),
            "recall_over_archival": _percentile(cold, 50) / _percentile(records_cold, 50)}


def fill_recall(store, turns: list, size: int) -> None:
    """Append `size` messages to `store`: LoCoMo's `turns` repeated, 30 seconds apart, each
    as a user message named for its speaker."""
    from vmem.messages import Message

    start = turns[0].created_at
    for i in range(size):
        turn = turns[i % len(turns)]
        store.add(Message(role="user", name=turn.name, content=turn.content,
                          created_at=start + timedelta(seconds=30 * i)))


def fill_archival(archival, turns: list, size: int) -> None:
    """Insert the same `size` texts as `fill_recall`, as archival records "speaker: text"."""
    for i in range(size):
        turn = turns[i % len(turns)]
        archival.insert(f"{turn.name}: {turn.content}")


def _latencies(store, questions: list[str]) -> list[float]:
    found = []
    for question in questions:
        began = time.perf_counter()
        store.search(question, top_k=10)
        found.append(1000 * (time.perf_counter() - began))
    return found


def _percentile(values: list[float], percent: int) -> float:
    return statistics.quantiles(values, n=100)[percent - 1]


def _run(lib: str | None, data: str, size: int) -> dict[str, float]:
    """`measure` in a fresh process, importing vmem from `lib` (None: this checkout)."""
    env = dict(os.environ)
    if lib is not None:
        env["PYTHONPATH"] = os.pathsep.join([lib, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, __file__, "_child", data, str(size)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["_child"]:
        print(json.dumps(measure(sys.argv[2], int(sys.argv[3]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=30_000)
    parser.add_argument("--data", default="../shared/data/locomo/locomo10.json")
    parser.add_argument("--against", help="another vmem's lib/ folder, run side by side")
    args = parser.parse_args(argv)
    if not Path(args.data).is_file():
        print(f"LoCoMo not found at {args.data}: skipped (download locomo10.json, see "
              "../shared/data/README.md, and pass --data)")
        return 0
    columns = {"this vmem": _run(None, args.data, args.size)}
    if args.against:
        columns[f"vmem at {args.against}"] = _run(args.against, args.data, args.size)
    rows = (("appends/s", "appends_per_s", "{:,.0f}"), ("search p50 ms", "p50", "{:.1f}"),
            ("search p95 ms", "p95", "{:.1f}"), ("warm p50 ms", "warm_p50", "{:.1f}"),
            ("archival search p50 ms, same size", "archival_p50", "{:.1f}"),
            ("archival warm p50 ms", "archival_warm_p50", "{:.1f}"),
            ("recall p50 / archival p50", "recall_over_archival", "{:.1f}x"))
    width = max(len(name) for name in columns) + 2
    print(f"recall, {args.size:,} messages, {QUESTIONS} questions, top 10".ljust(36)
          + "".join(name.rjust(width) for name in columns))
    for label, key, form in rows:
        print(label.ljust(36) + "".join(form.format(found[key]).rjust(width)
                                        for found in columns.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
