"""Notebook 04's checks: the learner's schema generator, dispatcher and over-limit message,
each run on tools or writes the notebook does not show.

- `tool_schema(function)` is compared with `vmem.signatures.schema` on the same functions,
  reduced to what the lesson asks for: the name, the docstring's first paragraph, one JSON
  type per parameter (str, int and bool only) and the required parameters.
- `dispatch(tools, name, arguments)` must never raise: it returns the tool's result, or a
  text starting with "Error: " that names what was wrong (the tools that exist, the bad
  argument, what the tool raised), and never runs a tool on arguments that do not fit.
  The fallback, `dispatch` below, is the same contract built on vmem's own argument
  checks (`vmem.course.checks.common.dispatched`).
- `over_limit_error(label, current_chars, adding_chars, limit)` is the one-line refusal a
  model reads when a core-memory write would overflow a block. Not its wording but what a
  model needs to act is checked, on unseen blocks and sizes: the block's label, its current
  size, the limit and the overflow as numbers, and both remedies (condense with
  core_memory_replace, move detail to archival memory), in one line of at most
  `MAX_MESSAGE` characters. The fallback is vmem's own refusal (`CoreMemory`'s
  `BlockLimitError`), produced by the library, not copied.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ...core import Block, CoreMemory
from ...errors import BlockLimitError
from ...signatures import schema
from ...text import clip
from ..checks.common import calling, dispatched, fail
from .common import use

ORIGIN = "notebook 04"  # where a kept part was written (vmem.course.parts)

Tools = dict[str, Callable[..., Any]]
Dispatcher = Callable[[Tools, str, str], Any]
ERROR = "Error: "


# --- the dispatcher the lesson falls back to -----------------------------------------

def dispatch(tools: Tools, name: str, arguments: str) -> Any:
    """Run `tools[name]` on the JSON object `arguments`; every failure comes back as text
    starting with "Error: " (vmem's argument checks and wording, `dispatched`)."""
    kind, out = dispatched(tools, name, arguments)
    return out if kind is None else ERROR + out


# --- unseen tools ---------------------------------------------------------------------

def rename_block(label: str, new_label: str, keep_old: bool = False) -> str:
    """Give a core memory block a new label, for when its first name no longer fits
    what it holds.

    Args:
        label: The block's current label.
        new_label: The label it should have.
        keep_old: Whether the old label should stay as an alias.
    """
    return f"{label} -> {new_label}"


def page_of(query: str, page: int = 0, size: int = 5) -> str:
    """Fetch one page of search hits.

    Args:
        query: What to look for.
        page: Which page, from 0.
        size: Hits per page.
    """
    return f"{query}:{page}:{size}"


def health_probe() -> str:
    """Check that the memory service answers."""
    return "pong"


SCHEMA_CASES: tuple[tuple[Callable[..., Any], str], ...] = (
    (rename_block, "a two-line first paragraph, a bool default"),
    (page_of, "int parameters with defaults"),
    (health_probe, "a tool without parameters"),
)


def reduced_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """vmem's schema of `function`, without what the lesson leaves out (argument
    descriptions, the heartbeat argument, additionalProperties)."""
    full = schema(function.__name__, function)["function"]
    properties = {key: {"type": spec["type"]}
                  for key, spec in full["parameters"]["properties"].items()
                  if key != "request_heartbeat"}
    return {"type": "function", "function": {
        "name": full["name"], "description": full["description"],
        "parameters": {"type": "object", "properties": properties,
                       "required": full["parameters"]["required"]}}}


def _check_schema(tool_schema: Callable[[Callable[..., Any]], Any]) -> str:
    for function, what in SCHEMA_CASES:
        expected, got = reduced_schema(function), tool_schema(function)
        if got != expected:
            fail(f"tool_schema({function.__name__}) ({what}) returned "
                 f"{json.dumps(got, default=repr)[:160]}, expected "
                 f"{json.dumps(expected)[:160]}")
    return f"your schemas match vmem's on all {len(SCHEMA_CASES)} unseen tools"


def check_schema(tool_schema: Callable[[Callable[..., Any]], Any]) -> None:
    """Print one line about the learner's `tool_schema` (the notebook reads vmem's
    schemas after it either way, so nothing is returned)."""
    use("schema generator", tool_schema, None, _check_schema, keep="tool_schema",
        origin=ORIGIN)


# --- hostile calls --------------------------------------------------------------------

def _unseen_tools(ran: list[str]) -> Tools:
    def tag_record(record: int, tag: str, pinned: bool = False) -> str:
        ran.append(tag)
        return f"record {record} tagged {tag}"

    def wipe_disk(reason: str) -> str:
        raise OSError(f"read-only store ({reason})")

    return {"tag_record": tag_record, "wipe_disk": wipe_disk}


# (tool, arguments, a word the error must contain, what it tests)
HOSTILE: tuple[tuple[str, str, str, str], ...] = (
    ("label_record", '{"record": 3, "tag": "x"}', "tag_record",
     "an unknown tool: say which tools exist"),
    ("tag_record", '{"record": 3, "tag": ', "JSON", "malformed JSON"),
    ("tag_record", '[3, "family"]', "object", "JSON that is a list, not an object"),
    ("tag_record", "null", "object", "JSON null, not an object"),
    ("tag_record", '{"record": "3", "tag": "x"}', "record", "a string where an int belongs"),
    ("tag_record", '{"record": true, "tag": "x"}', "record",
     "true where an int belongs (in Python, bool is an int)"),
    ("tag_record", '{"record": 3, "tag": 7}', "tag", "a number where a string belongs"),
    ("tag_record", '{"record": 3, "tag": "x", "pinned": "yes"}', "pinned",
     "a string where a bool belongs"),
    ("tag_record", '{"tag": "x"}', "record", "a missing argument"),
    ("tag_record", '{"record": 3, "tag": "x", "colour": "red"}', "colour",
     "an argument the tool does not take"),
    ("wipe_disk", '{"reason": "nightly"}', "read-only store (nightly)",
     "a tool that raises: say what it raised"),
)


def _check_dispatcher(dispatcher: Dispatcher) -> str:
    ran: list[str] = []
    tools = _unseen_tools(ran)
    good = dispatcher(tools, "tag_record", '{"record": 3, "tag": "family", "pinned": true}')
    if good != "record 3 tagged family":
        fail(f"a good call returned {good!r:.100}, expected the tool's own result "
             "'record 3 tagged family'")
    for name, arguments, word, what in HOSTILE:
        answer = dispatcher(tools, name, arguments)
        call = f"dispatch(tools, {name!r}, {arguments!r})"
        if not (isinstance(answer, str) and answer.startswith(ERROR)):
            fail(f"{call} ({what}) returned {answer!r:.100}; expected text starting with "
                 f"{ERROR!r}")
        if word not in answer:
            fail(f"{call} ({what}) said {answer!r:.120}, which does not mention {word!r}: "
                 "the model cannot tell what to fix")
        if len(ran) > 1:
            fail(f"{call} ({what}) ran the tool; a call with bad arguments must not run")
    return f"your dispatcher answers all {len(HOSTILE)} unseen hostile calls with an " \
           "error the model can act on, and runs none of them"


def check_dispatcher(dispatcher: Dispatcher) -> Dispatcher:
    """Print one line about the learner's `dispatch`; return it when it passed, else
    vmem's (`dispatch` above), which the rest of the notebook calls."""
    return use("dispatcher", dispatcher, dispatch, _check_dispatcher, keep="dispatch",
               origin=ORIGIN)


# --- memory pressure the model can act on ---------------------------------------------

OverLimit = Callable[[str, int, int, int], str]
MAX_MESSAGE = 300  # characters: one line a model reads in full on every retry


def over_limit_error(label: str, current_chars: int, adding_chars: int, limit: int) -> str:
    """vmem's wording: the refusal `CoreMemory` itself raises when a write of
    `adding_chars` characters to block `label` (holding `current_chars` of `limit`) would
    overflow it."""
    core = CoreMemory([Block(label, "x" * current_chars, limit)])
    try:
        core.rethink(label, "x" * (current_chars + adding_chars))
    except BlockLimitError as error:
        return str(error)
    raise ValueError(f"{current_chars} + {adding_chars} characters fit in a limit of {limit}: "
                     "there is nothing to refuse")


def bare_refusal(label: str, current_chars: int, adding_chars: int, limit: int) -> str:
    """What the notebook goes on with until the learner's message passes: a refusal that
    says only that the block is full (the bad example of the lesson, not the answer)."""
    return f"Error: block {label!r} is full."


# (label, current_chars, adding_chars, limit, what it tests); every number distinct
OVER_LIMIT_CASES: tuple[tuple[str, int, int, int, str], ...] = (
    ("reading_list", 412, 130, 500, "a block with room left, an append that overshoots"),
    ("trip-plans", 1985, 64, 2000, "the default limit of 2000 characters"),
    ("allergies", 310, 11, 320, "a write one character over"),
)


def _states(text: str, number: int) -> bool:
    """Whether `number` stands in `text` as a number of its own ("1,985" counts as 1985)."""
    plain = re.sub(r"(?<=\d)[,_](?=\d{3}(?!\d))", "", text)
    return re.search(rf"(?<!\d){number}(?!\d)", plain) is not None


def _check_over_limit(over_limit: OverLimit) -> str:
    for label, current, adding, limit, what in OVER_LIMIT_CASES:
        call = f"over_limit_error({label!r}, {current}, {adding}, {limit}) ({what})"
        with calling(call):
            text = over_limit(label, current, adding, limit)
        if not isinstance(text, str):
            fail(f"{call} returned {text!r:.60}; expected the message as a str (return it, "
                 "do not print it)")
        said = f"said {clip(text, 110)!r}"
        over = current + adding - limit
        if "\n" in text.strip():
            fail(f"{call} gave {text.strip().count(chr(10)) + 1} lines; keep the message to "
                 "one line (no line breaks)")
        if len(text) > MAX_MESSAGE:
            fail(f"{call} gave a message {len(text)} characters long; keep it to at most "
                 f"{MAX_MESSAGE}: the model reads all of it every time it retries")
        if label not in text:
            fail(f"{call} {said}, which does not name the block {label!r}: the model cannot "
                 "tell which block to condense")
        for number, meaning in ((current, "the block's current size"), (limit, "its limit"),
                                (over, "by how many characters the write goes over")):
            if not _states(text, number):
                fail(f"{call} {said}, which does not state {meaning}, {number}")
        lowered = text.lower()
        if "replace" not in lowered:
            fail(f"{call} {said}, which does not advise condensing the block with "
                 "core_memory_replace")
        if "archival" not in lowered:
            fail(f"{call} {said}, which does not advise moving detail to archival memory "
                 "with archival_memory_insert")
    return f"your message names the block, its size, the limit and the overflow, and " \
           f"advises both remedies, on all {len(OVER_LIMIT_CASES)} unseen writes"


def check_over_limit(over_limit: OverLimit) -> OverLimit:
    """Print one line about the learner's `over_limit_error`; return it when it passed,
    else `bare_refusal`, which the notebook shows the model: vmem's own wording would hand
    the answer over right after the stub that asks for it."""
    return use("bare refusal", over_limit, bare_refusal, _check_over_limit)


KEPT = {"tool_schema": (reduced_schema, _check_schema), "dispatch": (dispatch, _check_dispatcher)}
"""The parts this notebook keeps for later ones: name -> (vmem's stand-in, its check)."""
