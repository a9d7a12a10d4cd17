"""`EvictionViewer`: a `MainContext`'s conversation replayed one appended message at a time.

Optional extra: the widget needs ipywidgets; the pure functions (`replay`, `eviction_html`,
`lowest_budget`, ...) need only the standard library.

`replay(context)` appends the context's recorded messages to a fresh context, one step
each, and keeps a `Frame` after each: the prompt's tokens by section against the budget
and the warning line, the queue with the messages the next step's flush evicts (planned by
`MainContext.plan_next_flush`, the flush's own planner), the summary and the count in
recall storage. `eviction_html` draws a frame; the widget wires a step slider
and a budget slider (a replay under another budget) to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..clock import StepClock
from ..context import Event, MainContext
from ..core import CoreMemory
from ..errors import ContextOverflowError
from ..messages import Message
from ..recall import RecallStore
from ..text import one_line, plural
from ..tokens import chat_tokens
from .box import Box, require_widgets, widgets
from .markup import (
    BUDGET_COLOR,
    DOOMED_BG,
    SECTION_COLORS,
    WARN_COLOR,
    bar,
    escape,
    line_key,
    root,
    swatch,
)


@dataclass(frozen=True)
class QueueItem:
    """One message as the queue shows it: id, role, tokens and a one-line preview."""

    id: int
    role: str
    tokens: int
    text: str


@dataclass(frozen=True)
class Frame:
    """What `EvictionViewer` draws at one step: the context right after one append.

    `sections` are the prompt's tokens by part; "system" holds the system text and its
    framing plus the memory-status line and any tool schemas, so the four add up to the
    whole prompt. `evicted` are the messages evicted at this step; `doomed` the ids in the
    queue that the next step's flush evicts, as `MainContext.plan_next_flush` plans it
    (the planner the flush itself runs), and empty when the next step does not flush.
    """

    step: int
    message: QueueItem
    events: tuple[Event, ...]
    sections: dict[str, int]
    budget: int
    warn_at: float
    queue: tuple[QueueItem, ...]
    evicted: tuple[QueueItem, ...]
    doomed: tuple[int, ...]
    summary: str | None
    recall: int

    @property
    def total(self) -> int:
        """Tokens of the whole prompt."""
        return sum(self.sections.values())

    @property
    def warn_line(self) -> int:
        """Tokens at which the memory-pressure warning fires."""
        return round(self.warn_at * self.budget)

    def facts(self) -> dict[str, Any]:
        """The numbers the view draws, as JSON-ready values (tests compare these)."""
        return {"view": "eviction", "step": self.step, "budget": self.budget,
                "total": self.total, **self.sections, "recall": self.recall,
                "queue": [item.id for item in self.queue], "doomed": list(self.doomed)}


@dataclass(frozen=True)
class Replay:
    """A recorded conversation replayed under one budget: one `Frame` per appended
    message; `error` says why it stopped early (a message that cannot fit), `events` are
    the replaying context's events, to compare with the recording."""

    budget: int
    frames: tuple[Frame, ...]
    events: tuple[Event, ...]
    error: str | None = None


def recorded_messages(context: MainContext) -> list[Message]:
    """The messages appended to `context`, oldest first, as fresh copies that can be
    appended again. Notices the context queued itself are left out (a replay makes its
    own), and so is a queue loaded by `restore`, which is not part of the recording."""
    ids = [message_id for event in context.events if event.kind == "appended"
           for message_id in event.message_ids]
    return [replace(message, id=None) for message in context.recall.get_many(ids)]


def fresh_context(context: MainContext, max_tokens: int) -> MainContext:
    """An empty main context with `context`'s settings (system text, a copy of its core
    memory as it is now, tools, thresholds, summarizer, counter) under `max_tokens`, with
    its own in-memory recall storage and a `StepClock`, so replays are deterministic."""
    clock = StepClock()
    return MainContext(
        context.system, CoreMemory.from_dict(context.core.to_dict()), max_tokens,
        recall=RecallStore(clock=clock), archival=context.archival, tools=context.tools,
        warn_at=context.warn_at, flush_to=context.flush_to, summarizer=context.summarizer,
        counter=context.counter, clock=clock)


