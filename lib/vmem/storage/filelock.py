"""The SQLite backend's one-writer lock: an advisory lock on `<file>.lock`.

The operating system releases it when the process dies, so a crash never leaves the
file locked. The lock file holds who took it ("process 4242 on host since ..."), so a
refused writer is told who holds it. The process also remembers the lock files it holds:
where `flock` locks nothing (Pyodide, the browser course's kernel), a second writer in the
same process is still refused.
"""

from __future__ import annotations

import os
import socket
import weakref
from pathlib import Path
from typing import TextIO

from ..clock import utc_now
from ..errors import AgentLockedError, StoreError

_HELD: weakref.WeakValueDictionary[str, TextIO] = weakref.WeakValueDictionary()
"""The lock files this process holds, by absolute path (weakly: a handle that was dropped
without `unlock` holds nothing, as the operating system's lock does not either)."""


def lock(path: str) -> TextIO:
    """Take the advisory writer lock `<path>.lock`, or say who holds it."""
    lock_path = Path(path + ".lock")
    try:
        handle = lock_path.open("a+", encoding="utf-8")
    except OSError as exc:
        raise StoreError(f"cannot open {path}: {exc.strerror} ({lock_path}); check that its "
                         "folder exists and is writable") from exc
    try:
        _try_lock(handle)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise AgentLockedError(
            f"{path} is already open for writing by {holder}. Close that Memory first, or "
            "read and search the file with ArchivalStore(path) / RecallStore(path), which "
            "may run beside it.") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"process {os.getpid()} on {socket.gethostname()} since "
                 f"{utc_now().isoformat(timespec='seconds')}")
    handle.flush()
    return handle


def _try_lock(handle: TextIO) -> None:
    path = os.path.abspath(handle.name)
    held = _HELD.get(path)
    if held is not None and not held.closed:
        raise OSError("held by this process")
    _lock_file(handle)
    _HELD[path] = handle


def _lock_file(handle: TextIO) -> None:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        return
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def unlock(handle: TextIO | None) -> None:
    if handle is not None:
        _HELD.pop(os.path.abspath(handle.name), None)
        handle.close()  # closing the descriptor releases the lock
