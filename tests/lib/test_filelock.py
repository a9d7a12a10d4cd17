"""The writer lock's memory of what this process holds (storage/filelock.py): it refuses a
second writer where `flock` locks nothing (Pyodide), and forgets a handle once it is gone."""

from __future__ import annotations

import gc

import pytest

from vmem.errors import AgentLockedError
from vmem.storage import filelock


def test_a_held_lock_is_refused_in_process_even_when_flock_locks_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(filelock, "_lock_file", lambda handle: None)  # Pyodide's no-op flock
    path = str(tmp_path / "agent.db")
    holder = filelock.lock(path)
    with pytest.raises(AgentLockedError, match="already open for writing by process"):
        filelock.lock(path)
    filelock.unlock(holder)
    filelock.unlock(filelock.lock(path))  # released: the next writer gets it


def test_a_dropped_handle_holds_nothing(tmp_path):
    path = str(tmp_path / "agent.db")
    holder = filelock.lock(path)
    del holder  # never unlocked: closing it released the system's lock too
    gc.collect()
    filelock.unlock(filelock.lock(path))
