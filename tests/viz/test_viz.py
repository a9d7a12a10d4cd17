"""The widgets of vmem.viz, headless: the pure functions, then every control of every widget.

Expected numbers come from the lesson's token rule and the BM25 formula written out here,
and from the recording a `MainContext` keeps of itself, never from the code under test.
The pure functions need only the standard library, so only the tests that build a widget
class (marked `needs_widgets`) skip when ipywidgets is missing; a test below runs this
file with ipywidgets hidden to prove it.
"""

from __future__ import annotations

import html
import inspect
import json
import math
import random
import re
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import replace

import pytest

from vmem import viz
from vmem.agent import Agent, ScriptedPolicy, ToolCall
from vmem.archival import ArchivalStore
from vmem.bm25 import tokenize
from vmem.clock import StepClock
from vmem.context import Event, MainContext
from vmem.core import CoreMemory
from vmem.course.demo import step_lines
from vmem.errors import ContextOverflowError
from vmem.memory import Memory
from vmem.messages import Message
from vmem.turn import TraceRow, Turn

try:
    import ipywidgets  # noqa: F401  (only to know whether the widget classes can be built)
except ImportError:
    HAVE_WIDGETS = False
else:
    HAVE_WIDGETS = True

needs_widgets = pytest.mark.skipif(not HAVE_WIDGETS, reason="the widget classes need ipywidgets")

SYSTEM = "You are a helpful assistant."


def approx(text: str) -> int:
    """The lesson's rule, written out independently: ceil(words x 1.3)."""
    return math.ceil(len(text.split()) * 1.3)


def message_tokens(message: Message) -> int:
    parts = [message.role, message.name, message.content, message.tool_call_id]
    for call in message.tool_calls or ():
        parts += [call["function"]["name"], call["function"]["arguments"]]
    return approx(" ".join(part for part in parts if part))


def facts_of(markup: str) -> dict:
    """The JSON a view carries in its `data-facts` attribute."""
    found = re.search(r'data-facts="([^"]*)"', markup)
    assert found, "the view has no data-facts attribute"
    return json.loads(html.unescape(found.group(1)))


def conversation() -> list[Message]:
    """Twenty-odd messages: notes, replies and one tool run, enough to flush twice at 300."""
    messages = []
    for i in range(8):
        messages.append(Message("user", f"Note {i}: my locker code today is {1000 + 7 * i}."))
        messages.append(Message("assistant", f"Noted, code {1000 + 7 * i} for day {i}."))
    call = {"id": "c1", "type": "function",
            "function": {"name": "archival_memory_search", "arguments": '{"query": "code"}'}}
    messages += [Message("user", "What was my first code?"),
                 Message("assistant", "", tool_calls=[call]),
                 Message("tool", "record 1: locker code 1000", tool_call_id="c1"),
                 Message("assistant", "Your first code was 1000.")]
    return messages


@pytest.fixture
def recorded() -> MainContext:
    clock = StepClock()
    ctx = MainContext(SYSTEM, CoreMemory.default(clock=clock), 300, clock=clock)
    for message in conversation():
        ctx.append(message)
    return ctx


def first_eviction(replayed) -> int | None:
    """The step of the replay's first flush (None if nothing was evicted)."""
    return next((frame.step for frame in replayed.frames if frame.evicted), None)


def steps_of(ctx: MainContext) -> list[list]:
    """The recorded events grouped by step: each step starts with an `appended` event."""
    steps: list[list] = []
    for event in ctx.events:
        if event.kind == "appended":
            steps.append([])
        steps[-1].append(event)
    return steps


# -- EvictionViewer: the pure functions -------------------------------------------------

def test_replay_at_the_recorded_budget_reproduces_the_recording(recorded) -> None:
    replayed = viz.replay(recorded)
    steps = steps_of(recorded)
    assert replayed.error is None and len(replayed.frames) == len(conversation())
    assert viz.matches_recording(recorded, replayed)
    assert sum(1 for step in steps if any(e.kind == "evicted" for e in step)) >= 2
    for frame, events in zip(replayed.frames, steps, strict=True):
        assert frame.total == events[-1].tokens  # the prompt after the step, as recorded
        assert [e.kind for e in frame.events] == [e.kind for e in events]
        evicted = [i for e in events if e.kind == "evicted" for i in e.message_ids]
        assert [item.id for item in frame.evicted] == evicted
    last = replayed.frames[-1]
    assert [item.id for item in last.queue] == [m.id for m in recorded.messages]
    assert last.summary == recorded.summary and last.recall == len(recorded.recall)


