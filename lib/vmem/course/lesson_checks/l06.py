"""Notebook 06's check of the learner's save and restore.

The learner writes `save_state(context) -> str` (JSON text) and `reopen(text, system,
max_tokens, recall, archival, clock) -> MainContext`. `check_persistence` builds a context the
notebook does not show (an edited core block, an eviction, a summary, an archival
record), saves it with the
learner's code, reopens it over the same recall storage and demands the same prompt, then
appends one more message to both and demands the same prompt again (so the counters and
the warning flag came back too). The saved text must hold the queued messages' ids, not
their text: recall already has them, and two copies could disagree. It prints one line
and returns the pair the notebook goes on with (the learner's, or `save_state` and
`reopen` below, built on `MainContext.state` and `restore`).

The learner also writes `resolve_citations(reply, recall, archival)`: each `[message N]` and
`[record N]` of a reply, in order and once, as (kind, id, the stored item's `cite()` line),
with None for a citation that points nowhere (no such id, or one outside the store's
scope). `check_citations` runs it on replies the notebook does not show, over one file
shared by two users' scopes: both kinds, repeats, malformed citations, an invented id,
another user's ids, and no citation at all, and compares with `resolve_citations` below.
A reply is the model's own text, with no structured twin, so this is the one place a
citation is read back from text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import timedelta

from ...archival import ArchivalStore
from ...clock import Clock, StepClock
from ...context import MainContext
from ...core import CoreMemory
from ...errors import StoreError
from ...messages import Message
from ...recall import RecallStore
from ...storage.backends import open_backend
from ...text import clip
from ..checks.common import calling, fail
from .common import use

Save = Callable[[MainContext], str]
Reopen = Callable[..., MainContext]
SYSTEM = "You are Ivo's garden assistant."
BUDGET = 300
_LINES = (
    "The tomatoes on the south bed split after the storm.",
    "Should I pick the green ones and let them ripen indoors?",
    "The courgettes are taking over the path again.",
    "My neighbour Oona offered her old greenhouse, for free.",
    "It needs two new panes and a coat of paint first.",
    "The slugs ate every lettuce seedling in one night.",
    "I tried beer traps, they caught eleven slugs.",
    "Next year I want to grow borlotti beans up the fence.",
    "The compost heap is finally warm in the middle.",
    "Oona says the door of the greenhouse is stiff when wet.",
    "We moved the rain barrel closer to the shed.",
    "The apple tree needs pruning before the frost.",
)


def save_state(context: MainContext) -> str:
    """vmem's answer: core memory and the context's state (ids, not messages) as JSON."""
    return json.dumps({"core": context.core.to_dict(), "context": context.state()})


def reopen(text: str, system: str, max_tokens: int, recall: RecallStore,
           archival: ArchivalStore | None, clock: Clock) -> MainContext:
    """vmem's answer: a new context over the stores with the saved core memory and state."""
    saved = json.loads(text)
    core = CoreMemory.from_dict(saved["core"], clock=clock)
    context = MainContext(system, core, max_tokens, recall=recall, archival=archival,
                          clock=clock)
    context.restore(saved["context"])
    return context


def unseen_context() -> tuple[MainContext, StepClock]:
    """The context the check saves: an edited block, 11 messages evicted and summarized,
    one archival record."""
    clock = StepClock(step=timedelta(0))  # one instant: the status line cannot differ
    recall, archival = RecallStore(clock=clock), ArchivalStore(clock=clock)
    archival.insert("Oona's greenhouse door sticks in the rain.")
    core = CoreMemory.default(clock=clock)
    core.append("human", "Grows tomatoes; neighbour Oona lends a greenhouse.")
    context = MainContext(SYSTEM, core, BUDGET, recall=recall, archival=archival, clock=clock)
    for number, line in enumerate(_LINES):
        role = "user" if number % 2 == 0 else "assistant"
        context.append(Message(role=role, content=line))
    return context, clock


