"""Widgets that let a learner watch virtual context work: eviction, retrieval, the agent loop.

Optional extra: the widgets need ipywidgets (`pip install "vmem[widgets]"`).

Each widget is a thin view. Pure functions turn library state into plain values (a
`Frame` of the main context at one step, a `RetrievalView` of one query, the `TraceRow`s of
one turn) and those values into HTML; a widget only wires its controls to them. The pure
functions need nothing but the standard library, so they are tested (and usable) without
ipywidgets; building a widget without ipywidgets raises an ImportError that says what to
install. This is the only vmem module that touches ipywidgets, and `import vmem` never
imports it.

- `EvictionViewer(context)`: replays a `MainContext`'s conversation step by step: the
  prompt's tokens by section against the budget and the warning line, the queue with the
  messages the next flush evicts highlighted, the summary, the count in recall storage.
- `RetrievalExplorer(store)`: BM25 over an `ArchivalStore`'s records, each hit's score
  stacked by query term, beside the token-overlap baseline, re-ranked live as k1 and b move.
- `TraceViewer(turn)`: one `Agent.step` as a timeline: tool calls, results, heartbeats,
  warnings, evictions, the final answer.
- `Quiz(notebook)`: the self-check questions of a lesson notebook (`vmem.course.quiz`), each
  with radio buttons and a Check button that says right or wrong, and why.
"""

from __future__ import annotations

import copy
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .agent import Exchange, Turn
from .bm25 import BM25Index, tokenize
from .clock import StepClock
from .context import Event, MainContext
from .core import CoreMemory
from .course.quiz import Feedback, Question, check_answer, questions_for
from .errors import ContextOverflowError
from .messages import Message, Record
from .recall import RecallStore
from .text import clip, one_line, plural
from .tokens import chat_tokens

try:
    import ipywidgets as widgets
except ImportError:  # the pure functions below work without it
    widgets = None

INSTALL_HINT = 'pip install "vmem[widgets]" (or pip install ipywidgets)'
_Box: Any = widgets.VBox if widgets is not None else object


def _require_widgets(name: str) -> None:
    """Say what to install, before a widget is half built, when ipywidgets is missing."""
    if widgets is None:
        raise ImportError(f"{name} needs ipywidgets: {INSTALL_HINT}. The pure functions in "
                          "vmem.viz (replay, retrieval_view, trace_rows, ...) work without it.")


# Colours: the Okabe-Ito palette, readable with the common colour-vision deficiencies.
SECTION_COLORS = {"system": "#999999", "core": "#0072B2", "summary": "#CC79A7",
                  "messages": "#009E73"}
TERM_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00",
               "#999933", "#882255")
BUDGET_COLOR, WARN_COLOR, DOOMED_BG = "#D55E00", "#E69F00", "#FBE3D6"
FONT = ("font-family: var(--jp-ui-font-family, sans-serif); font-size: 13px; "
        "line-height: 1.45; color: var(--jp-ui-font-color1, #222); max-width: 820px")


# -- the main context, step by step ---------------------------------------------------

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
    whole prompt. `evicted` are the messages evicted at this step; `doomed` the ids still
    in the queue that the next flush evicts, given only once the prompt has reached the
    warning line (before that no eviction is near).
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
        raw.append(_snapshot(fresh, step, message, tuple(fresh.events[seen:])))
    return Replay(budget, _frames(raw), tuple(fresh.events), error)


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
        "summary": context.summary, "recall": len(context.recall),
    }


def _frames(raw: list[dict[str, Any]]) -> tuple[Frame, ...]:
    """Frames from snapshots, each given the ids the next flush evicts (looking ahead)."""
    frames: list[Frame] = []
    upcoming: set[int] = set()
    for snap in reversed(raw):
        pressure = sum(snap["sections"].values()) >= snap["warn_at"] * snap["budget"]
        doomed = tuple(item.id for item in snap["queue"] if item.id in upcoming) \
            if pressure else ()
        frames.append(Frame(**snap, doomed=doomed))
        if snap["evicted"]:
            upcoming = {item.id for item in snap["evicted"]}
    return tuple(reversed(frames))