def test_frame_sections_follow_the_token_rule(recorded) -> None:
    for frame in viz.replay(recorded).frames:
        queue = recorded.recall.get_many([item.id for item in frame.queue])
        assert frame.sections["messages"] == sum(message_tokens(m) for m in queue)
        assert [item.tokens for item in frame.queue] == [message_tokens(m) for m in queue]
        assert frame.sections["core"] == approx(recorded.core.render())
        assert set(frame.sections) == {"system", "core", "summary", "messages"}
        assert frame.warn_line == 210 and frame.budget == 300
    first = viz.replay(recorded).frames[0]
    assert first.sections["summary"] == 0 and first.recall == 1


def next_flush(frames, index: int) -> tuple[int, ...]:
    """The ids the first flush of the step after frame `index` evicted (() if none)."""
    if index + 1 >= len(frames):
        return ()
    return next((event.message_ids for event in frames[index + 1].events
                 if event.kind == "evicted"), ())


def test_doomed_are_exactly_what_the_next_step_s_flush_evicts(recorded) -> None:
    frames = viz.replay(recorded).frames
    marked = [index for index, frame in enumerate(frames) if frame.doomed]
    assert marked == [index for index in range(len(frames)) if next_flush(frames, index)]
    assert len(marked) >= 2
    for index, frame in enumerate(frames):
        assert frame.doomed == next_flush(frames, index)
        assert set(frame.doomed) <= {item.id for item in frame.queue}
        assert frame.facts()["doomed"] == list(frame.doomed)


def random_session(rng: random.Random) -> MainContext:
    """A random conversation: notes of any length, replies, tool runs of 1-3 calls."""
    clock = StepClock()
    ctx = MainContext(SYSTEM, CoreMemory.default(clock=clock), rng.randint(260, 700),
                      clock=clock, warn_at=rng.choice([0.7, 0.9]),
                      flush_to=rng.choice([0.3, 0.5, 0.6]))
    words = ["my", "sister", "Ana", "moved", "to", "Lisbon", "in", "2019", "and", "the",
             "cat", "is", "called", "Tom"]
    for number in range(rng.randint(5, 40)):
        text = " ".join(rng.choices(words, k=rng.choice([3, 8, 20, 60])))
        kind = rng.choice(["user", "user", "assistant", "run"])
        if kind == "run":
            calls = [{"id": f"c{number}_{i}", "type": "function",
                      "function": {"name": "archival_memory_search",
                                   "arguments": '{"query": "Ana"}'}}
                     for i in range(rng.randint(1, 3))]
            batch = [Message("assistant", "", tool_calls=calls),
                     *(Message("tool", text, tool_call_id=call["id"]) for call in calls)]
        else:
            batch = [Message(kind, text)]
        try:
            for message in batch:
                ctx.append(message)
        except ContextOverflowError:
            break
    return ctx


def test_over_random_sessions_the_marked_ids_are_the_ids_the_next_flush_evicts() -> None:
    rng = random.Random(13)
    marked_runs = pinned_user_kept = flushes = 0
    for _ in range(150):
        recorded_session = random_session(rng)
        frames = viz.replay(recorded_session).frames
        for index, frame in enumerate(frames):
            assert frame.doomed == next_flush(frames, index), f"frame {frame.step}"
            if not frame.doomed:
                continue
            flushes += 1
            roles = {item.id: item.role for item in frame.queue}
            marked_runs += any(roles[i] == "tool" for i in frame.doomed)
            users = [item.id for item in frame.queue if item.role == "user"]
            if users and frames[index + 1].message.role != "user":  # it stays the newest
                assert users[-1] not in frame.doomed
                pinned_user_kept += 1
    print(f"{flushes} flushes, {marked_runs} with a tool run, {pinned_user_kept} kept a user")
    assert flushes > 100 and marked_runs > 10 and pinned_user_kept > 50


def test_recorded_messages_leave_out_the_contexts_own_notices(recorded) -> None:
    messages = viz.recorded_messages(recorded)
    assert [(m.role, m.content) for m in messages] == \
        [(m.role, m.content) for m in conversation()]
    assert all(m.id is None for m in messages)
    assert any(e.kind == "warned" for e in recorded.events)


def test_a_larger_budget_evicts_nothing_and_a_smaller_one_more(recorded) -> None:
    roomy = viz.replay(recorded, 3000)
    assert roomy.error is None
    assert all(not frame.evicted for frame in roomy.frames)
    assert roomy.frames[-1].recall == len(conversation())  # nothing evicted, no notice
    lowest = viz.lowest_budget(recorded)
    tight = viz.replay(recorded, lowest)
    assert tight.error is None and lowest < 300
    assert first_eviction(tight) < first_eviction(viz.replay(recorded))
    assert max(frame.total for frame in tight.frames) <= lowest


