"""The shared SQLite layer: opening, schema versions, refused files, transactions, limits."""

from __future__ import annotations

import os
import sqlite3

import pytest

from vmem import store
from vmem.archival import ArchivalStore
from vmem.errors import InputTooLargeError, StoreError, StoreFormatError
from vmem.recall import RecallStore
from vmem.search import FtsIndex
from vmem.store import (
    APPLICATION_ID,
    MAX_PAGE_SIZE,
    SCHEMA_VERSION,
    check_paging,
    check_size,
    connect,
    transaction,
)


def _pragma(conn: sqlite3.Connection, name: str):
    return conn.execute(f"PRAGMA {name}").fetchone()[0]


def test_memory_store_gets_the_current_schema():
    conn = connect(":memory:")
    assert _pragma(conn, "user_version") == SCHEMA_VERSION == 2
    assert _pragma(conn, "application_id") == APPLICATION_ID
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert {"messages", "messages_fts", "archival", "archival_fts", "fts_stats"} <= tables


def test_file_store_uses_wal_normal_sync_busy_timeout_and_foreign_keys(tmp_path):
    conn = connect(tmp_path / "agent.db")
    assert _pragma(conn, "journal_mode") == "wal"
    assert _pragma(conn, "synchronous") == 1  # NORMAL
    assert _pragma(conn, "busy_timeout") == store.BUSY_TIMEOUT_MS
    assert _pragma(conn, "foreign_keys") == 1


def test_an_open_connection_is_adopted_as_is_and_initialised_once():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    assert connect(conn) is conn
    assert _pragma(conn, "user_version") == SCHEMA_VERSION
    objects = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    assert connect(conn) is conn  # a second store on the same connection changes nothing
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == objects


def test_both_stores_share_one_connection_and_one_file(tmp_path, clock):
    path = tmp_path / "agent.db"
    conn = connect(path)
    archival, recall = ArchivalStore(conn, clock=clock), RecallStore(conn, clock=clock)
    archival.insert("the user likes green tea")
    from vmem.messages import Message
    recall.add(Message(role="user", content="I like green tea"))
    conn.close()
    assert len(ArchivalStore(path)) == 1 and len(RecallStore(path)) == 1


def test_nonexistent_folder_is_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="folder exists"):
        connect(tmp_path / "missing" / "agent.db")


# --- refused files stay byte-identical ----------------------------------------------


def _vmem_file(path) -> bytes:
    archival = ArchivalStore(path)
    for number in range(300):
        archival.insert(f"record number {number} with a few words to fill some pages")
    archival.backend.conn.close()
    return path.read_bytes()


def _refused(path, match: str) -> None:
    before = path.read_bytes()
    with pytest.raises(StoreFormatError, match=match):
        connect(path)
    assert path.read_bytes() == before
    assert not os.path.exists(f"{path}-wal") or os.path.getsize(f"{path}-wal") == 0


def test_random_bytes_and_text_files_are_refused_untouched(tmp_path):
    noise = tmp_path / "noise.db"
    noise.write_bytes(os.urandom(4096))
    _refused(noise, "not an SQLite database")
    text = tmp_path / "notes.txt"
    text.write_text("these are my notes\n" * 20)
    _refused(text, "not an SQLite database")


