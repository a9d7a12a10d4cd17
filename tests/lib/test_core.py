"""Core memory: validated edits, model-readable errors, rendering, Letta-shaped JSON."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from vmem.core import HISTORY_SIZE, Block, CoreMemory
from vmem.errors import (
    BlockLimitError,
    CoreMemoryError,
    MatchError,
    ReadOnlyBlockError,
    UnknownBlockError,
    VMemError,
)


@pytest.fixture
def core(clock) -> CoreMemory:
    return CoreMemory([Block("persona", "I am Sam.", 50, "Who you are."),
                       Block("human", "Name: Ada\nLikes tea", 50, "Who the user is."),
                       Block("rules", "Be kind.", 50, "Fixed rules.", read_only=True)],
                      clock=clock)


def snapshot(core: CoreMemory) -> str:
    return json.dumps(core.to_dict(history=True), sort_keys=True)


def test_default_has_persona_and_human_with_one_sentence_descriptions() -> None:
    core = CoreMemory.default()
    assert core.labels == ["persona", "human"]
    for block in core:
        assert block.limit == 2000 and not block.read_only
        assert block.description.endswith(".") and block.description.count(".") == 1
    assert core.get("human").value == ""


def test_append_adds_a_line(core) -> None:
    core.append("human", "Lives in Oslo")
    assert core.get("human").value == "Name: Ada\nLikes tea\nLives in Oslo"
    empty = CoreMemory([Block("notes")])
    empty.append("notes", "first")
    assert empty.get("notes").value == "first"


def test_replace_exact_once(core) -> None:
    core.replace("human", "tea", "coffee")
    assert core.get("human").value == "Name: Ada\nLikes coffee"
    core.replace("human", "\nLikes coffee", "")  # empty new deletes
    assert core.get("human").value == "Name: Ada"


def test_replace_refuses_empty_missing_and_ambiguous_old(core) -> None:
    before = snapshot(core)
    with pytest.raises(MatchError, match="empty"):
        core.replace("human", "", "x")
    with pytest.raises(MatchError, match=r"does not occur in block 'human'.*Name: Ada"):
        core.replace("human", "Likes TEA", "x")
    core2 = CoreMemory([Block("notes", "a cat, a cat")])
    with pytest.raises(MatchError, match=r"occurs 2 times.*replace_all"):
        core2.replace("notes", "cat", "dog")
    assert core2.get("notes").value == "a cat, a cat"
    assert snapshot(core) == before
    core2.replace("notes", "cat", "dog", replace_all=True)
    assert core2.get("notes").value == "a dog, a dog"


def test_insert_at_line_positions(core) -> None:
    core.insert("human", "Age: 30", line=1)
    assert core.get("human").value == "Name: Ada\nAge: 30\nLikes tea"
    core.insert("human", "TOP", line=0)
    core.insert("human", "END")  # -1: after the last line
    assert core.get("human").value.split("\n") == ["TOP", "Name: Ada", "Age: 30",
                                                   "Likes tea", "END"]
    with pytest.raises(CoreMemoryError, match=r"line 9 is out of range.*5 lines"):
        core.insert("human", "x", line=9)


def test_rethink_rewrites_the_block(core) -> None:
    core.rethink("human", "Ada, 30, tea drinker")
    assert core.get("human").value == "Ada, 30, tea drinker"


def test_over_limit_says_size_limit_overflow_and_what_to_do(core) -> None:
    before = snapshot(core)
    with pytest.raises(BlockLimitError) as caught:
        core.append("human", "x" * 40)  # 19 + 1 + 40 = 60 chars, limit 50
    text = str(caught.value)
    assert "60 characters" in text and "limit of 50" in text and "by 10" in text
    assert "holds 19" in text and "replace" in text and "archival" in text
    with pytest.raises(BlockLimitError):
        core.rethink("persona", "y" * 51)
    core.rethink("persona", "y" * 50)  # exactly the limit is fine
    core.rethink("persona", "I am Sam.")
    assert json.loads(snapshot(core))["blocks"][1] == json.loads(before)["blocks"][1]


def test_read_only_blocks_refuse_every_edit(core) -> None:
    before = snapshot(core)
    for edit in (lambda: core.append("rules", "x"), lambda: core.replace("rules", "kind", "x"),
                 lambda: core.insert("rules", "x", 0), lambda: core.rethink("rules", "x")):
        with pytest.raises(ReadOnlyBlockError, match="read-only"):
            edit()
    assert snapshot(core) == before


def test_unknown_label_lists_the_labels(core) -> None:
    with pytest.raises(UnknownBlockError, match=r"'persona', 'human', 'rules'"):
        core.append("user", "x")
    with pytest.raises(UnknownBlockError):
        core.get("nope")


def test_empty_append_and_insert_are_refused(core) -> None:
    with pytest.raises(CoreMemoryError, match="nothing to append"):
        core.append("human", "")
    with pytest.raises(CoreMemoryError, match="nothing to insert"):
        core.insert("human", "")


def test_errors_belong_to_one_family_not_the_builtin_memory_error() -> None:
    for error in (UnknownBlockError, BlockLimitError, ReadOnlyBlockError, MatchError):
        assert issubclass(error, CoreMemoryError) and issubclass(error, VMemError)
        assert not issubclass(error, MemoryError)


def test_render_shows_description_size_flags_and_value(core) -> None:
    text = core.render()
    assert "<persona chars=9/50>\nWho you are.\n<value>\nI am Sam.\n</value>" in text
    assert "<rules chars=8/50 read_only>" in text
    assert text.index("persona") < text.index("human") < text.index("rules")


def test_to_dict_is_the_letta_block_shape_and_round_trips(core) -> None:
    data = core.to_dict()
    assert [set(block) for block in data["blocks"]] == [
        {"label", "value", "limit", "description", "read_only", "metadata"}] * 3
    assert data["blocks"][2] == {"label": "rules", "value": "Be kind.", "limit": 50,
                                 "description": "Fixed rules.", "read_only": True,
                                 "metadata": {}}
    assert CoreMemory.from_dict(json.loads(json.dumps(data))).to_dict() == data
    core.append("human", "x")
    full = json.loads(json.dumps(core.to_dict(history=True)))
    assert CoreMemory.from_dict(full).to_dict(history=True) == full


def test_history_records_version_old_new_and_time(core) -> None:
    core.append("human", "Lives in Oslo")
    with pytest.raises(MatchError):
        core.replace("human", "nothing like this", "x")
    core.replace("human", "Oslo", "Bergen")
    block = core.get("human")
    assert block.version == 2
    first, second = block.history
    assert (first.version, first.old, first.new) == (1, "Name: Ada\nLikes tea",
                                                     "Name: Ada\nLikes tea\nLives in Oslo")
    assert second.old == first.new and second.new.endswith("Bergen")
    assert first.time == datetime(2024, 1, 1, 9, 0, tzinfo=timezone.utc)
    assert second.time == datetime(2024, 1, 1, 9, 0, 1, tzinfo=timezone.utc)
    assert core.last_edit == second.time


def test_history_is_bounded_but_versions_keep_counting() -> None:
    core = CoreMemory([Block("notes")])
    for number in range(HISTORY_SIZE + 5):
        core.rethink("notes", str(number))
    block = core.get("notes")
    assert block.version == HISTORY_SIZE + 5
    assert len(block.history) == HISTORY_SIZE
    assert block.history[0].version == 6 and block.history[-1].new == str(HISTORY_SIZE + 4)


def test_block_construction_is_validated() -> None:
    with pytest.raises(ValueError, match="label"):
        Block("two words")
    with pytest.raises(ValueError, match="limit"):
        Block("notes", limit=0)
    with pytest.raises(BlockLimitError):
        Block("notes", "x" * 11, limit=10)
    with pytest.raises(ValueError, match="unique"):
        CoreMemory([Block("a"), Block("a")])


def test_unicode_counts_characters_not_bytes() -> None:
    core = CoreMemory([Block("notes", limit=5)])
    core.append("notes", "日本語です")
    assert core.get("notes").chars == 5
    with pytest.raises(BlockLimitError):
        core.append("notes", "!")