def test_a_budget_too_small_stops_the_replay_and_says_where(recorded) -> None:
    lowest = viz.lowest_budget(recorded)
    assert lowest % 10 == 0 and lowest <= 300
    assert viz.replay(recorded, lowest).error is None
    failed = viz.replay(recorded, lowest - 10)
    assert failed.error and "cannot be replayed under" in failed.error
    assert str(lowest - 10) in failed.error
    assert len(failed.frames) < len(conversation())
    tiny = viz.replay(recorded, 20)
    assert tiny.frames == () and "too small" in tiny.error


def test_a_core_edit_after_the_fact_is_reported_as_a_different_replay(recorded) -> None:
    recorded.core.append("human", "Name: Ada, who keeps a locker at the gym downtown.")
    assert not viz.matches_recording(recorded, viz.replay(recorded))


def test_eviction_html_draws_the_frame_and_escapes_text() -> None:
    clock = StepClock()
    ctx = MainContext(SYSTEM, CoreMemory.default(clock=clock), 300, clock=clock)
    ctx.append(Message("user", "<script>alert(1)</script> & more"))
    replayed = viz.replay(ctx)
    markup = viz.eviction_html(replayed, 1)
    assert facts_of(markup) == replayed.frames[0].facts()
    assert "<script>" not in markup and "&lt;script&gt;" in markup
    assert "Step 1 of 1" in markup


# -- RetrievalExplorer: the pure functions ---------------------------------------------

DOCS = ["apple apple apple banana cherry date elderberry fig grape",
        "apple kiwi",
        "kiwi mango",
        "banana split with cherry on top"]


def bm25_by_hand(query: str, docs: list[str], k1: float, b: float) -> dict[int, float]:
    """Okapi BM25 with the Lucene idf, ln(1 + (N - n + 0.5) / (n + 0.5)), ids from 1."""
    bags = [Counter(doc.split()) for doc in docs]
    avgdl = sum(len(doc.split()) for doc in docs) / len(docs)
    scores = {}
    for doc_id, bag in enumerate(bags, 1):
        norm = 1 - b + b * sum(bag.values()) / avgdl
        parts = []
        for term in query.split():
            if not bag[term]:
                continue  # an absent term adds nothing (the formula is 0/0 at k1 = 0)
            n = sum(1 for other in bags if term in other)
            idf = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
            parts.append(idf * bag[term] * (k1 + 1) / (bag[term] + k1 * norm))
        if parts:
            scores[doc_id] = sum(parts)
    return scores


@pytest.fixture
def store() -> ArchivalStore:
    store = ArchivalStore(clock=StepClock())
    for doc in DOCS:
        store.insert(doc)
    return store


def test_bm25_scores_and_term_shares_match_the_formula(store) -> None:
    records = store.records()
    index = viz.build_index(records)
    for k1, b in [(1.2, 0.75), (0.0, 0.0), (2.5, 1.0)]:
        view = viz.retrieval_view(index, records, "apple cherry", k1=k1, b=b, top_k=10)
        expected = bm25_by_hand("apple cherry", DOCS, k1, b)
        assert {hit.record_id: hit.score for hit in view.bm25} == pytest.approx(expected)
        for hit in view.bm25:
            assert sum(share for _, share in hit.parts) == pytest.approx(hit.score)
            assert [term for term, _ in hit.parts] == \
                [t for t in ("apple", "cherry") if t in DOCS[hit.record_id - 1].split()]
    assert (index.k1, index.b) == (1.2, 0.75)  # the explorer's index is never changed


def drawn_term_tables(markup: str) -> dict[int, dict[str, list[str]]]:
    """The per-term tables as drawn: record id -> term -> [tf, idf, norm, share] text."""
    tables = {}
    for record, body in re.findall(r'<table data-record="(\d+)"[^>]*>(.*?)</table>', markup):
        rows = re.findall(r'<tr data-term="([^"]*)">(.*?)</tr>', body)
        tables[int(record)] = {term: re.findall(r"<td[^>]*>([^<]*)</td>", cells)
                               for term, cells in rows}
    return tables


