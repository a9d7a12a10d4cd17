"""Rank retrieval units for benchmark questions under switchable configurations.

A configuration is a retrieval unit plus a ranker and options, named the way the report
prints it: `dialog/bm25` is plain BM25 (vmem's `BM25Index`, the one `tokenize`) over dialog
turns; each `+option` adds one idea that a memory system legitimately has at hand, so the
table shows what each buys. None of them looks at answers or evidence.

Options for dialog turns (`RankConfig` fields):
- `speaker`  the speaker's name is indexed with each turn (a stored message knows its
             sender; questions name people).
- `date`     the session date ("8 May 2023") is indexed with each turn.
- `caption`  a shared photo's caption is indexed with the turn that shared it.
- `stem`     light stemming of documents and queries (`vmem.eval.analysis.stem`).
- `stop`     stopwords removed from documents and queries.
- `context`  each turn is indexed together with the turn before it (the question it
             answers), a document expansion that the recall log makes free.
- `session`  a session-level prior: the turn's score plus a share of its whole session's
             BM25 score for the query (hierarchical retrieval: find the right day, then
             the right turn).
- `prf`      query expansion by pseudo-relevance feedback: the most distinctive terms of
             the top few hits are added to the query with a lower weight.
- `recency`  a mild prior for later turns (what a FIFO-minded agent assumes).

`dialog/recall` is the library's own path, what a user of vmem does: `ingest_memory` opens
one `Memory` per conversation and appends each turn to its main context as
`Message(role="user", name=speaker, content=text, created_at=..., meta={"dia_id": ...})`
and nothing else (the oldest are evicted to recall and summarized); each question is
`memory.recall.search(question)`, with the store's defaults (`vmem.ranking`). Sessions
show only as gaps in time. `dialog/archival` stores each turn as an archival record
("speaker: text", created at the turn's time) and searches archival storage.
`dialog/dense` ranks the turns ("speaker: text") by cosine similarity to the question under
all-MiniLM-L6-v2 (`vmem.eval.dense`, an optional extra), and `dialog/recall+dense` fuses
the library path's ranking with it (`fused`): the measurement of issue 14's dense signal,
which is not shipped in the stores because it does not pay (docs/RETRIEVAL.md).
Observation and summary units (`observation/bm25`, `summary/bm25`) are ranked with plain
BM25 and scored through the turns they stand for.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from ..archival import ArchivalStore
from ..bm25 import BM25Index, tokenize
from ..memory import DEFAULT_MAX_TOKENS, Memory
from ..messages import Message
from .analysis import analyze
from .locomo import CATEGORY_NAMES, Conversation
from .metrics import MeanTable, recall_at_k

CATEGORY_ORDER = tuple(CATEGORY_NAMES.values())
PLAIN = "dialog/bm25"
BEST = "dialog/bm25+speaker+date+stem+stop+context+session"
STORE_CONFIGS = ("dialog/recall", "dialog/archival")
UNIT_CONFIGS = ("observation/bm25", "summary/bm25")
DENSE_CONFIGS = ("dialog/dense", "dialog/recall+dense")
# The fusion chosen on conversations 1-5 (docs/RETRIEVAL.md): each list's best 30, rank r
# worth weight / (10 + r), the dense list at half the weight of the library's.
FUSION_DEPTH, FUSION_K, DENSE_WEIGHT = 30, 10, 0.5
OPTION_ORDER = ("speaker", "date", "caption", "stem", "stop", "context", "session", "prf",
                "recency")


@dataclass(frozen=True)
class RankConfig:
    """One ranking configuration for dialog turns; `name` is how reports label it."""

    speaker: bool = False
    date: bool = False
    caption: bool = False
    stem: bool = False
    stop: bool = False
    context: bool = False
    session: bool = False
    prf: bool = False
    recency: bool = False
    k1: float = 1.2
    b: float = 0.75

    @property
    def name(self) -> str:
        """`dialog/bm25` plus one `+option` per option switched on, in a fixed order."""
        return "dialog/bm25" + "".join(f"+{opt}" for opt in OPTION_ORDER if getattr(self, opt))

    @classmethod
    def parse(cls, name: str) -> RankConfig:
        """The configuration a name such as `dialog/bm25+speaker+stem` stands for."""
        head, *options = name.split("+")
        if head != "dialog/bm25":
            raise ValueError(f"unknown configuration {name!r}: names start with 'dialog/bm25'")
        known = {f.name for f in fields(cls)} & set(OPTION_ORDER)
        unknown = [opt for opt in options if opt not in known]
        if unknown:
            raise ValueError(f"unknown option(s) {', '.join(unknown)} in {name!r}; "
                             f"choose from {', '.join(OPTION_ORDER)}")
        return cls(**dict.fromkeys(options, True))


# Weights of the combined options, fixed by reasoning rather than tuned on the benchmark:
SESSION_WEIGHT = 0.3   # share of the normalised session score added to a turn's
PRF_DOCS = 3           # feedback documents
PRF_TERMS = 10         # expansion terms
PRF_WEIGHT = 0.3       # weight of the expansion query relative to the question
RECENCY_WEIGHT = 0.1   # boost of the newest turn relative to the oldest


def turn_text(message: Message, config: RankConfig) -> str:
    """What a ranker indexes for one turn, before the previous-turn context is added."""
    parts = [message.content]
    if config.speaker and message.name:
        parts.insert(0, message.name)
    if config.caption and message.meta.get("blip_caption"):
        parts.append(message.meta["blip_caption"])
    if config.date and message.created_at is not None:
        parts.append(message.created_at.strftime("%d %B %Y"))
    return " ".join(parts)


def ingest_turns(messages: Sequence[Message], config: RankConfig) -> TurnRanker:
    """Index a conversation's turns (oldest first) for `config` in memory."""
    return TurnRanker(messages, config)


