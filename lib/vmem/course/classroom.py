"""Grading exercise notebooks: one learner's `exercises/` folder, or a whole class.

`python -m vmem grade [PATH] [--csv FILE] [--timeout SECONDS]`

- PATH holding `exNN_*.ipynb` notebooks (default `exercises`): grade one learner and print
  a table (exercise, result, the stretch tier's result where there is one, the failing
  check's message) with a total score and a stretch score.
- PATH holding one folder per student (each with the notebooks, directly or in an
  `exercises/` subfolder): grade the class; `--csv` writes a gradebook with one row per
  student and a column per exercise.

Every notebook is read, never written: the grader executes an in-memory copy in a
temporary folder, with a time limit per notebook, beside a copy of the learner's
`my_parts/` (the parts their passed checks kept, which the capstone runs on; each is
checked again when it is loaded). The copy's `check` cells are replaced by
the official check calls, so editing or deleting a check cell does not change a grade.
A notebook that hangs, crashes its kernel, is missing or is not valid JSON gets a failing
grade with the reason; the rest of the class is still graded. The exit status is 0 only
when every exercise passed, so CI can use it.

Needs nbclient and nbformat (both in requirements.txt), imported when grading starts.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..text import one_line

# The exercises in order, with the official check each one ends with: one call a line, one
# check cell a line (exercise 4 ends with two: the guard, then its source rule).
EXERCISES: dict[str, str] = {
    "ex01_token_cap": "check_ex1(approx_tokens, CappedContext)",
    "ex02_bm25": "check_ex2(recall_at_k, ablate, choose)",
    "ex03_citations": "check_ex3(insert_fact, answer_with_citations)",
    "ex04_poisoning": "check_ex4(is_directive)\n"
                      "check_ex4_sources(should_quarantine, is_directive)",
    "ex05_typed_core": "check_ex5(to_memgpt, TypedCore)",
    "ex06_memory_tools": "check_ex6(tool_schema, dispatch)",
    "ex07_agent_loop": "check_ex7(run_turn)",
    "ex08_capstone": "check_ex8(chat_session)",
}
# The exercises with a stretch tier, graded separately and reported in its own column.
STRETCH: dict[str, str] = {
    "ex01_token_cap": "check_ex1(approx_tokens, CappedContext, stretch=True)",
    "ex02_bm25": "check_ex2(recall_at_k, ablate, choose, changed_questions, stretch=True)",
    "ex06_memory_tools": "check_ex6(tool_schema, dispatch, stretch=True)",
    "ex07_agent_loop": "check_ex7(run_turn, stretch=True)",
    "ex08_capstone": "check_ex8(chat_session, stretch=True)",
}
# What the table says beside a passing exercise: a cell run after its checks, whose
# printed line becomes the note (the capstone: whose dispatcher and loop ran).
NOTES: dict[str, str] = {
    "ex08_capstone": "from vmem.course.checks.ex08 import whose_parts\n"
                     "print(whose_parts(chat_session))",
}
DEFAULT_TIMEOUT = 120  # seconds per notebook, kernel start included
CHECK_TAG = "check"
STRETCH_TAG = "check-stretch"
_MESSAGE_CHARS = 160  # the longest message shown in a table cell


@dataclass(frozen=True)
class Result:
    """One graded notebook: `status` is passed, failed, missing, invalid, timeout or crashed;
    `stretch` is passed or failed for an exercise with a stretch tier that ran, else ""."""

    exercise: str
    status: str
    message: str = ""
    stretch: str = ""

    @property
    def passed(self) -> bool:
        """True when the exercise's status is "passed"."""
        return self.status == "passed"


def _nb_modules() -> tuple[Any, Any]:
    try:
        import nbclient
        import nbformat
    except ImportError as exc:  # pragma: no cover - both are in requirements.txt
        raise SystemExit("grading runs notebooks with nbclient: pip install nbclient "
                         "nbformat ipykernel") from exc
    return nbclient, nbformat


