"""The storage seam: the stores and `Memory` reach storage only through the `Backend`
protocol, SQL lives only in the storage layer, and both stores page the same way.

`Forwarding` below is "any object implementing the protocol": it has the protocol's
methods and nothing else (no connection), forwarding each to a real backend. Everything
the stores, the context, the tools and `Memory` do must work through it.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import FrozenInstanceError
from datetime import datetime, timezone
from pathlib import Path

import pytest

import vmem.memory
from vmem.archival import ArchivalStore
from vmem.clock import StepClock
from vmem.memory import Memory
from vmem.messages import Message
from vmem.recall import RecallStore
from vmem.storage import Backend, Filter, open_backend
from vmem.storage.sqlite import SqliteBackend
from vmem.tools import MemoryTools

PACKAGE = Path(vmem.memory.__file__).parent
PROTOCOL = [name for name, value in vars(Backend).items()
            if inspect.isfunction(value) and not name.startswith("_")]
SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE FROM|CREATE|PRAGMA|BEGIN|COMMIT|ROLLBACK|"
                 r"SAVEPOINT|MATCH|json_each|sqlite_master)\b")
SQL_FREE = ["recall.py", "archival.py", "memory.py", "context.py", "tools.py", "agent.py",
            "tier.py", "course/demo.py"]


class Forwarding:
    """The protocol's methods, forwarded to `inner`; records each call's name."""

    def __init__(self, inner: Backend) -> None:
        self._inner = inner
        self.calls: list[str] = []


def _forward(name: str):
    def method(self, *args, **kwargs):
        self.calls.append(name)
        return getattr(self._inner, name)(*args, **kwargs)
    method.__name__ = name
    return method


for _name in PROTOCOL:
    setattr(Forwarding, _name, _forward(_name))


def test_the_protocol_names_everything_the_brief_lists():
    assert {"transaction", "snapshot", "schema_version", "close", "search", "count",
            "insert_record", "records", "delete_record", "invalidate_record", "add_message",
            "messages", "last_turn", "start_session", "sessions", "load_core", "create_core",
            "save_block", "load_context", "save_context"} <= set(PROTOCOL)


@pytest.mark.parametrize("name", PROTOCOL)
def test_the_sqlite_backend_implements_each_method_with_its_signature(name):
    assert list(inspect.signature(getattr(SqliteBackend, name)).parameters) == \
        list(inspect.signature(getattr(Backend, name)).parameters)


def test_filters_are_data_not_sql():
    where = Filter(scope={"user_id": "u1"}, tags=("a",), include_invalid=False)
    with pytest.raises(FrozenInstanceError):
        where.tags = ("b",)  # type: ignore[misc]
    assert Filter() == Filter(scope=None, ids=None, start=None, end=None, tags=(),
                              tag_mode="any", roles=None, include_invalid=True)


@pytest.mark.parametrize("module", SQL_FREE)
def test_only_the_storage_layer_holds_sql(module):
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    strings = [node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    assert [text for text in strings if SQL.search(text)] == []
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert "sqlite3" not in imported
    assert not {"store.connect", "store.transaction", "store.snapshot"} & {
        f"{node.module.rsplit('.', 1)[-1]}.{alias.name}" for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}


def test_open_backend_takes_paths_connections_and_backends(tmp_path):
    assert isinstance(open_backend(), SqliteBackend)
    assert isinstance(open_backend(tmp_path / "a.db"), SqliteBackend)
    backend = Forwarding(SqliteBackend())
    assert open_backend(backend) is backend


def test_the_stores_work_through_any_backend(clock):
    backend = Forwarding(SqliteBackend())
    archival = ArchivalStore(backend, clock=clock)
    recall = RecallStore(backend, clock=clock)
    first = archival.insert("Maya lives in Lisbon", tags=["family"], scope={"user_id": "a"})
    second = archival.insert("Maya moved to Porto", scope={"user_id": "a"})
    assert archival.search("maya lisbon", tags=["family"]).ids == [first]
    assert archival.invalidate(first, superseded_by=second).superseded_by == second
    assert archival.search("maya").ids == [second]
    assert [r.id for r in archival.list_records_since(datetime(2000, 1, 1, tzinfo=timezone.utc),
                                                      include_invalid=True)] == [first, second]
    archival.delete(first)
    assert len(archival) == 1 and archival.get(second).text == "Maya moved to Porto"
    said = recall.add(Message("user", "where does Maya live?", session_id=3, turn=2))
    assert recall.get(said.id).content == "where does Maya live?"
    assert recall.search("maya", roles=["user"]).ids == [said.id]
    assert recall.last_turn(3) == 2 and len(recall) == 1
    assert {"insert_record", "search", "invalidate_record", "records", "delete_record",
            "count", "add_message", "messages", "last_turn", "transaction"} <= set(backend.calls)


def test_memory_runs_through_any_backend(tmp_path, monkeypatch):
    opened: list[Forwarding] = []

    def forwarding(target):
        opened.append(Forwarding(open_backend(target)))
        return opened[-1]

    monkeypatch.setattr(vmem.memory, "open_backend", forwarding)
    path = tmp_path / "agent.db"
    with Memory.open(path, scope={"user_id": "ana"}, clock=StepClock()) as memory:
        memory.core.append("human", "Name: Ana.")
        memory.context.append(Message("user", "My sister Maya lives in Lisbon."))
        tools = MemoryTools(memory.context, memory.recall, memory.archival, scope=memory.scope)
        assert tools.call("archival_memory_insert", {"content": "Maya lives in Lisbon"}).ok
        assert tools.call("conversation_search", {"query": "maya"}).page.total == 1
        prompt = memory.context.render()[:-1]
    with Memory.open(path, scope={"user_id": "ana"}, clock=StepClock()) as again:
        assert again.context.render()[:-1] == prompt
        assert again.archival.search("lisbon").total == 1
        assert [session for session, _ in again.sessions()] == [1, 2]
    assert Memory.count_sessions(path) == 2
    assert {"start_session", "load_core", "create_core", "save_block", "load_context",
            "save_context", "damaged", "close"} <= set(opened[0].calls)


def test_both_stores_page_the_same_way(clock):
    archival, recall = ArchivalStore(clock=clock), RecallStore(clock=clock)
    for i in range(7):
        archival.insert(f"cat number {i}")
        # a day apart: each its own sitting, indexed alone, so all seven tie
        recall.add(Message("user", f"cat number {i}",
                           created_at=datetime(2024, 1, 1 + i, tzinfo=timezone.utc)))
    for store in (archival, recall):
        parameters = list(inspect.signature(store.search).parameters.values())
        assert [(p.name, p.default) for p in parameters[:3]] == [
            ("query", inspect.Parameter.empty), ("top_k", 5), ("page", 0)]
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters[3:])
        pages = [store.search("cat", 3, page) for page in range(4)]
        assert [len(page.ids) for page in pages] == [3, 3, 1, 0]
        assert [page.total for page in pages] == [7] * 4
        assert "past the end" in pages[3].note
    for store in (archival, recall):
        assert store.search("cat", top_k=3, page=1).ids == [4, 5, 6]  # ties: insertion order
    assert recall.search("cat", page_size=2, page=1).ids == recall.search("cat", 2, 1).ids
