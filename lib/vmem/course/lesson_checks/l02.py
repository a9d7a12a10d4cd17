"""Notebook 02's checks: the learner's token counter, prompt render, append with a
pressure warning, eviction and recursive summary, each run on cases the lesson does not
show and compared with `vmem`'s part (or, where vmem has no function of that shape, with
a reference built on vmem's rules: `count_tokens` and `vmem.eviction.groups`).

Messages are the lesson's plain dicts, `{"role": ..., "content": ...}`; an assistant
message that calls tools has a non-empty `"tool_calls"` list, and the `"tool"` messages
right after it are its results. A message costs `count_tokens(content)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

from ...eviction import groups
from ...messages import Message
from ...summarize import ExtractiveSummarizer
from ...text import plural
from ...tokens import count_tokens
from ..checks.common import calling, fail
from .common import use

ORIGIN = "notebook 02"  # where a kept part was written (vmem.course.parts)

Chat = list[dict[str, Any]]
SUMMARY_WORDS = 60  # the longest summary `fold` may return, as ExtractiveSummarizer


def _tokens(queue: Sequence[dict[str, Any]]) -> int:
    return sum(count_tokens(message["content"]) for message in queue)


def _pairs(messages: Any) -> list[tuple[Any, Any]]:
    try:
        return [(message["role"], message["content"]) for message in messages]
    except (TypeError, KeyError, IndexError):
        fail(f"expected a list of {{'role': ..., 'content': ...}} dicts; got {messages!r:.80}.")


# --- the parts the lesson falls back to ---------------------------------------------

def system_message(system: str, summary: str | None) -> dict[str, str]:
    """The prompt's first message: the system text, then the summary when there is one."""
    text = system if not summary else f"{system}\n\nSummary of earlier messages: {summary}"
    return {"role": "system", "content": text}


def render(system: str, summary: str | None, messages: Sequence[dict[str, Any]],
           max_tokens: int) -> Chat:
    """The system message, then the newest messages that fit in `max_tokens` with it."""
    head = system_message(system, summary)
    room = max_tokens - count_tokens(head["content"])
    kept: Chat = []
    for message in reversed(messages):
        room -= count_tokens(message["content"])
        if room < 0:
            break
        kept.insert(0, {"role": message["role"], "content": message["content"]})
    return [head, *kept]


def append(queue: Chat, message: dict[str, Any], max_tokens: int,
           warn_at: float = 0.7) -> bool:
    """Append `message`; when that carries the queue above `warn_at` of the budget, append
    a memory-pressure notice too and return True."""
    limit = warn_at * max_tokens
    before = _tokens(queue)
    queue.append(message)
    if before <= limit < _tokens(queue):
        queue.append({"role": "system", "content": "Memory pressure: save what matters now."})
        return True
    return False


def evict(queue: Chat, target_tokens: int) -> Chat:
    """Remove the oldest groups (a tool call with its results is one) until the queue
    costs at most `target_tokens`, never the newest group; return what was removed."""
    views = [SimpleNamespace(role=m["role"], tool_calls=m.get("tool_calls")) for m in queue]
    total, count = _tokens(queue), 0
    for unit in groups(views)[:-1]:
        if total <= target_tokens:
            break
        total -= _tokens([queue[index] for index in unit])
        count += len(unit)
    evicted = queue[:count]
    del queue[:count]
    return evicted


def fold(previous: str | None, evicted: Sequence[dict[str, Any]]) -> str:
    """vmem's recursive summary (`ExtractiveSummarizer`) over the lesson's dicts."""
    messages = [Message(m["role"], m["content"]) for m in evicted]
    return ExtractiveSummarizer(max_words=SUMMARY_WORDS).summarize(previous, messages)


# --- the checks ---------------------------------------------------------------------

_TEXTS = ["", "   \n\t ", "hello", "My sister Maya was born on 3 May 1990.",
          "naïve café, déjà vu", "one two three", "a\tb\nc   d", "word " * 97,
          "trailing space ", "\u4f60\u597d \u4e16\u754c"]


