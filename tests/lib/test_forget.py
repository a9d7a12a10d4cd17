"""Forgetting a scope (`Memory.forget`, `Backend.forget`): every tier of the agent is
deleted, no byte of its text is left in an SQLite file or its WAL (raw scan), no row of
a PostgreSQL schema holds it, the search statistics follow, other agents are untouched,
and the refusals (empty scope, the open agent itself, an agent another writer holds, a
transaction) delete nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from agent_builders import (
    ANA,
    BEN,
    MARKERS,
    build_demo,
    build_large,
    build_neighbour,
    scan,
    view,
)

import vmem.storage.sqlite as sqlite_backend
from vmem.course.demo import FACTS, FIRST_MESSAGE, SMALL_TALK
from vmem.errors import AgentLockedError, StoreError
from vmem.memory import Memory
from vmem.storage import open_backend
from vmem.storage.base import Filter

DEMO_TEXTS = (*FACTS, FIRST_MESSAGE, SMALL_TALK[0][0][:80])
CLEAN = {"agents.db": [], "agents.db-wal": [], "agents.db-shm": []}


def _stored(target: str, scope: dict[str, str]) -> dict:
    """Everything the store holds for exactly `scope`, read through the backend."""
    backend = open_backend(target)
    try:
        return {"sessions": backend.sessions(scope), "core": backend.load_core(scope),
                "context": backend.load_context(scope),
                "messages": backend.messages(Filter(scope=scope)),
                "records": backend.records(Filter(scope=scope)),
                "scopes": backend.scopes()}
    finally:
        backend.close()


def _same_agent(before: dict, after: dict) -> None:
    """The same agent: every view equal; the sessions only grew by the looks since."""
    for key, value in before.items():
        if key == "sessions":
            assert after[key][:len(value)] == value
        else:
            assert after[key] == value, key


@pytest.mark.parametrize("build", [build_demo, build_large], ids=["demo", "10k-messages"])
def test_forget_leaves_no_byte_of_the_agent_in_the_file_or_its_wal(tmp_path, build):
    path = str(tmp_path / "agents.db")
    build(path, ANA)
    build_neighbour(path)
    found = scan(path)
    assert sorted({text for texts in found.values() for text in texts}) == sorted(MARKERS)
    before = view(path, BEN, scores=False)
    with Memory.open(path, scope=BEN) as ben:  # keeps the WAL in place while we look
        deleted = ben.forget(ANA)
        assert Path(path + "-wal").exists()
        assert scan(path) == CLEAN
        assert [hit.record.id for hit in ben.archival.search(  # its cache follows too
            "peanuts", include_invalid=True, top_k=10)] == before["searches"][2][0]
        if build is build_demo:
            assert scan(path, DEMO_TEXTS, terms=False) == CLEAN
        else:
            assert deleted["messages"] > 10_000 and deleted["archival"] == 500
    assert _stored(path, ANA) == {"sessions": [], "core": [], "context": None,
                                  "messages": [], "records": [], "scopes": [BEN]}
    _same_agent(before, view(path, BEN, scores=False))
    with Memory.open(path, scope=BEN) as ben:  # the file still works
        assert ben.archival.get(ben.archival.insert("Ben writes again.")).text == \
            "Ben writes again."


def test_the_scan_sees_what_a_plain_delete_leaves(tmp_path, monkeypatch):
    """Without the scrub (no FTS5 optimize, VACUUM or WAL truncation) the deleted rows are
    gone from every query but their bytes stay: the scan above can fail."""
    path = str(tmp_path / "agents.db")
    build_demo(path, ANA)
    build_neighbour(path)
    monkeypatch.setattr(sqlite_backend, "_scrub", lambda conn: None)
    with Memory.open(path, scope=BEN) as ben:
        ben.forget(ANA)
        assert ben.backend.messages(Filter(scope=ANA)) == []
        left = scan(path)
        assert sorted({text for texts in left.values() for text in texts}) == sorted(MARKERS)


def test_a_reader_on_an_old_snapshot_delays_the_scrub_and_a_second_forget_ends_it(tmp_path):
    path = str(tmp_path / "agents.db")
    build_demo(path, ANA)
    build_neighbour(path)
    reader = sqlite3.connect(path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM messages").fetchone()  # holds its snapshot
    with Memory.open(path, scope=BEN) as ben:
        with pytest.raises(StoreError, match="another connection is reading"):
            ben.forget(ANA)
        assert ben.backend.messages(Filter(scope=ANA)) == []  # deleted all the same
        assert scan(path)["agents.db-wal"]  # but the old pages are still in the WAL
        reader.close()
        assert ben.forget(ANA)["messages"] == 0
        assert scan(path) == CLEAN


def test_forget_on_each_backend_deletes_every_tier_and_keeps_the_neighbour(agent_target):
    build_demo(agent_target, ANA)
    build_neighbour(agent_target)
    wider = {"user_id": "ana", "agent_id": "helper"}
    with Memory.open(agent_target, scope=wider) as helper:
        helper.archival.insert("zqxmarkerone helps too")
    before = view(agent_target, BEN, scores=False)
    backend = open_backend(agent_target)
    try:
        deleted = backend.forget({"user_id": "ana"})
        assert deleted["sessions"] == 2 and deleted["core_blocks"] == 4
        assert backend.search("recall", ["zqxmarkerone"], Filter(), 10, 0).total == 0
        assert backend.search("archival", ["zqxmarkerone"], Filter(), 10, 0).total == 0
    finally:
        backend.close()
    for scope in (ANA, wider):
        assert _stored(agent_target, scope)["messages"] == []
        assert _stored(agent_target, scope)["records"] == []
        assert _stored(agent_target, scope)["core"] == []
    assert _stored(agent_target, BEN)["scopes"] == [BEN]
    _same_agent(before, view(agent_target, BEN, scores=False))
    if agent_target.startswith("postgresql://"):
        assert _rows_holding(agent_target, MARKERS) == {}
    else:
        assert scan(agent_target) == {Path(agent_target + s).name: [] for s in
                                      ("", "-wal", "-shm")}


def _rows_holding(url: str, texts: tuple[str, ...]) -> dict[str, int]:
    """How many rows of each table of the URL's schema hold one of `texts`."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema()")]
        found = {}
        for table in tables:
            count = conn.execute(
                f"SELECT count(*) FROM {table} AS t WHERE "
                + " OR ".join(["t::text ILIKE %s"] * len(texts)),
                [f"%{text.lower()}%" for text in texts]).fetchone()[0]
            if count:
                found[table] = count
        return found


