"""Agents to forget, export and import: the demo agent, a generated 10,000-message agent
and a small neighbour, each under a scope; what an agent shows (to compare two stores);
and a raw scan of an SQLite file and its WAL for strings."""

from __future__ import annotations

import json
from pathlib import Path

from vmem.agent import Agent, RulePolicy
from vmem.bm25 import tokenize
from vmem.clock import StepClock
from vmem.course.demo import DEMO_BUDGET, DEMO_FLUSH_TO, DEMO_WARN_AT, play
from vmem.memory import Memory
from vmem.messages import Message
from vmem.storage import open_backend

ANA, BEN = {"user_id": "ana"}, {"user_id": "ben"}
# unique strings only the forgotten agent ever stores: ASCII and not
MARKERS = ("zqxmarkerone", "Zqxmarkertwo-Qzvlisbon", "žluťoučkýzqx", "naïvezqxcafé",
           "东京zqx", "zqx😀emoji")
QUERIES = ("sister lisbon", "what did I say about the garden", "peanuts", "thesis",
           "tomatoes", "zqxmarkerone", "zzz unseen")


def build_demo(path: str, scope: dict[str, str] = ANA) -> None:
    """The lesson's demo agent under `scope`, plus every marker in every tier: a user
    message (recall and its index), a record (text, tag, source URL), core memory (and
    its history), and the running summary (enough small talk to flush them out)."""
    with Memory.open(path, scope=scope, max_tokens=DEMO_BUDGET, warn_at=DEMO_WARN_AT,
                     flush_to=DEMO_FLUSH_TO, clock=StepClock()) as memory:
        play(memory)
        agent = Agent(memory, RulePolicy())
        agent.step(f"Remember {' '.join(MARKERS)} please.")
        memory.archival.insert(f"The code words are {' and '.join(MARKERS)}.",
                               tags=["zqxtag"], source_url="https://zqx.example/zqxmarkerone")
        memory.core.append("human", f"Code words: {', '.join(MARKERS)}.")
        memory.core.replace("human", "Code words", "Secret words")
        old = memory.archival.insert(f"{MARKERS[0]} lives in Lisbon.")
        memory.archival.invalidate(old, superseded_by=memory.archival.insert(
            f"{MARKERS[0]} moved to Porto."))
        for number in range(12):  # push the markers out of the queue, into the summary
            agent.step(f"Small talk {number}: the weather, the tram, the bakery again.")


def build_large(path: str, scope: dict[str, str], messages: int = 10_000) -> None:
    """A generated agent with `messages` recall messages (user and assistant in turn,
    two thirds with a marker) and 500 archival records, some superseded, written in one
    transaction through the tiers; then a few turns so the context has a state."""
    with Memory.open(path, scope=scope, max_tokens=2000, clock=StepClock()) as memory:
        with memory.backend.transaction():
            for number in range(messages):
                role = "user" if number % 2 == 0 else "assistant"
                marker = MARKERS[number % len(MARKERS)] if number % 3 else "plain"
                memory.recall.add(Message(role=role, content=(
                    f"message {number} about {marker}, the garden and the tomatoes"),
                    session_id=memory.session_id, turn=number // 2 + 1))
            for number in range(500):
                record = memory.archival.insert(
                    f"fact {number}: {MARKERS[number % len(MARKERS)]} likes thesis {number}",
                    tags=[f"t{number % 7}"])
                if number % 50 == 1:
                    memory.archival.invalidate(record - 1, superseded_by=record)
        agent = Agent(memory, RulePolicy())
        for number in range(8):
            agent.step(f"Tell me about {MARKERS[number % len(MARKERS)]} and the garden.")


def build_neighbour(path: str, scope: dict[str, str] = BEN) -> None:
    """Another agent in the same store, which a forget must leave as it was."""
    with Memory.open(path, scope=scope, clock=StepClock()) as memory:
        agent = Agent(memory, RulePolicy())
        agent.step("My name is Ben and my sister lives in Lisbon.")
        agent.step("I planted tomatoes in the garden.")
        memory.core.append("human", "Name: Ben.")
        first = memory.archival.insert("Ben is allergic to peanuts", tags=["health"])
        memory.archival.invalidate(first, superseded_by=memory.archival.insert(
            "Ben is no longer allergic to peanuts"))
        memory.archival.insert("Ben's thesis on wave power is due in May.")


def view(target: str, scope: dict[str, str], *, scores: bool = True) -> dict:
    """What one agent shows: prompt, sessions, core with history, records, the messages in
    its context, and every query's hits in both tiers (ids, and scores unless not
    `scores`: they move where statistics are shared with a forgotten agent)."""
    backend = open_backend(target)
    sessions = backend.sessions(scope)  # before this look starts one
    backend.close()
    with Memory.open(target, scope=scope, clock=StepClock()) as memory:
        def hits(page):
            return [(hit.record.id, hit.score, hit.terms) if scores else hit.record.id
                    for hit in page]
        return {
            "prompt": memory.context.render(),
            "sessions": sessions,
            "core": memory.core.to_dict(history=True),
            "records": memory.archival.records(include_invalid=True),
            "messages": memory.recall.get_many([m.id for m in memory.context.messages]),
            "recall": len(memory.recall),
            "searches": [(hits(memory.archival.search(query, include_invalid=True,
                                                      top_k=10)),
                          hits(memory.recall.search(query, page_size=10)))
                         for query in QUERIES]}


def forms(text: str, terms: bool = True) -> list[bytes]:
    """The byte sequences `text` can leave in a store: as written (UTF-8), as JSON
    escapes it (ASCII \\u forms), as the index stores it (its terms joined by spaces),
    and (with `terms`) each of its terms longer than 3 letters, as the index's segments
    hold them."""
    found = [text.encode(), json.dumps(text)[1:-1].encode(), " ".join(tokenize(text)).encode()]
    if terms:
        found += [term.encode() for term in tokenize(text) if len(term) > 3]
    return list(dict.fromkeys(found))


def scan(path: str, texts: tuple[str, ...] = MARKERS, terms: bool = True
         ) -> dict[str, list[str]]:
    """Which of `texts` (in any of their `forms`) each file of the store holds: the
    database, its WAL and its shared-memory index, read as raw bytes."""
    seen = {}
    for suffix in ("", "-wal", "-shm"):
        file = Path(path + suffix)
        data = file.read_bytes() if file.exists() else b""
        seen[file.name] = [text for text in texts
                           if any(form in data for form in forms(text, terms))]
    return seen