def eviction_html(replayed: Replay, step: int, note: str = "") -> str:
    """The `EvictionViewer` picture of `replayed` at `step` (1-based), as HTML."""
    parts = [f'<div style="color:#a33">{_e(note)}</div>'] if note else []
    if replayed.error:
        parts.append(f'<div style="color:#a33">{_e(replayed.error)}</div>')
    if not replayed.frames:
        return _root("eviction", {"view": "eviction", "budget": replayed.budget, "step": 0},
                     "".join(parts) or "Nothing to replay: no message was appended.")
    frame = replayed.frames[step - 1]
    parts += [
        f"<div><b>Step {frame.step} of {len(replayed.frames)}</b>: {_e(_step_story(frame))}</div>",
        _budget_bar(frame),
        _queue_table(frame),
        '<div style="margin-top:6px"><b>Summary</b> of evicted messages:</div>',
        f'<div style="white-space:pre-wrap; border-left:3px solid {SECTION_COLORS["summary"]};'
        f' padding:2px 8px; margin:2px 0 6px 0">'
        f'{_e(frame.summary) if frame.summary else "<i>none yet: nothing was evicted</i>"}</div>',
        f"<div><b>Recall storage</b>: {plural(frame.recall, 'message')} (every message ever "
        f"appended, including the {plural(len(frame.queue), 'message')} still in the queue)"
        "</div>",
    ]
    return _root("eviction", frame.facts(), "".join(parts))


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
    legend = " &nbsp; ".join(f"{_swatch(SECTION_COLORS[name])}{name} {tokens}"
                             for name, tokens in frame.sections.items())
    share = round(100 * frame.total / frame.budget)
    return (f'<div style="margin:6px 0 2px 0">{_bar(segments, scale, 26, marks)}</div>'
            f"<div>{legend} &nbsp;= <b>{frame.total}</b> of {frame.budget} tokens ({share}%)"
            f' &nbsp; {_line_key(WARN_COLOR, "dashed")}warning at {frame.warn_line}'
            f' &nbsp; {_line_key(BUDGET_COLOR, "solid")}budget {frame.budget}</div>')


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
            "highlighted</span>: evicted by the next flush)" if doomed else "") + ":")
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
            f'<td style="padding:1px 6px">{_e(item.text)}</td>'
            f'<td style="{cell}; color:{BUDGET_COLOR}">{tag}</td></tr>')


# -- retrieval ------------------------------------------------------------------------

@dataclass(frozen=True)
class RankedHit:
    """One BM25 hit: its score and each query term's share of it (terms in query order)."""

    record_id: int
    text: str
    score: float
    parts: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class OverlapHit:
    """One hit of the baseline: the distinct query terms the record contains."""

    record_id: int
    text: str
    matched: tuple[str, ...]


@dataclass(frozen=True)
class RetrievalView:
    """What `RetrievalExplorer` draws for one query and one setting of k1, b and top_k."""

    query: str
    terms: tuple[str, ...]  # distinct query terms, in query order
    idf: tuple[float, ...]
    df: tuple[int, ...]
    k1: float
    b: float
    top_k: int
    records: int
    bm25: tuple[RankedHit, ...]
    overlap: tuple[OverlapHit, ...]

    def facts(self) -> dict[str, Any]:
        """The rankings the view draws, as JSON-ready values (tests compare these)."""
        return {"view": "retrieval", "query": self.query, "k1": round(self.k1, 2),
                "b": round(self.b, 2), "top_k": self.top_k,
                "bm25": [hit.record_id for hit in self.bm25],
                "scores": [round(hit.score, 3) for hit in self.bm25],
                "overlap": [hit.record_id for hit in self.overlap]}


def build_index(records: Sequence[Record]) -> BM25Index:
    """A pure-Python `BM25Index` over the records' text, keyed by record id."""
    index = BM25Index()
    for record in records:
        index.add(record.id, record.text)
    return index


def overlap_ranking(query: str, records: Sequence[Record], top_k: int) -> list[OverlapHit]:
    """The baseline: records ranked by how many distinct query terms they contain, ties
    in insertion order; records sharing no term are left out."""
    terms = list(dict.fromkeys(tokenize(query)))
    hits = []
    for record in records:
        words = set(tokenize(record.text))
        matched = tuple(term for term in terms if term in words)
        if matched:
            hits.append(OverlapHit(record.id, record.text, matched))
    hits.sort(key=lambda hit: -len(hit.matched))  # stable: ties keep insertion order
    return hits[:top_k]


