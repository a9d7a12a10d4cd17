"""Generate the learners' exercise notebooks from the solution notebooks.

    python scripts/make_exercises.py [--solutions solutions] [--out exercises]

`solutions/exNN_*.ipynb` are the single source. Every solution region becomes a
`NotImplementedError` stub (the rule is in `regions.py`, shared with `make_lessons.py`).
Outputs and execution counts are cleared and widget state is dropped; everything else
(prose, cell ids, tags, nbgrader metadata) is copied unchanged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from regions import stub_notebook


def make_exercise(solution: Path, exercise: Path) -> None:
    """Write the exercise notebook generated from `solution`."""
    nb = nbformat.read(solution, as_version=4)
    nbformat.write(stub_notebook(nb, solution.name), exercise)


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
