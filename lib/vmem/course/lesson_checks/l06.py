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
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

from ...archival import ArchivalStore
from ...clock import Clock, StepClock
from ...context import MainContext
from ...core import CoreMemory
from ...messages import Message
from ...recall import RecallStore
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
