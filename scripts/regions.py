"""The learner's regions in a single-source notebook, and the stubs that replace them.

Shared by `make_exercises.py` (solutions/exNN -> exercises/) and `make_lessons.py`
(solutions/lessons/NN -> notebooks/). In each code cell, every region between a
`### BEGIN SOLUTION` line and an `### END SOLUTION` line becomes a stub at the same
indentation:

    # YOUR CODE HERE
    raise NotImplementedError("<the region's hint>")

The hint is the region's first line, which must be a `# Hint: ...` comment. Regions sit
inside function bodies, so a stubbed cell still defines its names and runs.
"""

from __future__ import annotations

import re

import nbformat

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_HINT = re.compile(r"\s*# Hint: (?P<hint>.+)")


def stub_source(source: str, where: str = "cell") -> str:
    """`source` with every solution region replaced by a NotImplementedError stub."""
    out: list[str] = []
    region: list[str] | None = None
    indent = ""
    for number, line in enumerate(source.split("\n"), 1):
        marker = line.strip()
        if marker == BEGIN:
            if region is not None:
                raise ValueError(f"{where}, line {number}: {BEGIN} inside another region")
            region, indent = [], line[: len(line) - len(line.lstrip())]
        elif marker == END:
            if region is None:
                raise ValueError(f"{where}, line {number}: {END} without {BEGIN}")
            hint = _HINT.fullmatch(region[0]) if region else None
            if hint is None:
                raise ValueError(f"{where}, line {number}: a solution region must start "
                                 "with a '# Hint: ...' line")
            out += [f"{indent}# YOUR CODE HERE",
                    f"{indent}raise NotImplementedError({hint['hint']!r})"]
            region = None
        elif region is not None:
            region.append(line)
        else:
            out.append(line)
    if region is not None:
        raise ValueError(f"{where}: {BEGIN} without {END}")
    return "\n".join(out)


def stub_notebook(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """`nb` with every code cell's regions stubbed, outputs and execution counts cleared
    and widget state dropped; prose, cell ids, tags and other metadata stay as they are."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.source = stub_source(cell.source, f"{name} cell {index}")
    return clear_outputs(nb)


def clear_outputs(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """`nb` without outputs, execution counts or widget state (what a fresh run replaces)."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def region_lines(source: str) -> int:
    """How many non-blank lines sit inside `source`'s solution regions, hints excluded:
    the lines a learner types."""
    count, inside = 0, False
    for line in source.split("\n"):
        marker = line.strip()
        if marker in (BEGIN, END):
            inside = marker == BEGIN
        elif inside and marker and not _HINT.fullmatch(line):
            count += 1
    return count
