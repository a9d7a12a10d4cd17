"""The base class every widget extends, and the one place vmem.viz imports ipywidgets.

Optional extra: the widgets need ipywidgets (`pip install "vmem[widgets]"`). Without it
`Box` is a plain object, so the widget modules still import and their pure functions work;
building a widget then raises an ImportError that says what to install.
"""

from __future__ import annotations

from typing import Any

try:
    import ipywidgets as widgets
except ImportError:  # the pure functions work without it
    widgets = None

INSTALL_HINT = 'pip install "vmem[widgets]" (or pip install ipywidgets)'
_Base: Any = widgets.VBox if widgets is not None else object


class Box(_Base):  # type: ignore[misc, valid-type]
    """A vertical box whose picture lives in `.output` (an ipywidgets `HTML`)."""

    output: Any

    def picture(self) -> str:
        """The HTML of the current view (by default what `.output` shows)."""
        return str(self.output.value)

    def snapshot(self) -> Any:
        """The current view as a static `IPython.display.HTML`: outside a live kernel
        (GitHub, nbviewer) widgets show only their text form, so a lesson displays this
        beneath the widget to leave a picture in the committed output. It is the same
        HTML the pure function drew, so it is deterministic and nbval can compare it."""
        from IPython.display import HTML

        return HTML(self.picture())


def require_widgets(name: str) -> None:
    """Say what to install, before a widget is half built, when ipywidgets is missing."""
    if widgets is None:
        raise ImportError(f"{name} needs ipywidgets: {INSTALL_HINT}. The pure functions in "
                          "vmem.viz (replay, retrieval_view, trace_rows, ...) work without it.")
