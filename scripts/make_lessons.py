"""Generate the learners' lesson notebooks from the complete lessons, and run them.

    python scripts/make_lessons.py [--lessons solutions/lessons] [--out notebooks] [--no-execute]

`solutions/lessons/NN_*.ipynb` are the single source, written with the learner's parts
between `### BEGIN SOLUTION` / `### END SOLUTION` (the rule is in `regions.py`, shared
with `make_exercises.py`). Each becomes `notebooks/NN_*.ipynb` with those parts stubbed,
then runs top to bottom in a fresh kernel, so the learner version is committed with the
outputs of its own fallback run: every check after an untouched stub says "not written
yet" and the notebook goes on with vmem's part. Lessons without regions are copied with
their source unchanged, so one rule covers all of them. `--no-execute` writes the
stubbed notebooks without outputs (what the sync test compares).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from execute_notebooks import execute_in_place
from regions import stub_notebook


def make_lesson(lesson: Path, learner: Path, run: bool = True) -> None:
    """Write the learner version of `lesson` to `learner`, executed unless `run` is False."""
    nb = nbformat.read(lesson, as_version=4)
    nbformat.write(stub_notebook(nb, lesson.name), learner)
    if run:
        execute_in_place(learner)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=Path, default=Path("solutions/lessons"))
    parser.add_argument("--out", type=Path, default=Path("notebooks"))
    parser.add_argument("--no-execute", action="store_true",
                        help="write the stubbed notebooks without running them")
    parser.add_argument("names", nargs="*", help="only these lessons (e.g. 02_main_context)")
    args = parser.parse_args(argv)
    lessons = sorted(path for path in args.lessons.glob("[0-9][0-9]_*.ipynb")
                     if not args.names or path.stem in args.names)
    if not lessons:
        print(f"no NN_*.ipynb lessons in {args.lessons}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for lesson in lessons:
        print(f"{lesson} -> {args.out / lesson.name}", flush=True)
        make_lesson(lesson, args.out / lesson.name, run=not args.no_execute)
    return 0


if __name__ == "__main__":
    sys.exit(main())
