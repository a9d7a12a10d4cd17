"""The agent file (`vmem.agentfile`, docs/AGENT_FILE.md): an export imported into a new
store renders the same prompt and answers every search the same way (the demo agent and
a 10,000-message agent, SQLite to PostgreSQL and back, each export byte-equal to the
last); Letta's names where they fit; a newer or malformed file is refused naming the
field, and nothing is written."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable

import pytest
from agent_builders import ANA, BEN, build_demo, build_large, build_neighbour, view

from vmem.agentfile import VERSION, export_document, import_document, parse
from vmem.errors import StoreError, StoreFormatError
from vmem.storage import open_backend
from vmem.store import MAX_RECORD_CHARS

CAROL = {"user_id": "carol"}


def _export(target: str, scope: dict[str, str] | None = None) -> dict:
    backend = open_backend(target)
    try:
        return export_document(backend, scope)
    finally:
        backend.close()


def _import(target: str, document: object, scope: dict[str, str] | None = None) -> str:
    backend = open_backend(target)
    try:
        return str(import_document(backend, document, scope))
    finally:
        backend.close()


def _scopes(target: str) -> list[dict[str, str]]:
    backend = open_backend(target)
    try:
        return backend.scopes()
    finally:
        backend.close()


@pytest.fixture(scope="module")
def demo_document(tmp_path_factory) -> dict:
    """The agent file of the demo agent (Ana) and her neighbour Ben, from SQLite."""
    path = str(tmp_path_factory.mktemp("demo") / "agents.db")
    build_demo(path, ANA)
    build_neighbour(path)
    return _export(path)


def test_the_round_trip_shows_the_same_agents_on_each_backend(new_target):
    source, destination = new_target(), new_target()
    build_demo(source, ANA)
    build_neighbour(source)
    document = _export(source)
    assert "imported 2 scopes" in _import(destination, document)
    assert "every id kept" in _import(new_target(), document)
    assert _export(destination) == document
    for scope in (ANA, BEN):  # scores too: the new store holds only what was imported
        assert view(destination, scope) == view(source, scope)


@pytest.mark.slow  # about 20 s: 10,000 messages written into PostgreSQL and out again
def test_a_10000_message_agent_goes_from_sqlite_to_postgres_and_back(tmp_path, postgres_url):
    original, back = str(tmp_path / "agents.db"), str(tmp_path / "back.db")
    build_large(original, ANA)
    build_neighbour(original)
    document = _export(original)
    assert len(document["agents"][0]["messages"]) > 10_000
    text = json.dumps(document, ensure_ascii=False)
    _import(postgres_url, parse(text))
    from_postgres = _export(postgres_url)
    assert from_postgres == document
    _import(back, from_postgres)
    expected = {str(scope): view(original, scope) for scope in (ANA, BEN)}
    for target in (postgres_url, back):
        for scope in (ANA, BEN):
            assert view(target, scope) == expected[str(scope)], (target[:10], scope)


def test_the_file_uses_lettas_names_where_they_fit(demo_document):
    assert {"agents", "blocks", "metadata"} <= set(demo_document)
    assert demo_document["format"] == "vmem-agent" and demo_document["version"] == VERSION
    agent = demo_document["agents"][0]
    assert {"id", "block_ids", "messages", "in_context_message_ids", "passages"} <= set(agent)
    block = demo_document["blocks"][0]
    assert {"label", "value", "limit", "description", "read_only", "metadata",
            "history"} <= set(block)
    assert agent["block_ids"][0] == block["id"]
    message = agent["messages"][0]
    assert {"role", "content", "name", "tool_calls", "tool_call_id", "created_at"} <= set(message)
    superseded = [p for p in agent["passages"] if p["superseded_by"] is not None]
    assert superseded and all(p["invalid_at"] for p in superseded)


def test_import_under_another_scope(tmp_path, demo_document):
    single = _export_one(demo_document, 0)
    target = str(tmp_path / "carol.db")
    _import(target, single, CAROL)
    assert _scopes(target) == [CAROL]
    source = str(tmp_path / "ana.db")
    _import(source, single)
    carol, ana = view(target, CAROL), view(source, ANA)
    assert carol["prompt"] == ana["prompt"] and carol["searches"] == ana["searches"]
    assert [r.text for r in carol["records"]] == [r.text for r in ana["records"]]
    assert all(record.scope == CAROL for record in carol["records"])
    with pytest.raises(StoreFormatError, match="needs a file of one agent"):
        _import(str(tmp_path / "two.db"), demo_document, CAROL)


def _export_one(document: dict, index: int) -> dict:
    """`document` with only its agent `index` (and that agent's blocks)."""
    agent = document["agents"][index]
    return {**document, "agents": [agent],
            "blocks": [b for b in document["blocks"] if b["id"] in agent["block_ids"]]}


def _at(document: dict, path: str) -> tuple[dict | list, str | int]:
    """The container and key of a dotted path such as `agents.0.messages.1.id`."""
    *parents, last = [int(part) if part.isdigit() else part for part in path.split(".")]
    node = document
    for part in parents:
        node = node[part]
    return node, last


def _set(path: str, value: object) -> Callable[[dict], None]:
    def change(document: dict) -> None:
        node, key = _at(document, path)
        node[key] = value
    return change


def _copy_from(path: str, source: str) -> Callable[[dict], None]:
    def change(document: dict) -> None:
        node, key = _at(document, path)
        from_node, from_key = _at(document, source)
        node[key] = copy.deepcopy(from_node[from_key])
    return change


def _dangling_supersession(document: dict) -> None:
    passage = next(p for p in document["agents"][0]["passages"] if p["superseded_by"])
    passage["superseded_by"] = 99_999


BROKEN: dict[str, tuple[Callable[[dict], None], str]] = {
    "newer version": (_set("version", VERSION + 1), "newer vmem; this vmem reads up to"),
    "version as text": (_set("version", "1"), "version: expected a whole number"),
    "not ours": (_set("format", "letta"), "not a vmem agent file"),
    "agents not a list": (_set("agents", {}), "agents: expected a list"),
    "role of the wrong type": (_set("agents.0.messages.0.role", 5),
                               r"agents\[0\].messages\[0\].role: expected a non-empty"),
    "unknown role": (_set("agents.0.messages.0.role", "robot"), "expected one of system"),
    "id as text": (_set("agents.0.messages.1.id", "2"), r"messages\[1\].id: expected a whole"),
    "time without a zone": (_set("agents.0.messages.0.created_at", "2024-01-01T09:00:00"),
                            "has no time zone"),
    "time not a time": (_set("agents.0.sessions.0.started_at", "soon"), "ISO 8601"),
    "content not text": (_set("agents.0.messages.0.content", ["hi"]), "content: expected"),
    "tags not a list": (_set("agents.0.passages.0.tags", "health"), r"tags: expected a list"),
    "flagged not a boolean": (_set("agents.0.passages.0.flagged", "no"), "true or false"),
    "context not an object": (_set("agents.0.context", []), r"context: expected an object"),
    "duplicate message id": (_copy_from("agents.0.messages.1.id", "agents.0.messages.0.id"),
                             "message 1 appears twice"),
    "duplicate message id across agents": (
        _copy_from("agents.1.messages.0.id", "agents.0.messages.0.id"), "appears twice"),
    "duplicate passage id": (_copy_from("agents.0.passages.1.id", "agents.0.passages.0.id"),
                             "record 1 appears twice"),
    "duplicate session id": (_copy_from("agents.1.sessions.0.id", "agents.0.sessions.0.id"),
                             "session 1 appears twice"),
    "duplicate scope": (_copy_from("agents.1.scope", "agents.0.scope"), "scope.*appears twice"),
    "duplicate block id": (_copy_from("blocks.1.id", "blocks.0.id"), "is used twice"),
    "dangling block": (_set("agents.0.block_ids.0", "block-99"), "no block 'block-99'"),
    "shared block": (_copy_from("agents.1.block_ids.0", "agents.0.block_ids.0"),
                     "vmem agents share no blocks"),
    "dangling supersession": (_dangling_supersession, "no passage 99999 in this agent"),
    "dangling context message": (_set("agents.0.in_context_message_ids.0", 99_999),
                                 "no message 99999 in this agent"),
    "dangling unsummarized message": (_set("agents.0.context.unsummarized_ids", [99_999]),
                                      "unsummarized_ids: no message 99999"),
    "clipped message not in the context": (_set("agents.0.context.clipped", [[99_999, 5]]),
                                           r"clipped\[0\]: message 99999 is not in the"),
    "clipped pair of one number": (_set("agents.0.context.clipped", [[1]]),
                                   r"expected \[message id, characters shown\]"),
    "block over its limit": (_set("blocks.0.limit", 1), "over its limit"),
    "passage too long": (_set("agents.0.passages.0.text", "x" * (MAX_RECORD_CHARS + 1)),
                         "the limit is"),
    "unpaired surrogate": (_set("agents.0.messages.0.content", "hi \ud800"),
                           "unpaired surrogate"),
    "bad scope": (_set("agents.0.scope", {"user id": "ana"}), "scope key"),
    "document not an object": (lambda document: None, ""),  # replaced below
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_broken_file_is_refused_naming_the_field_and_nothing_is_written(
        tmp_path, demo_document, name):
    document = copy.deepcopy(demo_document)
    change, expected = BROKEN[name]
    change(document)
    if name == "document not an object":
        document, expected = [document], "the document: expected an object"
    target = str(tmp_path / "ben.db")
    build_neighbour(target, CAROL)
    before = view(target, CAROL)
    with pytest.raises(StoreFormatError, match=expected) as refused:
        _import(target, document)
    assert "nothing was imported" in str(refused.value)
    assert _scopes(target) == [CAROL]
    assert {k: v for k, v in view(target, CAROL).items() if k != "sessions"} == \
        {k: v for k, v in before.items() if k != "sessions"}


@pytest.mark.parametrize("text", [b"{not json", b"", b'{"format": "vmem-agent"',
                                  b"\xff\xfe\xfa"])
def test_text_that_is_not_json_is_refused(text):
    with pytest.raises(StoreFormatError, match="is not (JSON|UTF-8)"):
        parse(text, "agent.json")


def test_a_failure_while_writing_leaves_nothing_behind(new_target, demo_document):
    target = new_target()
    _import(target, _export_one(demo_document, 1))  # Ben is there already
    with pytest.raises(StoreError, match="already holds the agent"):
        _import(target, demo_document)
    assert _scopes(target) == [BEN]
    document = copy.deepcopy(demo_document)
    document["agents"][0]["messages"][-1]["content"] = "NUL \x00 inside"
    if target.startswith("postgresql://"):  # PostgreSQL refuses it half way: rolled back
        fresh = new_target()
        with pytest.raises(StoreError, match="NUL"):
            _import(fresh, document)
        assert _scopes(fresh) == []
