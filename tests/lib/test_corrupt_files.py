"""Refused files through `Memory.open`, and the migration path, beyond tests/test_store.py.

`test_store.py` proves `connect` refuses truncated, random, corrupt, foreign and newer files
byte-identically. Here the same files go through the whole agent (`Memory.open`), which
also takes a lock and starts a session: each must fail with `StoreFormatError`, leave the
file byte-identical with no WAL, and leave the lock free. Migration: an agent file of an
older schema opens in a newer vmem with everything kept, and a failing migration rolls
back to the old version whole.
"""

from __future__ import annotations

import os
import sqlite3

import pytest

from vmem import store
from vmem.errors import StoreError, StoreFormatError
from vmem.memory import Memory
from vmem.messages import Message


def _agent_file(path) -> bytes:
    with Memory.open(path) as memory:
        memory.core.append("human", "Name: Ana.")
        for i in range(40):
            memory.context.append(Message(role="user", content=f"note {i} about the garden"))
            memory.archival.insert(f"fact {i}: the garden has {i} tomato plants")
    return path.read_bytes()


def _truncated(tmp_path):
    data = _agent_file(tmp_path / "full.db")
    path = tmp_path / "truncated.db"
    path.write_bytes(data[: len(data) // 3])
    return path


def _random(tmp_path):
    path = tmp_path / "random.db"
    path.write_bytes(os.urandom(8192))
    return path


def _fake_header(tmp_path):
    path = tmp_path / "fake_header.db"
    path.write_bytes(store.SQLITE_MAGIC + os.urandom(8192))
    return path


def _foreign(tmp_path):
    path = tmp_path / "foreign.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT)")  # our name!
    conn.execute("INSERT INTO messages (body) VALUES ('not ours')")
    conn.commit()
    conn.close()
    return path


def _newer(tmp_path):
    path = tmp_path / "newer.db"
    _agent_file(path)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    conn.close()
    return path


CASES = {"truncated": (_truncated, "truncated"), "random bytes": (_random, "not an SQLite"),
         "damaged header": (_fake_header, "not an SQLite|corrupt"),
         "foreign SQLite": (_foreign, "another application"), "newer schema": (_newer, "newer")}


@pytest.mark.parametrize("case", CASES)
def test_memory_open_refuses_the_file_and_leaves_it_byte_identical(tmp_path, case):
    make, match = CASES[case]
    path = make(tmp_path)
    before = path.read_bytes()
    with pytest.raises(StoreFormatError, match=match) as refused:
        Memory.open(path)
    message = str(refused.value)
    assert str(path) in message and "untouched" in message  # says which file, and that
    assert path.read_bytes() == before
    assert not os.path.exists(f"{path}-wal") or os.path.getsize(f"{path}-wal") == 0
    # the refused open released its lock: a good file at the same place opens at once
    path.unlink()
    Memory.open(path).close()


def test_missing_folder_is_a_clear_store_error(tmp_path):
    with pytest.raises(StoreError, match="folder exists"):
        Memory.open(tmp_path / "no" / "such" / "agent.db")


def test_an_agent_file_migrates_forward_with_everything_kept(tmp_path, monkeypatch):
    path = tmp_path / "agent.db"
    _agent_file(path)
    with Memory.open(path) as old:
        prompt = old.context.render()[:-1]  # all but the volatile status line
        records = [record.text for record in old.archival.records()]
    migration = ("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
                 "ALTER TABLE archival ADD COLUMN importance REAL")
    monkeypatch.setattr(store, "MIGRATIONS", (*store.MIGRATIONS, migration))
    monkeypatch.setattr(store, "SCHEMA_VERSION", store.SCHEMA_VERSION + 1)
    with Memory.open(path) as new:
        assert new.backend.conn.execute("PRAGMA user_version").fetchone() == (store.SCHEMA_VERSION,)
        assert new.context.render()[:-1] == prompt
        assert [record.text for record in new.archival.records()] == records
        assert new.archival.search("tomato").total == 40
        new.backend.conn.execute("INSERT INTO notes (body) VALUES ('the new table works')")


def test_a_failing_migration_rolls_back_whole(tmp_path, monkeypatch):
    path = tmp_path / "agent.db"
    _agent_file(path)
    broken = ("CREATE TABLE notes (id INTEGER PRIMARY KEY)", "ALTER TABLE nowhere ADD x")
    monkeypatch.setattr(store, "MIGRATIONS", (*store.MIGRATIONS, broken))
    monkeypatch.setattr(store, "SCHEMA_VERSION", store.SCHEMA_VERSION + 1)
    with pytest.raises(sqlite3.OperationalError, match="nowhere"):
        Memory.open(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (store.SCHEMA_VERSION - 1,)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'notes'").fetchone() \
        == (0,)
    conn.close()
    monkeypatch.setattr(store, "MIGRATIONS", store.MIGRATIONS[:-1])
    monkeypatch.setattr(store, "SCHEMA_VERSION", store.SCHEMA_VERSION - 1)
    with Memory.open(path) as memory:  # the old vmem still opens it, nothing lost
        assert len(memory.archival) == 40