def retrieval_view(index: BM25Index, records: Sequence[Record], query: str, *,
                   k1: float, b: float, top_k: int) -> RetrievalView:
    """BM25 under `k1` and `b` beside the overlap baseline, `top_k` hits each.

    `index` must index `records` (see `build_index`); it is not changed: scoring runs on a
    shallow copy that shares its postings and takes its own k1 and b.
    """
    tuned = copy.copy(index)
    tuned.k1, tuned.b = k1, b
    terms = tuple(dict.fromkeys(tokenize(query)))
    text = {record.id: record.text for record in records}
    hits = []
    for record_id, score in tuned.search(query, k=top_k):
        shares: dict[str, float] = {}
        for part in tuned.explain(query, record_id).terms:  # a repeated word counts twice
            shares[part.term] = shares.get(part.term, 0.0) + part.contribution
        hits.append(RankedHit(record_id, text[record_id], score,
                              tuple((term, share) for term, share in shares.items() if share)))
    return RetrievalView(query, terms, tuple(tuned.idf(term) for term in terms),
                         tuple(tuned.df(term) for term in terms), k1, b, top_k, len(records),
                         tuple(hits), tuple(overlap_ranking(query, records, top_k)))


def retrieval_html(view: RetrievalView) -> str:
    """The `RetrievalExplorer` picture of `view`, as HTML."""
    if not view.terms:
        body = (f"Type a query to rank the {plural(view.records, 'record')} "
                "(it has no searchable words yet).")
        return _root("retrieval", view.facts(), body)
    colors = {term: TERM_COLORS[i % len(TERM_COLORS)] for i, term in enumerate(view.terms)}
    legend = " &nbsp; ".join(
        f"{_swatch(colors[term])}<b>{_e(term)}</b> idf {idf:.2f} (in {df} of {view.records})"
        for term, idf, df in zip(view.terms, view.idf, view.df, strict=True))
    bm25_rank = {hit.record_id: rank for rank, hit in enumerate(view.bm25, 1)}
    scale = max((hit.score for hit in view.bm25), default=0.0) or 1.0
    left = [f"<b>BM25</b> (k1 = {view.k1:.2f}, b = {view.b:.2f}): score split by term"]
    for rank, hit in enumerate(view.bm25, 1):
        segments = [(term, share, colors[term]) for term, share in hit.parts]
        left.append(
            f'<div style="margin-top:6px">{rank}. [record {hit.record_id}] score '
            f"<b>{hit.score:.2f}</b>{_bar(segments, scale, 14)}"
            f'<div style="color:#555">{_e(one_line(hit.text, 90))}</div></div>')
    right = ["<b>Token overlap</b> (baseline): distinct query terms shared"]
    for rank, hit in enumerate(view.overlap, 1):
        where = f"BM25 rank {bm25_rank[hit.record_id]}" if hit.record_id in bm25_rank \
            else f"not in BM25's top {view.top_k}"
        right.append(
            f'<div style="margin-top:6px">{rank}. [record {hit.record_id}] '
            f"<b>{len(hit.matched)}</b> of {len(view.terms)}: {_e(', '.join(hit.matched))}"
            f' <span style="color:#888">({where})</span>'
            f'<div style="color:#555">{_e(one_line(hit.text, 70))}</div></div>')
    if not view.bm25:
        left.append("<div><i>no record contains any query term</i></div>")
    column = "flex:1; min-width:0; padding-right:12px"
    body = (f"<div>Query terms: {legend}</div>"
            f'<div style="display:flex; margin-top:8px"><div style="{column}">{"".join(left)}'
            f'</div><div style="{column}; border-left:1px solid #ddd; padding-left:12px">'
            f'{"".join(right)}</div></div>')
    return _root("retrieval", view.facts(), body)


# -- the agent loop -------------------------------------------------------------------

