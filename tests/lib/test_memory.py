"""One persisted agent (`vmem.Memory`): one store, one connection, sessions, restoring the
prompt in a new process, the writer lock, refused files, scopes, and recall across
sessions. Tests that take `agent_target` or `new_target` run on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from vmem.agent import Agent, RulePolicy, ScriptedPolicy
from vmem.clock import StepClock
from vmem.course.demo import open_demo_memory, play, step_lines
from vmem.errors import AgentLockedError, BlockLimitError, StoreFormatError
from vmem.memory import Memory
from vmem.messages import Message

ANA = {"user_id": "ana"}
BOB = {"user_id": "bob"}


def python(code: str, cwd: Path, target: str = "agent.db") -> str:
    """Run `code` in a new Python process, its "agent.db" replaced by `target`; its stdout
    (it must succeed)."""
    code = textwrap.dedent(code).replace('"agent.db"', repr(target))
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- one file, one connection, sessions ----------------------------------------------


def test_all_tiers_share_one_connection_and_commit_together(agent_target):
    with Memory.open(agent_target) as memory:
        assert memory.recall.backend is memory.backend is memory.archival.backend
        with pytest.raises(RuntimeError), memory.backend.transaction():
            memory.archival.insert("Ana's sister Maya lives in Lisbon.")
            memory.recall.add(Message("user", "My sister Maya lives in Lisbon."))
            raise RuntimeError("the process failed half way")
        assert (len(memory.archival), len(memory.recall)) == (0, 0)  # both rolled back


def test_an_append_that_fails_to_persist_changes_nothing_on_disk_or_in_memory(agent_target):
    path = agent_target
    with Memory.open(path, clock=StepClock()) as memory:
        memory.context.append(Message("user", "My sister Maya lives in Lisbon."))
        before = memory.context.render()

        def disk_full(context):
            raise sqlite3.OperationalError("database or disk is full")

        memory.context.journal.record = disk_full
        with pytest.raises(sqlite3.OperationalError):
            memory.context.append(Message("user", "I am allergic to peanuts."))
        assert memory.context.render() == before and len(memory.recall) == 1
    with Memory.open(path, clock=StepClock()) as memory:
        assert memory.context.render() == before and len(memory.recall) == 1


def test_each_open_starts_a_new_session(agent_target):
    clock = StepClock()
    starts = []
    for _ in range(3):
        starts.append(clock.now)  # the next tick is the session's start
        with Memory.open(agent_target, clock=clock) as memory:
            clock.advance(timedelta(days=7))
    with Memory.open(agent_target, clock=clock) as memory:
        assert memory.session_id == 4
        assert memory.sessions()[:3] == [(1, starts[0]), (2, starts[1]), (3, starts[2])]


def test_close_is_idempotent_and_the_context_manager_closes(agent_target):
    memory = Memory.open(agent_target)
    memory.close()
    memory.close()
    with Memory.open(agent_target) as again:
        assert again.session_id == 2
    Memory.open(agent_target).close()  # the with block released the lock


# -- restoring the prompt -------------------------------------------------------------

BUILD = """
    import json
    from vmem import Agent, RulePolicy
    from vmem.course.demo import open_demo_memory, play
    with open_demo_memory("agent.db") as memory:
        turns = play(memory)
        memory.core.append("human", "Name: Ana. Allergic to peanuts.")
        memory.core.replace("human", "Ana.", "Ana Lima.")
        print(json.dumps({"render": memory.context.render(), "tokens": memory.context.tokens(),
                          "summary": memory.context.summary,
                          "kinds": [e.kind for t in turns for e in t.events]}))
"""
REOPEN = """
    import json
    from vmem import Agent, Memory, RulePolicy
    from vmem.course.demo import DEMO_BUDGET, DEMO_FLUSH_TO, DEMO_WARN_AT
    with Memory.open("agent.db", max_tokens=DEMO_BUDGET, warn_at=DEMO_WARN_AT,
                     flush_to=DEMO_FLUSH_TO) as memory:
        Agent(memory, RulePolicy())  # the same tool schemas, counted in the budget
        print(json.dumps({"render": memory.context.render(), "tokens": memory.context.tokens(),
                          "summary": memory.context.summary, "session": memory.session_id}))
