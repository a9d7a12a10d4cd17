"""The HTML every view shares: the outer element, bars, swatches, the colours and the font.

Views are plain HTML strings (an ipywidgets `HTML` shows them); the outer element carries
the numbers it draws as JSON in `data-facts`, so tests and the browser test can compare
what is drawn with what the pure functions computed.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

# Colours: the Okabe-Ito palette, readable with the common colour-vision deficiencies.
SECTION_COLORS = {"system": "#999999", "core": "#0072B2", "summary": "#CC79A7",
                  "messages": "#009E73"}
TERM_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00",
               "#999933", "#882255")
BUDGET_COLOR, WARN_COLOR, DOOMED_BG = "#D55E00", "#E69F00", "#FBE3D6"
FONT = ("font-family: var(--jp-ui-font-family, sans-serif); font-size: 13px; "
        "line-height: 1.45; color: var(--jp-ui-font-color1, #222); max-width: 820px")


def root(view: str, facts: dict[str, Any], body: str) -> str:
    """The outer div; `data-facts` carries what is drawn, for the browser test."""
    return (f'<div data-vmem="{view}" data-facts="{escape(json.dumps(facts))}" '
            f'style="{FONT}">{body}</div>')


def bar(segments: Sequence[tuple[str, float, str]], scale: float, height: int,
        marks: Sequence[tuple[float, str, str]] = ()) -> str:
    """A horizontal stacked bar: segment widths are value / scale of the full width;
    marks are vertical lines (value, colour, border style)."""
    cells = "".join(
        f'<div title="{escape(label)}: {value:.4g}" style="width:{100 * value / scale:.3f}%; '
        f'background:{color}; height:100%"></div>'
        for label, value, color in segments if value > 0)
    lines = "".join(
        f'<div style="position:absolute; top:-3px; bottom:-3px; left:{100 * value / scale:.3f}%;'
        f' border-left:2px {style} {color}"></div>' for value, color, style in marks)
    return (f'<div style="position:relative; display:flex; height:{height}px; '
            f'background:#f0f0f0; border-radius:2px; margin:2px 0">{cells}{lines}</div>')


def swatch(color: str) -> str:
    """A small square of `color`, for a legend."""
    return (f'<span style="display:inline-block; width:10px; height:10px; background:{color}; '
            'margin-right:4px; vertical-align:baseline"></span>')


def line_key(color: str, style: str) -> str:
    """A short line of `color` and border `style`, for a legend."""
    return (f'<span style="display:inline-block; width:14px; height:0; border-top:2px '
            f'{style} {color}; margin-right:4px; vertical-align:middle"></span>')


def escape(text: str) -> str:
    """`text` safe inside HTML, quotes included."""
    return html.escape(text, quote=True)