def term_tables_by_hand(query: str, docs: list[str], ids: list[int], k1: float,
                        b: float) -> dict[int, dict[str, list[str]]]:
    """The tables the formula gives for records `ids` (1-based into `docs`)."""
    bags = [Counter(doc.split()) for doc in docs]
    avgdl = sum(len(doc.split()) for doc in docs) / len(docs)
    asked = Counter(query.split())
    tables = {}
    for doc_id in ids:
        bag = bags[doc_id - 1]
        norm = 1 - b + b * sum(bag.values()) / avgdl
        rows = {}
        for term in asked:
            if bag[term]:
                n = sum(1 for other in bags if term in other)
                idf = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
                share = asked[term] * idf * bag[term] * (k1 + 1) / (bag[term] + k1 * norm)
                rows[term] = [str(bag[term]), f"{idf:.2f}", f"{norm:.2f}", f"{share:.2f}"]
        tables[doc_id] = rows
    return tables


def test_each_hit_shows_tf_idf_and_length_normalisation_per_term_in_the_view(store) -> None:
    records = store.records()
    index = viz.build_index(records)
    for query, k1, b in [("apple cherry", 1.2, 0.75), ("apple kiwi apple", 2.0, 1.0),
                         ("banana cherry zucchini", 0.5, 0.0)]:
        view = viz.retrieval_view(index, records, query, k1=k1, b=b, top_k=4)
        markup = viz.retrieval_html(view)
        ids = [hit.record_id for hit in view.bm25]
        assert drawn_term_tables(markup) == term_tables_by_hand(query, DOCS, ids, k1, b)
        assert f"average {sum(len(d.split()) for d in DOCS) / len(DOCS):.2f}" in markup
        assert set(view.facts()["terms"]) == {str(i) for i in ids}


@pytest.mark.parametrize("wrong", [{"tf": 2}, {"idf": 0.1}, {"norm": 1.0},
                                   {"contribution": 9.0}])
def test_the_term_table_check_fails_when_a_drawn_number_is_wrong(store, wrong) -> None:
    records = store.records()
    view = viz.retrieval_view(viz.build_index(records), records, "apple cherry", k1=1.2,
                              b=0.75, top_k=4)
    first = view.bm25[0]
    broken = replace(first, terms=(replace(first.terms[0], **wrong), *first.terms[1:]))
    markup = viz.retrieval_html(replace(view, bm25=(broken, *view.bm25[1:])))
    ids = [hit.record_id for hit in view.bm25]
    assert drawn_term_tables(markup) != term_tables_by_hand("apple cherry", DOCS, ids, 1.2, 0.75)


def test_length_normalisation_flips_the_ranking_as_b_moves(store) -> None:
    records = store.records()
    index = viz.build_index(records)
    def ranking(b):
        return [h.record_id for h in
                viz.retrieval_view(index, records, "apple", k1=1.2, b=b, top_k=5).bm25]
    assert ranking(0.0) == [1, 2]  # three apples win without a length penalty
    assert ranking(1.0) == [2, 1]  # the short record wins with full length normalisation


def test_query_words_in_no_record_are_greyed_not_given_an_idf(store) -> None:
    records = store.records()
    view = viz.retrieval_view(viz.build_index(records), records, "kiwi zucchini",
                              k1=1.2, b=0.75, top_k=5)
    assert view.unmatched == ("zucchini",) and view.facts()["unmatched"] == ["zucchini"]
    markup = viz.retrieval_html(view)
    assert "zucchini (in no record: adds nothing)" in markup
    assert "<b>zucchini</b> idf" not in markup and "<b>kiwi</b> idf" in markup


def test_relevant_records_are_marked_with_recall_at_k_beside_each_ranking(store) -> None:
    records = store.records()
    index = viz.build_index(records)
    view = viz.retrieval_view(index, records, "kiwi", k1=1.2, b=0.75, top_k=2,
                              relevant=frozenset({3, 4}))
    facts = view.facts()
    assert sorted(facts["bm25"]) == sorted(facts["overlap"]) == [2, 3]  # record 4: no kiwi
    assert facts["relevant"] == [3, 4]
    assert facts["recall"] == {"bm25": 0.5, "overlap": 0.5}
    markup = viz.retrieval_html(view)
    assert markup.count("recall@2 = 0.50</b> (1 of 2 relevant)") == 2
    assert markup.count("&#10003; relevant") == 2  # record 3, once in each ranking
    plain = viz.retrieval_view(index, records, "kiwi", k1=1.2, b=0.75, top_k=1)
    assert plain.facts()["recall"] == {"bm25": None, "overlap": None}
    assert "recall@" not in viz.retrieval_html(plain)


def test_overlap_counts_distinct_shared_terms_ties_in_insertion_order(store) -> None:
    hits = viz.overlap_ranking("kiwi apple apple", store.records(), top_k=10)
    assert [(h.record_id, h.matched) for h in hits] == \
        [(2, ("kiwi", "apple")), (1, ("apple",)), (3, ("kiwi",))]
    assert len(viz.overlap_ranking("kiwi apple", store.records(), top_k=1)) == 1


