"""One store shared by many threads through a connection pool (`PostgresPool`).

Threads insert and search at once through one `ArchivalStore`, each call on a lent
connection: every thread's search sees its own insert committed a moment earlier on
another connection, and at the end the pages equal those ranked in SQL. A transaction
keeps its thread on one connection (all or nothing). The one-writer lock, which belongs
to one connection, is refused on a pool and stays with `Memory.open`.
"""

from __future__ import annotations

import threading

import pytest

from vmem.archival import ArchivalStore
from vmem.errors import AgentLockedError, StoreError
from vmem.memory import Memory
from vmem.storage.postgres_pool import PostgresPool

THREADS = 8
ROUNDS = 15


@pytest.fixture
def pool(postgres_url: str):
    opened = PostgresPool(postgres_url, max_size=4)
    yield opened
    opened.close()


def test_threads_see_their_own_inserts_and_the_ranking_stays_exact(pool, postgres_url):
    store = ArchivalStore(pool)
    errors: list[BaseException] = []

    def work(number: int) -> None:
        try:
            for i in range(ROUNDS):
                mine = store.insert(f"thread{number} round{i} shared words here")
                assert mine in store.search(f"thread{number} round{i}", top_k=3).ids
        except BaseException as error:  # noqa: BLE001 (reported by the main thread)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    reference = ArchivalStore(postgres_url)
    for cache in reference.backend.caches.values():
        cache.search = lambda *args, **kwargs: None  # rank in SQL
    try:
        for query in ("shared words", "thread3 round7", "here round1 thread0"):
            got, want = store.search(query, top_k=5), reference.search(query, top_k=5)
            assert got.ids == want.ids
            assert [hit.score for hit in got.hits] == [hit.score for hit in want.hits]
            assert got.total == want.total
        assert len(store) == THREADS * ROUNDS
    finally:
        reference.backend.close()


def test_a_transaction_keeps_its_thread_on_one_connection(pool):
    store = ArchivalStore(pool)
    kept = store.insert("kept outside")
    with pytest.raises(RuntimeError), pool.transaction():
        store.insert("first inside")
        store.insert("second inside")
        assert store.search("inside", top_k=5).total == 2  # this transaction's own rows
        raise RuntimeError
    assert [record.id for record in store.records()] == [kept]


def test_the_writer_lock_is_refused_on_a_pool_and_stays_with_memory_open(pool, postgres_url):
    scope = {"agent_id": "a1"}
    with pytest.raises(StoreError, match="one-writer lock belongs to one connection"):
        pool.lock_writer(scope)
    with Memory.open(postgres_url, scope=scope) as memory:
        shared = ArchivalStore(pool, scope=scope)  # readers and inserts beside the writer
        record = shared.insert("written through the pool beside the writer")
        assert memory.archival.search("pool writer").ids == [record]
        with pytest.raises(AgentLockedError):
            Memory.open(postgres_url, scope=scope)
    with Memory.open(postgres_url, scope=scope):
        pass  # released with the writer's own connection


def test_a_connection_returns_to_the_pool_without_advisory_locks(postgres_url):
    pool = PostgresPool(postgres_url, min_size=1, max_size=1)
    try:
        with pool._lend() as backend:
            backend.lock_writer({"agent_id": "a2"})  # as a careless caller of a lent one
        with Memory.open(postgres_url, scope={"agent_id": "a2"}):
            pass  # the only pooled connection gave the lock up on its return
    finally:
        pool.close()