def test_the_statistics_follow_the_forget(new_target):
    """After forgetting Ana, Ben's searches score as in a store that never held her."""
    shared, alone = new_target(), new_target()
    build_demo(shared, ANA)
    build_neighbour(shared)
    build_neighbour(alone)
    backend = open_backend(shared)
    backend.forget(ANA)
    backend.close()

    def scored(target: str) -> list:
        seen = view(target, BEN)["searches"]
        return [[score for _, score, _ in archival] for archival, _ in seen]
    assert scored(shared) == scored(alone)


def test_refusals_delete_nothing(agent_target):
    build_demo(agent_target, ANA)
    build_neighbour(agent_target)
    before = _stored(agent_target, ANA)
    with Memory.open(agent_target, scope=BEN) as ben:
        for scope in ({}, None):
            with pytest.raises(StoreError, match="would forget every agent"):
                ben.forget(scope)
        with pytest.raises(StoreError, match="own agent"):
            ben.forget(BEN)
        with pytest.raises(StoreError, match="inside a transaction"), \
                ben.backend.transaction():
            ben.backend.forget(ANA)
    backend = open_backend(agent_target)
    with pytest.raises(StoreError, match="would forget every agent"):
        backend.forget({})
    backend.close()
    with Memory.open(agent_target, scope={"user_id": "ana", "agent_id": "x"}) as narrow, \
            pytest.raises(StoreError, match="own agent"):
        narrow.forget(ANA)  # it would delete the open agent too
    after = _stored(agent_target, ANA)
    assert after["messages"] == before["messages"] and after["core"] == before["core"]


def test_an_agent_open_in_another_writer_is_not_forgotten(agent_target):
    build_demo(agent_target, ANA)
    before = _stored(agent_target, ANA)
    with Memory.open(agent_target, scope=ANA):
        backend = open_backend(agent_target)
        try:
            with pytest.raises(AgentLockedError, match="already open for writing"):
                backend.forget(ANA)
        finally:
            backend.close()
    assert _stored(agent_target, ANA)["messages"] == before["messages"]
    backend = open_backend(agent_target)
    backend.forget(ANA)
    backend.close()
    with Memory.open(agent_target, scope=ANA) as ana:  # the locks were released
        assert ana.core.get("human").value == ""