def ingest_memory(messages: Sequence[Message], max_tokens: int = DEFAULT_MAX_TOKENS
                  ) -> Memory:
    """A fresh in-memory agent of `max_tokens` that was told a conversation's turns one by
    one, each with its role (LoCoMo's are all "user"), the speaker's name, the turn's time
    and its dia_id only."""
    memory = Memory.open(":memory:", max_tokens=max_tokens)
    for message in messages:
        memory.context.append(Message(role=message.role, name=message.name,
                                      content=message.content, created_at=message.created_at,
                                      meta={"dia_id": message.meta["dia_id"]}))
    return memory


def ingest_archival(messages: Sequence[Message]) -> ArchivalStore:
    """A fresh archival store holding each turn as a record "speaker: text", stored at
    the turn's time."""
    now: list[datetime] = []
    store = ArchivalStore(":memory:", clock=lambda: now[-1])
    for message in messages:
        now.append(message.created_at or datetime.now(timezone.utc))
        store.insert(f"{message.name}: {message.content}", session_id=message.session_id,
                     turn_id=message.turn)
    return store


def default_configs(units: bool = True) -> list[str]:
    """The configurations a report shows: plain BM25, each option alone, the best
    combination, the same plus the remaining options except recency, the recall store,
    and (with `units`) observations and summaries."""
    configs = [PLAIN, *(f"{PLAIN}+{option}" for option in OPTION_ORDER), BEST,
               BEST + "+caption+prf", *STORE_CONFIGS]
    return configs + ([*UNIT_CONFIGS] if units else [])


class TurnRanker:
    """Ranks the turns of one conversation for a question under one `RankConfig`."""

    def __init__(self, messages: Sequence[Message], config: RankConfig) -> None:
        self.config = config
        self.messages = list(messages)
        texts = [self._analyze(turn_text(m, config)) for m in self.messages]
        self.index = BM25Index(config.k1, config.b, analyzer=tokenize)
        self.terms: list[set[str]] = []
        for position, text in enumerate(texts):
            if config.context and position > 0:
                text = texts[position - 1] + " " + text
            self.index.add(position, text)
            self.terms.append(set(text.split()))
        self.sessions: BM25Index | None = None
        if config.session:
            self.sessions = BM25Index(config.k1, config.b, analyzer=tokenize)
            grouped: dict[int | None, list[str]] = {}
            for message, text in zip(self.messages, texts, strict=True):
                grouped.setdefault(message.session_id, []).append(text)
            for session_id, session_texts in grouped.items():
                self.sessions.add(session_id, " ".join(session_texts))

    def _analyze(self, text: str) -> str:
        return analyze(text, stemming=self.config.stem, stopwords=self.config.stop)

    def scores(self, question: str) -> dict[int, float]:
        """Score of every turn that matches the question (position -> score)."""
        query = self._analyze(question)
        scores = _normalised(self.index.scores(query))
        if self.config.prf and scores:
            expansion = self._feedback_terms(query, scores)
            for position, value in _normalised(self.index.scores(expansion)).items():
                scores[position] = scores.get(position, 0.0) + PRF_WEIGHT * value
        if self.sessions is not None:
            by_session = _normalised(self.sessions.scores(query))
            for position in scores:
                session_id = self.messages[position].session_id
                scores[position] += SESSION_WEIGHT * by_session.get(session_id, 0.0)
        if self.config.recency:
            last = max(len(self.messages) - 1, 1)
            for position in scores:
                scores[position] *= 1 + RECENCY_WEIGHT * position / last
        return scores

    def _feedback_terms(self, query: str, scores: dict[int, float]) -> str:
        """The most distinctive terms of the top documents that the query lacks."""
        top = sorted(scores, key=lambda p: (-scores[p], p))[:PRF_DOCS]
        asked = set(query.split())
        weights: Counter[str] = Counter()
        for position in top:
            for term in self.terms[position]:
                if term not in asked:
                    weights[term] += self.index.idf(term)
        best = sorted(weights.items(), key=lambda item: (-item[1], item[0]))[:PRF_TERMS]
        return " ".join(term for term, _ in best)

    def rank(self, question: str, k: int) -> list[int]:
        """Positions of the `k` best turns, best first, ties by conversation order."""
        scores = self.scores(question)
        return sorted(scores, key=lambda p: (-scores[p], p))[:k]


