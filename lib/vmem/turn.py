"""One agent turn as data, and the one walk that turns it into a timeline.

`ToolCall` and `AssistantTurn` are what a policy answers with; `Exchange` is one call with
its `ToolResult`; `Turn` is everything one `Agent.step` did, with the main context's events
of that turn. `trace_rows(turn)` (also `Turn.rows()`) is the only code that orders a turn
into rows (user message, model steps, calls, results, heartbeats, warnings, evictions,
summaries, the answer, why it stopped). Every view of a turn is a style over those rows:
`Turn.trace()` (plain lines), the demo's terminal lines (`vmem.course.demo.step_lines`) and
`vmem.viz.TraceViewer`'s HTML.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from .context import Event
from .text import plural
from .tools import ToolResult

StopReason = Literal["final_message", "max_steps", "error"]


@dataclass
class ToolCall:
    """One tool call a policy asks for; `arguments` is a dict or the raw JSON string."""

    name: str
    arguments: Any = None
    id: str | None = None

    def arguments_json(self) -> str:
        """The arguments as the JSON string a Chat Completions call carries (a raw string
        is passed on unchanged, even when it is broken JSON)."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments if self.arguments is not None else {},
                          ensure_ascii=False)

    def to_chat(self, call_id: str) -> dict[str, Any]:
        """The call in the Chat Completions shape, arguments as a JSON string."""
        return {"id": call_id, "type": "function",
                "function": {"name": str(self.name), "arguments": self.arguments_json()}}


@dataclass
class AssistantTurn:
    """What a policy returns for one step: text for the user and/or tool calls."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass
class Exchange:
    """One tool call and its result, with the step it ran in (1 = first policy call) and
    the id of the tool message that carried the result into the context."""

    step: int
    call: ToolCall
    result: ToolResult
    message_id: int | None = None


@dataclass
class Turn:
    """Everything that happened in one `Agent.step`."""

    user: str
    reply: str = ""
    steps: int = 0
    stop_reason: StopReason = "final_message"
    calls: list[Exchange] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    error: str | None = None

    def rows(self) -> list[TraceRow]:
        """The turn's timeline (see `trace_rows`): what every view of a turn draws."""
        return trace_rows(self)

    def trace(self) -> list[str]:
        """One line per tool call, e.g. `step 1: archival_memory_search {"query": ...} -> ok`."""
        return [f"step {row.step}: {row.exchange.call.name} "
                f"{row.exchange.call.arguments_json()} -> {'ok' if row.ok else 'failed'}"
                for row in self.rows() if row.kind == "result" and row.exchange]


@dataclass(frozen=True)
class TraceRow:
    """One line of a turn's timeline.

    `step` is the policy call it belongs to (0: the user's message) and `kind` one of
    user, model, call, result, heartbeat, clipped, warning, eviction, summary, answer, stop
    (or the kind of an unexpected event). `title` and `text` are what a view shows; `exchange`
    (call and result rows) and `event` (warning, eviction and summary rows) are the data
    the row stands for, for views that say it their own way.
    """

    step: int
    kind: str
    title: str
    text: str = ""
    ok: bool = True
    exchange: Exchange | None = field(default=None, compare=False)
    event: Event | None = field(default=None, compare=False)


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
                         else f"{name} failed", result.content, result.ok, exchange=value)]
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
                            exchange.call.arguments_json(), exchange=exchange)
                   for exchange in made]


def _event_rows(event: Event, state: dict[str, Any]) -> list[TraceRow]:
    step = state["step"]
    if event.kind == "warned":
        state["warned"] = True
        return [TraceRow(step, "warning", "memory-pressure warning",
                         f"the prompt reached its warning line ({event.tokens} tokens now)",
                         event=event)]
    if event.kind == "evicted":
        return [TraceRow(step, "eviction",
                         f"evicted {plural(len(event.message_ids), 'message')} to recall",
                         f"{event.size} tokens left the prompt; {event.tokens} tokens now",
                         event=event)]
    if event.kind == "clipped":
        return [TraceRow(step, "clipped", "shown clipped: too big for the context, kept whole "
                         "in recall", event.detail, event=event)]
    if event.kind == "summarized":
        return [TraceRow(step, "summary", "summary updated", event.detail, event=event)]
    if event.kind == "summary_failed":
        return [TraceRow(step, "summary", "summary failed, old summary kept", event.detail,
                         ok=False, event=event)]
    return [TraceRow(step, event.kind, event.kind.replace("_", " "), event=event)]
