"""Generate the learners' exercise notebooks from the solution notebooks.

    python scripts/make_exercises.py [--solutions solutions] [--out exercises]

`solutions/exNN_*.ipynb` are the single source. In each code cell, every region between a
`### BEGIN SOLUTION` line and an `### END SOLUTION` line becomes a stub at the same
indentation:

    # YOUR CODE HERE
    raise NotImplementedError("<the region's hint>")

The hint is the region's first line, which must be a `# Hint: ...` comment. Regions sit
inside function bodies, so a stubbed cell still defines its names and runs. Outputs and
execution counts are cleared and widget state is dropped; everything else (prose, cell
ids, tags, nbgrader metadata) is copied unchanged.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

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


def make_exercise(solution: Path, exercise: Path) -> None:
    """Write the exercise notebook generated from `solution`."""
    nb = nbformat.read(solution, as_version=4)
    nb.metadata.pop("widgets", None)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        cell.source = stub_source(cell.source, f"{solution.name} cell {index}")
        cell.outputs = []
        cell.execution_count = None
    nbformat.write(nb, exercise)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solutions", type=Path, default=Path("solutions"))
    parser.add_argument("--out", type=Path, default=Path("exercises"))
    args = parser.parse_args(argv)
    solutions = sorted(args.solutions.glob("ex*.ipynb"))
    if not solutions:
        print(f"no ex*.ipynb in {args.solutions}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for solution in solutions:
        make_exercise(solution, args.out / solution.name)
        print(f"{solution} -> {args.out / solution.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
