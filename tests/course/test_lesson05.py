"""Notebook 05's loop check: it prints one line, passes on the lesson's loop and on vmem's,
falls back to vmem's Agent on a stub, and rejects wrong loops written before the check
(one mutant per rule of the kernel)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from vmem import Message
from vmem.course.lesson_checks import l05

ROOT = Path(__file__).resolve().parents[2]
COMPLETE = ROOT / "solutions" / "lessons" / "05_agent_loop.ipynb"
LEARNER = ROOT / "notebooks" / "05_agent_loop.ipynb"


def loop(memory, tools, policy, user_text, max_steps=10, *, heartbeat=True, failure=True,
         pressure=True, extra_step=0, send_at_once=False, reverse=False, text=True,
         out_of_steps=None):
    """The lesson's loop, or a wrong one with one rule flipped."""
    memory.context.append(Message(role="user", content=user_text))
    for step in range(1, max_steps + 1 + extra_step):
        warned = sum(1 for event in memory.context.events if event.kind == "warned")
        action = policy.respond(memory.context.render(), tools.schemas())
        calls = [(call, f"call_1_{step}_{i}") for i, call in enumerate(action.tool_calls, 1)]
        memory.context.append(Message(role="assistant", content=action.content, tool_calls=[
            call.to_chat(call_id) for call, call_id in calls] or None))
        if not calls:
            return action.content if text else None
        wake, sent = False, None
        for call, call_id in reversed(calls) if reverse else calls:
            result = tools.call(call.name, call.arguments)
            memory.context.append(Message(role="tool", content=result.content,
                                          name=result.name, tool_call_id=call_id))
            if result.message is not None:
                sent = result.message
                if send_at_once:
                    return sent
            wake = wake or (heartbeat and result.heartbeat) or (failure and not result.ok)
        if sent is not None:
            return sent
        now = sum(1 for event in memory.context.events if event.kind == "warned")
        if not wake and not (pressure and now > warned):
            return action.content
    return out_of_steps


def stub(*args):
    raise NotImplementedError("write the loop")


@pytest.mark.parametrize("right", [loop, l05.agent_loop])
def test_the_reference_loops_pass_and_are_used(capsys, right):
    assert l05.check_loop(right) is right
    assert capsys.readouterr().out.startswith("passed: ")


@pytest.mark.parametrize("flip, phrase", [
    ({"heartbeat": False}, "heartbeats chain"),
    ({"failure": False}, "a failed call wakes the model"),
    ({"pressure": False}, "memory-pressure warning"),
    ({"extra_step": 1}, "max_steps"),
    ({"out_of_steps": ""}, "max_steps"),
    ({"send_at_once": True}, "send_message ends the turn, after the other calls"),
    ({"reverse": True}, "run in order"),
    ({"text": False}, "plain text ends the turn"),
])
def test_a_wrong_loop_is_told_what_is_wrong_and_not_used(capsys, flip, phrase):
    def wrong(memory, tools, policy, user_text, max_steps=10):
        return loop(memory, tools, policy, user_text, max_steps, **flip)

    assert l05.check_loop(wrong) is l05.agent_loop
    line = capsys.readouterr().out
    assert line.startswith("not right yet: ") and line.count("\n") == 1 and phrase in line, line


def test_an_untouched_stub_falls_back_to_vmem_with_one_line(capsys):
    assert l05.check_loop(stub) is l05.agent_loop
    assert capsys.readouterr().out == "not written yet - using vmem's Agent loop\n"


def test_the_scripts_are_unseen_and_the_loop_is_not_shown_before_the_stub():
    for path in (COMPLETE, LEARNER):
        assert l05.USER not in path.read_text(encoding="utf-8")
    sources = [cell.source if cell.cell_type == "code" else ""
               for cell in nbformat.read(COMPLETE, as_version=4).cells]
    at = next(i for i, source in enumerate(sources) if "### BEGIN SOLUTION" in source)
    assert "def tiny_loop(" in sources[at]
    assert not any("max_steps + 1" in source for source in sources[:at])
    assert "loop = check_loop(tiny_loop)" in sources[at + 1]
    assert any("loop(ours, tools, script(), question)" in source for source in sources[at + 2:])