def _normalised(scores: dict[int, float] | dict[object, float]) -> dict:
    """Scores divided by the best one, so different rankers can be added."""
    top = max(scores.values(), default=0.0)
    if top <= 0 or math.isnan(top):
        return dict(scores)
    return {key: value / top for key, value in scores.items()}


class UnitRanker:
    """Plain BM25 over retrieval units (observations, summaries) given as texts."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.index = BM25Index(analyzer=tokenize)
        for position, text in enumerate(texts):
            self.index.add(position, text)

    def rank(self, question: str, k: int) -> list[int]:
        """Positions of the `k` best units, best first."""
        return [position for position, _ in self.index.search(question, k)]


def evaluate_recall(conversations: Sequence[Conversation], configs: Sequence[str],
                    ks: Sequence[int] = (1, 5, 10, 25, 50),
                    order: Sequence[str] = CATEGORY_ORDER,
                    max_tokens: int = DEFAULT_MAX_TOKENS
                    ) -> dict[str, dict[str, dict[str, float]]]:
    """Evidence recall@k per configuration, per category (in `order`) and overall, in percent.

    `configs` are names: `dialog/bm25[+option...]`, `dialog/recall`, `dialog/archival`,
    `observation/bm25`, `summary/bm25`. Questions without resolvable evidence are skipped.
    `max_tokens` is the main context of the library path's agent (`ingest_memory`).
    """
    result = {}
    for name in configs:
        table = MeanTable()
        for conversation in conversations:
            rank = _unit_ranking(conversation, name, max_tokens)
            for question in conversation.questions:
                if not question.evidence:
                    continue
                ranked = rank(question.question, max(ks))
                table.add(question.category_name,
                          {f"recall@{k}": recall_at_k(ranked, question.evidence, k) for k in ks})
        result[name] = table.as_dict(order=order)
    return result


def _unit_ranking(conversation: Conversation, name: str, max_tokens: int = DEFAULT_MAX_TOKENS
                  ) -> Callable[[str, int], list]:
    """A function question, k -> the ranked units' dia_ids, for configuration `name`."""
    if name in UNIT_CONFIGS:
        units = conversation.observations if name.startswith("observation") else \
            conversation.summaries
        ranker = UnitRanker([unit.text for unit in units])
        return lambda question, k: [units[p].dia_ids for p in ranker.rank(question, k)]
    turns = conversation.messages()
    if name == "dialog/recall":
        recall = ingest_memory(turns, max_tokens).recall
        return lambda question, k: [hit.record.meta["dia_id"]
                                    for hit in recall.search(question, top_k=k)]
    if name == "dialog/archival":
        archival = ingest_archival(turns)
        return lambda question, k: [turns[hit.record.id - 1].meta["dia_id"]
                                    for hit in archival.search(question, top_k=k)]
    if name in DENSE_CONFIGS:
        return _dense_ranking(turns, hybrid=name == "dialog/recall+dense")
    turn_ranker = ingest_turns(turns, RankConfig.parse(name))
    return lambda question, k: [turns[p].meta["dia_id"] for p in turn_ranker.rank(question, k)]


def fused(rankings: Sequence[Sequence[str]], weights: Sequence[float], k: int = FUSION_K
          ) -> list[str]:
    """Weighted reciprocal-rank fusion: an id at rank r (from 0) of a list earns that list's
    weight / (k + r + 1); ids by total, best first, ties in first-seen order."""
    totals: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, unit in enumerate(ranking):
            totals[unit] = totals.get(unit, 0.0) + weight / (k + rank + 1)
    return sorted(totals, key=lambda unit: -totals[unit])


@lru_cache(maxsize=16)
def _turn_vectors(texts: tuple[str, ...]) -> Any:
    """The encoded turns of one conversation (about 1 MB), kept so that `dialog/dense` and
    `dialog/recall+dense`, which run one after the other over LoCoMo's ten conversations,
    encode each only once."""
    from .dense import shared_encoder  # noqa: PLC0415 - numpy and the weights are optional

    return shared_encoder().encode(texts)


def _dense_ranking(turns: Sequence[Message], hybrid: bool) -> Callable[[str, int], list]:
    """Question, k -> dia_ids by embedding similarity, or fused with the library path."""
    from .dense import shared_encoder  # noqa: PLC0415 - numpy and the weights are optional

    encoder = shared_encoder()
    ids = [message.meta["dia_id"] for message in turns]
    vectors = _turn_vectors(tuple(f"{message.name}: {message.content}" for message in turns))
    recall = ingest_memory(turns).recall if hybrid else None

    def rank(question: str, k: int) -> list[str]:
        similarity = vectors @ encoder.encode([question])[0]
        depth = FUSION_DEPTH if recall is not None else k
        dense = [ids[i] for i in sorted(range(len(ids)), key=lambda i: -similarity[i])[:depth]]
        if recall is None:
            return dense
        library = [hit.record.meta["dia_id"] for hit in recall.search(question, top_k=depth)]
        return fused([library, dense], [1.0, DENSE_WEIGHT])[:k]
    return rank
