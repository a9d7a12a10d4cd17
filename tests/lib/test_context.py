"""The main context: layout, budget, pressure warning, eviction at safe points, summary."""

from __future__ import annotations

import json

import pytest
from context_helpers import (  # conftest puts tests/helpers on sys.path
    Boom,
    Silent,
    approx,
    prompt_tokens,
)

from vmem.context import MainContext
from vmem.core import CoreMemory
from vmem.errors import ContextOverflowError
from vmem.messages import Message
from vmem.summarize import ExtractiveSummarizer

SYSTEM = "You are a helpful assistant."
TOOLS = [{"type": "function", "function": {
    "name": "conversation_search", "description": "Search earlier messages.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]


def words(count: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{index}" for index in range(count))


def call(call_id: str, name: str = "archival_memory_search") -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps({"query": call_id})}}


def tool_run(call_ids: list[str], result_words: int = 5) -> list[Message]:
    return [Message("assistant", "", tool_calls=[call(cid) for cid in call_ids]),
            *(Message("tool", words(result_words, cid), tool_call_id=cid) for cid in call_ids)]


def make(clock, max_tokens: int = 400, **options) -> MainContext:
    return MainContext(SYSTEM, CoreMemory.default(clock=clock), max_tokens, clock=clock,
                       **options)


def ids(messages) -> list[int]:
    return [message.id for message in messages]


def kinds(ctx: MainContext) -> list[str]:
    return [event.kind for event in ctx.events]


# -- layout and counting ---------------------------------------------------------------

def test_prompt_before_any_message_is_under_200_tokens(clock) -> None:
    ctx = make(clock)
    assert ctx.tokens() < 200
    assert len(ctx.render()) == 2


def test_render_is_stable_prefix_then_queue_then_status(clock) -> None:
    ctx = make(clock, archival=[1, 2, 3])
    ctx.append(Message("user", "hello", name="Ada"))
    ctx.append(Message("assistant", "hi Ada"))
    first, *queue, last = ctx.render()
    assert first["role"] == "system"
    assert first["content"].startswith(SYSTEM) and ctx.core.render() in first["content"]
    assert queue == [{"role": "user", "content": "hello", "name": "Ada"},
                     {"role": "assistant", "content": "hi Ada"}]
    assert last == {"role": "system", "content": "Memory status: 2 messages in recall memory, "
                    "3 records in archival memory; last change 2024-01-01 09:00 UTC."}


def test_tokens_count_everything_rendered_plus_tool_schemas(clock) -> None:
    ctx = make(clock, tools=TOOLS)
    ctx.append(Message("user", "find what I said about my sister", name="Ada"))
    for message in tool_run(["c1"]):
        ctx.append(message)
    expected = prompt_tokens(ctx.render()) + approx(json.dumps(TOOLS))
    assert ctx.tokens() == expected
    overview = ctx.overview()
    assert overview["total"] == expected
    parts = ("system", "core", "summary", "messages", "status", "tools")
    assert sum(overview[part] for part in parts) == expected
    assert overview["tools"] == approx(json.dumps(TOOLS))
    assert overview["core"] == approx(ctx.core.render())


def test_stable_prefix_changes_only_on_flush_or_core_edit(clock) -> None:
    ctx = make(clock, max_tokens=600)
    ctx.append(Message("user", words(10)))
    prefix, status = ctx.render()[0], ctx.render()[-1]
    ctx.append(Message("assistant", words(10)))
    assert ctx.render()[0] == prefix and ctx.render()[-1] != status
    while "evicted" not in kinds(ctx):
        ctx.append(Message("user", words(30)))
    assert ctx.render()[0] != prefix
    prefix = ctx.render()[0]
    ctx.core.append("human", "Name: Ada")
    assert ctx.render()[0] != prefix and "Name: Ada" in ctx.render()[0]["content"]


def test_every_message_goes_to_recall_once_and_queue_is_an_ordered_subset(clock) -> None:
    ctx = make(clock)
    appended = [ctx.append(Message("user" if n % 2 else "assistant", words(25, f"m{n}_")))
                for n in range(30)]
    stored = ctx.recall.get_many(range(1, len(ctx.recall) + 1))
    assert len(stored) == len(ctx.recall) == len(appended) + kinds(ctx).count("warned")
    assert set(ids(appended)) <= set(ids(stored))
    queue = ids(ctx.messages)
    assert queue == sorted(queue) and set(queue) <= set(ids(stored))
    assert stored[0].content == appended[0].content


def test_append_refuses_a_message_already_stored(clock) -> None:
    ctx = make(clock)
    message = ctx.append(Message("user", "hi"))
    with pytest.raises(ValueError, match="already stored"):
        ctx.append(message)
    assert len(ctx.recall) == 1 and len(ctx.messages) == 1


def test_empty_and_unicode_messages(clock) -> None:
    ctx = make(clock)
    empty = ctx.append(Message("user", ""))
    text = "Zoë wohnt in Zürich 🏔️ 日本語 テキスト"
    unicode = ctx.append(Message("assistant", text))
    assert ctx.recall.get(empty.id).content == ""
    assert ctx.recall.get(unicode.id).content == text
    assert ctx.overview()["messages"] == approx("user") + approx("assistant " + text)


def test_options_are_validated(clock) -> None:
    with pytest.raises(ValueError, match="flush_to"):
        make(clock, warn_at=0.5, flush_to=0.5)
    with pytest.raises(ValueError, match="max_tokens"):
        make(clock, max_tokens=0)


# -- memory pressure -------------------------------------------------------------------

def test_warning_fires_once_at_warn_at_and_rearms_after_a_flush(clock) -> None:
    ctx = make(clock)
    while "warned" not in kinds(ctx):
        before = ctx.tokens()
        ctx.append(Message("user", words(20)))
    assert before < 0.7 * 400
    notice = ctx.messages[-1]
    assert notice.role == "system" and notice.meta == {"notice": "memory_pressure"}
    assert "Memory pressure" in notice.content and "archival" in notice.content
    assert ctx.recall.get(notice.id).content == notice.content
    warned_at = ctx.events[-1].tokens
    assert warned_at >= 0.7 * 400
    for _ in range(12):
        ctx.append(Message("user", words(20)))
    sequence = [kind for kind in kinds(ctx) if kind in ("warned", "evicted")]
    assert sequence.count("warned") >= 2 and "warned" not in sequence[1:2]
    for earlier, later in zip(sequence, sequence[1:], strict=False):
        assert not earlier == later == "warned", sequence


def test_warning_waits_until_a_tool_call_run_is_complete(clock) -> None:
    ctx = make(clock)
    ctx.append(Message("user", words(100)))
    assistant, result_1, result_2 = tool_run(["a", "b"], result_words=20)
    ctx.append(Message("assistant", words(20)))
    ctx.append(assistant)
    ctx.append(result_1)  # past 70% while call "b" is still unanswered
    assert ctx.tokens() >= 0.7 * 400 and "warned" not in kinds(ctx)
    ctx.append(result_2)
    assert kinds(ctx)[-1] == "warned"
    roles = [chat["role"] for chat in ctx.render()]
    position = ids(ctx.messages).index(assistant.id) + 1
    assert roles[position:position + 4] == ["assistant", "tool", "tool", "system"]


# -- flush -----------------------------------------------------------------------------

def test_flush_evicts_down_to_about_flush_to_and_summarizes(clock) -> None:
    ctx = make(clock, max_tokens=800)
    facts = [Message("user", f"My cousin number {n} lives in city {n} since {2000 + n}.")
             for n in range(80)]
    for message in facts:
        ctx.append(message)
        if "evicted" in kinds(ctx):
            break
    assert ctx.tokens() <= 0.5 * 800
    evicted = next(event for event in ctx.events if event.kind == "evicted")
    summarized = next(event for event in ctx.events if event.kind == "summarized")
    assert evicted.message_ids == summarized.message_ids
    assert ids(ctx.messages)[0] > max(evicted.message_ids)
    last_fact = [m.content for m in ctx.recall.get_many(evicted.message_ids)
                 if m.role == "user"][-1]
    assert ctx.summary == summarized.detail and last_fact in ctx.summary
    system = ctx.render()[0]["content"]
    assert f"{len(evicted.message_ids)} earlier messages" in system
    assert "conversation_search" in system and ctx.summary in system


def test_a_tool_run_at_the_cut_point_is_evicted_whole(clock) -> None:
    class Short:
        def summarize(self, previous, evicted):
            return "Earlier we chatted."

    ctx = make(clock, max_tokens=600, summarizer=Short(), warn_at=0.95)
    first = ctx.append(Message("user", words(100)))  # 132 tokens
    call_message, *results = tool_run(["x", "y"], result_words=5)
    call_message.content = words(150, "c")  # a big call (205 tokens), small results
    run = [ctx.append(message) for message in (call_message, *results)]
    ctx.append(Message("assistant", "done"))
    ctx.append(Message("user", words(110)))  # 606 > 600: flush to 300
    # evicting `first` alone leaves about 500 tokens; `first` and the call alone would
    # reach the target but orphan the results: the whole run must go
    evicted = [event for event in ctx.events if event.kind == "evicted"]
    assert len(evicted) == 1
    assert set(evicted[0].message_ids) == {first.id, *ids(run)}
    assert [m.role for m in ctx.messages] == ["assistant", "user"]
    assert ctx.tokens() <= 300


def test_tool_runs_are_never_split_and_open_runs_stay(clock) -> None:
    ctx = make(clock, max_tokens=400)
    ctx.append(Message("user", words(30)))
    ctx.append(Message("assistant", words(30)))
    ctx.append(Message("user", "search please"))
    assistant, *results = tool_run(["p", "q", "r"], result_words=45)
    for message in [assistant, *results]:
        ctx.append(message)
        queue = ids(ctx.messages)
        assert assistant.id in queue
        assert all(m.id in queue for m in results if m.id is not None)
    assert "evicted" in kinds(ctx)
    queue = ctx.messages
    start = ids(queue).index(assistant.id)
    assert ids(queue[start:start + 4]) == ids([assistant, *results])


def test_the_newest_user_message_stays_even_when_newer_messages_go(clock) -> None:
    ctx = make(clock, max_tokens=400)
    ctx.append(Message("user", words(10)))
    question = ctx.append(Message("user", words(60, "q")))
    answers = [ctx.append(message) for name in "abcd" for message in tool_run([name], 40)]
    assert "evicted" in kinds(ctx)
    queue = ids(ctx.messages)
    assert question.id in queue
    assert any(answer.id not in queue for answer in answers)


def test_a_huge_newest_user_message_that_fits_evicts_everything_else(clock) -> None:
    ctx = make(clock, max_tokens=400)
    for n in range(4):
        ctx.append(Message("user" if n % 2 == 0 else "assistant", words(15)))
    huge = ctx.append(Message("user", words(180)))
    assert ids(ctx.messages) == [huge.id]
    assert ctx.tokens() <= 400


def test_a_message_that_cannot_fit_is_kept_whole_in_recall_and_shown_clipped(clock) -> None:
    ctx = make(clock, max_tokens=400)
    first = ctx.append(Message("user", words(10)))
    whole = words(400)
    message = ctx.append(Message("user", whole))
    shown = ctx.messages[-1]
    assert ids(ctx.messages) == [first.id, message.id]  # it takes at most half the room
    overview = ctx.overview()
    assert approx(f"user {shown.content}") <= (400 - overview["total"] + overview["messages"]) // 2
    assert ctx.recall.get(message.id).content == whole == message.content
    note, _, text = shown.content.partition("\n")
    assert note.startswith(f"[message {message.id}, {approx('user ' + whole)} tokens, clipped")
    assert whole.startswith(text.rstrip("…")) and len(text) < len(whole)
    assert ctx.tokens() == prompt_tokens(ctx.render()) <= 400


def test_a_tool_result_too_big_for_its_open_run_is_clipped_beside_its_call(clock) -> None:
    ctx = make(clock, max_tokens=400)
    question = ctx.append(Message("user", words(60)))
    assistant, result = tool_run(["z"], result_words=220)
    ctx.append(assistant)
    ctx.append(result)
    queue = ids(ctx.messages)
    start = queue.index(question.id)
    assert queue[start:start + 3] == [question.id, assistant.id, result.id]
    shown = ctx.messages[start + 2]
    assert shown.tool_call_id == "z" and "ask for less" in shown.content
    assert ctx.recall.get(result.id).content == words(220, "z")
    assert ctx.tokens() <= 400


def test_a_message_whose_note_alone_cannot_fit_is_refused_and_nothing_changes(clock) -> None:
    """A user message that fits whole but leaves less than a note's room: the reply after
    it cannot be shown even clipped, and is refused with the sizes that leave no room."""
    for size in range(150, 300):  # the first user message that leaves too little room
        ctx = make(clock, max_tokens=400)
        ctx.append(Message("user", words(size)))
        if "clipped" in kinds(ctx):
            pytest.fail("no user message size left less than a note's room")
        before = (len(ctx.recall), ids(ctx.messages), list(ctx.events), ctx.render())
        message = Message("assistant", words(100))
        try:
            ctx.append(message)
        except ContextOverflowError as refused:
            text = str(refused)
            break
    assert "budget is 400" in text and "newest user message or the tool call" in text
    assert message.id is None
    assert (len(ctx.recall), ids(ctx.messages), list(ctx.events), ctx.render()) == before


def test_system_and_core_alone_over_budget_is_an_error(clock) -> None:
    with pytest.raises(ContextOverflowError, match=r"core memory.*budget of 50"):
        make(clock, max_tokens=50)
    ctx = make(clock, max_tokens=300)
    ctx.core.rethink("human", words(180))
    with pytest.raises(ContextOverflowError, match="system prompt and core memory alone"):
        ctx.append(Message("user", "hi"))
    assert len(ctx.recall) == 0


# -- summary failures ------------------------------------------------------------------

def test_a_failing_summarizer_still_evicts_and_says_so(clock) -> None:
    ctx = make(clock, summarizer=Boom())
    appended = []
    while "evicted" not in kinds(ctx):
        appended.append(ctx.append(Message("user", words(20))))
    failed = next(event for event in ctx.events if event.kind == "summary_failed")
    assert "model offline" in failed.detail
    assert ctx.summary is None and ctx.tokens() <= 400
    system = ctx.render()[0]["content"]
    assert "summarizing failed" in system and "No summary" in system
    assert ctx.recall.get_many(ids(appended))  # all safe in recall
    # once the summarizer works again, the next flush catches up on the missed messages
    ctx.summarizer = ExtractiveSummarizer()
    while kinds(ctx).count("evicted") < 2:
        ctx.append(Message("user", words(20)))
    summarized = next(event for event in ctx.events if event.kind == "summarized")
    assert set(failed.message_ids) <= set(summarized.message_ids)
    assert "summarizing failed" not in ctx.render()[0]["content"]


def test_an_empty_summary_keeps_the_old_one(clock) -> None:
    ctx = make(clock)
    while "summarized" not in kinds(ctx):
        ctx.append(Message("user", "My sister Ana lives in Lisbon. " + words(15)))
    old = ctx.summary
    ctx.summarizer = Silent()
    while "summary_failed" not in kinds(ctx):
        ctx.append(Message("user", words(20)))
    assert ctx.summary == old
    failed = [event for event in ctx.events if event.kind == "summary_failed"]
    assert [event.detail for event in failed] == ["the summarizer returned no summary"]


def test_a_summary_too_long_for_the_budget_is_refused(clock) -> None:
    class Verbose:
        def summarize(self, previous, evicted):
            return words(500)

    ctx = make(clock, summarizer=Verbose())
    for _ in range(15):
        ctx.append(Message("user", words(20)))
        assert ctx.tokens() <= 400
    assert any(event.kind == "summary_failed" and "too long" in event.detail
               for event in ctx.events)
    assert ctx.summary is None


# -- events and persistence ------------------------------------------------------------

def test_events_replay_the_queue(clock) -> None:
    ctx = make(clock)
    for n in range(25):
        ctx.append(Message("user" if n % 3 else "assistant", words(18)))
    queue: list[int] = []
    for event in ctx.events:
        if event.kind in ("appended", "warned"):
            queue.extend(event.message_ids)
        elif event.kind == "evicted":
            queue = [mid for mid in queue if mid not in event.message_ids]
    assert queue == ids(ctx.messages)
    assert ctx.events[-1].tokens == ctx.tokens()
    assert all(event.time.tzinfo is not None for event in ctx.events)


def test_state_round_trips_through_json_and_restores_the_same_prompt(clock) -> None:
    ctx = make(clock, summarizer=Boom())
    for _ in range(12):
        ctx.append(Message("user", words(20)))
    ctx.summarizer = ExtractiveSummarizer()
    for _ in range(6):
        ctx.append(Message("assistant", "I will remember that your cat is Tom. " + words(12)))
    state = json.loads(json.dumps(ctx.state()))
    assert state["message_ids"] == ids(ctx.messages)
    restored = MainContext(SYSTEM, ctx.core, 400, recall=ctx.recall, clock=clock)
    restored.restore(state)
    assert restored.render() == ctx.render()
    assert restored.tokens() == ctx.tokens() and restored.summary == ctx.summary
    assert restored.state() == state
    assert [event.kind for event in restored.events] == ["restored"]
    with pytest.raises(ValueError, match="in that order"):
        restored.restore(state, messages=list(reversed(ctx.messages)))


def test_scope_is_passed_to_recall(clock) -> None:
    ctx = make(clock, scope={"user_id": "ada"})
    ctx.append(Message("user", "planning a Lisbon trip"))
    assert ctx.recall.search("lisbon", scope={"user_id": "ada"}).total == 1
    assert ctx.recall.search("lisbon", scope={"user_id": "bob"}).total == 0
