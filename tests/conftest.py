"""Shared fixtures: a deterministic clock, the path to the shared real data, and a
throwaway PostgreSQL server (one per test session, started on first use, one fresh
schema per test); puts tests/helpers, benchmarks/ and scripts/ on sys.path."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
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


@pytest.fixture
def postgres_url(postgres_server: ThrowawayPostgres) -> str:
    """A URL for a new, empty schema of the session's server (its `search_path`), so each
    test starts from an empty database of its own."""
    import psycopg

    schema = f"test_{os.getpid()}_{next(_schemas)}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{postgres_server.url}&options=-c%20search_path%3D{schema}"
