"""What the size of recall's reranked pool trades: search time against evidence recall.

    python benchmarks/recall_pool.py [--pools 10,25,50,60,100] [--size 30000]
                                     [--data ../shared/data/locomo/locomo10.json]
                                     [--beam PATH/chats/100K --chats 1-10]

Recall search ranks by BM25, then reorders BM25's best `vmem.tier.POOL` hits by the priors
(`vmem.ranking`); loading and reranking the pool is most of what it costs over archival
search. For each pool size this prints the warm p50 of a search over `--size` messages
(built as `benchmarks/recall.py` builds them, beside an archival store of the same
texts) and evidence recall@10 of the library path on LoCoMo (all ten conversations and
their multi-hop questions) and, given `--beam`, on BEAM's chats. `vmem.ranking.POOL` is the default.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).parent))
from recall import (  # noqa: E402 - the sibling benchmark
    QUESTIONS,
    _latencies,
    _percentile,
    fill_archival,
    fill_recall,
)

from vmem import tier  # noqa: E402
from vmem.archival import ArchivalStore  # noqa: E402
from vmem.eval.beam import load_beam  # noqa: E402
from vmem.eval.locomo import Conversation, load_locomo  # noqa: E402
from vmem.eval.metrics import recall_at_k  # noqa: E402
from vmem.eval.runner import ingest_memory  # noqa: E402
from vmem.recall import RecallStore  # noqa: E402


def search_times(conversations: list[Conversation], size: int, pools: list[int]
                 ) -> tuple[dict[int, float], float]:
    """Warm p50 in ms of a recall search per pool size, and of an archival search."""
    turns = [turn for c in conversations for turn in c.messages()]
    questions = [q.question for c in conversations for q in c.questions][:QUESTIONS]
    with tempfile.TemporaryDirectory() as folder:
        store = RecallStore(os.path.join(folder, "recall.db"))
        archival = ArchivalStore(os.path.join(folder, "archival.db"))
        fill_recall(store, turns, size)
        fill_archival(archival, turns, size)
        _latencies(archival, questions)
        records = _percentile(_latencies(archival, questions), 50)
        times = {}
        for pool in pools:
            with mock.patch.object(tier, "POOL", pool):
                _latencies(store, questions)  # warm the cache for this pool's terms
                times[pool] = _percentile(_latencies(store, questions), 50)
        store.close()
        archival.close()
    return times, records


def recall_per_pool(conversations: list[Conversation], pools: list[int]
                    ) -> dict[int, tuple[float, float]]:
    """Evidence recall@10 of the library path per pool size, overall and on LoCoMo's
    multi-hop questions (category 1; none on BEAM), in percent."""
    scores: dict[int, tuple[list[float], list[float]]] = {pool: ([], []) for pool in pools}
    for conversation in conversations:
        recall = ingest_memory(conversation.messages()).recall
        for pool in pools:
            with mock.patch.object(tier, "POOL", pool):
                for question in conversation.questions:
                    if not question.evidence:
                        continue
                    found = [hit.record.meta["dia_id"]
                             for hit in recall.search(question.question, top_k=10).hits]
                    value = recall_at_k(found, question.evidence, 10)
                    scores[pool][0].append(value)
                    if question.category == 1 and not question.category_label:
                        scores[pool][1].append(value)
    return {pool: (_mean(every), _mean(multi)) for pool, (every, multi) in scores.items()}


def _mean(values: list[float]) -> float:
    return 100 * sum(values) / len(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", default="10,25,50,60,100")
    parser.add_argument("--size", type=int, default=30_000)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo/locomo10.json"))
    parser.add_argument("--beam", type=Path, default=None, help="BEAM's chats/100K folder")
    parser.add_argument("--chats", default="1-10")
    args = parser.parse_args(argv)
    pools = sorted({int(pool) for pool in args.pools.split(",")})
    if not args.data.is_file():
        print(f"LoCoMo not found at {args.data}: skipped (download locomo10.json, see "
              "../shared/data/README.md, and pass --data)")
        return 0
    locomo = load_locomo(args.data)
    times, records = search_times(locomo, args.size, pools)
    quality = recall_per_pool(locomo, pools)
    heads = ["pool", "warm p50 ms", "x archival", "LoCoMo R@10", "multi-hop"]
    if args.beam:
        first, _, last = args.chats.partition("-")
        beam = recall_per_pool(load_beam(args.beam, range(int(first), int(last or first) + 1)),
                               pools)
        heads.append(f"BEAM {args.chats} R@10")
    print(f"{args.size:,} messages, {QUESTIONS} questions; archival warm p50 {records:.2f} ms")
    print("".join(head.rjust(16) for head in heads))
    for pool in pools:
        row = [str(pool), f"{times[pool]:.2f}", f"{times[pool] / records:.1f}x",
               f"{quality[pool][0]:.1f}", f"{quality[pool][1]:.1f}"]
        if args.beam:
            row.append(f"{beam[pool][0]:.1f}")
        print("".join(cell.rjust(16) for cell in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
