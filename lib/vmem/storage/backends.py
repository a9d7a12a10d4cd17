"""Which backend serves a target: the one place that chooses.

`open_backend(":memory:")`, a file path or an `sqlite3.Connection` gives a
`SqliteBackend`; a `postgresql://` URL gives a `PostgresBackend` (psycopg is imported
only then, so `import vmem` stays standard-library only); an object that already
implements `Backend` is used as it is.
"""

from __future__ import annotations

import os
import re
import sqlite3
from types import ModuleType
from urllib.parse import urlsplit, urlunsplit

from ..errors import StoreError
from .base import Backend
from .sqlite import SqliteBackend, count_sessions

Target = str | os.PathLike[str] | sqlite3.Connection | Backend


def is_server_url(target: object) -> bool:
    """Whether `target` names a PostgreSQL database (`postgresql://...` or `postgres://...`)."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def shown(target: str) -> str:
    """`target` as messages and `repr` may show it: a URL's password replaced by ***."""
    if not is_server_url(target):
        return target
    parts = urlsplit(target)
    netloc = parts.netloc
    if parts.password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:***@{host}"
    query = re.sub(r"(?i)(^|&)(password=)[^&]*", r"\1\2***", parts.query)
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def open_backend(target: Target = ":memory:") -> Backend:
    """The backend for `target`, opened (and its schema made current)."""
    if is_server_url(target):
        return _postgres().PostgresBackend(target)
    if isinstance(target, (str, os.PathLike, sqlite3.Connection)):
        return SqliteBackend(target)
    return target


def _postgres() -> ModuleType:
    """`vmem.storage.postgres`, imported only for a PostgreSQL URL (it needs psycopg)."""
    try:
        from . import postgres
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("psycopg"):
            raise
        raise StoreError(f"a PostgreSQL URL needs the `postgres` extra ({exc}): "
                         "pip install 'vmem[postgres]'") from exc
    return postgres


def sessions_in(target: str) -> int:
    """How many sessions the agent stored at `target` holds, read without writing to it
    (0 for a new target, or one that is not a vmem store)."""
    if is_server_url(target):
        return _postgres().count_sessions(target)
    return count_sessions(target)
