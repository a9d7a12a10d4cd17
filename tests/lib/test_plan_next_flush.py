"""`MainContext.plan_next_flush` predicts exactly what the next flush evicts.

Over random conversations (tool-call runs that must stay whole, the newest user message
that must stay, huge messages, core edits that push the prompt over budget, summarizers
that fail), the plan made before each append must name the very messages that append's
flush evicts and the summary it writes, and say None exactly when the append does not
flush; the plan made before `fit()` must match what `fit()` evicts.
"""

from __future__ import annotations

import pytest
from context_helpers import Boom, Silent  # conftest puts tests/helpers on sys.path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_context_properties import STEP, edit_core, messages_for

from vmem.clock import StepClock
from vmem.context import MainContext
from vmem.core import CoreMemory
from vmem.errors import ContextOverflowError, CoreMemoryError
from vmem.messages import Message
from vmem.summarize import ExtractiveSummarizer

SUMMARIZERS = {"extractive": ExtractiveSummarizer, "boom": Boom, "silent": Silent}


def first_flush(events) -> tuple[tuple[int, ...], str | None] | None:
    """(ids evicted, new summary or None) of the first flush among `events`."""
    for index, event in enumerate(events):
        if event.kind == "evicted":
            after = events[index + 1] if index + 1 < len(events) else None
            summary = after.detail if after is not None and after.kind == "summarized" \
                else None
            return event.message_ids, summary
    return None


def predicted(plan) -> tuple[tuple[int, ...], str | None] | None:
    return None if plan is None else (plan.ids, plan.summary)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=60), budget=st.integers(200, 700),
       thresholds=st.sampled_from([(0.7, 0.5), (0.9, 0.3), (0.6, 0.55), (1.0, 0.2)]),
       summarizer=st.sampled_from(sorted(SUMMARIZERS)))
def test_the_plan_names_what_the_next_flush_evicts(steps, budget, thresholds,
                                                  summarizer) -> None:
    clock = StepClock()
    core = CoreMemory.default(clock=clock)
    ctx = MainContext("You are a helpful assistant.", core, budget, clock=clock,
                      warn_at=thresholds[0], flush_to=thresholds[1],
                      summarizer=SUMMARIZERS[summarizer]())
    for number, step in enumerate(steps):
        if step[0] == "edit":
            try:
                edit_core(core, step[1], step[2])
            except CoreMemoryError:
                continue
            plan, seen = ctx.plan_next_flush(), len(ctx.events)
            try:
                ctx.fit()
            except ContextOverflowError:
                continue
            if ctx.events[seen:]:
                assert predicted(plan) == first_flush(ctx.events[seen:])
            continue
        for message in messages_for(step, number):
            before = [m.id for m in ctx.messages]
            plan, seen = ctx.plan_next_flush(message, now=clock.now), len(ctx.events)
            assert [m.id for m in ctx.messages] == before and len(ctx.events) == seen
            try:
                ctx.append(message)
            except ContextOverflowError:
                break
            assert predicted(plan) == first_flush(ctx.events[seen:])
            if plan is not None:  # the message being appended always stays
                assert message not in plan.messages


def test_a_plan_keeps_a_tool_run_whole_and_the_newest_user_message() -> None:
    clock = StepClock()
    ctx = MainContext("You are a helpful assistant.", CoreMemory.default(clock=clock), 260,
                      clock=clock)
    question = ctx.append(Message("user", "What is my locker code? " * 4))
    call = {"id": "c1", "type": "function",
            "function": {"name": "archival_memory_search", "arguments": '{"query": "code"}'}}
    run = [ctx.append(Message("assistant", "", tool_calls=[call])),
           ctx.append(Message("tool", "record 1: locker code 1000 " * 3, tool_call_id="c1"))]
    ctx.append(Message("assistant", "Your locker code is 1000. " * 3))
    plan = ctx.plan_next_flush()
    assert plan is not None and question not in plan.messages  # the newest user message
    assert set(plan.ids) & {m.id for m in run} in (set(), {m.id for m in run})
    assert ctx.plan_next_flush(Message("assistant", "ok")) is None  # fits: no flush


def test_planning_changes_nothing_and_never_reads_the_clock() -> None:
    clock = StepClock()
    ctx = MainContext("You are a helpful assistant.", CoreMemory.default(clock=clock), 320,
                      clock=clock)
    for i in range(30):
        ctx.append(Message("user", f"Note {i}: my locker code today is {1000 + 7 * i}."))
    assert any(event.kind == "evicted" for event in ctx.events)
    state, now, events = ctx.state(), clock.now, len(ctx.events)
    plan = ctx.plan_next_flush(Message("user", "Note 30: the code is 1210 " * 6))
    assert plan is not None and plan.messages
    assert (ctx.state(), clock.now, len(ctx.events)) == (state, now, events)


@pytest.mark.parametrize("count", [0, 1])
def test_nothing_to_plan_on_a_context_with_nothing_evictable(count) -> None:
    clock = StepClock()
    ctx = MainContext("You are a helpful assistant.", CoreMemory.default(clock=clock), 300,
                      clock=clock)
    for _ in range(count):
        ctx.append(Message("user", "hello"))
    assert ctx.plan_next_flush() is None
