"""Shared fixtures: a deterministic clock, the path to the shared real data, a throwaway
PostgreSQL server (one per test session, started on first use), and new stores of each
backend (`agent_target`, `new_target`: parametrised, so a test that uses them runs on
SQLite and on PostgreSQL); puts tests/helpers, benchmarks/ and scripts/ on sys.path."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from vmem.clock import StepClock

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"
LOCOMO_PATH = SHARED_DATA / "locomo" / "locomo10.json"

# test helpers (fake servers, child processes, context helpers) are imported by name
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))  # the benchmark scripts, outside the library
sys.path.insert(0, str(PROJECT_ROOT / "scripts"))  # postgres_server, the throwaway server

from postgres_server import ThrowawayPostgres  # noqa: E402  (found through sys.path above)

BACKENDS = ("sqlite", "postgres")  # the tests of the stores run once on each


@pytest.fixture
def clock() -> StepClock:
    """A clock that starts at 2024-01-01 09:00 UTC and ticks one second per call."""
    return StepClock()


@pytest.fixture
def locomo_path() -> Path:
    """The real LoCoMo file, or a skip that says where it was looked for."""
    if not LOCOMO_PATH.exists():
        pytest.skip(f"LoCoMo data not found at {LOCOMO_PATH} (see ../shared/data/README.md)")
    return LOCOMO_PATH


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[ThrowawayPostgres]:
    """A PostgreSQL server for the whole session, on a Unix socket in a temporary folder
    (scripts/postgres_server.py). Where it cannot start, its tests are skipped with the
    reason, except under CI (`CI` set), where they fail with it: CI never skips them."""
    try:
        server = ThrowawayPostgres().start()
    except Exception as error:  # missing binaries, initdb or pg_ctl failing: say which
        message = f"the throwaway PostgreSQL server did not start: {error}"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    yield server
    server.stop()


_schemas = itertools.count(1)


def new_schema_url(server: ThrowawayPostgres) -> str:
    """A URL for a new, empty schema of `server` (its `search_path`)."""
    import psycopg

    schema = f"test_{os.getpid()}_{next(_schemas)}"
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{server.url}&options=-c%20search_path%3D{schema}"


@pytest.fixture
def postgres_url(postgres_server: ThrowawayPostgres) -> str:
    """A new, empty schema of the session's server, so each test starts from an empty
    database of its own."""
    return new_schema_url(postgres_server)


@pytest.fixture(params=BACKENDS)
def new_target(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """Makes new, empty stores of one backend: the test runs once per backend, with an
    SQLite file in `tmp_path` or a new schema on the session's PostgreSQL server."""
    if request.param == "sqlite":
        files = itertools.count(1)
        return lambda: str(tmp_path / f"store{next(files)}.db")
    server = request.getfixturevalue("postgres_server")
    return lambda: new_schema_url(server)


@pytest.fixture
def agent_target(new_target: Callable[[], str]) -> str:
    """One new, empty store (an SQLite file or a PostgreSQL schema), once per backend."""
    return new_target()