@dataclass(frozen=True)
class TraceRow:
    """One line of a turn's timeline; `step` is the policy call it belongs to (0: the
    user's message) and `kind` one of user, model, call, result, heartbeat, warning,
    eviction, summary, answer, stop."""

    step: int
    kind: str
    title: str
    text: str = ""
    ok: bool = True


def trace_rows(turn: Turn) -> list[TraceRow]:
    """The timeline of one `Agent.step`, in the order things happened.

    The loop appends one message per thing that happens (the user's message, then per
    step the model's message, which holds its tool calls, and one result per call), so
    walking `turn.events` places the context's warnings and evictions exactly between them.
    """
    calls: dict[int, list[Exchange]] = {}
    for exchange in turn.calls:
        calls.setdefault(exchange.step, []).append(exchange)
    slots: list[tuple[str, Any]] = [("user", None)]
    for step in range(1, turn.steps + 1):
        slots += [("model", step), *(("tool", exchange) for exchange in calls.get(step, []))]
    rows: list[TraceRow] = []
    state = {"step": 0, "warned": False}
    for event in turn.events:
        if event.kind == "appended" and slots:
            rows += _slot_rows(slots.pop(0), turn, calls, state)
        elif event.kind != "appended":
            rows += _event_rows(event, state)
    for slot in slots:  # steps whose messages never reached the context (an error)
        rows += _slot_rows(slot, turn, calls, state)
    if turn.reply:
        rows.append(TraceRow(turn.steps, "answer", "final answer", turn.reply))
    if turn.stop_reason == "max_steps":
        rows.append(TraceRow(turn.steps, "stop", f"stopped: the turn used all {turn.steps} "
                             "steps (max_steps)", ok=False))
    elif turn.stop_reason == "error":
        rows.append(TraceRow(turn.steps, "stop", "stopped on an error", turn.error or "",
                             ok=False))
    return rows


def _slot_rows(slot: tuple[str, Any], turn: Turn, calls: dict[int, list[Exchange]],
               state: dict[str, Any]) -> list[TraceRow]:
    kind, value = slot
    if kind == "user":
        return [TraceRow(0, "user", "user message", turn.user)]
    if kind == "tool":
        name, result = value.call.name, value.result
        return [TraceRow(value.step, "result", f"{name} returned" if result.ok
                         else f"{name} failed", result.content, result.ok)]
    rows = []
    previous = calls.get(value - 1, [])
    if value > 1:
        reasons = []
        if any(exchange.result.heartbeat for exchange in previous):
            reasons.append("a call asked for a heartbeat (request_heartbeat: true)")
        if any(not exchange.result.ok for exchange in previous):
            reasons.append("a call failed, and the model gets the error to act on")
        if state["warned"]:
            reasons.append("a memory-pressure warning fired")
        rows.append(TraceRow(value - 1, "heartbeat", "back to the model",
                             "; ".join(reasons) or "the loop called the model again"))
    state["step"], state["warned"] = value, False
    made = calls.get(value, [])
    rows.append(TraceRow(value, "model", f"step {value}: the model answers with "
                         + (plural(len(made), "tool call") if made else "plain text")))
    return rows + [TraceRow(value, "call", f"calls {exchange.call.name}",
                            exchange.call.to_chat("")["function"]["arguments"])
                   for exchange in made]


def _event_rows(event: Event, state: dict[str, Any]) -> list[TraceRow]:
    step = state["step"]
    if event.kind == "warned":
        state["warned"] = True
        return [TraceRow(step, "warning", "memory-pressure warning",
                         f"the prompt reached its warning line ({event.tokens} tokens now)")]
    if event.kind == "evicted":
        return [TraceRow(step, "eviction",
                         f"evicted {plural(len(event.message_ids), 'message')} to recall",
                         f"{event.size} tokens left the prompt; {event.tokens} tokens now")]
    if event.kind == "summarized":
        return [TraceRow(step, "summary", "summary updated", event.detail)]
    if event.kind == "summary_failed":
        return [TraceRow(step, "summary", "summary failed, old summary kept", event.detail,
                         ok=False)]
    return [TraceRow(step, event.kind, event.kind.replace("_", " "))]


