"""`python -m vmem`: the demo's trace and its determinism, two sessions on one file, the
chat with piped input (offline, and against a local chat-completions server), the
delegated eval and grade commands, and --help everywhere."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vmem.__main__ import main
from vmem.course.demo import FACTS, open_demo_memory, play
from vmem.memory import DEFAULT_MAX_TOKENS


def vmem(*args: str, cwd: Path | None = None, stdin: str | None = None
         ) -> subprocess.CompletedProcess[str]:
    """`python -m vmem ARGS` in a new process."""
    return subprocess.run([sys.executable, "-m", "vmem", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=120)


def run(*args: str) -> tuple[int, str]:
    """`main(ARGS)` in this process: (exit status, what it printed)."""
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


def turns_of(output: str) -> list[list[str]]:
    """The printed turns: each starts with its `[sN tM] user:` line."""
    turns: list[list[str]] = []
    for line in output.splitlines():
        if re.match(r"\[s\d+ t\d+\] user: ", line):
            turns.append([line])
        elif turns and line.startswith("  "):
            turns[-1].append(line)
    return turns


# -- the demo -------------------------------------------------------------------------


def test_demo_prints_the_lessons_trace():
    status, output = run("demo")
    assert status == 0
    turns = turns_of(output)
    first, question = turns[0], turns[-1]
    inserts = [line for line in first if "archival_memory_insert" in line]
    assert len(inserts) == 3
    for number, (line, fact) in enumerate(zip(inserts, FACTS, strict=True), 1):
        assert line.startswith("  step 1  archival_memory_insert {\"content\": ")
        assert fact in line and line.endswith(f"-> record {number}")
    # small talk fills the context until a flush evicts the oldest turns, with a summary
    flushed = [index for index, turn in enumerate(turns)
               if any(line.startswith("  ! flush: the ") and "(ids 1-" in line for line in turn)]
    assert flushed and 0 < flushed[0] < len(turns) - 1
    flush_turn = turns[flushed[0]]
    flush_at = next(i for i, line in enumerate(flush_turn) if "! flush" in line)
    assert flush_turn[flush_at + 1].startswith("  ! summary: ")
    # the follow-up is answered by archival search, citing record, session and turn
    assert question[0] == \
        f"[s1 t{len(turns)}] user: By the way, where does my sister live again?"
    assert question[1].startswith("  step 1  archival_memory_search {\"query\": ")
    assert question[1].endswith("-> 1 found: record 1")
    sent = [line for line in question[2:] if line.startswith("  step 2  ")]
    assert sent == ['  step 2  send_message {"message": "You told me: Ana\'s sister Maya '
                    'lives in Lisbon. [record 1, session 1, turn 1]"}']


def test_demo_output_is_small_readable_and_byte_identical():
    first, second = vmem("demo"), vmem("demo")
    assert first.returncode == 0 and first.stderr == ""
    assert first.stdout == second.stdout == run("demo")[1]
    lines = first.stdout.splitlines()
    assert len(lines) < 60
    assert max(len(line) for line in lines if "send_message" not in line) <= 140


def test_the_demo_function_returns_the_turns_a_notebook_can_replay():
    with open_demo_memory() as memory:
        seen: list[str] = []  # what the context held as each turn ended
        turns = play(memory, on_turn=lambda turn: seen.append(
            " ".join(message.content for message in memory.context.messages)))
        assert [call.call.name for call in turns[0].calls] == \
            ["archival_memory_insert"] * 3 + ["send_message"]
        assert [call.result.record_id for call in turns[0].calls[:3]] == [1, 2, 3]
        assert "Maya lives in Lisbon" in seen[0]
        # when the question comes, the facts are out of the context: only archival has them
        assert "Maya lives in Lisbon" not in seen[-2]
        asked = turns[-1]
        assert asked.calls[0].result.page.ids == [1]
        assert asked.reply.endswith("[record 1, session 1, turn 1]")


def test_budget_moves_the_flush_and_a_budget_too_small_is_a_clear_error(capsys):
    def flush_turn(output: str) -> int | None:
        return next((index for index, turn in enumerate(turns_of(output))
                     if any("! flush" in line for line in turn)), None)

    default, smaller = flush_turn(run("demo")[1]), flush_turn(run("demo", "--budget", "2000")[1])
    assert smaller is not None and default is not None and smaller < default
    status, larger = run("demo", "--budget", "4400")
    assert status == 0 and flush_turn(larger) is None
    assert "(no flush: 4400 tokens still had room; try a smaller --budget)" in larger
    assert run("demo", "--budget", "1000")[0] == 2
    assert "over the budget of 1000" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        run("demo", "--budget", "0")
    assert exit_.value.code == 2 and "positive number of tokens" in capsys.readouterr().err


def test_a_second_run_on_the_same_file_recalls_the_first_session(tmp_path, monkeypatch):
    outputs = []
    for folder in (tmp_path / "a", tmp_path / "b"):  # twice, to check byte-identity
        folder.mkdir()
        monkeypatch.chdir(folder)
        outputs.append([run("demo", "--db", "agent.db") for _ in range(2)])
    (one, two), (one_again, two_again) = outputs
    assert one[0] == two[0] == 0
    assert (one, two) == (one_again, two_again)
    assert "(session 1, agent.db)" in one[1] and "(session 2, agent.db)" in two[1]
    (turn,) = turns_of(two[1])
    assert turn[0] == "[s2 t1] user: Hi, it's Ana again. What did I tell you last time?"
    assert turn[1].startswith("  step 1  conversation_search ")
    assert turn[1].endswith("-> 1 found: message 1")
    assert turn[2].startswith("  step 2  archival_memory_search ")
    sent = next(line for line in turn if line.startswith("  step 3  send_message "))
    answer = json.loads(sent.split("send_message ", 1)[1])["message"]
    assert answer.startswith('In session 1 you told me "Hi, I\'m Ana. Please remember')
    assert "[message 1, session 1, turn 1]" in answer
    for number, fact in enumerate(FACTS, 1):
        assert f"{fact.rstrip('.')} [record {number}]" in answer


# -- chat -----------------------------------------------------------------------------

CHAT_INPUT = """My sister Maya lives in Lisbon.
Where does my sister live?
/context
/core
/search sister
/bogus
/quit
This line comes after /quit.
"""


def test_chat_offline_with_piped_input():
    done = vmem("chat", stdin=CHAT_INPUT)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("vmem chat with the rule policy (offline, no LLM); session 1")
    assert "you> My sister Maya lives in Lisbon.\n  step 1  archival_memory_insert " in out
    assert "agent> Noted, I saved that to archival memory [record 1]." in out
    assert "agent> From my archival memory: My sister Maya lives in Lisbon. [record 1]" in out
    table = out.split("you> /context\n", 1)[1].split("you> /core", 1)[0]
    assert re.search(r"^tools\s+\d+$", table, re.MULTILINE)
    assert re.search(rf"^total\s+\d+ of {DEFAULT_MAX_TOKENS} \(\d+%\)$", table, re.MULTILINE)
    assert "[human] 0/2000 chars" in out and "[persona] " in out
    search = out.split("you> /search sister\n", 1)[1]
    assert "archival memory: showing 1-1 of 1" in search
    assert re.search(r"\[record 1 \| session 1, turn 1 \| [^\]]+\] My sister Maya", search)
    assert "unknown command /bogus; /help lists the commands" in out
    assert "after /quit" not in out and out.endswith("bye\n")


def test_chat_remembers_across_sessions_in_one_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outputs = []
    for line in ("My dog Pepper is three.\n", "How old is my dog?\n"):
        monkeypatch.setattr(sys, "stdin", io.StringIO(line))
        outputs.append(run("chat", "--db", "agent.db"))
    (first, _), (second, out) = outputs
    assert first == second == 0 and "session 2, agent.db" in out
    assert "agent> From my archival memory: My dog Pepper is three. [record 1]" in out


def test_chat_with_a_model_uses_the_endpoint_and_the_key_variable(monkeypatch):
    pytest.importorskip("openai")
    from fake_llm_server import FakeChatServer, completion

    insert = json.dumps({"content": "The user's cat is Miso.", "request_heartbeat": True})
    replies = [completion(tool_calls=[("call_1", "archival_memory_insert", insert)]),
               completion(content="Got it: your cat is Miso [record 1].")]
    monkeypatch.setenv("VMEM_TEST_KEY", "secret-key")
    monkeypatch.setattr(sys, "stdin", io.StringIO("My cat is Miso.\n"))
    with FakeChatServer(replies) as server:
        status, out = run("chat", "--model", "fake-model", "--base-url", server.base_url,
                          "--api-key-env", "VMEM_TEST_KEY")
    assert status == 0
    assert out.startswith("vmem chat with model fake-model; session 1")
    assert '  step 1  archival_memory_insert {"content": "The user\'s cat is Miso."' in out
    assert "agent> Got it: your cat is Miso [record 1]." in out
    assert server.headers[0]["authorization"] == "Bearer secret-key"
    assert server.requests[0]["model"] == "fake-model"


def test_chat_with_a_model_but_no_sdk_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "openai", None)
    monkeypatch.setattr(sys, "stdin", io.StringIO("hi\n"))
    assert run("chat", "--model", "gpt-4o-mini") == (2, "")
    assert "pip install openai" in capsys.readouterr().err


# -- delegated commands and --help ----------------------------------------------------


def test_eval_and_grade_are_delegated(tmp_path, capsys):
    status, out = run("eval", "synthetic", "--tokens", "3000", "--k", "1,5",
                      "--budgets", "1000", "--json")
    assert status == 0 and "overall" in next(iter(json.loads(out).values()))
    assert main(["grade", str(tmp_path / "missing")]) == 2
    assert "no folder" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "expected"), [
    ((), ["demo", "chat", "eval", "grade"]),
    (("demo",), ["--budget", "--db"]),
    (("chat",), ["--db", "--model", "--base-url", "--api-key-env", "/search"]),
    (("eval",), ["locomo", "synthetic", "stale", "guard"]),
    (("grade",), ["--csv", "--timeout"]),
])
def test_help_everywhere(args, expected, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    assert all(word in shown for word in expected)


def test_a_missing_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        main([])
    assert exit_.value.code == 2 and "COMMAND" in capsys.readouterr().err
