"""A pool of PostgreSQL connections behind one backend, for stores shared by many threads.

Optional extra: postgres (psycopg 3 and psycopg_pool; imported only when this is used).

    from vmem.storage.postgres_pool import PostgresPool
    archive = ArchivalStore(PostgresPool(url, max_size=8), scope={"agent_id": "a1"})

`PostgresPool(url)` implements `vmem.storage.base.Backend`. A service that searches and
inserts from many threads shares one store over it: each call borrows a connection from
a `psycopg_pool.ConnectionPool` for its duration (a `PostgresBackend` on it) and gives
it back, so threads run their queries side by side instead of queueing on one
connection. A `transaction()` or `snapshot()` keeps its thread's connection until it
ends, so every call inside it runs on that connection, in that transaction. All the
borrowed backends share one search cache per tier (`postgres_cache`), the process's.

What a pool does not do: hold an agent's one-writer lock. That lock is a session-level
advisory lock, owned by one connection (its server session) for as long as it lives;
in a pool, the connection goes back to be lent to any thread, so the lock would either
outlive its writer (and be reentrant for whoever borrows that connection next: two
writers) or be released at the next return. `lock_writer` therefore refuses, and
`Memory.open(url)`, the long-lived writer of one agent, keeps a connection of its own.
As a safeguard, every connection returning to the pool drops any advisory lock it holds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg_pool

from ..errors import StoreError
from .base import Scope
from .postgres import PostgresBackend, new_caches
from .postgres_schema import connect, in_utc, safe_url


class PostgresPool:
    """The `Backend` of one PostgreSQL database, on up to `max_size` pooled connections."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8,
                 timeout: float = 30.0) -> None:
        self.url = url
        self.where = safe_url(url)
        connect(url).close()  # check (and create or migrate) the schema once, with clear errors
        self.caches = new_caches()
        self._local = threading.local()  # .backend: this thread's, inside a transaction
        self._pool = psycopg_pool.ConnectionPool(
            url, min_size=min_size, max_size=max_size, timeout=timeout, open=True,
            kwargs={"autocommit": True}, configure=in_utc, reset=_unlock_all)

    # --- lending -----------------------------------------------------------------------
    @contextmanager
    def _lend(self) -> Iterator[PostgresBackend]:
        """This thread's backend inside a transaction or snapshot; else a borrowed one."""
        pinned = getattr(self._local, "backend", None)
        if pinned is not None:
            yield pinned
            return
        with self._pool.connection() as conn:
            backend = PostgresBackend(self.url, conn=conn, caches=self.caches)
            self._local.backend = backend
            try:
                yield backend
            finally:
                self._local.backend = None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lend() as backend, backend.transaction():
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        with self._lend() as backend, backend.snapshot():
            yield

    damaged = PostgresBackend.damaged  # translates errors; needs no connection

    def lock_writer(self, scope: Scope) -> None:
        raise StoreError(
            f"the agent {dict(scope) or '(no scope)'} cannot be opened for writing on a "
            "connection pool: its one-writer lock belongs to one connection, which a pool "
            "lends to any thread. Open it with Memory.open(url), which keeps its own.")

    def close(self) -> None:
        self._pool.close()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """Every other `Backend` method: run on a lent connection."""
        if name.startswith("_") or not callable(getattr(PostgresBackend, name, None)):
            raise AttributeError(name)

        def lent(*args: Any, **kwargs: Any) -> Any:
            with self._lend() as backend:
                return getattr(backend, name)(*args, **kwargs)

        lent.__name__ = name
        return lent

    def __repr__(self) -> str:
        return f"PostgresPool({self.where})"


def _unlock_all(conn: Any) -> None:
    """Run when a connection returns: no advisory lock leaves with it."""
    conn.execute("SELECT pg_advisory_unlock_all()")
