"""Every widget a committed lesson notebook shows also leaves a static picture there.

Outside a live kernel (GitHub, nbviewer) a widget shows only its text form, so each cell
that displays a viewer must be followed by a cell whose committed output is the HTML of
its `snapshot()`. The check parses the committed .ipynb files; it needs no kernel.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parents[2] / "notebooks").glob("*.ipynb"))
# A widget displayed as a cell's last line: `name = Viewer(...)` then `name`.
SHOWN = re.compile(r"^(\w+) = (\w+(?:Viewer|Explorer))\(.*?^\1\s*$", re.M | re.S)


def shown_widgets(notebook: Path) -> list[tuple[int, str]]:
    """(cell index, variable name) of each cell that displays a viewer or explorer."""
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


def test_the_lessons_show_widgets() -> None:
    assert sum(len(shown_widgets(notebook)) for notebook in NOTEBOOKS) >= 3


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_shown_widget_has_a_static_picture(notebook: Path) -> None:
    cells = json.loads(notebook.read_text())["cells"]
    for index, name in shown_widgets(notebook):
        later = cells[index + 1:]
        assert has_snapshot(later, name), (
            f"{notebook.name} cell {index} shows {name} but no later cell commits "
            f"{name}.snapshot()'s HTML: GitHub and nbviewer would show no picture")