TRACE_COLORS = {"user": "#555555", "model": "#222222", "call": "#0072B2",
                "result": "#009E73", "heartbeat": "#E69F00", "warning": "#E69F00",
                "eviction": "#D55E00", "summary": "#CC79A7", "answer": "#009E73",
                "stop": "#D55E00"}


def trace_facts(rows: Sequence[TraceRow], upto: int) -> dict[str, Any]:
    """What `trace_html` draws for `upto`, as JSON-ready values (tests compare these)."""
    shown = [row.kind for row in rows if row.step <= upto]
    return {"view": "trace", "step": upto, "rows": len(shown), "kinds": shown}


def trace_html(rows: Sequence[TraceRow], upto: int) -> str:
    """The `TraceViewer` picture: the rows of steps 0 to `upto`, as HTML."""
    shown = [row for row in rows if row.step <= upto]
    lines = []
    for row in shown:
        color = TRACE_COLORS.get(row.kind, "#555555") if row.ok else BUDGET_COLOR
        indent = 0 if row.kind in ("user", "model", "answer", "stop") else 18
        text = (f'<div style="white-space:pre-wrap; color:#444; margin-left:8px">'
                f"{_e(clip(row.text, 400))}</div>") if row.text else ""
        weight = "bold" if row.kind in ("model", "answer") else "normal"
        lines.append(
            f'<div style="margin:3px 0 3px {indent}px; border-left:3px solid {color}; '
            f'padding-left:8px"><span style="color:{color}; font-weight:{weight}">'
            f"{_e(row.title)}</span>{text}</div>")
    hidden = len(rows) - len(shown)
    if hidden:
        lines.append(f'<div style="color:#888">... {plural(hidden, "more row")} after step '
                     f"{upto} (move the slider)</div>")
    return _root("trace", trace_facts(rows, upto), "".join(lines))


# -- self-check quiz -------------------------------------------------------------------

RIGHT_COLOR, WRONG_COLOR = "#009E73", BUDGET_COLOR


def choice_letter(index: int) -> str:
    """A, B, C, ...: the label of a choice (radio button labels cannot wrap long text, so
    the buttons carry letters and the choices are written out above them)."""
    return chr(ord("A") + index)


def question_html(question: Question) -> str:
    """One quiz question, numbered, with its choices lettered A, B, C..., as HTML."""
    facts = {"view": "quiz-question", "notebook": question.notebook,
             "question": question.number, "choices": len(question.choices)}
    choices = "".join(f'<div style="margin:2px 0 2px 12px"><b>{choice_letter(i)}.</b> '
                      f"{_e(text)}</div>" for i, text in enumerate(question.choices))
    return _root("quiz-question", facts, f'<div style="margin-top:10px"><b>{question.number}. '
                                         f"{_e(question.question)}</b></div>{choices}")


def feedback_html(question: Question, choice: int | None,
                  feedback: Feedback | None) -> str:
    """What Check writes under a question: right or wrong and why, or, when nothing is
    selected (`choice` and `feedback` None), a prompt to pick an answer first."""
    facts = {"view": "quiz-feedback", "notebook": question.notebook,
             "question": question.number, "choice": choice,
             "correct": None if feedback is None else feedback.correct}
    if feedback is None:
        return _root("quiz-feedback", facts, "<i>Pick an answer first, then press Check.</i>")
    verdict, color = (("Right.", RIGHT_COLOR) if feedback.correct
                      else ("Wrong.", WRONG_COLOR))
    retry = "" if feedback.correct else " Try another answer."
    return _root("quiz-feedback", facts,
                 f'<div style="border-left:3px solid {color}; padding-left:8px">'
                 f'<b style="color:{color}">{verdict}</b> {_e(feedback.explanation)}'
                 f"{retry}</div>")


# -- small HTML helpers ---------------------------------------------------------------

def _root(view: str, facts: dict[str, Any], body: str) -> str:
    """The outer div; `data-facts` carries what is drawn, for the browser test."""
    return (f'<div data-vmem="{view}" data-facts="{_e(json.dumps(facts))}" '
            f'style="{FONT}">{body}</div>')