def test_a_query_without_words_ranks_nothing_and_says_what_to_do(store) -> None:
    records = store.records()
    view = viz.retrieval_view(viz.build_index(records), records, " ?! ", k1=1.2, b=0.75,
                              top_k=5)
    assert view.bm25 == () and view.overlap == ()
    assert "Type a query" in viz.retrieval_html(view)


# -- TraceViewer: the pure functions ---------------------------------------------------

def run_turn(actions, max_tokens: int = 2400, max_steps: int = 10, history: int = 0):
    memory = Memory.open(":memory:", clock=StepClock(), max_tokens=max_tokens)
    memory.archival.insert("The user's sister Ana lives in Porto.")
    agent = Agent(memory, ScriptedPolicy([("send_message", {"message": "ok"})] * history
                                         + actions), max_steps=max_steps)
    for i in range(history):
        agent.step(f"Remember item {i}: a fairly long note about the weather and the sea.")
    return agent.step("Where does my sister live?")


def test_a_turn_reads_as_calls_results_heartbeats_and_the_answer() -> None:
    turn = run_turn([
        ("archival_memory_search", {"query": "sister", "request_heartbeat": True}),
        ("no_such_tool", {}),
        ("send_message", {"message": "Your sister lives in Porto [record 1]."})])
    rows = viz.trace_rows(turn)
    assert [(r.step, r.kind) for r in rows] == [
        (0, "user"),
        (1, "model"), (1, "call"), (1, "result"), (1, "heartbeat"),
        (2, "model"), (2, "call"), (2, "result"), (2, "heartbeat"),
        (3, "model"), (3, "call"), (3, "result"), (3, "answer")]
    assert "request_heartbeat" in rows[4].text and "failed" in rows[8].text
    assert rows[7].ok is False and rows[7].title == "no_such_tool failed"
    assert rows[-1].text == "Your sister lives in Porto [record 1]."
    assert rows[2].title == "calls archival_memory_search" and '"sister"' in rows[2].text


def evicting_turn():
    """A turn inside which the context evicts: the budget leaves room for about 250 tokens
    of messages beyond the prompt's fixed part, and earlier turns fill it up."""
    actions = [("archival_memory_search", {"query": "sister", "request_heartbeat": True}),
               ("send_message", {"message": "Porto."})]
    probe = Memory.open(":memory:", clock=StepClock(), max_tokens=10**6)
    Agent(probe, ScriptedPolicy([]))  # counts the tool schemas against the budget
    budget = probe.context.tokens() + 250
    for history in range(12):
        turn = run_turn(actions, max_tokens=budget, history=history)
        if any(event.kind == "evicted" for event in turn.events):
            return turn
    pytest.fail("no history length made the context evict inside the turn")


def test_evictions_and_warnings_appear_where_they_happened() -> None:
    turn = evicting_turn()
    rows = viz.trace_rows(turn)
    kinds = [row.kind for row in rows]
    evicted = [event for event in turn.events if event.kind == "evicted"]
    assert kinds.count("eviction") == len(evicted)
    assert kinds.count("warning") == sum(1 for e in turn.events if e.kind == "warned")
    for index, row in enumerate(rows):
        if row.kind == "eviction":
            assert rows[index - 1].kind in ("user", "call", "result", "warning")
    skeleton = [k for k in kinds if k not in ("eviction", "summary", "warning")]
    assert skeleton == ["user", "model", "call", "result", "heartbeat", "model", "call",
                        "result", "answer"]


def test_a_turn_that_runs_out_of_steps_or_fails_says_so() -> None:
    looping = run_turn([("archival_memory_search", {"query": "a", "request_heartbeat": True})]
                       * 2, max_steps=2)
    assert looping.stop_reason == "max_steps"
    assert viz.trace_rows(looping)[-1].kind == "stop"
    broken = run_turn([ToolCall("send_message", "{not json")], max_steps=1)
    last = viz.trace_rows(broken)[-1]
    assert broken.stop_reason == "max_steps" and last.ok is False


def test_trace_html_shows_the_rows_up_to_a_step() -> None:
    turn = run_turn([("archival_memory_search", {"query": "sister", "request_heartbeat": True}),
                     ("send_message", {"message": "Porto."})])
    rows = viz.trace_rows(turn)
    for upto in range(turn.steps + 1):
        facts = facts_of(viz.trace_html(rows, upto))
        assert facts["rows"] == sum(1 for row in rows if row.step <= upto)
    assert "more rows after step 0" in viz.trace_html(rows, 0)


# -- the widgets: every control over its range -----------------------------------------