def _check_tokens(approx_tokens: Callable[[str], int]) -> str:
    for text in _TEXTS:
        with calling(f"approx_tokens({text!r:.40})"):
            got = approx_tokens(text)
        want = count_tokens(text)
        if got != want or not isinstance(got, int):
            fail(f"approx_tokens({text!r:.40}) returned {got!r}; vmem.count_tokens gives "
                 f"{want} ({plural(len(text.split()), 'word')}). Hint: split on any "
                 "whitespace and round words * 1.3 up (math.ceil), to an int.")
    return f"your approx_tokens agrees with vmem.count_tokens on {len(_TEXTS)} new texts."


def _chat(*sizes: int) -> Chat:
    return [{"role": ("user", "assistant")[i % 2], "content": " ".join(f"m{i}w{j}"
             for j in range(size))} for i, size in enumerate(sizes)]


_RENDER_CASES = [
    ("Be brief.", None, _chat(3, 4, 5, 6), 1000),
    ("Be brief.", None, _chat(3, 4, 5, 6), 20),
    ("Be brief.", "Ada has a sister, Maya.", _chat(3, 4, 5, 6), 24),
    ("Be brief.", None, _chat(5, 30, 2, 2), 30),  # the big one stops the window
    ("Be brief.", None, _chat(5, 6), 4),          # not even the newest fits
    ("Be brief.", None, _chat(5, 3, 4), 13),      # exactly full: the newest two fit
    ("Be brief.", "Ada likes tea.", [], 50),
]


def _check_render(render_fn: Callable[..., Chat]) -> str:
    for system, summary, messages, budget in _RENDER_CASES:
        shown = f"render({system!r}, {summary!r}, <{len(messages)} messages>, {budget})"
        with calling(shown):
            got = render_fn(system, summary, [dict(m) for m in messages], budget)
        want = render(system, summary, messages, budget)
        mine = _pairs(got)
        if mine[:1] != _pairs(want[:1]):
            fail(f"{shown} starts with {mine[:1]!r:.100}; expected the system message "
                 f"{want[0]['content']!r} (the summary after a blank line, when there is one).")
        if mine != _pairs(want) and sorted(mine) == sorted(_pairs(want)):
            fail(f"{shown} kept the right messages in another order; keep them oldest "
                 "first, as they were said.")
        if mine != _pairs(want):
            kept = len(want) - 1
            fail(f"{shown} kept {len(mine) - 1} messages; expected the newest {kept} "
                 f"({_tokens(want)} tokens with the system message). Hint: walk back from "
                 "the newest message and stop at the first one that does not fit; keep "
                 "them in chronological order.")
    return f"your render keeps the newest messages that fit, on {len(_RENDER_CASES)} new cases."