"""


def test_reopening_in_a_new_process_restores_the_same_prompt(agent_target, tmp_path):
    built = json.loads(python(BUILD, tmp_path, agent_target))
    assert "evicted" in built["kinds"] and "summarized" in built["kinds"]  # a flush happened
    assert built["summary"] and "Name: Ana Lima." in built["render"][0]["content"]
    reopened = json.loads(python(REOPEN, tmp_path, agent_target))
    assert reopened["session"] == 2
    # The whole prompt, the trailing memory status included: its counts and the time of
    # the last change are restored too, since opening appends nothing.
    assert reopened["render"] == built["render"]
    assert (reopened["tokens"], reopened["summary"]) == (built["tokens"], built["summary"])


def test_a_killed_process_loses_nothing_it_committed(agent_target, tmp_path):
    python("""
        import os
        from vmem import Memory, Message
        memory = Memory.open("agent.db")
        memory.context.append(Message("user", "My sister Maya lives in Lisbon."))
        memory.core.append("human", "Sister: Maya, in Lisbon.")
        os._exit(0)  # no close: killed
    """, tmp_path, agent_target)
    with Memory.open(agent_target) as memory:  # the OS (or the server) released the lock
        assert [m.content for m in memory.context.messages] == ["My sister Maya lives in Lisbon."]
        assert memory.core.get("human").value == "Sister: Maya, in Lisbon."


def test_core_edits_and_their_history_persist(agent_target):
    path, clock = agent_target, StepClock()
    with Memory.open(path, clock=clock) as memory:
        agent = Agent(memory, ScriptedPolicy([
            ("core_memory_append", {"label": "human", "content": "Name: Ana."}),
            ("core_memory_replace", {"label": "human", "old_content": "Ana.",
                                     "new_content": "Ana Lima."})]))
        agent.step("I'm Ana.")
        agent.step("Actually, my full name is Ana Lima.")
        with pytest.raises(BlockLimitError):
            memory.core.append("human", "x" * 5000)
        saved = memory.core.to_dict(history=True)
    with Memory.open(path, clock=clock) as memory:
        human = memory.core.get("human")
        assert memory.core.to_dict(history=True) == saved
        assert (human.value, human.version) == ("Name: Ana Lima.", 2)
        assert [(edit.old, edit.new) for edit in human.history] == \
            [("", "Name: Ana."), ("Name: Ana.", "Name: Ana Lima.")]
        assert "Name: Ana Lima." in memory.context.render()[0]["content"]


# -- one writer, many readers ---------------------------------------------------------

TRY_OPEN = """
    from vmem import Memory
    from vmem.errors import AgentLockedError
    try:
        Memory.open("agent.db").close()
        print("opened")
    except AgentLockedError as error:
        print(error)
