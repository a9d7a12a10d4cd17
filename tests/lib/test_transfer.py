"""Moving agents between backends (`python -m vmem copy SRC DEST`): an SQLite file to
PostgreSQL and back renders the same prompt, answers every search the same way, and
keeps every message, record (invalidated ones too), block history and session."""

from __future__ import annotations

import io

import pytest

from vmem.__main__ import main
from vmem.agent import Agent, RulePolicy
from vmem.clock import StepClock
from vmem.course.demo import open_demo_memory, play
from vmem.errors import StoreError
from vmem.memory import Memory
from vmem.storage import open_backend
from vmem.transfer import copy_agents

ANA, BEN = {"user_id": "ana"}, {"user_id": "ben"}
QUERIES = ("sister lisbon", "what did I say about the garden", "peanuts", "zzz unseen")


def _build(path: str) -> None:
    """Two agents in one file: the demo (unscoped) and Ana and Ben with their own facts."""
    with open_demo_memory(path) as memory:
        play(memory)
    for scope, name in ((ANA, "ana"), (BEN, "ben")):
        with Memory.open(path, scope=scope, clock=StepClock()) as memory:
            agent = Agent(memory, RulePolicy())
            agent.step(f"My name is {name} and my sister lives in Lisbon.")
            agent.step("I planted tomatoes in the garden.")
            memory.core.append("human", f"Name: {name}.")
            first = memory.archival.insert(f"{name} is allergic to peanuts", tags=["health"])
            later = memory.archival.insert(f"{name} is no longer allergic to peanuts")
            memory.archival.invalidate(first, superseded_by=later)


def _snapshot(path: str) -> dict:
    """What an agent shows: each scope's prompt, sessions, core history and searches."""
    seen = {}
    for scope in (None, ANA, BEN):
        with Memory.open(path, scope=scope, clock=StepClock()) as memory:
            seen[str(scope)] = {
                "prompt": memory.context.render(),
                "sessions": memory.sessions()[:-1],  # not the one this look started
                "core": memory.core.to_dict(history=True),
                "records": memory.archival.records(include_invalid=True),
                "messages": memory.recall.get_many(
                    [m.id for m in memory.context.messages]),
                "searches": [
                    [(hit.record.id, hit.score, hit.terms) for hit in page]
                    for query in QUERIES
                    for page in (memory.archival.search(query, include_invalid=True),
                                 memory.recall.search(query, page_size=10))]}
    return seen


def _copy(source: str, destination: str) -> None:
    reader, writer = open_backend(source), open_backend(destination)
    try:
        copy_agents(reader, writer)
    finally:
        reader.close()
        writer.close()


def test_sqlite_to_postgres_and_back_shows_the_same_agents(tmp_path, postgres_url):
    original, back = str(tmp_path / "agents.db"), str(tmp_path / "back.db")
    _build(original)
    out = io.StringIO()
    assert main(["copy", original, postgres_url], out=out) == 0
    assert "copied 3 scopes" in out.getvalue() and "every id kept" in out.getvalue()
    _copy(postgres_url, back)
    expected = _snapshot(original)  # each look starts a session: look after both copies
    for copy in (postgres_url, back):
        seen = _snapshot(copy)
        for scope, shown in expected.items():
            for key, value in shown.items():
                assert seen[scope][key] == value, (copy[:10], scope, key)


def test_copying_twice_is_refused_and_changes_nothing(tmp_path, postgres_url):
    source = str(tmp_path / "agent.db")
    _build(source)
    _copy(source, postgres_url)
    before = _snapshot(postgres_url)
    with pytest.raises(StoreError, match="already holds the agent"):
        _copy(source, postgres_url)
    assert _snapshot(postgres_url)["None"]["prompt"] == before["None"]["prompt"]


def test_ids_taken_in_the_destination_are_renumbered_with_their_references(new_target):
    first, second, shared = new_target(), new_target(), new_target()
    for path, scope in ((first, ANA), (second, BEN)):
        with Memory.open(path, scope=scope, clock=StepClock()) as memory:
            Agent(memory, RulePolicy()).step("My sister lives in Lisbon.")
            old = memory.archival.insert("the old address")
            memory.archival.invalidate(old, superseded_by=memory.archival.insert("the new one"))
    _copy(first, shared)
    reader, writer = open_backend(second), open_backend(shared)
    report = copy_agents(reader, writer)
    reader.close()
    writer.close()
    assert report.renumbered > 0 and "given new ones" in str(report)
    with Memory.open(shared, scope=BEN) as ben, Memory.open(second, scope=BEN) as alone:
        assert [m.content for m in ben.context.messages] == \
            [m.content for m in alone.context.messages]
        old, new = (record for record in ben.archival.records(include_invalid=True)
                    if "address" in record.text or "new one" in record.text)
        assert old.superseded_by == new.id and new.id > 3  # renumbered, still linked
        sessions = {alone.sessions()[0][0]: ben.sessions()[0][0], None: None}
        assert [m.session_id for m in ben.context.messages] == \
            [sessions[m.session_id] for m in alone.context.messages]