def replay(context: MainContext, max_tokens: int | None = None) -> Replay:
    """Append `context`'s recorded messages, one step each, to a `fresh_context` under
    `max_tokens` (default: the context's own budget) and record a `Frame` after each."""
    budget = context.max_tokens if max_tokens is None else max_tokens
    try:
        fresh = fresh_context(context, budget)
    except ContextOverflowError as error:
        return Replay(budget, (), (), f"a budget of {budget} tokens is too small: {error}")
    raw: list[dict[str, Any]] = []
    error = None
    for step, message in enumerate(recorded_messages(context), 1):
        seen = len(fresh.events)
        try:
            fresh.append(message)
        except ContextOverflowError as refused:
            error = f"step {step} cannot be replayed under {budget} tokens: {refused}"
            break
        events = tuple(fresh.events[seen:])
        flushed = next((event.message_ids for event in events if event.kind == "evicted"), ())
        if raw and flushed:  # the previous frame shows what this step's flush evicts
            raw[-1]["doomed"] = tuple(flushed)
        raw.append(_snapshot(fresh, step, message, events))
    return Replay(budget, tuple(Frame(**snap) for snap in raw), tuple(fresh.events), error)


def matches_recording(context: MainContext, replayed: Replay) -> bool:
    """True when the replay went through exactly the recorded events (same kinds, sizes
    and prompt totals). It does not when core memory was edited during the conversation
    (a replay uses the core as it is now) or when the context was restored."""
    def key(events: Sequence[Event]) -> list[tuple[str, int, int, int]]:
        return [(e.kind, len(e.message_ids), e.size, e.tokens) for e in events]
    return key(context.events) == key(replayed.events)


def _item(message: Message, context: MainContext) -> QueueItem:
    return QueueItem(message.id, message.role, chat_tokens(message.to_chat(), context.counter),
                     one_line(_message_text(message), 90))


def _message_text(message: Message) -> str:
    calls = [f"{call.get('function', {}).get('name')}({call.get('function', {}).get('arguments')})"
             for call in message.tool_calls or ()]
    return " ".join([message.content, *calls]).strip() or "(empty)"


def _snapshot(context: MainContext, step: int, message: Message,
              events: tuple[Event, ...]) -> dict[str, Any]:
    overview = context.overview()
    evicted = [i for event in events if event.kind == "evicted" for i in event.message_ids]
    return {
        "step": step, "message": _item(message, context), "events": events,
        "sections": {"system": overview["system"] + overview["status"] + overview["tools"],
                     "core": overview["core"], "summary": overview["summary"],
                     "messages": overview["messages"]},
        "budget": context.max_tokens, "warn_at": context.warn_at,
        "queue": tuple(_item(m, context) for m in context.messages),
        "evicted": tuple(_item(m, context) for m in context.recall.get_many(evicted)),
        "summary": context.summary, "recall": len(context.recall), "doomed": (),
    }


def eviction_html(replayed: Replay, step: int, note: str = "") -> str:
    """The `EvictionViewer` picture of `replayed` at `step` (1-based), as HTML."""
    parts = [f'<div style="color:#a33">{escape(note)}</div>'] if note else []
    if replayed.error:
        parts.append(f'<div style="color:#a33">{escape(replayed.error)}</div>')
    if not replayed.frames:
        return root("eviction", {"view": "eviction", "budget": replayed.budget, "step": 0},
                     "".join(parts) or "Nothing to replay: no message was appended.")
    frame = replayed.frames[step - 1]
    parts += [
        f"<div><b>Step {frame.step} of {len(replayed.frames)}</b>: "
        f"{escape(_step_story(frame))}</div>",
        _budget_bar(frame),
        _queue_table(frame),
        '<div style="margin-top:6px"><b>Summary</b> of evicted messages:</div>',
        f'<div style="white-space:pre-wrap; border-left:3px solid {SECTION_COLORS["summary"]};'
        f' padding:2px 8px; margin:2px 0 6px 0">'
        f'{escape(frame.summary) if frame.summary else "<i>none yet: nothing was evicted</i>"}'
        "</div>",
        f"<div><b>Recall storage</b>: {plural(frame.recall, 'message')} (every message ever "
        f"appended, including the {plural(len(frame.queue), 'message')} still in the queue)"
        "</div>",
    ]
    return root("eviction", frame.facts(), "".join(parts))


