"""The course in the browser (JupyterLite's Pyodide kernel, `make site`): a cell that needs
a package the browser course lacks says so in one line, and the notebook goes on.

    %load_ext vmem.course.browser      # in the notebook's first code cell
    %%needs matplotlib                 # the first line of a cell that draws a plot

Where every package named imports (the local course, `make lab`), `%%needs` runs the cell
as if the line were not there. Where one does not (the browser: Pyodide serves matplotlib
and numpy only from its CDN, which the site does not use), it prints one line saying what
is missing and why, and runs nothing, so "Run All" carries on.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

IN_BROWSER = sys.platform == "emscripten"
"""True in Pyodide, the browser course's kernel."""

WHY = {
    "matplotlib": "Pyodide serves it only from its CDN; the picture saved in this notebook "
                  "is this cell's",
    "rank_bm25": "it needs numpy, which Pyodide serves only from its CDN",
}
"""Why the browser course lacks each package a cell may need."""


def missing(modules: list[str]) -> list[str]:
    """The modules of `modules` that cannot be imported here."""
    return [name for name in modules if importlib.util.find_spec(name) is None]


def notice(absent: list[str]) -> str:
    """The one line a skipped cell prints: what it needs, why that is absent, where it runs."""
    reasons = "; ".join(f"{name}: {WHY.get(name, 'not installed')}" for name in absent)
    where = "in the browser" if IN_BROWSER else "here"
    return (f"Skipped {where}: this cell needs {', '.join(absent)} ({reasons}). It runs in "
            "the local course (`make lab`).")


def needs(line: str, cell: str) -> None:
    """`%%needs MODULE ...`: run the cell where every module imports, else say why not."""
    absent = missing(line.split())
    if absent:
        print(notice(absent))
        return
    from IPython import get_ipython

    get_ipython().run_cell(cell).raise_error()


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext vmem.course.browser`: register the `%%needs` cell magic."""
    ipython.register_magic_function(needs, magic_kind="cell", magic_name="needs")