def _bar(segments: Sequence[tuple[str, float, str]], scale: float, height: int,
         marks: Sequence[tuple[float, str, str]] = ()) -> str:
    """A horizontal stacked bar: segment widths are value / scale of the full width;
    marks are vertical lines (value, colour, border style)."""
    cells = "".join(
        f'<div title="{_e(label)}: {value:.4g}" style="width:{100 * value / scale:.3f}%; '
        f'background:{color}; height:100%"></div>'
        for label, value, color in segments if value > 0)
    lines = "".join(
        f'<div style="position:absolute; top:-3px; bottom:-3px; left:{100 * value / scale:.3f}%;'
        f' border-left:2px {style} {color}"></div>' for value, color, style in marks)
    return (f'<div style="position:relative; display:flex; height:{height}px; '
            f'background:#f0f0f0; border-radius:2px; margin:2px 0">{cells}{lines}</div>')


def _swatch(color: str) -> str:
    return (f'<span style="display:inline-block; width:10px; height:10px; background:{color}; '
            'margin-right:4px; vertical-align:baseline"></span>')


def _line_key(color: str, style: str) -> str:
    return (f'<span style="display:inline-block; width:14px; height:0; border-top:2px '
            f'{style} {color}; margin-right:4px; vertical-align:middle"></span>')


def _e(text: str) -> str:
    return html.escape(text, quote=True)



# -- the widgets ----------------------------------------------------------------------

class EvictionViewer(_Box):
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
        _require_widgets("EvictionViewer")
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


class RetrievalExplorer(_Box):
    """Rank an `ArchivalStore`'s records with BM25, live, beside token overlap.

    Example::

        from vmem import ArchivalStore
        from vmem.viz import RetrievalExplorer

        store = ArchivalStore()
        for fact in ["My sister Ana lives in Porto.", "I moved to Lisbon in 2021.",
                     "Ana is a pilot and flies to Porto every week.", "I like green tea."]:
            store.insert(fact)
        RetrievalExplorer(store, query="where does my sister live")

    Controls: `.query` (a text box), `.top_k`, `.k1` and `.b` (sliders) and `.reset` (a
    button back to k1 = 1.2, b = 0.75). The records are read once, when the explorer is
    built, and indexed with the pure-Python `BM25Index` (`.index`, over `.records`).
    `.view()` is the `RetrievalView` on screen.
    """

    def __init__(self, store: Any, *, query: str = "", top_k: int = 5, k1: float = 1.2,
                 b: float = 0.75) -> None:
        _require_widgets("RetrievalExplorer")
        self.records = tuple(store.records())
        self.index = build_index(self.records)
        most = max(1, min(20, len(self.records)))
        self.query = widgets.Text(value=query, description="query",
                                  placeholder="type a question", continuous_update=True,
                                  layout=widgets.Layout(width="420px"))
        self.top_k = widgets.IntSlider(value=min(max(top_k, 1), most), min=1, max=most,
                                       description="top_k")
        self.k1 = widgets.FloatSlider(value=k1, min=0.0, max=3.0, step=0.1, description="k1",
                                      readout_format=".1f")
        self.b = widgets.FloatSlider(value=b, min=0.0, max=1.0, step=0.05, description="b",
                                     readout_format=".2f")
        self.reset = widgets.Button(description="reset k1 and b",
                                    layout=widgets.Layout(width="auto"))
        self.output = widgets.HTML()
        super().__init__(children=[widgets.HBox([self.query, self.top_k]),
                                   widgets.HBox([self.k1, self.b, self.reset]), self.output])
        for control in (self.query, self.top_k, self.k1, self.b):
            control.observe(self._draw, names="value")
        self.reset.on_click(self._reset)
        self._draw()

    def view(self) -> RetrievalView:
        """The rankings for the controls' current values."""
        return retrieval_view(self.index, self.records, self.query.value, k1=self.k1.value,
                              b=self.b.value, top_k=self.top_k.value)

    def _draw(self, change: Any = None) -> None:
        self.output.value = retrieval_html(self.view())

    def _reset(self, button: Any = None) -> None:
        self.k1.value, self.b.value = 1.2, 0.75

    def __repr__(self) -> str:
        return f"RetrievalExplorer({plural(len(self.records), 'record')}, " \
               f"query {self.query.value!r})"


