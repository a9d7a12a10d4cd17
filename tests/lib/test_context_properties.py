"""Property tests: the main context's invariants hold over random conversations.

Run with `--hypothesis-show-statistics` to see how many cases ran and the largest
conversation tried (the `messages stored` target).
"""

from __future__ import annotations

import json
import random

import pytest
from context_helpers import (  # conftest puts tests/helpers on sys.path
    Boom,
    Silent,
    approx,
    prompt_tokens,
)
from hypothesis import HealthCheck, example, given, settings, target
from hypothesis import strategies as st

from vmem.clipping import ClippedView
from vmem.clock import StepClock
from vmem.context import MainContext
from vmem.core import Block, CoreMemory
from vmem.errors import ContextOverflowError, CoreMemoryError
from vmem.messages import Message
from vmem.summarize import ExtractiveSummarizer

TOOLS = [{"type": "function", "function": {"name": "conversation_search",
                                           "parameters": {"type": "object"}}}]
WORDS = ["I", "my", "sister", "Ana", "lives", "in", "Lisbon", "since", "2019", "ok", "the",
         "cat", "is", "called", "Tom", "Zoë", "Zürich", "日本語", "🙂", "thanks", "?", "."]
TEXT = st.lists(st.sampled_from(WORDS), max_size=40).map(" ".join)
HUGE = st.integers(80, 2500).map(lambda n: " ".join(["x"] * n))  # up to 3,250 tokens: clipped
STEP = st.one_of(
    st.tuples(st.just("user"), st.one_of(TEXT, TEXT, TEXT, HUGE)),
    st.tuples(st.just("assistant"), TEXT),
    st.tuples(st.just("run"), st.integers(1, 3), st.one_of(TEXT, HUGE)),
    st.tuples(st.just("edit"), st.sampled_from(["append", "replace", "rethink", "insert"]),
              TEXT),
)


class Flaky:
    """Fails on every other call."""

    def __init__(self) -> None:
        self.calls = 0
        self.inner = ExtractiveSummarizer()

    def summarize(self, previous, evicted):
        self.calls += 1
        if self.calls % 2:
            raise TimeoutError("try again")
        return self.inner.summarize(previous, evicted)


SUMMARIZERS = {"extractive": ExtractiveSummarizer, "boom": Boom, "silent": Silent,
               "flaky": Flaky}


def messages_for(step: tuple, number: int) -> list[Message]:
    kind = step[0]
    if kind in ("user", "assistant"):
        return [Message(kind, step[1])]
    count, text = step[1], step[2]
    calls = [{"id": f"call_{number}_{index}", "type": "function",
              "function": {"name": "archival_memory_search", "arguments": '{"query": "x"}'}}
             for index in range(count)]
    return [Message("assistant", "", tool_calls=calls),
            *(Message("tool", text, tool_call_id=call["id"]) for call in calls)]


def edit_core(core: CoreMemory, op: str, text: str) -> None:
    if op == "append":
        core.append("human", text)
    elif op == "replace":
        core.replace("human", text[:5], text[::-1])
    elif op == "insert":
        core.insert("human", text, line=len(text) % 4 - 1)
    else:
        core.rethink("persona", text * 80)


def check_tool_runs(queue: list[Message], stored: dict[int, Message]) -> None:
    """No tool result without its call right before it; no call without its stored results."""
    results_of: dict[str, int] = {m.tool_call_id: m.id for m in stored.values()
                                  if m.role == "tool"}
    queued = {m.id for m in queue}
    for index, message in enumerate(queue):
        if message.role == "tool":
            back = index - 1
            while queue[back].role == "tool":
                back -= 1
            caller = queue[back]
            assert back >= 0 and caller.role == "assistant"
            assert message.tool_call_id in {call["id"] for call in caller.tool_calls}
        elif message.tool_calls:
            for call in message.tool_calls:
                if call["id"] in results_of:
                    assert results_of[call["id"]] in queued, "a call lost its result"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=60), budget=st.integers(200, 900),
       thresholds=st.sampled_from([(0.7, 0.5), (0.9, 0.3), (0.6, 0.55), (1.0, 0.2)]),
       summarizer=st.sampled_from(sorted(SUMMARIZERS)), with_tools=st.booleans())
# found by hypothesis: the status line's "last change none yet" becoming a time costs a token
@example(steps=[("user", " ".join(["x"] * 80))], budget=207, thresholds=(0.7, 0.5),
         summarizer="boom", with_tools=False)