def test_truncated_store_is_refused_untouched(tmp_path):
    data = _vmem_file(tmp_path / "full.db")
    half = tmp_path / "half.db"
    half.write_bytes(data[: len(data) // 2])
    _refused(half, "truncated")
    stub = tmp_path / "stub.db"
    stub.write_bytes(data[:60])
    _refused(stub, "not an SQLite database")


def test_corrupt_pages_are_refused_untouched(tmp_path):
    data = bytearray(_vmem_file(tmp_path / "good.db"))
    data[100:4096] = os.urandom(3996)  # the schema page, after the header
    bad = tmp_path / "bad.db"
    bad.write_bytes(bytes(data))
    _refused(bad, "corrupt")


def test_foreign_sqlite_database_is_refused_untouched(tmp_path):
    path = tmp_path / "other.db"
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    other.commit()
    other.close()
    _refused(path, "another application")
    tagged = tmp_path / "tagged.db"
    other = sqlite3.connect(tagged)
    other.execute("PRAGMA user_version = 1")  # a version number alone does not make it ours
    other.execute("PRAGMA application_id = 42")
    other.close()
    _refused(tagged, "another application")


def test_newer_schema_version_is_refused_untouched(tmp_path):
    path = tmp_path / "future.db"
    conn = connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    _refused(path, "newer vmem")
    with pytest.raises(StoreFormatError, match="Upgrade vmem"):
        ArchivalStore(path)


def test_foreign_open_connection_is_refused():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE mine (x)")
    with pytest.raises(StoreFormatError, match="another application"):
        connect(conn)


def test_an_older_file_is_migrated_forward(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    archival = ArchivalStore(path)
    record_id = archival.insert("kept across the upgrade")
    archival.backend.conn.close()
    step = ("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",)
    monkeypatch.setattr(store, "MIGRATIONS", (*store.MIGRATIONS, step))
    monkeypatch.setattr(store, "SCHEMA_VERSION", store.SCHEMA_VERSION + 1)
    conn = connect(path)
    assert _pragma(conn, "user_version") == store.SCHEMA_VERSION
    conn.execute("INSERT INTO notes (body) VALUES ('new table works')")
    assert ArchivalStore(conn).get(record_id).text == "kept across the upgrade"


# --- transactions --------------------------------------------------------------------


def _count(conn) -> int:
    return conn.execute("SELECT count(*) FROM fts_stats").fetchone()[0]


def _add_row(conn, name: str) -> None:
    conn.execute("INSERT INTO fts_stats VALUES (?, 0, 0)", (name,))


def test_transaction_commits_or_rolls_back_everything():
    conn = connect()
    base = _count(conn)
    with transaction(conn):
        _add_row(conn, "a")
        _add_row(conn, "b")
    assert _count(conn) == base + 2 and not conn.in_transaction
    with pytest.raises(RuntimeError), transaction(conn):
        _add_row(conn, "c")
        raise RuntimeError("boom")
    assert _count(conn) == base + 2 and not conn.in_transaction


def test_nested_transaction_joins_the_outer_one():
    conn = connect()
    base = _count(conn)
    with transaction(conn):
        _add_row(conn, "outer")
        with transaction(conn):
            _add_row(conn, "inner")
        with pytest.raises(RuntimeError), transaction(conn):
            _add_row(conn, "rolled back alone")
            raise RuntimeError("inner failure")
        assert conn.in_transaction  # nothing committed yet
    names = {row[0] for row in conn.execute("SELECT name FROM fts_stats")}
    assert {"outer", "inner"} <= names and "rolled back alone" not in names
    with pytest.raises(RuntimeError), transaction(conn):
        with transaction(conn):
            _add_row(conn, "inner of a failed outer")
        raise RuntimeError("outer failure")
    assert _count(conn) == base + 2


def test_transaction_takes_the_write_lock_at_once(tmp_path):
    path = tmp_path / "lock.db"
    first = connect(path)
    second = sqlite3.connect(path, isolation_level=None, timeout=0)
    # BEGIN IMMEDIATE: nothing written yet, but the lock is already held
    with transaction(first), pytest.raises(sqlite3.OperationalError, match="locked"):
        second.execute("BEGIN IMMEDIATE")
    second.execute("BEGIN IMMEDIATE")
    second.execute("ROLLBACK")


def test_a_write_is_durable_for_another_connection_once_committed(tmp_path):
    path = tmp_path / "durable.db"
    writer = ArchivalStore(path)
    record_id = writer.insert("committed fact")
    reader = ArchivalStore(path)
    assert reader.get(record_id).text == "committed fact"
    assert reader.search("fact").ids == [record_id]


# --- the FTS helper and limits --------------------------------------------------------


def test_fts_stats_track_documents_and_tokens_through_adds_and_removes():
    conn = connect()
    index = FtsIndex("archival_fts", "archival")
    index.add(conn, 1, "Three green words")
    index.add(conn, 2, "two words")
    index.add(conn, 3, "?!")  # a document with no terms still counts
    index.remove(conn, 2)
    index.remove(conn, 99)  # never indexed: nothing happens
    assert index.stats(conn) == (2, 3)
    assert conn.execute("SELECT count(*) FROM archival_fts").fetchone()[0] == 2


def test_match_expression_quotes_every_term():
    assert FtsIndex.match_expression(["near", "and", "x1"]) == '"near" OR "and" OR "x1"'


def test_size_and_paging_limits_at_below_and_above_the_bound():
    check_size("text", "x" * 10, 10)
    with pytest.raises(InputTooLargeError, match="11 characters; the limit is 10"):
        check_size("text", "x" * 11, 10)
    check_paging(0, MAX_PAGE_SIZE)
    check_paging(3, 1)
    with pytest.raises(InputTooLargeError, match="over the limit"):
        check_paging(0, MAX_PAGE_SIZE + 1)
    for page, size in ((-1, 5), (0, 0), ("1", 5), (0, 2.5), (True, 5)):
        with pytest.raises(StoreError):
            check_paging(page, size)
    assert store.MAX_QUERY_CHARS >= 10_000