def _check_append(append_fn: Callable[..., bool]) -> str:
    note = {"role": "user", "content": "x " * 5}                # 7 tokens
    cases = [(_chat(4, 4), note, 20),                             # 12 -> 19: crosses 14
             (_chat(4), note, 20),                                # 6 -> 13: calm
             (_chat(12, 4), note, 20),                            # 22: already above
             (_chat(4, 2), note, 20),                             # 9 -> 16: crosses
             (_chat(10), {"role": "user", "content": "x"}, 20),   # 13 -> 15: crosses
             (_chat(9), {"role": "user", "content": "x"}, 20),    # 12 -> 14: not above
             (_chat(4, 4, 1), {"role": "user", "content": "x"}, 20),  # 14 -> 16: from the line
             ([], {"role": "user", "content": "y " * 20}, 20)]    # over in one go
    for queue, message, budget in cases:
        shown = f"append(<queue of {_tokens(queue)} tokens>, <{count_tokens(message['content'])}" \
                f"-token message>, {budget})"
        mine, theirs = [dict(m) for m in queue], [dict(m) for m in queue]
        with calling(shown):
            warned = append_fn(mine, dict(message), budget)
        want = append(theirs, dict(message), budget)
        if not isinstance(warned, bool):
            fail(f"{shown} returned {warned!r}; expected {want}: return True when it "
                 "warned and False when it did not (a bool the caller can test).")
        if warned != want:
            fail(f"{shown} returned {warned!r}; expected {want}. Hint: warn only when this "
                 "append carries the queue from at or below 0.7 x max_tokens to above it.")
        if len(mine) != len(theirs):
            what = "the message itself, then the notice" if want else "the message alone"
            fail(f"{shown} left {len(mine)} messages in the queue; expected {len(theirs)}: "
                 f"the old ones, then {what}.")
        if mine[len(queue)] != message:
            fail(f"{shown}: the message right after the old queue is {mine[len(queue)]!r:.80}; "
                 "expected the appended message there (the notice, if any, comes after it).")
        if want and (mine[-1].get("role") != "system"
                     or "pressure" not in str(mine[-1].get("content", "")).lower()):
            fail(f"{shown}: the last message is {mine[-1]!r:.80}; expected a system message "
                 "that says 'memory pressure', after the appended one.")
    return f"your append warns exactly when the queue crosses 70%, on {len(cases)} new cases."


def _run(size: int, tool_results: int) -> Chat:
    call = {"role": "assistant", "content": "w " * size, "tool_calls": [{"id": "c"}]}
    return [call, *({"role": "tool", "content": "r " * size} for _ in range(tool_results))]


_EVICT_CASES = [
    (_chat(5, 5, 5, 5, 5), 12),
    ([*_chat(2), *_run(4, 2), *_chat(3, 3)], 8),   # the target falls inside the tool run
    ([*_run(6, 1), *_chat(1, 1)], 3),
    (_chat(5, 5, 5), 1000),                        # nothing to do
    ([*_chat(5, 5), *_run(3, 2)], 0),              # all but the newest group
]


def _check_evict(evict_fn: Callable[..., Chat]) -> str:
    for queue, target in _EVICT_CASES:
        roles = "/".join(m["role"][0] for m in queue)
        shown = f"evict(<queue {roles}, {_tokens(queue)} tokens>, {target})"
        mine, theirs = [dict(m) for m in queue], [dict(m) for m in queue]
        with calling(shown):
            got = evict_fn(mine, target)
        want = evict(theirs, target)
        if _pairs(got or []) != _pairs(want):
            fail(f"{shown} returned {len(got or [])} messages; expected the oldest "
                 f"{len(want)}. Hint: take whole groups from the front (a tool call with the "
                 "tool results after it is one group) while the queue is over the target, "
                 "and never the newest group.")
        if _pairs(mine) != _pairs(theirs):
            fail(f"{shown} left {len(mine)} messages in the queue; expected {len(theirs)}: "
                 "remove the evicted messages from the queue you were given.")
    return f"your evict cuts whole groups, oldest first, on {len(_EVICT_CASES)} new queues."


