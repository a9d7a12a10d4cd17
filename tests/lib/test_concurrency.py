"""Two processes on one agent file: readers beside the writer, one `Memory` writer only.

The rules (docs/RELIABILITY.md): one `Memory` per agent file at a time, refused with a
message naming the holder; any number of `ArchivalStore(path)` / `RecallStore(path)`
readers and archival writers beside it. WAL, a busy timeout and `BEGIN IMMEDIATE`
transactions mean none of them ever sees "database is locked".
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from store_checks import check_index  # conftest puts tests/helpers on sys.path

from vmem.archival import ArchivalStore
from vmem.errors import AgentLockedError
from vmem.memory import Memory
from vmem.messages import Message
from vmem.recall import RecallStore

CHILD = Path(__file__).resolve().parents[1] / "helpers" / "concurrency_child.py"


def _start(mode: str, path: str, n: int, stop: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(CHILD), mode, path, str(n), str(stop)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(child: subprocess.Popen) -> int:
    """The number the child reports; fails with whatever error it met."""
    out, err = child.communicate(timeout=120)
    last = out.strip().splitlines()[-1] if out.strip() else f"no output: {err}"
    assert last.startswith("ok "), last
    return int(last.split()[1])


def test_searching_beside_a_writing_memory_never_sees_a_locked_database(agent_target,
                                                                         tmp_path):
    path = agent_target
    Memory.open(path).close()
    searchers = [_start("search", path, 20, tmp_path / "stop") for _ in range(2)]
    writer = _start("memory", path, 150)
    assert _result(writer) == 150
    (tmp_path / "stop").touch()
    assert all(_result(searcher) >= 20 for searcher in searchers)
    with Memory.open(path) as memory:
        check_index(memory.backend)
        assert len(memory.archival.records(include_invalid=True)) == 100  # a third deleted


def test_two_archival_writers_in_two_processes_lose_no_insert(agent_target):
    path = agent_target
    ArchivalStore(path).close()
    writers = [_start("archival", path, 200) for _ in range(2)]
    assert [_result(writer) for writer in writers] == [200, 200]
    store = ArchivalStore(path)
    texts = [record.text for record in store.records()]
    assert len(texts) == len(set(texts)) == 400
    for writer in writers:
        mine = [text for text in texts if text.startswith(f"a{writer.pid}x")]
        assert sorted(int(text.split()[0].split("x")[1]) for text in mine) == list(range(200))
    page = store.search("lighthouse", top_k=100, tags=["load"])
    assert page.total == 400


def test_a_second_memory_is_refused_by_name_in_another_process_and_in_this_one(agent_target):
    path = agent_target
    with Memory.open(path) as memory:
        memory.context.append(Message(role="user", content="I keep bees on the roof."))
        child = _start("open", path, 0)
        out, _ = child.communicate(timeout=60)
        assert out.startswith("error AgentLockedError: ")
        assert f"is already open for writing by process {os.getpid()} on " in out
        assert "ArchivalStore(" in out  # and it says what may run beside it
        with pytest.raises(AgentLockedError, match=f"process {os.getpid()}"):
            Memory.open(path)
        state = memory.backend.conn.execute("SELECT state FROM context_state").fetchone()
    # the refused opens changed nothing: the writer's state is what it committed
    with Memory.open(path) as again:
        assert again.backend.conn.execute("SELECT state FROM context_state").fetchone() == state
        assert [m.content for m in again.context.messages] == ["I keep bees on the roof."]
    assert _result(_start("open", path, 0)) == 0  # closed: the lock is free again


def test_another_process_inserting_never_overwrites_the_writers_context(agent_target):
    path = agent_target
    Memory.open(path).close()
    inserter = _start("archival", path, 150)
    with Memory.open(path, max_tokens=400) as memory:
        for i in range(60):
            memory.context.append(Message(role="user", content=f"message {i} about the harbour"))
        queue = [message.id for message in memory.context.messages]
        summary = memory.context.summary
        assert _result(inserter) == 150
        # the writer sees the other process's records live, in its status line
        assert "150 records in archival memory" in memory.context.render()[-1]["content"]
    with Memory.open(path, max_tokens=400) as again:
        assert [message.id for message in again.context.messages] == queue
        assert again.context.summary == summary
        assert len(again.archival) == 150
        assert len(again.recall.search("harbour", page_size=100).ids) == 60


def test_store_readers_open_while_memory_writes_in_this_process(agent_target):
    path = agent_target
    with Memory.open(path) as memory:
        reader, recall = ArchivalStore(path), RecallStore(path)
        record_id = memory.archival.insert("the spare key is under the blue pot")
        memory.context.append(Message(role="user", content="where did I leave the key?"))
        assert reader.search("key").ids == [record_id]
        assert len(recall.search("key").ids) == 1
        reader.insert("a record from the side: the bike lock code is 4412")
        assert memory.archival.search("bike lock").total == 1
