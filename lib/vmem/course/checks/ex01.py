"""Exercise 1's check: a context of chat messages under a token cap that evicts whole
tool-call runs, keeps the current turn pinned, and folds what it evicts into a recursive
summary held under a cap of its own.

The learner's `CappedContext(max_tokens, summarize, summary_cap)` exposes `messages`,
`evicted`, `summary`, `append(message)` and `tokens()`. After every append the check
holds it to the rules, against a reference it keeps to itself, on conversations the
notebook does not show: nothing lost or duplicated, whole units leave oldest first, only
while the messages are over the cap, the current turn (the newest user message and all
after it) never leaves, even when it alone is over the cap, and each eviction calls
`summarize(previous_summary, newly_evicted)` once, keeping at most `summary_cap` tokens of
what it returns (its first words). The stretch tier (`stretch=True`) adds: an over-long
summary is first handed back to the summarizer to compress, and only cut if still too long.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...tokens import count_tokens
from .common import calling, describe, fail, learner_check, raised

Message = dict[str, Any]


def _words(tag: str, count: int) -> str:
    return " ".join(f"{tag}w{i}" for i in range(count))


def _user(tag: str, size: int) -> Message:
    return {"role": "user", "content": _words(tag, size)}


def _reply(tag: str, size: int) -> Message:
    return {"role": "assistant", "content": _words(tag, size)}


def _call(tag: str, size: int) -> Message:
    return {"role": "assistant", "content": _words(tag, size),
            "tool_calls": [{"id": f"call-{tag}", "name": "archival_memory_search"}]}


def _result(tag: str, size: int) -> Message:
    return {"role": "tool", "tool_call_id": f"call-{tag}", "content": _words(tag, size)}


def _size(messages: list[Message]) -> int:
    return sum(count_tokens(m["content"]) for m in messages)


def _is_call(message: Message) -> bool:
    return message.get("role") == "assistant" and bool(message.get("tool_calls"))


def _units(messages: list[Message]) -> list[list[Message]]:
    """Whole tool-call runs (a call, then calls and results up to anything else) or single
    messages."""
    units: list[list[Message]] = []
    for message in messages:
        in_run = units and _is_call(units[-1][0])
        if in_run and (message.get("role") == "tool" or _is_call(message)):
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _pin(messages: list[Message]) -> int:
    """Where the current turn starts: the newest user message (0 when there is none)."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    return users[-1] if users else 0


def _fit(text: str, cap: int) -> str:
    """The longest run of first words of `text` within `cap` tokens."""
    words = text.split()
    while words and count_tokens(" ".join(words)) > cap:
        words.pop()
    return " ".join(words)


def _expected_batch(messages: list[Message], cap: int) -> list[Message]:
    """What the reference evicts from `messages` (the context right after an append)."""
    pin = _pin(messages)
    total, batch = _size(messages), []
    for unit in _units(messages[:pin]):
        if total <= cap:
            break
        batch += unit
        total -= _size(unit)
    return batch


@learner_check
def check_ex1(approx_tokens: Callable[[str], int], CappedContext: type,  # noqa: N803
              stretch: bool = False) -> str:
    """Check a `CappedContext` (built on the given `approx_tokens`); with `stretch`, also
    the re-summarizing of an over-long summary."""
    _check_counter(approx_tokens)
    if stretch:
        _check_stretch(CappedContext)
        return "passed: ex01 stretch: an over-long summary is compressed again before it is cut."
    _check_conversation(CappedContext)
    _check_oversize_turn(CappedContext)
    return "passed: ex01: whole tool-call runs, the pinned turn, the cap and the capped " \
           "recursive summary all hold."


def _check_counter(approx_tokens: Callable[[str], int]) -> None:
    for text in ["", "two words", "alpha\nbeta\tgamma  delta", _words("z", 23)]:
        with calling(f"approx_tokens({text!r})"):
            got = approx_tokens(text)
        if got != count_tokens(text):
            fail(f"approx_tokens({text!r}) returned {got!r}, expected {count_tokens(text)}: "
                 "approx_tokens is given (lesson 02's count); keep the import cell as it is.")


