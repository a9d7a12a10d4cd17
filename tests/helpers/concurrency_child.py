"""A second process for `test_concurrency.py`: writes or searches one agent file.

Usage: `python concurrency_child.py MODE PATH N [STOP]`; PATH is an SQLite file or a
PostgreSQL URL. Modes:

- `memory`: open the agent with `Memory.open`, append N messages and insert N archival
  records (deleting and invalidating some), then close;
- `archival`: insert N archival records through `ArchivalStore(path)`;
- `search`: search archival and recall through `ArchivalStore(path)` / `RecallStore(path)`
  until the file STOP exists (at least N rounds);
- `open`: try `Memory.open(PATH)` and print the error it raises.

The last line printed is `ok <number>` or `error <type>: <message>`: every exception is
reported, never hidden, so the parent can assert none reached the user.
"""

from __future__ import annotations

import os
import sys

from vmem.archival import ArchivalStore
from vmem.memory import Memory
from vmem.messages import Message
from vmem.recall import RecallStore


def memory_writer(path: str, n: int) -> int:
    with Memory.open(path, max_tokens=400) as memory:
        for i in range(n):
            memory.context.append(Message(role="user", content=f"m{os.getpid()}x{i} harbour"))
            record_id = memory.archival.insert(f"w{os.getpid()}x{i} harbour lighthouse")
            if i % 3 == 1:
                memory.archival.invalidate(record_id)
            elif i % 3 == 2:
                memory.archival.delete(record_id)
            memory.core.rethink("human", f"Name: Ana, note {i}")
    return n


def archival_writer(path: str, n: int) -> int:
    store = ArchivalStore(path)
    for i in range(n):
        store.insert(f"a{os.getpid()}x{i} harbour lighthouse", tags=["load"])
    return n


def searcher(path: str, n: int, stop: str) -> int:
    archival, recall = ArchivalStore(path), RecallStore(path)
    rounds = 0
    while rounds < n or not os.path.exists(stop):
        archival.search("harbour lighthouse", top_k=20)
        archival.search("harbour", include_invalid=True, tags=["load"])
        recall.search("harbour", page_size=20)
        archival.records()
        rounds += 1
    return rounds


def main(mode: str, path: str, n: int, stop: str) -> None:
    try:
        if mode == "open":
            Memory.open(path).close()
            print("ok 0")
            return
        if mode == "search":
            done = searcher(path, n, stop)
        else:
            done = {"memory": memory_writer, "archival": archival_writer}[mode](path, n)
    except Exception as error:  # reported to the parent, which fails the test
        print(f"error {type(error).__name__}: {error}", flush=True)
        return
    print(f"ok {done}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "")