def execute(nb: Any, workdir: Path, timeout: float, allow_errors: bool = True) -> None:
    """Run every cell of notebook `nb` in place, in a fresh kernel started in `workdir`.

    `timeout` bounds the whole notebook, not each cell. Raises nbclient's
    `CellTimeoutError` or `DeadKernelError` when the notebook runs out of time or its
    kernel dies; with `allow_errors=False` a failing cell (one not tagged
    `raises-exception`) raises `CellExecutionError`. Timing metadata is not recorded and
    consecutive stream outputs are merged (how prints are chunked depends on timing), so
    the same notebook executes to the same bytes.
    """
    nbclient, _ = _nb_modules()
    deadline = time.monotonic() + timeout
    client = nbclient.NotebookClient(
        nb, kernel_name="python3", allow_errors=allow_errors, record_timing=False,
        coalesce_streams=True,
        timeout_func=lambda cell: max(1, round(deadline - time.monotonic())),
        startup_timeout=max(1, round(timeout)), shutdown_kernel="immediate",
        resources={"metadata": {"path": str(workdir)}})
    # The kernel process's own stderr carries only launcher noise (e.g. ipykernel's
    # TCP warning); what cells print to stderr is captured in the notebook as usual.
    client.execute(stderr=subprocess.DEVNULL)


def grade_notebook(path: Path, exercise: str, timeout: float = DEFAULT_TIMEOUT) -> Result:
    """Grade one notebook against the official checks of `exercise` (it passes when every
    one passes; the first error is the message)."""
    nbclient, nbformat = _nb_modules()
    if not path.is_file():
        return Result(exercise, "missing", f"{path.name} not found")
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # bad JSON, not a notebook, unreadable bytes
        shown = one_line(str(exc), _MESSAGE_CHARS)
        return Result(exercise, "invalid", f"not a valid notebook: {shown}")
    calls = EXERCISES[exercise].splitlines()
    imports = f"from vmem.grading import {', '.join(call.split('(')[0] for call in calls)}"
    nb.cells = [cell for cell in nb.cells
                if not {CHECK_TAG, STRETCH_TAG} & set(cell.get("metadata", {}).get("tags", []))]
    nb.cells.extend(nbformat.v4.new_code_cell(f"{imports}\n{call}") for call in calls)
    if exercise in STRETCH:
        nb.cells.append(nbformat.v4.new_code_cell(f"{imports}\n{STRETCH[exercise]}"))
    if exercise in NOTES:
        nb.cells.append(nbformat.v4.new_code_cell(NOTES[exercise]))
    with tempfile.TemporaryDirectory(prefix="vmem-grade-") as workdir:
        kept = path.parent / "my_parts"
        if kept.is_dir():  # the parts earlier exercises kept, which the capstone runs on
            shutil.copytree(kept, Path(workdir) / "my_parts")
        try:
            execute(nb, Path(workdir), timeout)
        except nbclient.exceptions.CellTimeoutError:
            return Result(exercise, "timeout", f"did not finish within {timeout:g} s")
        except nbclient.exceptions.DeadKernelError:
            return Result(exercise, "crashed", "the kernel died (a crash or out of memory)")
        except Exception as exc:  # e.g. the kernel could not start
            return Result(exercise, "crashed", one_line(f"{type(exc).__name__}: {exc}",
                                                     _MESSAGE_CHARS))
    note = _printed(nb.cells.pop()) if exercise in NOTES else ""
    stretch = stretch_errors = ""
    if exercise in STRETCH:
        stretch_errors = _errors(nb.cells.pop())
        stretch = "failed" if stretch_errors else "passed"
    errors = next((found for cell in nb.cells[-len(calls):] if (found := _errors(cell))), "")
    if errors:
        return Result(exercise, "failed", errors, stretch)
    notes = [text for text in (note, f"stretch: {stretch_errors}" if stretch == "failed"
                               else "") if text]
    return Result(exercise, "passed", "; ".join(notes), stretch)


def _printed(cell: Any) -> str:
    """What a cell printed, on one line ("" when it printed nothing or failed)."""
    return one_line("".join(out.get("text", "") for out in cell.get("outputs", [])
                            if out.get("output_type") == "stream"), _MESSAGE_CHARS)


