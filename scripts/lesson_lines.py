"""How much code a learner types and reads in each lesson, from the complete versions.

    python scripts/lesson_lines.py solutions/lessons/*.ipynb

Typed: the non-blank lines inside `### BEGIN SOLUTION` / `### END SOLUTION` regions, hints
left out (`regions.region_lines`). Read: every other non-blank code line, markers and
hints left out. Prose is not counted. Prints one row per notebook and the total.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from regions import BEGIN, END, region_lines, stub_source


def lines(path: Path) -> tuple[int, int, int]:
    """(stubs, lines typed, lines read) in the notebook at `path`."""
    stubs = typed = read = 0
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        stubs += cell.source.count(BEGIN) > 0
        typed += region_lines(cell.source)
        outside = stub_source(cell.source, path.name).split("\n")
        read += sum(1 for line in outside if line.strip() and "raise NotImplementedError(" not in
                    line and line.strip() not in ("# YOUR CODE HERE", BEGIN, END))
    return stubs, typed, read


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args(argv)
    print(f"{'notebook':<22} {'stubs':>5} {'typed':>5} {'read':>5}")
    totals = [0, 0, 0]
    for path in args.notebooks:
        row = lines(path)
        totals = [a + b for a, b in zip(totals, row, strict=True)]
        print(f"{path.stem:<22} {row[0]:>5} {row[1]:>5} {row[2]:>5}")
    print(f"{'total':<22} {totals[0]:>5} {totals[1]:>5} {totals[2]:>5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