@needs_widgets
def test_eviction_viewer_step_slider_shows_each_frame(recorded) -> None:
    viewer = viz.EvictionViewer(recorded)
    frames = viz.replay(recorded).frames
    assert (viewer.step.min, viewer.step.max, viewer.step.value) == (1, len(frames), 1)
    for step in range(viewer.step.min, viewer.step.max + 1):
        viewer.step.value = step
        assert facts_of(viewer.output.value) == frames[step - 1].facts()
        assert viewer.view() == frames[step - 1]
    assert "differs from the recording" not in viewer.output.value


@needs_widgets
def test_eviction_viewer_budget_slider_replays_and_reset_returns(recorded) -> None:
    viewer = viz.EvictionViewer(recorded, step=len(conversation()))
    budget = viewer.budget
    assert (budget.min, budget.value, budget.max) == (viz.lowest_budget(recorded), 300, 900)
    first = {}
    for value in range(budget.min, budget.max + 1, budget.step):
        budget.value = value
        assert viewer.replay.budget == value and viewer.replay.error is None
        facts = facts_of(viewer.output.value)
        assert facts["budget"] == value and facts["step"] == viewer.step.value
        assert facts == viz.replay(recorded, value).frames[viewer.step.value - 1].facts()
        first[value] = first_eviction(viewer.replay)
    assert first[budget.min] < first[300] and first[budget.max] is None
    viewer.reset.click()
    assert budget.value == 300 and viewer.replay.budget == 300
    assert facts_of(viewer.output.value) == viz.replay(recorded).frames[-1].facts()


@needs_widgets
def test_retrieval_explorer_controls_rerank_live(store) -> None:
    explorer = viz.RetrievalExplorer(store)
    records = store.records()
    index = viz.build_index(records)

    def expected():
        return viz.retrieval_view(index, records, explorer.query.value, k1=explorer.k1.value,
                                  b=explorer.b.value, top_k=explorer.top_k.value).facts()

    assert facts_of(explorer.output.value)["bm25"] == []
    for end in range(1, len("kiwi apple cherry") + 1):  # typed one key at a time
        explorer.query.value = "kiwi apple cherry"[:end]
        assert facts_of(explorer.output.value) == expected()
    assert set(facts_of(explorer.output.value)["bm25"]) == {1, 2, 3, 4}
    for top_k in range(explorer.top_k.min, explorer.top_k.max + 1):
        explorer.top_k.value = top_k
        assert len(facts_of(explorer.output.value)["bm25"]) == min(top_k, 4)
        assert facts_of(explorer.output.value) == expected()
    for tenth in range(31):
        explorer.k1.value = tenth / 10
        assert facts_of(explorer.output.value) == expected()
    explorer.query.value = "apple"
    explorer.k1.value = 1.2
    orders = set()
    for twentieth in range(21):
        explorer.b.value = twentieth / 20
        assert facts_of(explorer.output.value) == expected()
        orders.add(tuple(facts_of(explorer.output.value)["bm25"]))
    assert orders == {(1, 2), (2, 1)}  # the ranking flipped as b moved
    explorer.k1.value, explorer.b.value = 2.9, 0.1
    explorer.reset.click()
    assert (explorer.k1.value, explorer.b.value) == (1.2, 0.75)
    assert facts_of(explorer.output.value) == expected()


@needs_widgets
def test_trace_viewer_slider_reveals_the_turn_step_by_step() -> None:
    turn = run_turn([("archival_memory_search", {"query": "sister", "request_heartbeat": True}),
                     ("send_message", {"message": "Porto."})])
    viewer = viz.TraceViewer(turn)
    assert (viewer.step.min, viewer.step.max, viewer.step.value) == (0, 2, 2)
    shown = []
    for step in range(0, 3):
        viewer.step.value = step
        shown.append(facts_of(viewer.output.value)["kinds"])
        assert shown[-1] == [row.kind for row in viewer.view()]
    assert shown[0] == ["user"]
    assert shown[1] == ["user", "model", "call", "result", "heartbeat"]
    assert shown[2][-1] == "answer"
    assert repr(viewer) == "TraceViewer(2 steps, final_message)"


