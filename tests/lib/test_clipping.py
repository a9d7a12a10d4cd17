"""A message too big for the main context is kept whole in recall and shown clipped.

The context's queue shows a view headed by a note naming the message; recall keeps the
whole; the prompt stays within budget through flushes, summaries and a reopen.
"""

from __future__ import annotations

import json

import pytest
from context_helpers import approx, prompt_tokens  # conftest puts tests/helpers on sys.path

from vmem.agentfile import export_document, import_document
from vmem.clipping import ClippedView, clipped_view
from vmem.clock import StepClock
from vmem.context import MainContext
from vmem.core import CoreMemory
from vmem.errors import InputTooLargeError, StoreError
from vmem.memory import Memory
from vmem.messages import Message
from vmem.storage import open_backend
from vmem.summarize import ExtractiveSummarizer


def paste(count: int, tag: str = "p") -> str:
    """`count` distinct words: a long paste whose every word says where it was."""
    return " ".join(f"{tag}{index}" for index in range(count))


def shown_text(view: Message) -> str:
    """The text a view shows after its note line."""
    return view.content.partition("\n")[2]


def test_a_6000_word_message_on_a_2000_token_memory_is_kept_whole_and_found() -> None:
    whole = paste(6000).replace("p4321 ", "zanzibar ")
    with Memory.open(":memory:", max_tokens=2000) as memory:
        message = memory.context.append(Message("user", whole))
        assert memory.context.tokens() <= 2000
        assert memory.context.tokens() == prompt_tokens(memory.context.render())
        hits = memory.recall.search("zanzibar").hits
        assert [hit.record.id for hit in hits] == [message.id]
        assert hits[0].record.content == whole


def test_the_view_names_the_message_and_shows_its_start() -> None:
    with Memory.open(":memory:", max_tokens=2000) as memory:
        whole = paste(6000)
        message = memory.context.append(Message("user", whole))
        view = memory.context.messages[-1]
        assert isinstance(view, ClippedView) and view.id == message.id
        note = view.content.partition("\n")[0]
        size = approx(f"user {whole}")
        assert note == (f"[message {message.id}, {size:,} tokens, clipped: the whole message "
                        f"is in recall memory; conversation_search or "
                        f"recall.get({message.id}) reads it]")
        text = shown_text(view)
        assert text.endswith("…") and whole.startswith(text[:-1])
        assert len(text.split()) > 100  # it shows a real part of the message, not the note alone
        assert view.whole_tokens == size and message.content == whole


def test_the_clip_leaves_room_for_the_reply() -> None:
    with Memory.open(":memory:", max_tokens=2000) as memory:
        memory.context.append(Message("user", paste(6000)))
        reply = memory.context.append(Message("assistant", paste(150, "r")))
        kinds = [event.kind for event in memory.context.events]
        assert kinds.count("clipped") == 1 and "evicted" not in kinds
        assert memory.context.messages[-1].content == reply.content
        assert memory.context.tokens() <= 2000


def test_clipped_and_appended_events_say_what_a_widget_needs(clock) -> None:
    context = MainContext("Be brief.", CoreMemory.default(clock=clock), 400, clock=clock)
    message = context.append(Message("user", paste(1000)))
    appended, clipped = context.events[-2:]
    assert (appended.kind, clipped.kind) == ("appended", "clipped")
    assert appended.message_ids == clipped.message_ids == (message.id,)
    assert appended.size == approx(f"user {context.messages[-1].content}")
    assert clipped.size == approx(f"user {message.content}")
    assert clipped.detail.startswith(f"[message {message.id}, ") and clipped.tokens <= 400


def test_a_clipped_message_is_evicted_and_summarized_as_the_context_showed_it(clock) -> None:
    seen: list[Message] = []

    class Recording(ExtractiveSummarizer):
        def summarize(self, previous, evicted):
            seen.extend(evicted)
            return super().summarize(previous, evicted)

    context = MainContext("Be brief.", CoreMemory.default(clock=clock), 600, clock=clock,
                          summarizer=Recording())
    huge = context.append(Message("user", paste(3000)))
    view = context.messages[-1]
    while huge.id in [message.id for message in context.messages]:
        context.append(Message("user", paste(40, "u")))
        assert context.tokens() <= 600
    evicted = next(event for event in context.events
                   if event.kind == "evicted" and huge.id in event.message_ids)
    assert evicted.size >= approx(f"user {view.content}")
    summarized = next(message for message in seen if message.id == huge.id)
    assert summarized.content == view.content != huge.content
    assert len(context.summary.split()) <= 60  # the default summarizer's cap
    assert context.state()["clipped"] == []  # nothing clipped is left to show
    assert context.recall.get(huge.id).content == huge.content


def test_a_reopened_memory_shows_the_same_clipped_prompt(tmp_path) -> None:
    path = tmp_path / "agent.db"
    clock = StepClock()
    with Memory.open(path, max_tokens=2000, clock=clock) as memory:
        memory.context.append(Message("user", "hello"))
        message = memory.context.append(Message("user", paste(6000)))
        memory.context.append(Message("assistant", "That is a long one."))
        before = memory.context.render()
    with Memory.open(path, max_tokens=2000, clock=clock) as memory:
        assert memory.context.render() == before
        view = memory.context.messages[-2]
        assert isinstance(view, ClippedView) and view.id == message.id
        assert memory.recall.get(message.id).content == message.content


