"""Every widget a committed lesson notebook shows also leaves a static picture there.

Outside a live kernel (GitHub, nbviewer) a widget shows only its text form, so each cell
that displays a viewer, an explorer or a quiz must be followed by a cell whose committed
output is the HTML of its `snapshot()`. The check parses the committed .ipynb files; it
needs no kernel.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parents[2] / "notebooks").glob("*.ipynb"))
WIDGET = r"\w+(?:Viewer|Explorer)|Quiz"
# A widget displayed as a cell's last line: `name = Viewer(...)` then `name`.
SHOWN = re.compile(rf"^(\w+) = ({WIDGET})\(.*?^\1\s*$", re.M | re.S)
BUILT = re.compile(rf"^[^#\n]*\b({WIDGET})\(", re.M)


def shown_widgets(notebook: Path) -> list[tuple[int, str]]:
    """(cell index, variable name) of each cell that displays a widget."""
    cells = json.loads(notebook.read_text())["cells"]
    return [(index, found.group(1)) for index, cell in enumerate(cells)
            if cell["cell_type"] == "code"
            for found in SHOWN.finditer("".join(cell["source"]))]


def has_snapshot(cells: list[dict], name: str) -> bool:
    """True when a code cell runs `name.snapshot()` and its committed output has HTML."""
    return any(cell["cell_type"] == "code" and f"{name}.snapshot()" in "".join(cell["source"])
               and any("<div data-vmem=" in "".join(output.get("data", {}).get("text/html", ""))
                       for output in cell["outputs"])
               for cell in cells)


def test_the_lessons_show_widgets_and_every_quiz() -> None:
    shown = [(notebook.stem, name) for notebook in NOTEBOOKS
             for _, name in shown_widgets(notebook)]
    assert len(shown) >= 3 + len(NOTEBOOKS)
    assert {stem for stem, name in shown if name == "quiz"} == \
        {notebook.stem for notebook in NOTEBOOKS}  # every lesson has a quiz


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_widget_a_lesson_builds_is_one_the_snapshot_rule_sees(notebook: Path) -> None:
    """A widget built any other way (`Quiz("...")` as a bare last line) would escape the
    snapshot check below, so every cell that builds one must match `SHOWN`."""
    cells = json.loads(notebook.read_text())["cells"]
    for index, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and BUILT.search(source):
            assert SHOWN.search(source), (
                f"{notebook.name} cell {index} builds a widget without `name = ...` then "
                "`name`: assign it and show its snapshot() in a later cell")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_shown_widget_has_a_static_picture(notebook: Path) -> None:
    cells = json.loads(notebook.read_text())["cells"]
    for index, name in shown_widgets(notebook):
        later = cells[index + 1:]
        assert has_snapshot(later, name), (
            f"{notebook.name} cell {index} shows {name} but no later cell commits "
            f"{name}.snapshot()'s HTML: GitHub and nbviewer would show no picture")


def test_notebook_02_pictures_a_step_where_something_is_about_to_be_evicted() -> None:
    """The eviction viewer's committed picture is the step before a flush, with the
    messages that flush evicts highlighted (step 1 would show an almost empty queue)."""
    notebook = next(path for path in NOTEBOOKS if path.stem == "02_main_context")
    pictures = [html.unescape(found) for cell in json.loads(notebook.read_text())["cells"]
                if cell["cell_type"] == "code" and "viewer.snapshot()" in "".join(cell["source"])
                for output in cell["outputs"]
                for found in re.findall(r'data-vmem="eviction" data-facts="([^"]*)"',
                                        "".join(output.get("data", {}).get("text/html", "")))]
    assert pictures, "notebook 02 commits no eviction viewer picture"
    facts = json.loads(pictures[0])
    assert facts["doomed"] and set(facts["doomed"]) <= set(facts["queue"])
    assert "highlighted</span>" in notebook.read_text()