class _Summarizer:
    """Records calls; returns the previous summary plus the first two words of each new
    message, so summaries grow until they must be cut. Asked to compress a summary (the
    stretch's extra call), it returns it unchanged, so the cut happens either way."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, list[Message]]] = []
        self.returned: list[str] = []

    def __call__(self, previous: Any, messages: Any) -> str:
        self.calls.append((previous, [dict(m) for m in messages]))
        if previous is None and len(messages) == 1 and messages[0].get("role") == "system":
            self.returned.append(messages[0]["content"])
            return self.returned[-1]
        parts = [previous] if previous else []
        parts += [" ".join(m["content"].split()[:2]) for m in messages]
        self.returned.append(" ".join(parts))
        return self.returned[-1]


def _new(CappedContext: type, cap: int, summarize: Any, summary_cap: int) -> Any:  # noqa: N803
    with calling(f"CappedContext({cap}, summarize, {summary_cap})"):
        return CappedContext(cap, summarize, summary_cap)


def _state(ctx: Any) -> tuple[list[Message], list[Message], Any]:
    with calling("reading messages/evicted/summary"):
        return list(ctx.messages), list(ctx.evicted), ctx.summary


def _append(ctx: Any, message: Message, step: int) -> None:
    with calling(f"append #{step} (a {message['role']} message of "
                 f"{count_tokens(message['content'])} tokens)"):
        ctx.append(dict(message))


def _count(messages: list[Message]) -> str:
    return f"{len(messages)} message{'' if len(messages) == 1 else 's'}"


def _roles(messages: list[Message]) -> str:
    return ", ".join("call" if _is_call(m) else m["role"] for m in messages)


def _check_step(ctx: Any, appended: list[Message], before: list[Message], cap: int,
                summary_cap: int, summarizer: _Summarizer, calls_before: int,
                summary_before: Any) -> None:
    messages, evicted, summary = _state(ctx)
    step = len(appended)
    where = f"after {step} appends ({_roles(appended)})"
    if evicted + messages != appended:
        fail(f"{where}, evicted + messages is not every appended message in order: nothing "
             "may be lost or duplicated, and the oldest must leave first.")
    with calling("CappedContext.tokens()"):
        got = ctx.tokens()
    if got != _size(messages):
        fail(f"{where}, tokens() is {got} but the messages in context come to "
             f"{_size(messages)}: tokens() counts the messages (the summary has its own cap).")
    batch = evicted[len(appended) - len(before) - 1:]
    want = _expected_batch(before + [appended[-1]], cap)
    pin = _pin(appended)
    if batch != want:
        if len(evicted) > pin:
            fail(f"{where}, the newest user message was evicted: the current turn (the newest "
                 "user message and everything after it) is pinned and never leaves, even "
                 "when it is over the cap on its own.")
        edges = {0}
        for unit in _units(appended[:pin]):
            edges.add(max(edges) + len(unit))
        if len(evicted) not in edges:
            fail(f"{where}, a tool-call run was split (the context now starts: "
                 f"{_roles(messages[:3])}): a run is an assistant tool call with every tool "
                 "result and further tool call after it; evict it whole.")
        if len(batch) > len(want):
            fail(f"{where}, {_count(batch)} evicted although {len(want)} were "
                 f"enough to bring {_size(before) + count_tokens(appended[-1]['content'])} "
                 f"tokens within the cap of {cap}: evict only while over the cap (a total "
                 "equal to the cap fits).")
        fail(f"{where}, tokens() is {got}, over the cap of {cap}, while messages older than "
             "the current turn are still in context: keep evicting the oldest whole unit "
             "until the messages fit.")
    new_calls = summarizer.calls[calls_before:]
    if not batch:
        if new_calls or summary != summary_before:
            fail(f"{where}, nothing was evicted but the summarizer was called or the summary "
                 "changed: fold only when something leaves.")
        return
    if not new_calls:
        fail(f"{where}, messages were evicted but summarize was never called: call "
             "summarize(previous_summary, evicted_messages) and keep what it returns.")
    previous, handed = new_calls[0]
    if previous != summary_before:
        fail(f"{where}, summarize got {previous!r} as the previous summary instead of "
             f"{summary_before!r}: pass the previous summary (None before the first), so "
             "what was summarised before is not forgotten.")
    if handed != batch:
        fail(f"{where}, summarize got {_count(handed)} but this append evicted "
             f"{len(batch)}: call it once per append with exactly the messages evicted, "
             "oldest first, whole runs included.")
    if not isinstance(summary, str) or count_tokens(summary) > summary_cap:
        fail(f"{where}, the summary is {count_tokens(summary or '')} tokens, over its "
             f"summary_cap of {summary_cap}: cut what summarize returns to fit.")
    last = summarizer.returned[-1]
    if summary != _fit(last, summary_cap):
        fail(f"{where}, the summary is {summary!r}; expected the first words of what "
             f"summarize returned that fit in summary_cap={summary_cap} tokens (as many as "
             "fit, from the start: the oldest, most summarised facts come first).")


def _run(CappedContext: type, script: list[Message], cap: int,  # noqa: N803
         summary_cap: int) -> None:
    summarizer = _Summarizer()
    ctx = _new(CappedContext, cap, summarizer, summary_cap)
    if _state(ctx) != ([], [], None):
        fail("a new CappedContext must start with messages == [], evicted == [] and "
             "summary None.")
    appended: list[Message] = []
    for step, message in enumerate(script, 1):
        before, _, summary_before = _state(ctx)
        calls_before = len(summarizer.calls)
        error = raised(lambda m=message: ctx.append(dict(m)))
        if error is not None:
            what = (f"append #{step} (a {message['role']} message of "
                    f"{count_tokens(message['content'])} tokens, cap {cap}) raised "
                    f"{describe(error)}")
            if isinstance(error, ValueError | OverflowError):
                fail(f"{what}: a message is never refused; when the current turn alone is "
                     "over the cap, evict everything older and keep it anyway.")
            fail(f"{what}; expected it to return. Hint: call it in a cell of its own to see "
                 "the whole traceback.")
        appended.append(message)
        _check_step(ctx, appended, before, cap, summary_cap, summarizer, calls_before,
                    summary_before)


def _check_conversation(CappedContext: type) -> None:  # noqa: N803
    script = [
        _user("u1", 5), _reply("a1", 4),
        _user("u2", 3), _call("c1", 2), _result("c1", 6), _call("c2", 2), _result("c2", 5),
        _reply("a2", 3),
        _user("u3", 4), _reply("a3", 6),
        _user("u4", 2), _call("c3", 3), _result("c3", 4), _reply("a4", 2),
        _user("u5", 6), _call("c4", 1), _result("c4", 9), _call("c5", 2), _result("c5", 3),
        _reply("a5", 4), _user("u6", 3), _reply("a6", 5), _user("u7", 1), _reply("a7", 8),
    ]
    _run(CappedContext, script, cap=30, summary_cap=12)


def _check_oversize_turn(CappedContext: type) -> None:  # noqa: N803
    script = [
        _user("o1", 3), _call("k1", 2), _result("k1", 3), _reply("p1", 2),
        _user("big", 20),  # 26 tokens, over the cap of 20 on its own
        _call("k2", 2), _result("k2", 2), _reply("p2", 3),
        _user("o2", 4), _reply("p3", 5),
    ]
    _run(CappedContext, script, cap=20, summary_cap=8)


def _check_stretch(CappedContext: type) -> None:  # noqa: N803
    gist = "short gist"
    long_words = _words("long", 30)
    calls: list[tuple[Any, list[Message]]] = []

    def summarize(previous: Any, messages: Any) -> str:
        messages = [dict(m) for m in messages]
        calls.append((previous, messages))
        if messages == [{"role": "system", "content": long_words}]:
            return gist if len(calls) < 3 else long_words + " again"
        return long_words

    ctx = _new(CappedContext, 10, summarize, 6)
    for step, message in enumerate([_user("s1", 4), _reply("s2", 3), _user("s3", 4)], 1):
        _append(ctx, message, step)
    _, evicted, summary = _state(ctx)
    if not evicted:
        fail("stretch: the first turn should have been evicted (14 tokens over a cap of 10).")
    if summary != gist:
        again = [c for c in calls[1:] if c[1] and c[1][0].get("role") == "system"]
        detail = "it was cut without asking again" if not again else \
            f"the second call got {again[0]!r}"
        fail(f"stretch: summarize returned {count_tokens(long_words)} tokens, over the "
             f"summary_cap of 6, and the summary is {summary!r}, not the summarizer's "
             f"compressed {gist!r} ({detail}): call summarize(None, [{{'role': 'system', "
             "'content': <the long summary>}]) once, and cut only if that is still too long.")
    _append(ctx, _reply("s4", 6), 4)  # evicts the second turn; now both calls are long
    _, _, summary = _state(ctx)
    if summary != _fit(long_words + " again", 6):
        fail(f"stretch: the compressed summary was still over the summary_cap of 6 and the "
             f"summary is {summary!r}: after the one extra call, cut to the first words that "
             "fit (ask again only once).")