def _check_fold(fold_fn: Callable[..., str]) -> str:
    fact = "Ada's sister Maya was born on 3 May."
    dog = [{"role": "user", "content": "My dog Biscuit is 4 years old."}]
    tea = [{"role": "user", "content": "I drink green tea at 7 every morning."}]
    long = [{"role": "user", "content": " ".join(f"w{i}x{j}" for j in range(20))}
            for i in range(40)]
    with calling("fold(None, <one message>)"):
        first = fold_fn(None, dog)
    if not isinstance(first, str) or "Biscuit" not in first:
        fail(f"fold(None, [{dog[0]['content']!r}]) returned {first!r:.80}: the summary "
             "must keep what the evicted messages said (here, 'Biscuit').")
    with calling("fold(previous, <one message>)"):
        second = fold_fn(fact, tea)
    if not isinstance(second, str) or "Maya" not in second or "tea" not in second:
        fail(f"fold({fact!r}, [<a message about tea>]) returned {second!r:.100}: a "
             "recursive summary folds the new messages INTO the previous one (both stay).")
    with calling("fold(fold(None, a), b)"):
        again = fold_fn(fold_fn(None, dog), tea)
    if "Biscuit" not in again or "tea" not in again:
        fail(f"folding twice returned {again!r:.100}: the second fold lost the first one's "
             "facts. Pass the previous summary in and build on it.")
    with calling("fold(None, <40 long messages>)"):
        big = fold_fn(None, long)
    if len(big.split()) > SUMMARY_WORDS:
        fail(f"fold on 40 messages of 20 words returned {len(big.split())} words; keep it "
             f"to at most {SUMMARY_WORDS}, or the summary grows with the conversation.")
    with calling("fold(<a full summary>, <one message>)"):
        later = fold_fn(big, tea)
    if not isinstance(later, str) or "tea" not in later:
        fail(f"folding a message about tea into a full summary returned {later!r:.100}: "
             "once the summary is at its limit, what was evicted last must still get in "
             "(keep the newest words, not the oldest), or the summary stops changing.")
    if fold_fn(None, long) != big or fold_fn(fact, tea) != second:
        fail("fold gave two different summaries for the same input: keep it deterministic, "
             "so the same conversation always builds the same prompt.")
    with calling("fold(previous, [])"):
        same = fold_fn(fact, [])
    if same != fact:
        fail(f"fold({fact!r}, []) returned {same!r:.80}; with nothing evicted the summary "
             "must stay exactly as it was.")
    return (f"your fold keeps old and new facts, stays within {SUMMARY_WORDS} words and is "
            "deterministic.")


def check_tokens(approx_tokens: Callable[[str], int]) -> Callable[[str], int]:
    """Check the learner's token counter; return it, or vmem's `count_tokens`."""
    return use("count_tokens", approx_tokens, count_tokens, _check_tokens,
               keep="approx_tokens", origin=ORIGIN)


def check_render(render_fn: Callable[..., Chat]) -> Callable[..., Chat]:
    """Check the learner's `render`; return it, or the reference `render`."""
    return use("render", render_fn, render, _check_render, keep="render_prompt",
               origin=ORIGIN)


def check_append(append_fn: Callable[..., bool]) -> Callable[..., bool]:
    """Check the learner's `append`; return it, or the reference `append`."""
    return use("append", append_fn, append, _check_append, keep="append_message",
               origin=ORIGIN)


def check_evict(evict_fn: Callable[..., Chat]) -> Callable[..., Chat]:
    """Check the learner's `evict`; return it, or the reference built on eviction.groups."""
    return use("evict (eviction.groups)", evict_fn, evict, _check_evict,
               keep="evict_oldest", origin=ORIGIN)


def check_fold(fold_fn: Callable[..., str]) -> Callable[..., str]:
    """Check the learner's `fold`; return it, or vmem's ExtractiveSummarizer."""
    return use("ExtractiveSummarizer", fold_fn, fold, _check_fold, keep="fold_summary",
               origin=ORIGIN)


class Counter:
    """A token counter for `MainContext(counter=...)` from a function of one text."""

    def __init__(self, count: Callable[[str], int]) -> None:
        self.count = count


class Summarizer:
    """A summarizer for `MainContext(summarizer=...)` from the lesson's `fold`."""

    def __init__(self, fold_fn: Callable[..., str]) -> None:
        self.fold = fold_fn

    def summarize(self, previous: str | None, evicted: Sequence[Message]) -> str:
        return self.fold(previous, [{"role": m.role, "content": m.content} for m in evicted])


KEPT = {"approx_tokens": (count_tokens, _check_tokens), "render_prompt": (render, _check_render),
        "append_message": (append, _check_append), "evict_oldest": (evict, _check_evict),
        "fold_summary": (fold, _check_fold)}
"""The parts this notebook keeps for later ones: name -> (vmem's stand-in, its check)."""
