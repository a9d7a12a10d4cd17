"""Notebook 05's checks print one line, pass on the lesson's answers and on vmem's, fall
back to vmem's part on a stub, and reject wrong answers written before the check: heartbeat
decisions with one rule wrong, and loops with one rule of the kernel flipped (built on a
wrong decision, or wrong around a right one)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from verdicts import learners_copy, told_not_right

from vmem import Message
from vmem.course.lesson_checks import l05

ROOT = Path(__file__).resolve().parents[2]
COMPLETE = ROOT / "solutions" / "lessons" / "05_agent_loop.ipynb"
LEARNER = ROOT / "notebooks" / "05_agent_loop.ipynb"


def decision(results, warned):
    """The lesson's decision, as the notebook's solution writes it."""
    if any(result.message is not None for result in results):
        return False
    return warned or any(result.heartbeat or not result.ok for result in results)


def ignores_failures(results, warned):
    if any(result.message is not None for result in results):
        return False
    return warned or any(result.heartbeat for result in results)


def ignores_the_warning(results, warned):
    if any(result.message is not None for result in results):
        return False
    return any(result.heartbeat or not result.ok for result in results)


def ignores_heartbeats(results, warned):
    if any(result.message is not None for result in results):
        return False
    return warned or any(not result.ok for result in results)


def goes_on_after_send_message(results, warned):
    return warned or any(result.heartbeat or not result.ok for result in results)


def needs_every_heartbeat(results, warned):
    if any(result.message is not None for result in results):
        return False
    return warned or all(result.heartbeat for result in results) or \
        any(not result.ok for result in results)


def reads_the_last_call_only(results, warned):
    last = results[-1]
    return last.message is None and (warned or last.heartbeat or not last.ok)


def a_failed_send_message_counts_as_sent(results, warned):
    if any(result.name == "send_message" for result in results):
        return False
    return warned or any(result.heartbeat or not result.ok for result in results)


def the_warning_beats_send_message(results, warned):
    sent = any(result.message is not None for result in results)
    return warned or (not sent and any(result.heartbeat or not result.ok for result in results))


def returns_none_to_stop(results, warned):
    if decision(results, warned):
        return True
    return None


def warnings(memory):
    return sum(1 for event in memory.context.events if event.kind == "warned")


def loop(memory, tools, policy, user_text, max_steps=10, *, decide=decision, extra_step=0,
         send_at_once=False, reverse=False, text=True, out_of_steps=None):
    """The lesson's loop on `decide`, or a wrong one with one rule flipped."""
    memory.context.append(Message(role="user", content=user_text))
    for step in range(1, max_steps + 1 + extra_step):
        before = warnings(memory)
        action = policy.respond(memory.context.render(), tools.schemas())
        calls = [(call, f"call_1_{step}_{i}") for i, call in enumerate(action.tool_calls, 1)]
        memory.context.append(Message(role="assistant", content=action.content, tool_calls=[
            call.to_chat(call_id) for call, call_id in calls] or None))
        if not calls:
            return action.content if text else None
        results = []
        for call, call_id in reversed(calls) if reverse else calls:
            result = tools.call(call.name, call.arguments)
            memory.context.append(Message(role="tool", content=result.content,
                                          name=result.name, tool_call_id=call_id))
            if send_at_once and result.message is not None:
                return result.message
            results.append(result)
        if not decide(results, warnings(memory) > before):
            sent = [result.message for result in results if result.message is not None]
            return sent[-1] if sent else action.content
    return out_of_steps


def stub(*args):
    raise NotImplementedError("write it")


def test_each_unseen_step_does_what_its_case_says():
    steps = l05.decision_steps()
    assert len(steps) == len(l05.DECISIONS)
    for (calls, pressure, again, what), (results, warned, called, said) in \
            zip(l05.DECISIONS, steps, strict=True):
        assert (len(results), warned, called, said) == (len(calls), pressure, again, what)


@pytest.mark.parametrize("right", [decision, learners_copy(l05.wants_another_step)])
def test_the_reference_decisions_pass_and_are_used(capsys, right):
    assert l05.check_decision(right) is right
    assert capsys.readouterr().out == \
        "passed: your decision matches vmem.Agent on all 14 unseen steps\n"


