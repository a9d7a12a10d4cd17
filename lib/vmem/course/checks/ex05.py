"""Exercise 5's check: typed core memory in the MemGPT/Letta block shape.

`to_memgpt` turns a flat dict of sections into blocks (label, value, limit, description,
read_only) that survive JSON. `TypedCore` round-trips such blocks, accepts an edit that
lands exactly on a block's limit, and refuses edits over the limit, on read-only or
unknown blocks, and replacements of text that is not there, with an error that names what
a model needs to fix its next call, and without changing anything.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from .common import calling, fail, learner_check, raised

_BLOCK_KEYS = ("label", "value", "limit", "description", "read_only")


@learner_check
def check_ex5(to_memgpt: Callable[..., list[dict[str, Any]]], TypedCore: type) -> str:  # noqa: N803
    """Check the conversion to MemGPT/Letta blocks and the limits and read-only rules."""
    _check_to_memgpt(to_memgpt)
    _check_typed_core(TypedCore)
    return "passed: ex05: blocks have the MemGPT/Letta shape, and limits and read-only hold."


def _check_to_memgpt(to_memgpt: Callable[..., list[dict[str, Any]]]) -> None:
    flat = {"persona": "I am Sam, a patient tutor.", "human": "Name: Ada. Likes tea.",
            "project": ""}
    with calling("to_memgpt(core)"):
        blocks = to_memgpt(dict(flat))
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        fail(f"to_memgpt must return a list of dicts, one per section; got {blocks!r}.")
    labels = [block.get("label") for block in blocks]
    if labels != list(flat):
        fail(f"to_memgpt gave blocks labelled {labels}, expected {list(flat)}: one block "
             "per section, in the order of the dict.")
    for block in blocks:
        missing = [key for key in _BLOCK_KEYS if key not in block]
        if missing:
            fail(f"block {block['label']!r} lacks {missing}: every block needs "
                 f"{', '.join(_BLOCK_KEYS)}.")
        if block["value"] != flat[block["label"]]:
            fail(f"block {block['label']!r} has value {block['value']!r}, expected the "
                 "section's text unchanged.")
        if block["limit"] != 2000 or isinstance(block["limit"], bool):
            fail(f"block {block['label']!r} has limit {block['limit']!r}; with no limits "
                 "given, every block gets the default of 2000 characters.")
        if block["read_only"] is not False:
            fail(f"block {block['label']!r} has read_only={block['read_only']!r}; sections "
                 "converted from a flat dict are writable (False).")
        described = isinstance(block["description"], str) and block["description"].strip()
        if block["label"] in ("persona", "human") and not described:
            fail(f"block {block['label']!r} needs a description: the model reads it to "
                 "learn what belongs in the block.")
        if block["label"] not in ("persona", "human") and block["description"] != "":
            fail(f"block {block['label']!r} has description {block['description']!r}; "
                 "sections other than persona and human get an empty description.")
    if json.loads(json.dumps(blocks)) != blocks:
        fail("the blocks do not survive a JSON round trip: use only str, int and bool.")
    with calling("to_memgpt(core, limits={'persona': 60})"):
        limited = to_memgpt(dict(flat), limits={"persona": 60})
    got = {block.get("label"): block.get("limit") for block in limited}
    if got != {"persona": 60, "human": 2000, "project": 2000}:
        fail(f"with limits={{'persona': 60}} the limits were {got}: a given limit applies to "
             "its section, the rest keep the default.")
    error = raised(lambda: to_memgpt({"human": "x" * 60}, limits={"human": 60}))
    if error is not None:
        fail(f"a section exactly at its limit (60 characters, limit 60) raised {error!r}; the "
             "limit is the largest allowed size, so it fits.")
    error = raised(lambda: to_memgpt({"human": "x" * 61}, limits={"human": 60}))
    if not isinstance(error, ValueError):
        fail("a section longer than its limit must raise ValueError naming it, never be "
             f"truncated or passed through; got {'no error' if error is None else error!r}.")


def _core(TypedCore: type, blocks: list[dict[str, Any]]) -> Any:  # noqa: N803
    with calling("TypedCore.from_memgpt(blocks)"):
        return TypedCore.from_memgpt([dict(block) for block in blocks])


def _dump(core: Any) -> list[dict[str, Any]]:
    with calling("core.to_memgpt()"):
        return core.to_memgpt()


def _block(label: str, value: str, limit: int, read_only: bool = False,
           description: str = "") -> dict[str, Any]:
    return {"label": label, "value": value, "limit": limit, "description": description,
            "read_only": read_only}


def _refuses(core: Any, edit: str, args: tuple[str, ...], needs: Sequence[str],
             why: str) -> None:
    """An edit must raise an error whose message contains `needs`, and change nothing."""
    before = _dump(core)
    error = raised(lambda: getattr(core, edit)(*args))
    call = f"{edit}{args!r}"
    if error is None:
        fail(f"{call} was accepted, but {why}; it must raise an error instead (never "
             "truncate or drop text silently).")
    if isinstance(error, AssertionError):
        raise error
    message = str(error).lower()
    for need in needs:
        if need.lower() not in message:
            fail(f"{call} raised {type(error).__name__}({str(error)!r}); a model reading it "
                 f"needs to see {need!r} in it ({why}) to fix its next call.")
    if _dump(core) != before:
        fail(f"the refused {call} still changed the block: validate first, then change.")


def _exact_fit(core: Any, edit: str, args: tuple[str, ...], position: int, want: str) -> None:
    """An edit whose result is exactly at the block's limit must be accepted."""
    error = raised(lambda: getattr(core, edit)(*args))
    label = args[0]
    if error is not None:
        fail(f"an {edit} that fills block {label!r} exactly to its limit raised "
             f"{type(error).__name__}({str(error)!r}); it must be accepted: the limit is the "
             "largest allowed size.")
    got = _dump(core)[position]["value"]
    if got != want:
        fail(f"after an {edit} on block {label!r} its value is {got!r}, expected {want!r}.")


