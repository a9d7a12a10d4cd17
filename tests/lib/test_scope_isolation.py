"""Two user scopes in one agent file never see each other's data, on any read path.

Ana and Ben use the same file, each through `Memory.open(path, scope=...)`, with words in
common so every search has something to find on both sides. Every search and listing path
(archival search/get/records/list_records_since/delete/invalidate, recall search, the
memory tools, the restored context and core memory) must return only the caller's own
rows. Statistics are shared by design (docs/RELIABILITY.md): scores may differ with the
other user's data, contents never leak.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from vmem.archival import ArchivalStore
from vmem.clock import StepClock
from vmem.errors import StoreError
from vmem.memory import Memory
from vmem.messages import Message
from vmem.recall import RecallStore
from vmem.tools import MemoryTools

ANA, BEN = {"user_id": "ana"}, {"user_id": "ben"}
WORDS = "garden lighthouse birthday"


def _tools(memory: Memory) -> MemoryTools:
    """The tools as the agent builds them: bound to the memory's scope."""
    return MemoryTools(memory.context, memory.recall, memory.archival, scope=memory.scope)


def _fill(path, scope, name: str) -> list[int]:
    with Memory.open(path, scope=scope, clock=StepClock()) as memory:
        memory.core.append("human", f"Name: {name}.")
        ids = []
        for i in range(6):
            memory.context.append(Message(role="user", content=f"{name} said {WORDS} {i}"))
            memory.context.append(Message(role="assistant", content=f"noted for {name} {i}"))
            saved = _tools(memory).call("archival_memory_insert", {
                "content": f"{name} fact {i}: {WORDS}", "tags": ["shared"]})
            ids.append(saved.record_id)
        return ids


@pytest.fixture
def agent_file(agent_target):
    """Ana's and Ben's agents in one store: an SQLite file, or a PostgreSQL database (where
    an agent is its scope, as in a database serving many users)."""
    path = agent_target
    return path, _fill(path, ANA, "ana"), _fill(path, BEN, "ben")


def _only(texts, name: str) -> None:
    texts = list(texts)
    assert texts and all(name in text and (other not in text) for text in texts
                         for other in {"ana", "ben"} - {name})


def test_archival_paths_keep_users_apart(agent_file):
    path, ana_ids, ben_ids = agent_file
    store = ArchivalStore(path)
    for scope, name, mine, theirs in ((ANA, "ana", ana_ids, ben_ids),
                                      (BEN, "ben", ben_ids, ana_ids)):
        page = store.search(WORDS, top_k=100, scope=scope, tags=["shared"],
                            include_invalid=True)
        assert sorted(page.ids) == mine and page.total == len(mine)
        _only((hit.record.text for hit in page), name)
        assert [r.id for r in store.records(include_invalid=True, scope=scope)] == mine
        since = datetime(2000, 1, 1, tzinfo=timezone.utc)
        assert [r.id for r in store.list_records_since(since, scope=scope)] == mine
        assert store.get(mine[0], scope=scope).text.startswith(name)
        with pytest.raises(StoreError, match="in this scope"):
            store.get(theirs[0], scope=scope)
        with pytest.raises(StoreError, match="in this scope"):
            store.delete(theirs[0], scope=scope)
        with pytest.raises(StoreError, match="in this scope"):
            store.invalidate(theirs[0], scope=scope)
        with pytest.raises(StoreError, match="in this scope"):
            store.invalidate(mine[1], superseded_by=theirs[1], scope=scope)
    assert all(r.is_valid for r in store.records(include_invalid=True))  # nothing changed
    assert len(store) == len(ana_ids) + len(ben_ids)
    assert store.search(WORDS, scope={"user_id": "carol"}).total == 0


def test_recall_search_keeps_users_apart(agent_file):
    path, _, _ = agent_file
    recall = RecallStore(path)
    for scope, name in ((ANA, "ana"), (BEN, "ben")):
        for roles in (None, ["user"], ["assistant"]):
            page = recall.search(f"{WORDS} noted", roles=roles, page_size=100, scope=scope)
            assert page.total == (12 if roles is None else 6)
            _only((hit.record.content for hit in page), name)


def test_memory_tools_context_and_core_keep_users_apart(agent_file):
    path, ana_ids, ben_ids = agent_file
    for scope, name, mine, theirs in ((ANA, "ana", ana_ids, ben_ids),
                                      (BEN, "ben", ben_ids, ana_ids)):
        with Memory.open(path, scope=scope, clock=StepClock()) as memory:
            assert memory.core.get("human").value == f"Name: {name}."
            _only((m.content for m in memory.context.messages), name)
            _only([memory.context.render()[0]["content"].split("<human")[1]], name)
            tools = _tools(memory)
            for page in range(3):
                found = tools.call("archival_memory_search", {"query": WORDS, "page": page})
                assert set(found.page.ids) <= set(mine)
                said = tools.call("conversation_search", {"query": WORDS, "page": page})
                if said.page.ids:
                    _only((hit.record.content for hit in said.page), name)
            every = tools.call("archival_memory_search", {"query": f"{WORDS} ana ben fact",
                                                          "tags": ["shared"]})
            assert every.page.total == len(mine)
            assert f"[record {theirs[0]} " not in every.content
            assert len(memory.sessions()) == 2  # its own: the fill and this one


def test_a_scoped_memorys_stores_act_within_its_scope_by_default(agent_file):
    # Called directly, without scope=..., memory.archival and memory.recall are Ana's.
    path, ana_ids, ben_ids = agent_file
    with Memory.open(path, scope=ANA, clock=StepClock()) as memory:
        archival, recall = memory.archival, memory.recall
        page = archival.search(WORDS, top_k=100, include_invalid=True)
        assert sorted(page.ids) == ana_ids and page.total == len(ana_ids)
        assert [r.id for r in archival.records(include_invalid=True)] == ana_ids
        since = datetime(2000, 1, 1, tzinfo=timezone.utc)
        assert [r.id for r in archival.list_records_since(since)] == ana_ids
        assert len(archival) == len(ana_ids)
        for refused in (archival.get, archival.delete, archival.invalidate):
            with pytest.raises(StoreError, match="in this scope"):
                refused(ben_ids[0])
        new = archival.insert(f"ana fact 7: {WORDS}")
        assert archival.get(new).scope == ANA
        said = recall.search(WORDS, top_k=100)
        _only((hit.record.content for hit in said), "ana")
        assert said.total == 12  # Ana's six messages, and the six replies indexed with them
        assert len(recall) == 12 and len(RecallStore(path)) == 24  # hers, and the file's
        ben_message = RecallStore(path).search("ben", top_k=1, scope=BEN).ids[0]
        with pytest.raises(StoreError, match=f"no message with id {ben_message}"):
            recall.get(ben_message)
        # an explicit scope narrows the bound one, and may never leave it
        assert archival.search(WORDS, scope={"agent_id": "x"}).total == 0
        for reach in (lambda: archival.search(WORDS, scope=BEN),
                      lambda: archival.records(scope=BEN),
                      lambda: recall.search(WORDS, scope=BEN),
                      lambda: archival.insert("sneaky", scope=BEN)):
            with pytest.raises(StoreError, match="bound to scope"):
                reach()
    assert len(ArchivalStore(path)) == len(ana_ids) + len(ben_ids) + 1  # unbound: the file