def _check_persistence(parts: tuple[Save, Reopen]) -> str:
    save, reopen_ = parts
    context, clock = unseen_context()
    with calling("save_state on a context with a summary and an evicted past"):
        text = save(context)
    if not isinstance(text, str):
        fail(f"save_state returned a {type(text).__name__}; expected JSON text (a str)")
    copied = [message.content for message in context.messages if message.content in text]
    if copied:
        fail(f"the saved text holds the message {copied[0]!r:.60}; save the ids of the queued "
             "messages instead (recall storage already has their text)")
    with calling("reopen on the saved text"):
        reopened = reopen_(text, SYSTEM, BUDGET, context.recall, context.archival, clock)
    if reopened.render() != context.render():
        fail("the reopened context renders a different prompt (the core blocks, the "
             "summary, the evicted count or the queued messages did not come back)")
    for twin in (context, reopened):
        twin.append(Message(role="user", content="Is it too late to sow garlic?"))
    if reopened.render() != context.render():
        fail("the reopened context renders the same prompt, but not after one more message "
             "(restore the whole state: the counters and the warning flag too)")
    return "your save and reopen give the same prompt on an unseen context, before and " \
           "after one more message"


def check_persistence(save: Save, reopen_: Reopen) -> tuple[Save, Reopen]:
    """Print one line about the learner's `save_state` and `reopen`; return them when they
    passed, else vmem's (`save_state`, `reopen` above)."""
    return use("save and reopen", (save, reopen_), (save_state, reopen), _check_persistence)


# --- following a reply's citations ---------------------------------------------------

Resolved = list[tuple[str, int, str | None]]
Resolve = Callable[[str, RecallStore, ArchivalStore], Resolved]
CITATION = re.compile(r"\[(message|record) (\d+)\]")  # what vmem writes: [message 12]


def resolve_citations(reply: str, recall: RecallStore, archival: ArchivalStore) -> Resolved:
    """vmem's answer: (kind, id, cite() line) for each citation of `reply`, in order and
    once; None as the line for one that points nowhere (unknown id, or outside the scope)."""
    found: Resolved = []
    for kind, number in dict.fromkeys((kind, int(number))
                                      for kind, number in CITATION.findall(reply)):
        store = recall if kind == "message" else archival
        try:
            line: str | None = store.get(number).cite()
        except StoreError:
            line = None
        found.append((kind, number, line))
    return found


_OURS = {"user_id": "ivo"}
_THEIRS = {"user_id": "oona"}
_MESSAGES = (  # (scope, session, turn, role, text): ids 1 to 5 in this order
    (_OURS, 1, 1, "user", "The plum tree by the shed was planted in 2019."),
    (_OURS, 1, 2, "assistant", "Noted, the plum tree is five years old."),
    (_THEIRS, 1, 1, "user", "My quince hedge needs cutting back in March."),
    (_OURS, 2, 1, "user", "The pond pump stopped again last night."),
    (_OURS, 2, 3, "user", "I ordered a solar pump for the pond."),
)
_RECORDS = (  # (scope, session, turn, text): ids 1 to 3 in this order
    (_OURS, 1, 1, "Ivo's plum tree was planted in 2019."),
    (_THEIRS, 1, 1, "Oona cuts her quince hedge in March."),
    (_OURS, 2, 3, "Ivo ordered a solar pump for the pond."),
)
# (what the case tests, the reply): none of these is shown in the notebook
CITATION_CASES: tuple[tuple[str, str], ...] = (
    ("both kinds", "The pump is solar now [record 3], you ordered it [message 5]."),
    ("a citation made twice, and one id under both kinds",
     "Planted in 2019 [message 1]; I noted it [message 2] and saved it [record 1]; "
     "planted in 2019 [message 1]."),
    ("malformed citations", "The pump [message x] stopped [record] again (record 3) "
                            "last night [message 4]."),
    ("an id no store holds", "The plum tree is old [message 1], as I said [message 99]."),
    ("ids that exist only in another user's scope",
     "Cut the hedge in March [record 2], as you said [message 3]."),
    ("no citation at all", "I do not know when the pump was bought."),
)


def citation_stores() -> tuple[RecallStore, ArchivalStore]:
    """Ivo's recall and archival stores, over one file that also holds Oona's messages and
    records (their ids are taken, but not in Ivo's scope)."""
    clock = StepClock()
    backend = open_backend(":memory:")
    for scope, session, turn, role, text in _MESSAGES:
        RecallStore(backend, clock=clock, scope=scope).add(
            Message(role=role, content=text, session_id=session, turn=turn))
    for scope, session, turn, text in _RECORDS:
        ArchivalStore(backend, clock=clock, scope=scope).insert(text, session_id=session,
                                                                 turn_id=turn)
    return (RecallStore(backend, clock=clock, scope=_OURS),
            ArchivalStore(backend, clock=clock, scope=_OURS))


