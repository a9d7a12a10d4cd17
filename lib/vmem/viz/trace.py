"""`TraceViewer`: one agent turn as a timeline, revealed step by step.

Optional extra: the widget needs ipywidgets; `trace_html` and `trace_facts` need only the
standard library.

The rows come from `vmem.turn.trace_rows` (`Turn.rows()`), the one walk that orders a turn:
user message, model steps, calls, results, heartbeats, warnings, evictions, summaries, the
answer. This module only styles them as HTML; `TraceRow` and `trace_rows` are re-exported
here for the notebooks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..text import clip, plural
from ..turn import TraceRow, Turn, trace_rows
from .box import Box, require_widgets, widgets
from .markup import BUDGET_COLOR, escape, root

__all__ = ["TRACE_COLORS", "TraceRow", "TraceViewer", "trace_facts", "trace_html", "trace_rows"]

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
                f"{escape(clip(row.text, 400))}</div>") if row.text else ""
        weight = "bold" if row.kind in ("model", "answer") else "normal"
        lines.append(
            f'<div style="margin:3px 0 3px {indent}px; border-left:3px solid {color}; '
            f'padding-left:8px"><span style="color:{color}; font-weight:{weight}">'
            f"{escape(row.title)}</span>{text}</div>")
    hidden = len(rows) - len(shown)
    if hidden:
        lines.append(f'<div style="color:#888">... {plural(hidden, "more row")} after step '
                     f"{upto} (move the slider)</div>")
    return root("trace", trace_facts(rows, upto), "".join(lines))



class TraceViewer(Box):
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
        require_widgets("TraceViewer")
        self.turn = turn
        self.rows = tuple(turn.rows())
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