def test_pure_functions_work_and_widgets_explain_themselves_without_ipywidgets() -> None:
    script = (
        "import sys\nsys.modules['ipywidgets'] = None\n"
        "from vmem import viz, ArchivalStore\n"
        "store = ArchivalStore()\nstore.insert('apple kiwi')\n"
        "records = store.records()\n"
        "view = viz.retrieval_view(viz.build_index(records), records, 'kiwi', k1=1.2, b=0.75,"
        " top_k=3)\nprint(view.facts()['bm25'])\n"
        "try:\n    viz.RetrievalExplorer(store)\nexcept ImportError as error:\n"
        "    print(error)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    first, message = result.stdout.splitlines()[:2]
    assert first == "[1]"
    assert "RetrievalExplorer needs ipywidgets" in message and "vmem[widgets]" in message


def test_tokenize_is_the_analyzer_the_explorer_uses(store) -> None:
    view = viz.retrieval_view(viz.build_index(store.records()), store.records(),
                              "Kiwi, APPLE!", k1=1.2, b=0.75, top_k=5)
    assert view.terms == tuple(tokenize("Kiwi, APPLE!")) == ("kiwi", "apple")


def test_the_view_reads_query_terms_with_the_index_analyzer(store) -> None:
    """`build_index` is textbook BM25 (every word counts); an index built with the stores'
    `analyze` is explained with its own terms, so legend, bars and overlap agree."""
    from vmem.bm25 import BM25Index, analyze
    records = store.records()
    assert viz.build_index(records).analyzer is tokenize
    stemmed = BM25Index(analyzer=analyze)
    for record in records:
        stemmed.add(record.id, record.text)
    view = viz.retrieval_view(stemmed, records, "the apples and bananas", k1=1.2, b=0.75,
                              top_k=5)
    assert view.terms == tuple(analyze("the apples and bananas")) == ("appl", "banana")
    assert all(term in view.terms for hit in view.bm25 for term, _ in hit.parts)
    assert [hit.record_id for hit in view.overlap] == [1, 2, 4]
    assert "appl" in viz.retrieval_html(view)
    textbook = viz.retrieval_view(viz.build_index(records), records,
                                  "the apples and bananas", k1=1.2, b=0.75, top_k=5)
    assert textbook.terms == ("the", "apples", "and", "bananas")
    assert textbook.unmatched == textbook.terms and not textbook.bm25


def docstring_example(widget: type) -> tuple[str, str]:
    """(the statements, the final expression) of the example in a widget's docstring."""
    lines = inspect.getdoc(widget).splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith("::")) + 1
    block = []
    for line in lines[start:]:
        if line and not line.startswith("    "):
            break
        block.append(line)
    code = textwrap.dedent("\n".join(block)).strip().splitlines()
    return "\n".join(code[:-1]), code[-1]


@needs_widgets
def test_the_docstring_examples_build_what_they_promise() -> None:
    built = {}
    for widget in (viz.EvictionViewer, viz.RetrievalExplorer, viz.TraceViewer):
        statements, expression = docstring_example(widget)
        scope: dict = {}
        exec(statements, scope)
        built[widget] = eval(expression, scope)
        assert type(built[widget]) is widget
    assert any(frame.evicted for frame in built[viz.EvictionViewer].replay.frames)
    top = facts_of(built[viz.RetrievalExplorer].output.value)["bm25"][0]
    assert "sister" in built[viz.RetrievalExplorer].records[top - 1].text
    assert built[viz.TraceViewer].view()[-1].kind == "answer"


# -- one timeline, three views ---------------------------------------------------------


def planted_rows(turn) -> list[TraceRow]:
    """A timeline no walk of `turn` would give: its search result, then a made-up flush."""
    search = turn.calls[0]
    flush = Event("evicted", search.result.time, (5, 6), 40, 300)
    return [TraceRow(0, "user", "user message", turn.user),
            TraceRow(1, "result", "planted result", "planted text", exchange=search),
            TraceRow(1, "eviction", "planted flush", "planted detail", event=flush)]


def test_one_timeline_feeds_the_trace_and_the_terminal_lines(monkeypatch) -> None:
    turn = run_turn([("archival_memory_search", {"query": "sister", "request_heartbeat": True}),
                     ("send_message", {"message": "Porto."})])
    assert turn.rows() == viz.trace_rows(turn)
    assert turn.trace() == ['step 1: archival_memory_search {"query": "sister", '
                            '"request_heartbeat": true} -> ok',
                            'step 2: send_message {"message": "Porto."} -> ok']
    monkeypatch.setattr(Turn, "rows", planted_rows)
    assert turn.trace() == ['step 1: archival_memory_search {"query": "sister", '
                            '"request_heartbeat": true} -> ok']
    assert step_lines(turn) == [
        'step 1  archival_memory_search {"query": "sister", "request_heartbeat": true} '
        "-> 1 found: record 1",
        "! flush: the 2 oldest messages (ids 5-6, 40 tokens) evicted to recall; the prompt "
        "is now 300"]


