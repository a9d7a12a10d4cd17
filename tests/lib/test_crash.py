"""Crash safety: SIGKILL a process writing an agent at random moments, then reopen it
(an SQLite file, and a PostgreSQL database: the client dies, the server lives on).

`crash_child.py` appends messages (with a small budget, so the context flushes and
summarises every few messages), inserts archival records and edits core memory, printing
each write only after it committed. After every kill the store must open, pass its
integrity checks (`store_checks.check_index`), hold every reported write exactly once,
keep its full-text indexes in step with the tables, and render a prompt within budget
whose queue is the one committed with the newest message.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from store_checks import check_index  # conftest puts tests/helpers on sys.path

from vmem.errors import AgentLockedError
from vmem.memory import Memory
from vmem.messages import Message

CHILD = Path(__file__).resolve().parents[1] / "helpers" / "crash_child.py"
MAX_TOKENS = 400  # small: a flush (eviction + summary) every few messages
SEED = 20240601

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")


def _kill_after(path: str, seed: int, delay: float) -> list[tuple[str, int, str]]:
    """Run the child for `delay` seconds after it opened the file, SIGKILL it, and return
    the (kind, id, tag) of every write it reported as committed."""
    child = subprocess.Popen([sys.executable, str(CHILD), str(path), str(seed), str(MAX_TOKENS)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = child.stdout.readline()
        assert ready == "ready\n", child.stderr.read()
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL, err  # killed by us, not failed on its own
    reported = []
    for line in out.splitlines():
        kind, number, tag = line.split()
        reported.append((kind, int(number), tag))
    return reported


def _ids(conn, sql: str) -> list[int]:
    return [row[0] for row in conn.execute(sql)]


def _check_no_duplicates(conn) -> None:
    """Every write's tag (the first word of its text) is stored once."""
    for sql in ("SELECT content FROM messages WHERE role IN ('user', 'assistant')",
                "SELECT text FROM archival"):
        tags = Counter(row[0].split()[0] for row in conn.execute(sql))
        assert [tag for tag, n in tags.items() if n > 1] == []


def _reopen(path: str) -> Memory:
    """Open the agent again once the killed writer's lock is gone: at once on SQLite (the
    kernel drops a dead process's file lock), within moments on PostgreSQL (the server
    ends the session when it sees the connection closed)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return Memory.open(path, max_tokens=MAX_TOKENS)
        except AgentLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_sigkill_at_random_moments_loses_no_committed_write(agent_target):
    path = agent_target
    rng = random.Random(SEED)
    trials = 30
    seen_messages = seen_records = 0
    reported_total = 0
    started = time.perf_counter()
    for trial in range(trials):
        reported = _kill_after(path, trial, rng.uniform(0.02, 0.25))
        reported_total += len(reported)
        with _reopen(path) as memory:
            conn = memory.backend.conn
            check_index(memory.backend)
            _check_no_duplicates(conn)
            # every reported write is there, exactly as written
            last_core = None
            for kind, number, tag in reported:
                if kind == "msg":
                    assert memory.recall.get(number).content.split()[0] == tag
                elif kind == "archival":
                    assert memory.archival.get(number).text.split()[0] == tag
                else:
                    last_core = (number, tag)
            if last_core is not None:
                version, tag = last_core
                human = memory.core.get("human")
                assert human.version in (version, version + 1)  # +1: committed, not reported
                edit = next(edit for edit in human.history if edit.version == version)
                assert f"Latest note {tag}:" in edit.new
            # every new row is found by a search for its tag, the only hit (a message: it,
            # and perhaps the message after it, indexed with it as its prompt)
            new_messages = _ids(conn, "SELECT id FROM messages WHERE role IN ('user', "
                                      f"'assistant') AND id > {seen_messages} ORDER BY id")
            searchable = _ids(conn, "SELECT id FROM messages WHERE role IN ('user', "
                                    "'assistant') ORDER BY id")
            for message in memory.recall.get_many(new_messages):
                tag = message.content.split()[0]
                found = memory.recall.search(tag).ids
                after = [i for i in searchable if i > message.id][:1]
                assert message.id in found and set(found) <= {message.id, *after}
            new_records = _ids(conn, f"SELECT id FROM archival WHERE id > {seen_records}")
            for record_id in new_records:
                tag = memory.archival.get(record_id).text.split()[0]
                assert memory.archival.search(tag).ids == [record_id]
            seen_messages = max([seen_messages, *new_messages])
            seen_records = max([seen_records, *new_records])
            # the context restored is the one committed with the newest message
            context = memory.context
            queue = [message.id for message in context.messages]
            newest = conn.execute("SELECT max(id) FROM messages").fetchone()[0]
            if newest is not None:
                assert queue and queue[-1] == newest
            assert queue == sorted(set(queue))
            assert context.tokens() <= MAX_TOKENS
            prompt = context.render()
            assert memory.core.get("human").value in prompt[0]["content"]
            assert [m["content"] for m in prompt[1:-1]] == \
                [m.content for m in context.messages]
    seconds = time.perf_counter() - started
    print(f"\n{trials} SIGKILL trials, {reported_total} committed writes checked, "
          f"{seen_messages} messages, {seen_records} records, {seconds:.1f} s")
    assert reported_total > trials  # the child really wrote between kills


def test_reopening_with_a_smaller_budget_renders_within_it(agent_target):
    path = agent_target
    with Memory.open(path, max_tokens=2000) as memory:
        for i in range(30):
            memory.context.append(Message(role="user", content=f"note {i} about the garden "
                                          "and the old lighthouse by the harbour wall"))
        assert memory.context.tokens() > 600
        newest = memory.context.messages[-1].id
    with Memory.open(path, max_tokens=600) as memory:  # flushed on open, and saved
        assert memory.context.tokens() <= 600
        assert memory.context.messages[-1].id == newest and memory.context.summary
        state = memory.backend.conn.execute("SELECT state FROM context_state").fetchone()
    with Memory.open(path, max_tokens=600) as memory:
        assert memory.backend.conn.execute("SELECT state FROM context_state").fetchone() == state
