"""Execute notebooks in place so that they are committed with their outputs.

    python scripts/execute_notebooks.py solutions/*.ipynb notebooks/*.ipynb

Each notebook runs top to bottom in a fresh kernel started in its own folder; a cell that
fails without the `raises-exception` tag stops the run with an error (nothing is written
for that notebook). Widget state is stripped from the metadata (GitHub refuses to render
notebooks with partial widget state), widget views keep only their text form (a view
names a random model id), expected errors keep their last line only (no local paths),
and no timing metadata is recorded, so re-executing an unchanged notebook rewrites the
same bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

from vmem.course.classroom import execute

TIMEOUT = 600  # seconds per notebook
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def execute_in_place(path: Path, timeout: float = TIMEOUT) -> None:
    """Run `path` and write it back with fresh outputs and no widget state."""
    nb = nbformat.read(path, as_version=4)
    execute(nb, path.resolve().parent, timeout, allow_errors=False)
    nb.metadata.pop("widgets", None)
    drop_widget_views(nb)
    shorten_tracebacks(nb)
    nbformat.write(nb, path)


def shorten_tracebacks(nb: nbformat.NotebookNode) -> None:
    """Keep an expected error's last line only (`MatchError: ...`): the full traceback
    names this machine's paths and the library's line numbers, which change with every
    edit, and a learner running the cell sees the full one anyway."""
    for cell in nb.cells:
        for output in cell.get("outputs", ()):
            if output.get("output_type") == "error":
                output["traceback"] = [f"{output['ename']}: {output['evalue']}"]


def drop_widget_views(nb: nbformat.NotebookNode) -> None:
    """Keep a widget output's text form only: its view names a random model id, and with
    the widget state stripped the view could not be shown anyway."""
    for cell in nb.cells:
        for output in cell.get("outputs", ()):
            output.get("data", {}).pop(WIDGET_VIEW, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for path in args.notebooks:
        print(f"executing {path}", flush=True)
        execute_in_place(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