def _step_story(frame: Frame) -> str:
    """One sentence per thing that happened at this step."""
    item = frame.message
    story = [f"{item.role} message #{item.id} ({plural(item.tokens, 'token')}) joined the "
             "queue."]
    for event in frame.events:
        if event.kind == "evicted":
            moved = plural(len(event.message_ids), "message")
            story.append(f"The prompt went over its budget, so {moved} ({event.size} tokens) "
                         "moved out to recall storage.")
        elif event.kind == "summarized":
            story.append("The summary now covers them.")
        elif event.kind == "summary_failed":
            story.append(f"Summarizing failed ({event.detail}); the old summary was kept.")
        elif event.kind == "warned":
            story.append(f"The prompt reached the warning line ({frame.warn_line} tokens): a "
                         "memory-pressure notice joined the queue.")
    return " ".join(story)


def _budget_bar(frame: Frame) -> str:
    scale = max(frame.budget, frame.total) * 1.08
    segments = [(name, tokens, SECTION_COLORS[name]) for name, tokens in frame.sections.items()]
    marks = [(frame.warn_line, WARN_COLOR, "dashed"), (frame.budget, BUDGET_COLOR, "solid")]
    legend = " &nbsp; ".join(f"{swatch(SECTION_COLORS[name])}{name} {tokens}"
                             for name, tokens in frame.sections.items())
    share = round(100 * frame.total / frame.budget)
    return (f'<div style="margin:6px 0 2px 0">{bar(segments, scale, 26, marks)}</div>'
            f"<div>{legend} &nbsp;= <b>{frame.total}</b> of {frame.budget} tokens ({share}%)"
            f' &nbsp; {line_key(WARN_COLOR, "dashed")}warning at {frame.warn_line}'
            f' &nbsp; {line_key(BUDGET_COLOR, "solid")}budget {frame.budget}</div>')


def _queue_table(frame: Frame) -> str:
    rows = []
    doomed = set(frame.doomed)
    for item in frame.queue:
        if item.id in doomed:
            rows.append(_queue_row(item, f"background:{DOOMED_BG}", "next to go"))
        else:
            rows.append(_queue_row(item, "font-style:italic; color:#666"
                                   if item.role == "system" else "", ""))
    head = ("<b>Queue</b>, oldest first" + (f' (<span style="background:{DOOMED_BG}">'
            "highlighted</span>: the next message makes the context flush, and this is "
            "exactly what that flush evicts)" if doomed else "") + ":")
    gone = ""
    if frame.evicted:
        ids = " ".join(f"#{item.id}" for item in frame.evicted)
        tokens = sum(item.tokens for item in frame.evicted)
        gone = (f'<div style="color:#888">Evicted at this step, now only in recall: '
                f'<span style="text-decoration:line-through">{ids}</span> ({tokens} tokens)'
                "</div>")
    return (f'<div style="margin-top:8px">{head}</div>{gone}'
            '<table style="border-collapse:collapse">' + "".join(rows) + "</table>")


def _queue_row(item: QueueItem, style: str, tag: str) -> str:
    cell = "padding:1px 6px; vertical-align:top; white-space:nowrap"
    return (f'<tr style="{style}"><td style="{cell}; text-align:right">#{item.id}</td>'
            f'<td style="{cell}">{item.role}</td>'
            f'<td style="{cell}; text-align:right">{item.tokens} tok</td>'
            f'<td style="padding:1px 6px">{escape(item.text)}</td>'
            f'<td style="{cell}; color:{BUDGET_COLOR}">{tag}</td></tr>')



