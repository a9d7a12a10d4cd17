"""Recall storage: append-only, exact round trips, BM25 search with filters and pages."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from vmem.errors import InputTooLargeError, StoreError
from vmem.messages import Message
from vmem.ranking import Priors
from vmem.recall import RecallStore
from vmem.store import MAX_MESSAGE_CHARS

T0 = datetime(2024, 1, 1, 9, 0, tzinfo=timezone.utc)


def test_add_fills_id_and_time_on_the_same_object(agent_target, clock):
    recall = RecallStore(agent_target, clock=clock)
    first, second = Message(role="user", content="hi"), Message(role="assistant", content="yo")
    assert recall.add(first) is first and recall.add(second) is second
    assert (first.id, second.id) == (1, 2)
    assert (first.created_at, second.created_at) == (T0, T0 + timedelta(seconds=1))
    assert len(recall) == 2


def test_given_time_is_kept_and_naive_time_refused(agent_target, clock):
    recall = RecallStore(agent_target, clock=clock)
    when = datetime(2023, 5, 8, 13, 56, tzinfo=timezone(timedelta(hours=2)))
    message = recall.add(Message(role="user", content="dated", created_at=when))
    assert message.created_at is when and recall.get(message.id).created_at == when
    naive = Message(role="user", content="x", created_at=datetime(2024, 1, 1))
    with pytest.raises(StoreError, match="timezone-aware"):
        recall.add(naive)
    assert naive.id is None and len(recall) == 1


def test_every_field_round_trips_exactly_through_a_file(agent_target, clock):
    path = agent_target
    calls = [{"id": "call_1", "type": "function",
              "function": {"name": "archival_memory_search", "arguments": '{"query": "tea"}'}}]
    original = [
        Message(role="user", content="Ünïcödé 🙂 line\nbreak", name="Caroline", session_id=3,
                turn=7, meta={"dia_id": "D1:3", "nested": {"list": [1, 2.5, None, True]}}),
        Message(role="assistant", content="", tool_calls=calls, session_id=3, turn=7),
        Message(role="tool", content='{"ok": true}', tool_call_id="call_1", name="search"),
        Message(role="system", content="memory pressure", meta={"kind": "warning"}),
    ]
    recall = RecallStore(path, clock=clock)
    for message in original:
        recall.add(message)
    recall.backend.close()
    assert RecallStore(path).get_many([1, 2, 3, 4]) == original


def test_duplicate_id_is_refused_and_nothing_changes(agent_target, clock):
    recall = RecallStore(agent_target, clock=clock)
    recall.add(Message(role="user", content="first"))
    again = Message(role="user", content="second", id=1)
    with pytest.raises(StoreError, match="already in recall"):
        recall.add(again)
    assert again.created_at is None and len(recall) == 1
    assert recall.search("second").total == 0


def test_get_and_get_many(agent_target, clock):
    recall = RecallStore(agent_target, clock=clock)
    for word in ("one", "two", "three"):
        recall.add(Message(role="user", content=word))
    assert recall.get(2).content == "two"
    assert [m.content for m in recall.get_many([3, 1, 3])] == ["three", "one", "three"]
    assert recall.get_many([]) == []
    with pytest.raises(StoreError, match="no message with id 9"):
        recall.get(9)
    with pytest.raises(StoreError, match="7, 8"):
        recall.get_many([1, 7, 8])


def test_oversized_message_is_refused_at_the_limit(agent_target, clock):
    recall = RecallStore(agent_target, clock=clock)
    recall.add(Message(role="user", content="x" * MAX_MESSAGE_CHARS))
    with pytest.raises(InputTooLargeError, match="limit"):
        recall.add(Message(role="user", content="x" * (MAX_MESSAGE_CHARS + 1)))
    assert len(recall) == 1


@pytest.fixture
def chat(agent_target, clock) -> RecallStore:
    """Plain BM25 over the indexed messages (the priors are tested in test_ranking.py):
    the first four messages are one sitting, so each reply is indexed with the message
    before it; "we went hiking" comes hours later, in a sitting of its own."""
    recall = RecallStore(agent_target, clock=clock, priors=Priors(
        sitting=0.0, speaker=0.0, prompt_only=0.0, opening=0.0))
    rows = [
        ("user", "I adopted a cat named Luna", {"user_id": "u1"}),
        ("assistant", "Luna is a lovely name for a cat, cat lovers agree", {"user_id": "u1"}),
        ("tool", "cat search results: Luna", {"user_id": "u1"}),
        ("system", "memory pressure: cat", {"user_id": "u1"}),
        ("user", "my sister has a cat named Mia", {"user_id": "u2"}),
        ("user", "we went hiking", {"user_id": "u1"}),
    ]
    for role, content, scope in rows:
        later = T0 + timedelta(hours=3) if content == "we went hiking" else None
        recall.add(Message(role=role, content=content, created_at=later), scope=scope)
    return recall


def test_search_ranks_by_bm25_and_skips_tool_results_and_notices(chat):
    page = chat.search("cat")
    assert page.ids == [2, 1, 5]  # two "cat"s first; then a tie, by insertion order
    assert page.total == 3 and all(hit.score > 0 for hit in page)
    assert page.hits[0].terms == {"cat": pytest.approx(page.hits[0].score)}
    assert chat.search("cat", roles=["tool", "system"]).total == 0


def test_search_filters_by_role_time_and_scope(chat):
    assert chat.search("cat", roles=["user"]).ids == [1, 5]
    assert chat.search("cat", roles="assistant").ids == [2]
    with pytest.raises(StoreError, match="unknown role"):
        chat.search("cat", roles=["robot"])
    second = T0 + timedelta(seconds=1)
    assert chat.search("cat", start=second).ids == [2, 5]  # start is inclusive
    assert chat.search("cat", end=second).ids == [2, 1]  # end is inclusive
    assert chat.search("cat", start=second, end=second).ids == [2]
    assert chat.search("cat", scope={"user_id": "u2"}).ids == [5]
    assert chat.search("cat", scope={"user_id": "u3"}).total == 0
    with pytest.raises(StoreError, match="timezone-aware"):
        chat.search("cat", start=datetime(2024, 1, 1))


def test_search_pages_and_renders_with_real_times(chat):
    first = chat.search("cat", page_size=2)
    assert first.ids == [2, 1] and first.has_more
    second = chat.search("cat", page=1, page_size=2)
    assert second.ids == [5] and not second.has_more
    lines = second.render().splitlines()
    assert lines[0] == 'showing 3-3 of 3 for "cat"'
    assert lines[1] == "[message 5 | session ?, turn ? | 2024-01-01 09:00 UTC] user: " \
                       "my sister has a cat named Mia"
    past = chat.search("cat", page=5, page_size=2)
    assert past.hits == [] and "past the end" in past.render()


@pytest.mark.parametrize("query", ['"', "cat*", "NEAR(cat", "cat) OR (", "'; DROP TABLE "
                                   "messages; --", "🐈 cat", "col:cat", "^cat -dog"])
def test_hostile_queries_search_as_plain_words(chat, query):
    page = chat.search(query)
    assert page.total == (3 if "cat" in query else 0)


def test_query_without_words_says_so(chat):
    page = chat.search("?! 🙂")
    assert page.hits == [] and page.total == 0
    assert "no searchable words" in page.render()