def _check_typed_core(TypedCore: type) -> None:  # noqa: N803
    blocks = [_block("persona", "I am Sam.", 40, description="Who you are."),
              _block("human", "Name: Ada.", 30, description="Who the user is."),
              _block("rules", "Be kind.", 100, read_only=True)]
    core = _core(TypedCore, blocks)
    if _dump(core) != blocks:
        fail(f"TypedCore.from_memgpt(blocks).to_memgpt() gave {_dump(core)!r}, expected the "
             "same blocks back: keep each block's value, limit, description and read_only.")

    probe = _core(TypedCore, [_block("notes", "abc", 2000)])
    with calling("append('notes', 'xyz')"):
        probe.append("notes", "xyz")
    grown = _dump(probe)[0]["value"]
    sep = grown[3:-3] if grown.startswith("abc") and grown.endswith("xyz") else None
    if sep not in ("", " ", "\n"):
        fail(f"appending 'xyz' to 'abc' gave {grown!r}: append keeps the old value and adds "
             "the new text at its end (joined by a newline).")

    room = 30 - len("Name: Ada.") - len(sep)
    _refuses(core, "append", ("human", "x" * (room + 1)), ["human", "30"],
             "it would take block 'human' one character over its limit of 30")
    _exact_fit(core, "append", ("human", "y" * room), 1, "Name: Ada." + sep + "y" * room)
    size = 30 + len(sep) + 1
    _refuses(core, "append", ("human", "z"), ["human", str(size), "30"],
             f"block 'human' would hold {size} characters, over its limit of 30")
    _refuses(core, "append", ("rules", "Be brief."), ["rules", "read"],
             "block 'rules' is read-only")
    _refuses(core, "replace", ("rules", "kind", "rude"), ["rules", "read"],
             "block 'rules' is read-only")
    _refuses(core, "append", ("mood", "happy"), ["mood"], "there is no block 'mood'")
    _refuses(core, "replace", ("persona", "Bob", "Rob"), ["persona", "Bob"],
             "'Bob' does not occur in block 'persona'")
    _refuses(core, "replace", ("persona", "", "x"), ["persona"],
             "an empty old text matches everywhere")
    extra = 40 - len("I am Sam.")
    _refuses(core, "replace", ("persona", "Sam", "Sam" + "z" * (extra + 1)), ["persona", "40"],
             "the result would be one character over block 'persona''s limit of 40")
    _exact_fit(core, "replace", ("persona", "Sam", "Sam" + "z" * extra), 0,
               "I am Sam" + "z" * extra + ".")
    _check_twice(TypedCore)


def _check_twice(TypedCore: type) -> None:  # noqa: N803
    """`old` occurring twice: whether the learner replaces both or the first, the block
    they store must fit its limit (a size worked out for one replacement while both are
    made would not)."""
    value, limit = "tea, then tea.", 20
    core = _core(TypedCore, [_block("likes", value, limit)])
    error = raised(lambda: core.replace("likes", "tea", "green tea"))
    got = _dump(core)[0]["value"]
    if error is None and len(got) > limit:
        fail(f"replace('likes', 'tea', 'green tea') on {value!r} (limit {limit}) stored "
             f"{got!r}, {len(got)} characters: measure the value you actually store, with "
             "every occurrence replaced, against the limit.")
    if error is None and got not in (value.replace("tea", "green tea"),
                                     value.replace("tea", "green tea", 1)):
        fail(f"replace('likes', 'tea', 'green tea') on {value!r} stored {got!r}; expected "
             "'tea' replaced and nothing else changed.")
    if error is not None and got != value:
        fail("a refused replace still changed the block: validate first, then change.")