class EvictionViewer(Box):
    """Replay a `MainContext`'s conversation, one appended message per step.

    Example (the last line of a cell displays the widget)::

        from vmem import CoreMemory, MainContext, Message, StepClock
        from vmem.viz import EvictionViewer

        clock = StepClock()
        ctx = MainContext("You are a helpful assistant.", CoreMemory.default(clock=clock),
                          max_tokens=300, clock=clock)
        for i in range(20):
            ctx.append(Message("user", f"Note {i}: my locker code today is {1000 + 7 * i}."))
        EvictionViewer(ctx)

    Controls: `.step`, a slider over the steps; `.budget`, a slider that replays the same
    messages through a fresh context under another budget; `.reset`, a button back to the
    recorded budget. `.output` holds the picture, `.replay` the current `Replay` and
    `.view()` is the `Frame` on screen.
    """

    def __init__(self, context: MainContext, *, step: int = 1) -> None:
        require_widgets("EvictionViewer")
        self.context = context
        self.replay = replay(context)
        self.note = "" if matches_recording(context, self.replay) else (
            "This replay differs from the recording: core memory was edited during the "
            "conversation (the replay uses it as it is now) or the context was restored.")
        steps = len(self.replay.frames)
        self.step = widgets.IntSlider(value=min(max(step, 1), max(steps, 1)), min=1,
                                      max=max(steps, 1), description="step",
                                      disabled=steps < 2)
        recorded = context.max_tokens
        grain = 10 if recorded >= 100 else 1
        self.budget = widgets.IntSlider(
            value=recorded, min=lowest_budget(context, grain), max=3 * recorded, step=grain,
            description="budget", continuous_update=False)
        self.reset = widgets.Button(description=f"back to {recorded}",
                                    tooltip="replay under the budget the context was built with",
                                    layout=widgets.Layout(width="auto"))
        self.output = widgets.HTML()
        super().__init__(children=[widgets.HBox([self.step, self.budget, self.reset]),
                                   self.output])
        self.step.observe(self._draw, names="value")
        self.budget.observe(self._replay, names="value")
        self.reset.on_click(self._reset)
        self._draw()

    def view(self) -> Frame | None:
        """The frame the controls select (None when nothing could be replayed)."""
        frames = self.replay.frames
        return frames[self.step.value - 1] if frames else None

    def _draw(self, change: Any = None) -> None:
        recorded = self.replay.budget == self.context.max_tokens
        self.output.value = eviction_html(self.replay, self.step.value,
                                          self.note if recorded else "")

    def _replay(self, change: Any = None) -> None:
        self.replay = replay(self.context, self.budget.value)
        steps = max(len(self.replay.frames), 1)
        self.step.disabled = steps < 2
        if self.step.value > steps:
            self.step.value = steps  # redraws
        self.step.max = steps
        self._draw()

    def _reset(self, button: Any = None) -> None:
        self.budget.value = self.context.max_tokens

    def __repr__(self) -> str:
        return f"EvictionViewer(step {self.step.value} of {self.step.max}, " \
               f"budget {self.budget.value})"


def lowest_budget(context: MainContext, step: int = 10) -> int:
    """The smallest multiple of `step` under which the whole recording replays, found by
    bisection between a lower bound (the empty prompt plus the largest recorded message)
    and the recorded budget. If even the recorded budget fails, the lower bound."""
    empty = fresh_context(context, 10**9).tokens()
    sizes = [chat_tokens(message.to_chat(), context.counter)
             for message in recorded_messages(context)]
    low = -(-(empty + max(sizes, default=0)) // step)  # in units of `step`, rounded up
    high = -(-context.max_tokens // step)
    if low >= high or replay(context, high * step).error:
        return min(low * step, context.max_tokens)
    while low < high:  # invariant: high * step replays
        middle = (low + high) // 2
        if replay(context, middle * step).error:
            low = middle + 1
        else:
            high = middle
    return min(high * step, context.max_tokens)