class TraceViewer(_Box):
    """One agent turn as a timeline: tool calls, results, heartbeats, evictions, answer.

    Example::

        from vmem import Agent, Memory, ScriptedPolicy, StepClock
        from vmem.viz import TraceViewer

        memory = Memory.open(":memory:", clock=StepClock())
        memory.archival.insert("The user's sister Ana lives in Porto.")
        agent = Agent(memory, ScriptedPolicy([
            ("archival_memory_search", {"query": "sister", "request_heartbeat": True}),
            ("send_message", {"message": "Your sister lives in Porto [record 1]."}),
        ]))
        TraceViewer(agent.step("Where does my sister live?"))

    Control: `.step`, a slider that shows the timeline up to a policy step (0: only the
    user's message). `.rows` are the `TraceRow`s, `.output` the picture.
    """

    def __init__(self, turn: Turn) -> None:
        _require_widgets("TraceViewer")
        self.turn = turn
        self.rows = tuple(trace_rows(turn))
        self.step = widgets.IntSlider(value=turn.steps, min=0, max=turn.steps,
                                      description="up to step",
                                      style={"description_width": "initial"})
        self.output = widgets.HTML()
        super().__init__(children=[self.step, self.output])
        self.step.observe(self._draw, names="value")
        self._draw()

    def view(self) -> list[TraceRow]:
        """The rows shown for the slider's current value."""
        return [row for row in self.rows if row.step <= self.step.value]

    def _draw(self, change: Any = None) -> None:
        self.output.value = trace_html(self.rows, self.step.value)

    def __repr__(self) -> str:
        return f"TraceViewer({plural(self.turn.steps, 'step')}, {self.turn.stop_reason})"


class Quiz(_Box):
    """The self-check questions of one lesson notebook, answered in place.

    Example::

        from vmem.viz import Quiz

        Quiz("02_main_context")

    Each question lists its choices as A, B, C... and has radio buttons with those
    letters (`.choices[i]`, whose value is the index of the selected choice, or None)
    and a Check button (`.check[i]`) that writes right or
    wrong, and why, into `.feedback[i]`. Changing the selection clears the verdict.
    `.submit(i, choice)` selects and checks from code; `.results[i]` is the last
    `Feedback` (None until checked). `.questions` are the `vmem.course.quiz.Question`s.
    """

    def __init__(self, notebook: str) -> None:
        _require_widgets("Quiz")
        self.notebook = notebook
        self.questions = questions_for(notebook)
        self.results: list[Feedback | None] = [None] * len(self.questions)
        self.choices, self.check, self.feedback = [], [], []
        rows = []
        for i, question in enumerate(self.questions):
            choices = widgets.RadioButtons(
                options=[(choice_letter(index), index) for index in range(len(question.choices))],
                value=None, orientation="horizontal", description="answer")
            check = widgets.Button(description="Check", tooltip="check this answer")
            feedback = widgets.HTML()
            choices.observe(lambda change, i=i: self._clear(i), names="value")
            check.on_click(lambda button, i=i: self._check(i))
            self.choices.append(choices)
            self.check.append(check)
            self.feedback.append(feedback)
            rows.append(widgets.VBox([widgets.HTML(question_html(question)),
                                      widgets.HBox([choices, check]), feedback]))
        super().__init__(children=rows)

    def submit(self, i: int, choice: int) -> Feedback:
        """Select `choice` for question `i` (both 0-based) and press Check."""
        self.choices[i].value = choice
        self.check[i].click()
        result = self.results[i]
        assert result is not None  # a selection was made, so Check gave a verdict
        return result

    def score(self) -> int:
        """How many questions were last checked with the right answer."""
        return sum(bool(result and result.correct) for result in self.results)

    def _check(self, i: int) -> None:
        question, choice = self.questions[i], self.choices[i].value
        self.results[i] = None if choice is None else check_answer(question, choice)
        self.feedback[i].value = feedback_html(question, choice, self.results[i])

    def _clear(self, i: int) -> None:
        self.results[i] = None
        self.feedback[i].value = ""

    def __repr__(self) -> str:
        return (f"Quiz({self.notebook!r}, {plural(len(self.questions), 'question')}, "
                f"{self.score()} answered right)")