def test_random_conversations_keep_every_invariant(steps, budget, thresholds, summarizer,
                                                   with_tools) -> None:
    clock = StepClock()
    core = CoreMemory.default(clock=clock)
    tools = TOOLS if with_tools else []
    try:
        ctx = MainContext("You are a helpful assistant.", core, budget, clock=clock,
                          tools=tools, warn_at=thresholds[0], flush_to=thresholds[1],
                          summarizer=SUMMARIZERS[summarizer]())
    except ContextOverflowError:
        assert budget < 200 + approx(json.dumps(tools))
        return
    stored: dict[int, Message] = {}
    newest_user: int | None = None
    for number, step in enumerate(steps):
        if step[0] == "edit":
            before = json.dumps(core.to_dict(history=True))
            try:
                edit_core(core, step[1], step[2])
            except CoreMemoryError:
                assert json.dumps(core.to_dict(history=True)) == before
            continue
        for message in messages_for(step, number):
            snapshot = (len(ctx.recall), [m.id for m in ctx.messages], len(ctx.events),
                        ctx.summary)
            try:
                ctx.append(message)
            except ContextOverflowError:
                assert message.id is None
                assert snapshot == (len(ctx.recall), [m.id for m in ctx.messages],
                                    len(ctx.events), ctx.summary)
                break  # an agent would not send the rest of a refused run
            stored[message.id] = message
            if message.role == "user":
                newest_user = message.id
            for event in ctx.events[-3:]:
                if event.kind == "warned":
                    stored.setdefault(event.message_ids[0], ctx.recall.get(event.message_ids[0]))
            # the budget holds and the count is exactly what is rendered
            assert ctx.tokens() <= budget
            assert ctx.tokens() == prompt_tokens(ctx.render(), tools)
            # everything is in recall exactly once; the queue is an in-order subset
            assert len(ctx.recall) == len(stored)
            queue = [m.id for m in ctx.messages]
            assert queue == sorted(queue) and set(queue) <= set(stored)
            for shown in ctx.messages:  # whole, or a view naming the whole, as it was appended
                assert shown.content == stored[shown.id].content or (
                    isinstance(shown, ClippedView) and
                    shown.content.startswith(f"[message {shown.id}, {shown.whole_tokens:,} "
                                             "tokens, clipped:"))
            assert newest_user is None or newest_user in queue
            check_tool_runs(ctx.messages, stored)
    # nothing is lost: each stored message is in the queue or was evicted exactly once
    evicted = [mid for event in ctx.events if event.kind == "evicted"
               for mid in event.message_ids]
    assert len(evicted) == len(set(evicted))
    assert sorted(evicted + [m.id for m in ctx.messages]) == sorted(stored)
    assert [m.content for m in ctx.recall.get_many(sorted(stored))] == \
        [stored[mid].content for mid in sorted(stored)]
    if summarizer in ("boom", "silent"):
        assert ctx.summary is None
    target(float(len(stored)), label="messages stored")


EDIT = st.tuples(st.sampled_from(["append", "replace", "insert", "rethink"]),
                 st.sampled_from(["notes", "fixed", "missing"]),
                 st.text(alphabet="ab \n", max_size=25), st.text(alphabet="ab", max_size=6),
                 st.booleans(), st.integers(-4, 6))


@settings(max_examples=300, deadline=None)
@given(edits=st.lists(EDIT, max_size=30))
def test_a_failed_core_edit_leaves_core_memory_byte_identical(edits) -> None:
    core = CoreMemory([Block("notes", "ab", limit=30), Block("fixed", "a", read_only=True)],
                      clock=StepClock())
    for op, label, text, old, replace_all, line in edits:
        before = json.dumps(core.to_dict(history=True), sort_keys=True)
        try:
            if op == "append":
                core.append(label, text)
            elif op == "replace":
                core.replace(label, old, text, replace_all=replace_all)
            elif op == "insert":
                core.insert(label, text, line=line)
            else:
                core.rethink(label, text)
        except CoreMemoryError:
            assert json.dumps(core.to_dict(history=True), sort_keys=True) == before
        else:
            assert json.dumps(core.to_dict(history=True), sort_keys=True) != before or \
                op in ("replace", "rethink")  # a no-op rewrite still adds history
        for block in core:
            assert len(block.value) <= block.limit
        assert core.get("fixed").value == "a"


@pytest.mark.slow
def test_a_20000_message_conversation_holds_every_invariant() -> None:
    """A soak run far longer than the hypothesis cases: budget, recall and tool pairs hold
    after every one of 20,000 appends (about 1,000 flushes)."""
    rng = random.Random(7)
    clock = StepClock()
    context = MainContext("You are helpful.", CoreMemory.default(clock=clock), 1500,
                          clock=clock)
    words = ["the", "cat", "sat", "on", "a", "mat", "while", "my", "sister", "Maya",
             "moved", "to", "Lisbon", "in", "2019"]
    appended: list[Message] = []
    while len(appended) < 20_000:
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 60)))
        if rng.random() < 0.1:
            call_id = f"c{len(appended)}"
            call = {"id": call_id, "type": "function",
                    "function": {"name": "archival_memory_search", "arguments": "{}"}}
            appended.append(context.append(Message("assistant", "", tool_calls=[call])))
            appended.append(context.append(Message("tool", text, tool_call_id=call_id)))
        else:
            appended.append(context.append(Message(rng.choice(["user", "assistant"]), text)))
        assert context.tokens() <= context.max_tokens
        queue = context.messages
        assert not queue or queue[0].role != "tool", "a tool result lost its call"
    stored = context.recall.get_many([message.id for message in appended])
    assert [message.content for message in stored] == [m.content for m in appended]
    assert sum(event.kind == "evicted" for event in context.events) > 500