"""


def test_a_second_open_is_refused_naming_the_holder_until_the_first_closes(agent_target,
                                                                           tmp_path):
    path = agent_target
    holder = Memory.open(path)
    with pytest.raises(AgentLockedError, match=f"already open for writing by process "
                                               f"{os.getpid()} on "):
        Memory.open(path)
    # the refused attempt did not release the holder's lock (another process is refused too)
    assert f"process {os.getpid()}" in python(TRY_OPEN, tmp_path, path)
    assert holder.archival.insert("Still writing.") == 1
    holder.close()
    assert python(TRY_OPEN, tmp_path, path).strip() == "opened"
    Memory.open(path).close()


def test_other_processes_can_search_and_insert_while_the_agent_is_open(agent_target,
                                                                        tmp_path):
    with Memory.open(agent_target) as memory:
        memory.archival.insert("Ana's sister Maya lives in Lisbon.", session_id=1, turn_id=1)
        memory.context.append(Message("user", "My sister Maya lives in Lisbon."))
        found = python("""
            from vmem import ArchivalStore, RecallStore
            print(ArchivalStore("agent.db").search("sister Lisbon").ids,
                  RecallStore("agent.db").search("sister").ids)
            ArchivalStore("agent.db").insert("Ana's brother Rui lives in Porto.")
        """, tmp_path, agent_target)
        assert found.split() == ["[1]", "[1]"]
        assert memory.archival.search("brother Porto").ids == [2]  # the writer sees it


@pytest.mark.parametrize("kind", ["newer", "foreign", "corrupt", "not_sqlite", "truncated"])
def test_files_that_are_not_ours_to_write_are_refused_and_left_untouched(tmp_path, kind):
    path = tmp_path / "agent.db"
    if kind == "not_sqlite":
        path.write_bytes(b"these are my notes, not a database\n" * 10)
    elif kind == "foreign":
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        conn.close()
    else:
        with Memory.open(path) as memory:
            for index in range(200):
                memory.archival.insert(f"fact number {index} about the garden")
        if kind == "newer":
            conn = sqlite3.connect(path)
            conn.execute("PRAGMA user_version = 99")
            conn.close()
        elif kind == "truncated":
            path.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])
        else:  # corrupt: garbage over the pages after the header page
            data = bytearray(path.read_bytes())
            data[4096:] = b"\xde\xad\xbe\xef" * ((len(data) - 4096) // 4)
            path.write_bytes(bytes(data))
    before = path.read_bytes()
    expected = {"newer": "newer vmem", "foreign": "another application",
                "corrupt": "corrupt", "not_sqlite": "not an SQLite database",
                "truncated": "truncated"}[kind]
    with pytest.raises(StoreFormatError, match=expected) as error:
        Memory.open(path)
    assert "left untouched" in str(error.value)
    assert path.read_bytes() == before
    wal = Path(f"{path}-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # nothing pending to be written
    Memory.open(tmp_path / "other.db").close()  # nothing stays locked or half open


# -- scopes -------------------------------------------------------------------------


def test_two_scopes_in_one_file_see_only_their_own_memory(new_target):
    shared, alone = new_target(), new_target()
    with Memory.open(shared, scope=ANA, clock=StepClock()) as ana:
        agent = Agent(ana, RulePolicy())
        agent.step("My sister Maya lives in Lisbon.")
        ana.core.append("human", "Name: Ana.")
        ana_prompt = ana.context.render()
    with Memory.open(shared, scope=BOB, clock=StepClock()) as bob, \
            Memory.open(alone, scope=BOB, clock=StepClock()) as bob_alone:
        # Bob's prompt is exactly what it would be in a file of his own: no messages, no
        # core edits, not even Ana's counts in the memory status.
        assert bob.context.render() == bob_alone.context.render()
        assert (len(bob.recall), len(bob.archival), bob.core.get("human").value) == (0, 0, "")
        turns = [Agent(memory, RulePolicy()).step("Where does my sister live?")
                 for memory in (bob, bob_alone)]
        assert turns[0].reply == turns[1].reply == \
            "I could not find anything about that in my memory."
        archival, recall = (call.result.page for call in turns[0].calls[:2])
        assert archival.total == 0  # Ana's record about her sister is not Bob's
        assert recall.total == 0  # not Ana's messages, nor the question itself
        assert (len(bob.recall), len(bob.archival)) == \
            (len(bob_alone.recall), len(bob_alone.archival))
        assert [s for s, _ in bob.sessions()] == [2]
    with Memory.open(shared, scope=ANA, clock=StepClock()) as ana:
        assert ana.context.render() == ana_prompt  # Bob's turn changed nothing for Ana
        assert [s for s, _ in ana.sessions()] == [1, 3]
        answer = Agent(ana, RulePolicy()).step("Where does my sister live?")
        assert answer.reply == \
            "From my archival memory: My sister Maya lives in Lisbon. [record 1]"


def test_an_unscoped_memory_sees_every_scope(agent_target):
    with Memory.open(agent_target, scope=ANA) as ana:
        Agent(ana, RulePolicy()).step("My sister Maya lives in Lisbon.")
    with Memory.open(agent_target) as everyone:
        assert everyone.scope is None and len(everyone.archival) == 1
        assert everyone.archival.search("sister").ids == [1]


# -- ":memory:" ------------------------------------------------------------------------


def test_in_memory_behaves_like_a_file(tmp_path):
    on_file, in_memory = open_demo_memory(str(tmp_path / "agent.db")), open_demo_memory()
    with on_file, in_memory:
        traces = [[line for turn in play(memory) for line in step_lines(turn)]
                  for memory in (on_file, in_memory)]
        assert traces[0] == traces[1]
        assert on_file.context.render() == in_memory.context.render()


def test_in_memory_agents_are_separate_and_never_locked():
    with Memory.open(":memory:") as first, Memory.open(":memory:") as second:
        first.archival.insert("Only in the first.")
        assert (len(first.archival), len(second.archival)) == (1, 0)
        assert first.session_id == second.session_id == 1


# -- recall across sessions -----------------------------------------------------------


def tool_tokens() -> int:
    """What the tool schemas take of every budget once an agent is attached."""
    with Memory.open(":memory:") as memory:
        return Agent(memory, RulePolicy()).context.overview()["tools"]


def test_a_new_session_answers_what_did_i_ask_you_last_week_from_recall(agent_target):
    path, clock, budget = agent_target, StepClock(), tool_tokens() + 600
    with Memory.open(path, clock=clock, max_tokens=budget) as memory:
        agent = Agent(memory, RulePolicy())
        agent.step("Can you find me a quiet hotel near the harbour for the conference")
        assert len(memory.archival) == 0  # a request, not a fact: only recall has it
        for number in range(8):  # statements, saved as facts, that push the request out
            agent.step(f"The old bakery number {number} on the corner sells rye bread.")
        assert 1 not in [message.id for message in memory.context.messages]
    clock.advance(timedelta(days=7))
    with Memory.open(path, clock=clock, max_tokens=budget) as memory:
        turn = Agent(memory, RulePolicy()).step("What did I ask you last week?")
        assert [call.call.name for call in turn.calls] == \
            ["archival_memory_search", "conversation_search", "send_message"]
        assert turn.calls[0].result.page.total == 0  # archival memory has nothing on it
        assert turn.reply == ('From our earlier conversation: user said "Can you find me a '
                              'quiet hotel near the harbour for the conference" [message 1]')
        cited = memory.recall.get(1)
        assert (cited.session_id, cited.turn, memory.session_id) == (1, 1, 2)
        assert memory.sessions()[-1][1] - cited.created_at >= timedelta(days=7)
