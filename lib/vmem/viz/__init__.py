"""Widgets that let a learner watch virtual context work: eviction, retrieval, the agent loop.

Optional extra: the widgets need ipywidgets (`pip install "vmem[widgets]"`).

One module per widget (`eviction`, `retrieval`, `trace`, `quiz`), the HTML they share in
`markup`; this package re-exports every public name. Each widget is a thin view. Pure
functions turn library state into plain values (a `Frame` of the main context at one step,
a `RetrievalView` of one query, the `TraceRow`s of one turn) and those values into HTML; a
widget only wires its controls to them. The pure functions need nothing but the standard
library, so they are tested (and usable) without ipywidgets; building a widget without
ipywidgets raises an ImportError that says what to install. Only `vmem.viz.box` imports
ipywidgets, and `import vmem` never imports it.

- `EvictionViewer(context)`: replays a `MainContext`'s conversation step by step: the
  prompt's tokens by section against the budget and the warning line, the queue with the
  messages the next flush evicts highlighted, the summary, the count in recall storage.
- `RetrievalExplorer(store)`: BM25 over an `ArchivalStore`'s records, each hit's score
  stacked by query term with each term's tf, idf and length normalisation in a table
  beneath, beside the token-overlap baseline, re-ranked live as k1 and b move.
- `TraceViewer(turn)`: one `Agent.step` as a timeline: tool calls, results, heartbeats,
  warnings, evictions, the final answer.
- `Quiz(notebook)`: the self-check questions of a lesson notebook (`vmem.course.quiz`), each
  with radio buttons and a Check button that says right or wrong, and why.

Every widget's `snapshot()` returns its current view as static HTML, which a lesson
displays beneath the widget so GitHub and nbviewer show a picture too.

The names are loaded from their modules on first use (PEP 562), so importing
`vmem.viz.markup`, which needs only the standard library, loads no widget module.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "box": ("INSTALL_HINT",),
    "eviction": ("EvictionViewer", "Frame", "QueueItem", "Replay", "eviction_html",
                 "fresh_context", "lowest_budget", "matches_recording", "recorded_messages",
                 "replay"),
    "markup": ("BUDGET_COLOR", "DOOMED_BG", "FONT", "SECTION_COLORS", "TERM_COLORS",
               "WARN_COLOR"),
    "quiz": ("RIGHT_COLOR", "WRONG_COLOR", "Quiz", "choice_letter", "feedback_html",
             "question_html", "quiz_html"),
    "retrieval": ("OverlapHit", "RankedHit", "RetrievalExplorer", "RetrievalView",
                  "build_index", "overlap_ranking", "retrieval_html", "retrieval_view"),
    "trace": ("TRACE_COLORS", "TraceRow", "TraceViewer", "trace_facts", "trace_html",
              "trace_rows"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    """Load a re-exported name from its module on first use, then keep it here."""
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'vmem.viz' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_MODULE_OF[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