def _errors(cell: Any) -> str:
    """The first error a cell raised, on one line ("" when it ran cleanly); a check's
    verdict reads as in the notebook, "not right yet: ..."."""
    errors = [out for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    if not errors:
        return ""
    kind = "not right yet" if errors[0]["ename"] == "CheckFailed" else errors[0]["ename"]
    return one_line(f"{kind}: {errors[0]['evalue']}", _MESSAGE_CHARS)


def grade_folder(folder: Path, timeout: float = DEFAULT_TIMEOUT) -> list[Result]:
    """Grade the exercise notebooks in `folder` (or in its `exercises/` subfolder)."""
    if not any(folder.glob("ex*.ipynb")) and (folder / "exercises").is_dir():
        folder = folder / "exercises"
    return [grade_notebook(folder / f"{name}.ipynb", name, timeout) for name in EXERCISES]



def _score(results: Sequence[Result]) -> str:
    tiers = [r for r in results if r.exercise in STRETCH]
    return f"{sum(result.passed for result in results)}/{len(results)}, stretch " \
           f"{sum(r.stretch == 'passed' for r in tiers)}/{len(tiers)}"


def format_results(results: Sequence[Result]) -> str:
    """One learner's table: exercise, result and the first failing check's message."""
    width = max(len(name) for name in EXERCISES)
    lines = [f"{'exercise':<{width}}  {'result':<7}  {'stretch':<7}  message"]
    lines += [f"{r.exercise:<{width}}  {r.status:<7}  {r.stretch or '-':<7}  {r.message}".rstrip()
              for r in results]
    lines.append(f"score {_score(results)}")
    return "\n".join(lines)


def format_class(grades: dict[str, list[Result]]) -> str:
    """A class's table: one row per student, one column per exercise, then the reasons."""
    names = max([len("student"), *map(len, grades)])
    short = [name.split("_")[0] for name in EXERCISES]
    lines = [f"{'student':<{names}}  " + "  ".join(f"{s:<7}" for s in short) + "  score"]
    notes = []
    for student, results in grades.items():
        cells = "  ".join(f"{r.status:<7}" for r in results)
        lines.append(f"{student:<{names}}  {cells}  {_score(results)}")
        notes += [f"{student} {r.exercise}: {r.message}" for r in results
                  if not r.passed and r.message]
    return "\n".join(lines + ([""] if notes else []) + notes)


def write_gradebook(grades: dict[str, list[Result]], path: Path) -> None:
    """CSV: student, 1 or 0 per exercise, the score, and why each failure failed."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *EXERCISES, *(f"{name} stretch" for name in STRETCH),
                         "score", "notes"])
        for student, results in grades.items():
            notes = "; ".join(f"{r.exercise}: {r.status}" + (f" ({r.message})" if r.message else "")
                              for r in results if not r.passed)
            stretch = [int(r.stretch == "passed") for r in results if r.exercise in STRETCH]
            writer.writerow([student, *(int(r.passed) for r in results), *stretch,
                             sum(r.passed for r in results), notes])


def is_class_folder(path: Path) -> bool:
    """True when `path` holds student folders rather than one learner's notebooks."""
    if any(path.glob("ex*.ipynb")) or (path / "exercises").is_dir():
        return False
    return any(child.is_dir() for child in path.iterdir())


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m vmem grade`: 0 when everything passed, 1 when anything failed, 2 on misuse."""
    parser = argparse.ArgumentParser(
        prog="python -m vmem grade",
        description="Execute exercise notebooks (never modifying them) and report a score.")
    parser.add_argument("path", nargs="?", default="exercises",
                        help="a learner's exercises folder, or a folder of student folders "
                             "(default: exercises)")
    parser.add_argument("--csv", type=Path, metavar="FILE",
                        help="also write a gradebook: one row per student")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"time limit per notebook (default {DEFAULT_TIMEOUT})")
    args = parser.parse_args(argv)
    path = Path(args.path)
    if not path.is_dir():
        print(f"no folder {path}: pass a learner's exercises folder or a folder of student "
              "folders", file=sys.stderr)
        return 2
    if is_class_folder(path):
        grades = {child.name: grade_folder(child, args.timeout)
                  for child in sorted(path.iterdir()) if child.is_dir()}
        print(format_class(grades))
    else:
        grades = {path.resolve().name: grade_folder(path, args.timeout)}
        print(format_results(next(iter(grades.values()))))
    if args.csv:
        write_gradebook(grades, args.csv)
        print(f"gradebook written to {args.csv}")
    return 0 if all(r.passed for results in grades.values() for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
