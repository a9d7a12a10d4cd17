"""Exercise 1's check: a token count, and a context that keeps text under a token cap by
evicting the oldest, with and without a recursive summary.

The learner's `CappedContext(cap, summarize=None)` exposes `messages`, `evicted`,
`summary`, `append(text)` and `tokens()`. After every append the check holds it to the
rules: nothing lost or duplicated, the oldest text leaves first, `tokens()` counts exactly
what is in context, the total never exceeds the cap (but eviction stops once it fits), and
each summarizer call gets the previous summary followed by the newly evicted texts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...tokens import count_tokens
from .common import calling, fail, learner_check, raised


def _words(tag: str, count: int) -> str:
    return " ".join(f"{tag}w{i}" for i in range(count))


@learner_check
def check_ex1(approx_tokens: Callable[[str], int], CappedContext: type) -> str:  # noqa: N803
    """Check `approx_tokens` and a `CappedContext` with and without a summarizer."""
    _check_approx_tokens(approx_tokens)
    _check_cap(CappedContext)
    _check_cap_with_summary(CappedContext)
    return "ex01 passed: token counts, the cap, eviction order and recursive summaries all hold."


def _check_approx_tokens(approx_tokens: Callable[[str], int]) -> None:
    for text in ["", "   ", "one", "two words", "a b c", _words("x", 7), _words("y", 10),
                 "alpha\nbeta\tgamma  delta", _words("z", 23)]:
        with calling(f"approx_tokens({text!r})"):
            got = approx_tokens(text)
        want = count_tokens(text)
        if not isinstance(got, int) or isinstance(got, bool):
            fail(f"approx_tokens({text!r}) returned {got!r} ({type(got).__name__}); "
                 "a token count must be an int (round up, then convert).")
        if got != want:
            fail(f"approx_tokens({text!r}) returned {got}, expected {want}: count "
                 "whitespace-separated words (newlines and tabs separate words too), "
                 "multiply by 1.3 and round up; empty text has no tokens.")


def _new_context(CappedContext: type, cap: int, summarize: Any = None) -> Any:  # noqa: N803
    with calling(f"CappedContext({cap}, summarize=...)"):
        return CappedContext(cap, summarize=summarize)


def _state(ctx: Any) -> tuple[list[str], list[str], Any]:
    with calling("reading messages/evicted/summary"):
        return list(ctx.messages), list(ctx.evicted), ctx.summary


def _tokens(ctx: Any) -> int:
    with calling("CappedContext.tokens()"):
        return ctx.tokens()


def _append(ctx: Any, text: str, step: int) -> None:
    with calling(f"append #{step} ({count_tokens(text)} tokens)"):
        ctx.append(text)


def _check_invariants(ctx: Any, appended: list[str], cap: int) -> None:
    messages, evicted, summary = _state(ctx)
    step = len(appended)
    if evicted + messages != appended:
        fail(f"after {step} appends, evicted + messages is not every appended text in "
             "order: nothing may be lost or duplicated, and the oldest texts must leave "
             "first (evicted in the order they were appended).")
    want = sum(count_tokens(m) for m in messages)
    if summary is not None:
        want += count_tokens(summary)
    got = _tokens(ctx)
    if got != want:
        fail(f"after {step} appends, tokens() is {got} but the messages"
             f"{' plus the summary' if summary is not None else ''} come to {want}: "
             "tokens() must count exactly what is in context, the summary included.")
    if got > cap and summary is not None and got - count_tokens(summary) <= cap:
        fail(f"your summary pushed the total back over the cap: after {step} appends the "
             f"messages come to {got - count_tokens(summary)} tokens and the summary adds "
             f"{count_tokens(summary)}, {got} in all, over the cap of {cap}; expected the "
             "total, summary included, to fit. Hint: after summarizing, check the total "
             "again and keep evicting (and summarizing) while it is over the cap.")
    if got > cap:
        fail(f"after {step} appends, tokens() is {got}, over the cap of {cap}: keep "
             "evicting the oldest text until the total fits.")


def _check_cap(CappedContext: type) -> None:  # noqa: N803
    cap = 20
    # Word counts chosen so that one step fills the cap exactly and later ones overflow it.
    sizes = [5, 3, 6, 2, 10, 1, 1, 15, 4, 7, 9]
    ctx = _new_context(CappedContext, cap)
    if _state(ctx) != ([], [], None):
        fail("a new CappedContext must start with messages == [], evicted == [] and "
             "summary None.")
    appended: list[str] = []
    for step, size in enumerate(sizes, 1):
        text = _words(f"m{step}", size)
        _append(ctx, text, step)
        appended.append(text)
        _check_invariants(ctx, appended, cap)
        messages, _, summary = _state(ctx)
        kept, total = 0, 0
        for earlier in reversed(appended):
            if total + count_tokens(earlier) > cap:
                break
            total += count_tokens(earlier)
            kept += 1
        if len(messages) < kept:
            fail(f"after {step} appends, only {len(messages)} texts are kept although the "
                 f"newest {kept} ({total} tokens) fit under the cap of {cap}: evict only "
                 "while the total is over the cap (a total equal to the cap fits).")
        if summary is not None:
            fail("without a summarizer, summary must stay None.")
    oversize = _words("big", 16)  # 21 tokens, more than the cap on its own
    before = _state(ctx)
    error = raised(lambda: ctx.append(oversize))
    if not isinstance(error, ValueError):
        fail(f"appending one text of {count_tokens(oversize)} tokens to a context capped at "
             f"{cap} must raise ValueError (it can never fit); got "
             f"{'no error' if error is None else type(error).__name__}.")
    if _state(ctx) != before:
        fail("a refused append changed the context: check the size before changing "
             "anything.")


def _check_cap_with_summary(CappedContext: type) -> None:  # noqa: N803
    cap = 20
    calls: list[list[str]] = []

    def summarize(texts: Sequence[str]) -> str:
        calls.append(list(texts))
        return f"summary-{len(calls)}"

    ctx = _new_context(CappedContext, cap, summarize)
    appended: list[str] = []
    for step, size in enumerate([4, 5, 3, 6, 8, 2, 9, 1, 5, 7, 3], 1):
        text = _words(f"s{step}", size)
        _append(ctx, text, step)
        appended.append(text)
        _check_invariants(ctx, appended, cap)
        _, evicted, summary = _state(ctx)
        if not evicted:
            if calls or summary is not None:
                fail("the summarizer was used before anything was evicted: summary must "
                     "stay None (and summarize uncalled) until the first eviction.")
            continue
        if not calls:
            fail("texts were evicted but the summarizer was never called: pass the "
                 "evicted texts to summarize and keep what it returns as the summary.")
        if summary != f"summary-{len(calls)}":
            fail(f"summary is {summary!r} but the summarizer last returned "
                 f"'summary-{len(calls)}': keep the latest summary as it is returned.")
        fresh: list[str] = []
        for number, args in enumerate(calls, 1):
            if number > 1:
                previous = f"summary-{number - 1}"
                if not args or args[0] != previous:
                    fail(f"summarize call {number} got {args!r}; it must start with the "
                         f"previous summary ({previous!r}) followed by the newly evicted "
                         "texts, so that what was summarised before is not forgotten.")
                args = args[1:]
            elif args and args[0] in (None, ""):
                fail("the first summarize call got an empty previous summary: pass only "
                     "the evicted texts while there is no summary yet.")
            if not args:
                fail(f"summarize call {number} got no newly evicted texts.")
            fresh.extend(args)
        if fresh != evicted:
            fail("the texts handed to summarize (besides the previous summary) must be "
                 "exactly the evicted texts, each once, oldest first.")
