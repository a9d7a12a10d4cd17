"""Every size limit, at, below and above its bound, and hostile text through every search.

Limits (docs/RELIABILITY.md has the table): a limit is refused with `InputTooLargeError`
(a `VMemError`) saying what was too big and what to do instead, never truncated in
silence; tools turn it into a failed `ToolResult`. Any search string (FTS5 syntax, SQL,
quotes, control characters, 100 KB of text) gives results or a clear `VMemError`, never an
exception from the database (SQLite or PostgreSQL).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vmem import store, tools
from vmem.archival import ArchivalStore
from vmem.clock import StepClock
from vmem.context import MainContext
from vmem.core import CoreMemory
from vmem.errors import InputTooLargeError, VMemError
from vmem.messages import Message
from vmem.recall import RecallStore
from vmem.tools import MemoryTools


@pytest.fixture
def stores(agent_target):
    """The two stores and the tools, once on SQLite and once on PostgreSQL."""
    clock = StepClock()
    archival = ArchivalStore(agent_target, clock=clock)
    recall = RecallStore(archival.backend, clock=clock)
    archival.insert("the harbour lighthouse is painted red", tags=["harbour"])
    recall.add(Message(role="user", content="we walked to the harbour lighthouse"))
    core = CoreMemory.default(clock=clock, limit=300)
    context = MainContext("You are helpful.", core, 4000, recall=recall, archival=archival,
                          clock=clock)
    return archival, recall, MemoryTools(context, recall, archival, clock=clock)


def _text(n: int) -> str:
    """`n` characters of words, ending in a letter."""
    return ("harbour " * (n // 8 + 1))[:n - 1] + "x"


def test_the_limits_are_the_documented_ones():
    assert (store.MAX_MESSAGE_CHARS, store.MAX_RECORD_CHARS, store.MAX_QUERY_CHARS,
            store.MAX_PAGE_SIZE, store.MAX_TAGS, store.MAX_TAG_CHARS) == \
        (200_000, 50_000, 20_000, 100, 32, 64)
    assert (tools.MAX_STRING_CHARS, tools.MAX_ARGUMENTS_CHARS, tools.MAX_PAGE,
            tools.PAGE_SIZE) == (20_000, 200_000, 100_000, 5)
    assert store.MAX_QUERY_CHARS >= 10_000  # the floor


def test_record_size_at_below_and_above(stores):
    archival, _, _ = stores
    limit = store.MAX_RECORD_CHARS
    for size in (limit - 1, limit):
        record_id = archival.insert(_text(size))
        assert len(archival.get(record_id).text) == size  # stored whole, not truncated
    before = len(archival)
    with pytest.raises(InputTooLargeError, match=f"{limit + 1:,} characters; the limit is "
                                                 f"{limit:,}"):
        archival.insert(_text(limit + 1))
    assert len(archival) == before


def test_message_size_at_below_and_above(stores):
    _, recall, _ = stores
    limit = store.MAX_MESSAGE_CHARS
    for size in (limit - 1, limit):
        message = recall.add(Message(role="user", content=_text(size)))
        assert len(recall.get(message.id).content) == size
    before = len(recall)
    with pytest.raises(InputTooLargeError, match="the message is"):
        recall.add(Message(role="user", content=_text(limit + 1)))
    assert len(recall) == before


def test_query_length_at_below_and_above_for_both_stores(stores):
    archival, recall, _ = stores
    limit = store.MAX_QUERY_CHARS
    for size in (limit - 1, limit):
        assert archival.search(_text(size)).total == 1
        assert recall.search(_text(size)).total == 1
    for search in (archival.search, recall.search):
        with pytest.raises(InputTooLargeError, match="the query is"):
            search(_text(limit + 1))


def test_many_distinct_query_words_at_the_limit_stay_fast(stores):
    archival, _, _ = stores
    for i in range(50):
        archival.insert(f"note w{i} w{i + 1} harbour")
    query = " ".join(f"w{i}" for i in range(5000))[:store.MAX_QUERY_CHARS]
    page = archival.search(query, top_k=store.MAX_PAGE_SIZE)
    assert page.total == 50 and len(page) == 50


def test_page_size_at_below_and_above(stores):
    archival, recall, _ = stores
    limit = store.MAX_PAGE_SIZE
    for size in (limit - 1, limit):
        assert len(archival.search("harbour", top_k=size)) == 1
        assert len(recall.search("harbour", page_size=size)) == 1
    with pytest.raises(InputTooLargeError, match=f"top_k={limit + 1} is over the limit"):
        archival.search("harbour", top_k=limit + 1)
    with pytest.raises(InputTooLargeError, match=f"page_size={limit + 1} is over the limit"):
        recall.search("harbour", page_size=limit + 1)


def test_tag_count_and_tag_length_at_below_and_above(stores):
    archival, _, _ = stores
    for count in (store.MAX_TAGS - 1, store.MAX_TAGS):
        tags = [f"t{i}" for i in range(count)]
        assert archival.get(archival.insert("tagged", tags=tags)).tags == tuple(tags)
        assert archival.search("tagged", tags=tags).total >= 1
    with pytest.raises(InputTooLargeError, match=f"{store.MAX_TAGS + 1} tags; the limit is"):
        archival.insert("tagged", tags=[f"t{i}" for i in range(store.MAX_TAGS + 1)])
    for size in (store.MAX_TAG_CHARS - 1, store.MAX_TAG_CHARS):
        assert archival.get(archival.insert("long tag", tags=["a" * size])).tags == ("a" * size,)
    with pytest.raises(InputTooLargeError, match="the limit is 64"):
        archival.insert("long tag", tags=["a" * (store.MAX_TAG_CHARS + 1)])


def test_tool_string_limit_at_below_and_above(stores):
    archival, _, memory_tools = stores
    limit = tools.MAX_STRING_CHARS
    for size in (limit - 1, limit):
        result = memory_tools.call("archival_memory_insert", {"content": _text(size)})
        assert result.ok and len(archival.get(result.record_id).text) == size
        assert memory_tools.call("archival_memory_search", {"query": _text(size)}).ok
        assert memory_tools.call("conversation_search", {"query": _text(size)}).ok
    before = len(archival)
    for name, key in (("archival_memory_insert", "content"), ("archival_memory_search", "query"),
                      ("conversation_search", "query"), ("send_message", "message")):
        result = memory_tools.call(name, {key: _text(limit + 1)})
        assert not result.ok and result.error == "bad_arguments"
        assert f"{limit + 1} characters long, over the {limit} limit" in result.content
    assert len(archival) == before


def test_tool_raw_arguments_limit_at_and_above(stores):
    _, _, memory_tools = stores
    limit = tools.MAX_ARGUMENTS_CHARS
    padding = json.dumps({"query": "harbour", "page": 0})
    at_limit = padding[:-1] + " " * (limit - len(padding)) + "}"
    assert len(at_limit) == limit and memory_tools.call("archival_memory_search", at_limit).ok
    over = padding[:-1] + " " * (limit + 1 - len(padding)) + "}"
    result = memory_tools.call("archival_memory_search", over)
    assert not result.ok and result.error == "invalid_json"
    assert f"over the {limit} limit" in result.content


def test_tool_page_number_at_below_and_above(stores):
    _, _, memory_tools = stores
    for page in (tools.MAX_PAGE - 1, tools.MAX_PAGE):
        for name in ("archival_memory_search", "conversation_search"):
            result = memory_tools.call(name, {"query": "harbour", "page": page})
            assert result.ok and "past the end" in result.content
    for page in (tools.MAX_PAGE + 1, -1, 2**70):
        result = memory_tools.call("archival_memory_search", {"query": "harbour", "page": page})
        assert not result.ok and result.error == "bad_arguments"


def test_core_block_limit_through_the_tools_at_below_and_above(stores):
    _, _, memory_tools = stores
    core = memory_tools.context.core
    room = core.get("human").limit
    assert memory_tools.call("core_memory_append", {"label": "human",
                                                    "content": "a" * (room - 11)}).ok
    assert memory_tools.call("core_memory_append", {"label": "human", "content": "end."}).ok
    assert core.get("human").chars == room - 6  # below: "\n" joins the lines
    result = memory_tools.call("core_memory_replace", {"label": "human", "old_content": "end.",
                                                       "new_content": "finish.!!!!"})
    assert not result.ok and "over its limit of 300 by 1" in result.content  # above
    assert core.get("human").chars == room - 6  # refused: unchanged
    assert memory_tools.call("core_memory_replace", {"label": "human", "old_content": "end.",
                                                     "new_content": "finish.!!!"}).ok
    assert core.get("human").chars == room  # exactly at the limit


# --- hostile text through every search path ------------------------------------------------

HOSTILE = [
    '"', '""', "'", "*", "^harbour", "harbour*", "NEAR(harbour lighthouse, 2)",
    "harbour AND lighthouse", "harbour OR", "NOT harbour", "(harbour", "col:harbour",
    "terms:harbour", "{harbour lighthouse}", "harbour + lighthouse", '"harbour" "',
    "'; DROP TABLE archival; --", "1 OR 1=1", "\") OR 1=1 --", "x' UNION SELECT * FROM "
    "sqlite_master --", "\x00harbour", "harbour\x00", "\u202eharbour", "h\u0301arbour",
    "ＨＡＲＢＯＵＲ", "🏖 harbour 🏖", "\ud800harbour", "", " ", "\n\t",
    "harbour " * 12_500,  # 100 KB
    "x" * 100_000,
]


def _search_everywhere(archival, recall, memory_tools, query) -> None:
    for search in (archival.search, recall.search):
        try:
            page = search(query)
        except VMemError as error:
            assert str(error)
        else:
            assert page.total >= len(page.ids)
    for name in ("archival_memory_search", "conversation_search"):
        result = memory_tools.call(name, {"query": query})
        assert result.error in (None, "bad_arguments", "refused"), result.content
    for name in ("archival_memory_search", "conversation_search"):
        result = memory_tools.call(name, json.dumps({"query": query}))
        assert result.error in (None, "bad_arguments", "refused", "invalid_json")


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_queries_give_results_or_a_clear_error(stores, query):
    archival, recall, memory_tools = stores
    _search_everywhere(archival, recall, memory_tools, query)
    assert archival.search("harbour").total == 1  # nothing was dropped or rewritten
    assert len(archival) == 1 and len(recall) == 1  # the tables are still there


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(query=st.text(max_size=60) | st.sampled_from(HOSTILE[:-2]),
       tags=st.none() | st.lists(st.text(max_size=8) | st.just("\udfff"), max_size=3),
       user=st.none() | st.text(max_size=6) | st.just("u\ud800"))
def test_any_search_arguments_never_leak_a_database_exception(stores, query, tags, user):
    archival, recall, _ = stores
    scope = None if user is None else {"user_id": user}
    for call in (lambda: archival.search(query, tags=tags, scope=scope),
                 lambda: archival.records(scope=scope),
                 lambda: recall.search(query, scope=scope)):
        try:
            call()
        except VMemError:
            pass
        except Exception as error:  # pragma: no cover - the failure: anything but VMemError
            pytest.fail(f"{type(error).__name__} leaked: {error}")