def test_a_clipped_message_is_shown_the_same_after_export_and_import_under_new_ids(
        tmp_path) -> None:
    source, destination = str(tmp_path / "source.db"), str(tmp_path / "destination.db")
    with Memory.open(source, scope={"user_id": "ana"}, max_tokens=2000) as memory:
        memory.context.append(Message("user", paste(6000)))
        shown = shown_text(memory.context.messages[-1])
    with Memory.open(destination, scope={"user_id": "ben"}) as memory:
        for index in range(3):  # ids 1-3 are taken: Ana's messages get new ids
            memory.context.append(Message("user", f"hello {index}"))
    backend = open_backend(source)
    document = export_document(backend)
    backend.close()
    assert [pair[0] for pair in document["agents"][0]["context"]["clipped"]] == [1]
    backend = open_backend(destination)
    import_document(backend, document)
    backend.close()
    with Memory.open(destination, scope={"user_id": "ana"}, max_tokens=2000) as memory:
        view = memory.context.messages[-1]
        assert isinstance(view, ClippedView) and view.id == 4
        assert view.content.startswith("[message 4, ") and shown_text(view) == shown
        assert memory.recall.get(4).content == paste(6000)


def test_a_tool_call_with_huge_arguments_keeps_its_id_and_valid_json(clock) -> None:
    context = MainContext("Be brief.", CoreMemory.default(clock=clock), 400, clock=clock)
    context.append(Message("user", "Save my notes."))
    arguments = json.dumps({"content": paste(2000)})
    call = {"id": "c1", "type": "function",
            "function": {"name": "archival_memory_insert", "arguments": arguments}}
    stored = context.append(Message("assistant", "", tool_calls=[call]))
    result = context.append(Message("tool", "Saved as record 1.", tool_call_id="c1"))
    view = next(message for message in context.messages if message.id == stored.id)
    shown_call = view.tool_calls[0]
    assert (shown_call["id"], shown_call["function"]["name"]) == ("c1", "archival_memory_insert")
    shown = json.loads(shown_call["function"]["arguments"])["clipped"]
    assert shown.endswith("…") and arguments.startswith(shown[:-1])
    assert context.messages[-1].id == result.id and context.tokens() <= 400
    assert context.recall.get(stored.id).tool_calls == [call]


def test_unicode_pastes_are_clipped_between_characters_and_found(clock) -> None:
    whole = " ".join(["日本語のテキスト", "Zürich", "🙂🙂", "naïve"] * 1500) + " kumquat"
    with Memory.open(":memory:", max_tokens=2000, clock=clock) as memory:
        message = memory.context.append(Message("user", whole))
        text = shown_text(memory.context.messages[-1])
        text.encode("utf-8")  # no broken surrogate pair: a str is cut between code points
        assert whole.startswith(text[:-1]) and memory.context.tokens() <= 2000
        assert memory.recall.search("kumquat").hits[0].record.content == whole == message.content


def test_bad_huge_input_is_refused_and_changes_nothing(clock) -> None:
    context = MainContext("Be brief.", CoreMemory.default(clock=clock), 400, clock=clock)
    context.append(Message("user", "hi"))
    before = (len(context.recall), context.render(), list(context.events), context.state())
    over = Message("user", "x " * 100_001)  # 200,002 characters: over recall's limit
    with pytest.raises(InputTooLargeError, match="200,002 characters; the limit is 200,000"):
        context.append(over)
    broken = Message("user", paste(1000) + " \ud800")  # an unpaired surrogate
    with pytest.raises(StoreError, match="unpaired surrogate"):
        context.append(broken)
    assert over.id is None and broken.id is None
    assert (len(context.recall), context.render(), list(context.events),
            context.state()) == before


def test_at_the_recall_limit_a_message_is_kept(clock) -> None:
    context = MainContext("Be brief.", CoreMemory.default(clock=clock), 400, clock=clock)
    whole = ("word " * 40_000)[:200_000]
    message = context.append(Message("user", whole))
    assert context.recall.get(message.id).content == whole and context.tokens() <= 400


def test_the_plan_for_a_huge_message_is_the_flush_its_append_runs(clock) -> None:
    context = MainContext("Be brief.", CoreMemory.default(clock=clock), 400, clock=clock)
    for index in range(6):
        context.append(Message("user" if index % 2 == 0 else "assistant", paste(30, f"m{index}")))
    incoming = Message("user", paste(2000))
    plan = context.plan_next_flush(incoming, now=clock.now)
    seen = len(context.events)
    context.append(incoming)
    flushed = next(event for event in context.events[seen:] if event.kind == "evicted")
    assert plan is not None and plan.ids == flushed.message_ids


def test_a_view_shows_more_as_keep_grows_and_leaves_the_message_alone() -> None:
    message = Message("assistant", paste(50), id=7)
    views = [clipped_view(message, 66, keep) for keep in (0, 10, 100, 10_000)]
    assert views[0].content.endswith("reads it]")  # the note alone
    assert [len(view.content) for view in views] == sorted(len(view.content) for view in views)
    assert shown_text(views[-1]) == message.content
    assert message.content == paste(50) and not isinstance(message, ClippedView)


def test_with_the_tiktoken_counter_the_prompt_stays_within_budget(clock) -> None:
    pytest.importorskip("tiktoken")
    from vmem.tokens import TiktokenCounter

    counter = TiktokenCounter()
    whole = paste(6000)
    with Memory.open(":memory:", max_tokens=2000, counter=counter, clock=clock) as memory:
        message = memory.context.append(Message("user", whole))
        rendered = memory.context.render()
        assert memory.context.tokens() <= 2000
        assert rendered[1]["content"].startswith(f"[message {message.id}, ")
        assert memory.recall.get(message.id).content == whole