@needs_widgets
def test_one_timeline_feeds_the_trace_viewer(monkeypatch) -> None:
    turn = run_turn([("archival_memory_search", {"query": "sister", "request_heartbeat": True}),
                     ("send_message", {"message": "Porto."})])
    monkeypatch.setattr(Turn, "rows", planted_rows)
    viewer = viz.TraceViewer(turn)
    assert viewer.rows == tuple(planted_rows(turn))
    assert facts_of(viewer.output.value)["kinds"] == ["user", "result", "eviction"]
    assert "planted flush" in viewer.output.value


def test_the_pure_functions_are_tested_without_ipywidgets() -> None:
    """Run this file with ipywidgets hidden: every test passes but the widget-class ones,
    which skip."""
    script = ("import sys\nsys.modules['ipywidgets'] = None\nimport pytest\n"
              f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-rs', {__file__!r}, "
              "'-k', 'not without_ipywidgets']))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    marked = sum(1 for _, value in globals().items()
                 if callable(value) and getattr(value, "pytestmark", None)
                 and any(mark.name == "skipif" for mark in value.pytestmark))
    summary = result.stdout.strip().splitlines()[-1]
    assert f"{marked} skipped" in summary and " passed" in summary, summary
    assert summary.count("failed") == 0


def lesson_bm25(query: str, texts: list[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    """A correct BM25 made of notebook 03's parts (vmem's fallbacks), as `scorer=` takes it."""
    from vmem.course.lesson_checks import l03

    terms, df, avgdl = l03._stats(texts)
    return [l03.bm25_score(tokenize(query), doc, df, len(texts), avgdl, k1, b) for doc in terms]


@needs_widgets
def test_a_learner_scorer_that_is_right_ranks_like_the_index_at_every_k1_and_b(store) -> None:
    explorer = viz.RetrievalExplorer(store, query="apple banana kiwi", top_k=4,
                                     scorer=lesson_bm25)
    for k1, b in ((1.2, 0.75), (0.0, 0.0), (3.0, 1.0), (0.5, 0.3)):
        explorer.k1.value, explorer.b.value = k1, b
        theirs = viz.retrieval_view(explorer.index, explorer.records, "apple banana kiwi",
                                    k1=k1, b=b, top_k=4)
        mine = explorer.view()
        assert [hit.record_id for hit in mine.bm25] == [hit.record_id for hit in theirs.bm25]
        assert all(math.isclose(a.score, b.score) for a, b in zip(mine.bm25, theirs.bm25,
                                                                   strict=True))


@needs_widgets
def test_the_scorer_ranks_the_bm25_column_and_gets_the_sliders(store) -> None:
    seen = []

    def backwards(query, texts, k1=1.2, b=0.75):  # a wrong BM25: the last record wins
        seen.append((k1, b))
        return [float(position + 1) for position in range(len(texts))]

    explorer = viz.RetrievalExplorer(store, query="apple", top_k=2, scorer=backwards)
    explorer.k1.value = 2.0
    view = explorer.view()
    assert [(hit.record_id, hit.score) for hit in view.bm25] == [(4, 4.0), (3, 3.0)]
    assert seen[-1] == (2.0, 0.75)


def test_a_scorer_s_zero_scores_are_left_out_and_a_wrong_length_is_refused(store) -> None:
    records = tuple(store.records())
    index = viz.build_index(records)
    view = viz.retrieval_view(index, records, "kiwi", k1=1.2, b=0.75, top_k=4,
                              scorer=lambda q, texts, k1, b: [0.0, 0.0, 1.0, 0.0])
    assert [hit.record_id for hit in view.bm25] == [3]
    with pytest.raises(ValueError, match="one score per text"):
        viz.retrieval_view(index, records, "kiwi", k1=1.2, b=0.75, top_k=4,
                           scorer=lambda q, texts, k1, b: [1.0])


@needs_widgets
def test_the_explorer_shows_recall_only_for_the_query_its_labels_belong_to(store) -> None:
    """A query the learner types is not scored against the labels of the lesson's query."""
    explorer = viz.RetrievalExplorer(store, query="kiwi", top_k=2, relevant={3, 4})
    assert explorer.view().facts()["recall"] == {"bm25": 0.5, "overlap": 0.5}
    explorer.query.value = "apple"
    typed = explorer.view()
    assert typed.facts()["recall"] == {"bm25": None, "overlap": None}
    assert typed.facts()["relevant"] == []
    markup = explorer.output.value
    assert markup.count("no recall@k: this query has no relevance labels") == 2
    assert "&#10003; relevant" not in markup
    explorer.query.value = "  KIWI "
    assert explorer.view().facts()["recall"] == {"bm25": 0.5, "overlap": 0.5}