@pytest.mark.parametrize("wrong, phrase", [
    (ignores_heartbeats, "a call that asks for a heartbeat wakes the model: "),
    (ignores_failures, "a failed call wakes the model, so it can fix the call: "),
    (ignores_the_warning, "a memory-pressure warning during the step wakes the model: "),
    (goes_on_after_send_message, "even when another call asked for a heartbeat: "),
    (reads_the_last_call_only, "wherever it stands among the calls: "),
    (a_failed_send_message_counts_as_sent, "a send_message that failed"),
    (needs_every_heartbeat, "even when a later call has none: "),
    (the_warning_beats_send_message, "even when a memory-pressure warning fired: "),
])
def test_a_wrong_decision_is_told_which_step_and_not_used(capsys, wrong, phrase):
    assert l05.check_decision(wrong) is l05.wants_another_step
    told_not_right(capsys, phrase, "wants_another_step([", ", but vmem.Agent ")


def test_a_decision_that_is_not_a_bool_is_told_so(capsys):
    assert l05.check_decision(returns_none_to_stop) is l05.wants_another_step
    line = capsys.readouterr().out
    assert line.startswith("not right yet: a call without a heartbeat ends the turn: ")
    assert "returned None; return True (call the model again) or False" in line, line


def test_an_untouched_decision_stub_falls_back_to_vmem_with_one_line(capsys):
    assert l05.check_decision(stub) is l05.wants_another_step
    assert capsys.readouterr().out == "not written yet - using vmem's heartbeat decision\n"


@pytest.mark.parametrize("decide", [decision, l05.wants_another_step])
def test_the_lesson_loop_passes_on_either_decision_and_is_used(capsys, decide):
    def right(memory, tools, policy, user_text, max_steps=10):
        return loop(memory, tools, policy, user_text, max_steps, decide=decide)

    assert l05.check_loop(right) is right
    line = capsys.readouterr().out
    assert line.startswith("passed: your loop matches vmem.Agent on all 8 unseen scripts (")
    assert line.count("\n") == 1, line


@pytest.mark.parametrize("reference", [learners_copy(l05.agent_loop),
                                       learners_copy(l05.kernel_loop)])
def test_vmems_loops_pass_and_are_used(capsys, reference):
    assert l05.check_loop(reference) is reference
    assert capsys.readouterr().out.startswith("passed: ")


@pytest.mark.parametrize("flip, phrase", [
    ({"decide": ignores_heartbeats}, "heartbeats chain"),
    ({"decide": ignores_failures}, "a failed call wakes the model"),
    ({"decide": ignores_the_warning}, "memory-pressure warning"),
    ({"decide": goes_on_after_send_message}, "send_message ends the turn, after the other"),
    ({"extra_step": 1}, "max_steps"),
    ({"out_of_steps": ""}, "max_steps"),
    ({"send_at_once": True}, "send_message ends the turn, after the other calls"),
    ({"reverse": True}, "run in order"),
    ({"text": False}, "plain text ends the turn"),
])
def test_a_wrong_loop_is_told_what_is_wrong_and_not_used(capsys, flip, phrase):
    def wrong(memory, tools, policy, user_text, max_steps=10):
        return loop(memory, tools, policy, user_text, max_steps, **flip)

    assert l05.check_loop(wrong) is l05.kernel_loop
    told_not_right(capsys, phrase)


def test_an_untouched_loop_stub_falls_back_to_vmem_with_one_line(capsys):
    assert l05.check_loop(stub) is l05.kernel_loop
    assert capsys.readouterr().out == "not written yet - using vmem's loop\n"


def test_the_cases_are_unseen_and_no_answer_comes_before_its_stub():
    for path in (COMPLETE, LEARNER):
        text = path.read_text(encoding="utf-8")
        assert l05.USER not in text and l05._ASKER not in text and l05._ORCHARD not in text
    sources = [cell.source if cell.cell_type == "code" else ""
               for cell in nbformat.read(COMPLETE, as_version=4).cells]
    stubs = [i for i, source in enumerate(sources) if "### BEGIN SOLUTION" in source]
    assert len(stubs) == 2
    decide_at, loop_at = stubs
    assert "def wants_another_step(results, warned):" in sources[decide_at]
    assert "another_step = check_decision(wants_another_step)" in sources[decide_at + 1]
    assert not any("result.message is not None" in source for source in sources[:decide_at])
    assert "def tiny_loop(" in sources[loop_at]
    assert "another_step(" in sources[loop_at] and "wants_another_step(" not in sources[loop_at]
    assert not any("max_steps + 1" in source for source in sources[:loop_at])
    assert "loop = check_loop(tiny_loop)" in sources[loop_at + 1]
    assert any("loop(ours, tools, script(), question)" in source
               for source in sources[loop_at + 2:])
