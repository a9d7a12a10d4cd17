"""Which backend serves a target: the one place that chooses.

`open_backend(":memory:")`, a file path or an `sqlite3.Connection` gives a
`SqliteBackend`; an object that already implements `Backend` is used as it is. A server
database (say a `postgresql://` URL) adds one branch here.
"""

from __future__ import annotations

import os
import sqlite3

from .base import Backend
from .sqlite import SqliteBackend, count_sessions

Target = str | os.PathLike[str] | sqlite3.Connection | Backend


def open_backend(target: Target = ":memory:") -> Backend:
    """The backend for `target`, opened (and its schema made current)."""
    if isinstance(target, (str, os.PathLike, sqlite3.Connection)):
        return SqliteBackend(target)
    return target


def sessions_in(target: str) -> int:
    """How many sessions the agent stored at `target` holds, read without writing to it
    (0 for a new target, or one that is not a vmem store)."""
    return count_sessions(target)