def _shaped(got: object, call: str) -> list[tuple[object, ...]]:
    """The learner's answer as a list of 3-tuples, or a failure saying what shape it has."""
    if not isinstance(got, (list, tuple)):
        fail(f"{call} returned a {type(got).__name__}; expected a list of (kind, id, text) "
             "tuples")
    items = [tuple(item) if isinstance(item, (list, tuple)) else item for item in got]
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 3):
            fail(f"{call} returned the item {clip(repr(item), 80)}; expected (kind, id, "
                 "text), e.g. ('message', 12, '[message 12 | session 1, turn 4 | ...] ...')")
        if item[0] not in ("message", "record"):
            fail(f"{call} returned the kind {clip(repr(item[0]), 40)}; expected 'message' or "
                 "'record', as the citation writes it")
        if not isinstance(item[1], int) or isinstance(item[1], bool):
            fail(f"{call} returned the id {item[1]!r} as a {type(item[1]).__name__}; "
                 "expected an int (the store's ids are ints)")
    return items


def _compare(got: Sequence[tuple[object, ...]], want: Resolved, call: str) -> None:
    """Fail with what differs between the learner's citations and vmem's."""
    keys, wanted = [item[:2] for item in got], [item[:2] for item in want]
    gone = {key: text for kind, number, text in want if (key := (kind, number)) not in keys}
    extra = [key for key in keys if key not in wanted]
    if len(set(keys)) < len(keys):
        twice = next(key for key in keys if keys.count(key) > 1)
        fail(f"{call} lists [{twice[0]} {twice[1]}] {keys.count(twice)} times; list each "
             "citation once, where the reply first makes it")
    if extra:
        fail(f"{call} found [{extra[0][0]} {extra[0][1]}], which the reply does not cite; "
             f"only [message N] and [record N] with a number are citations. Expected "
             f"{wanted}")
    if gone:
        (kind, number), text = next(iter(gone.items()))
        if text is None:
            fail(f"{call} left out [{kind} {number}], which points nowhere; keep it in the "
                 "list with None as its text, so it can be reported")
        fail(f"{call} missed [{kind} {number}]; expected {wanted}")
    if keys != wanted:
        fail(f"{call} gave the citations in the order {keys}; expected {wanted}, the "
             "order the reply makes them in")
    for (kind, number, text), (_, _, expected) in zip(got, want, strict=True):
        if text == expected:
            continue
        where = f"{call} gave [{kind} {number}] the text {_quoted(text)}"
        if expected is None:
            fail(f"{where}, but the store does not hold it in its scope: a citation that "
                 "points nowhere gets None")
        if text is None:
            fail(f"{where}, but {'recall' if kind == 'message' else 'archival'} holds it; "
                 f"expected {_quoted(expected)}")
        if isinstance(text, str) and text and text in expected:
            fail(f"{where}; expected its cite() line {_quoted(expected)}, which names the "
                 "session and turn, not the bare text")
        fail(f"{where}; expected {_quoted(expected)}: look messages up in recall and "
             "records in archival")


def _quoted(value: object, limit: int = 70) -> str:
    """`value` for a failure line: a text clipped to `limit` characters, then quoted."""
    return repr(clip(value, limit)) if isinstance(value, str) else repr(value)


def _check_citations(resolve: Resolve) -> str:
    recall, archival = citation_stores()
    for what, reply in CITATION_CASES:
        call = f"resolve_citations on {what} ({_quoted(reply, 60)})"
        with calling(call):
            try:
                got = resolve(reply, recall, archival)
            except StoreError as error:
                fail(f"{call} raised StoreError ({error}); a citation that points nowhere "
                     "is what the check is for: give it None as its text instead")
        _compare(_shaped(got, call), resolve_citations(reply, recall, archival), call)
    return f"your citation lookup agrees with vmem's on all {len(CITATION_CASES)} unseen " \
           "replies, including malformed citations and ids that point nowhere"


def check_citations(resolve: Resolve) -> Resolve:
    """Print one line about the learner's `resolve_citations`; return it when it passed,
    else vmem's (`resolve_citations` above)."""
    return use("citation lookup", resolve, resolve_citations, _check_citations)
