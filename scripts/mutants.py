"""Mutation testing of the course's checks: does each check reject small changes to the
answer it checks?

    python scripts/mutants.py [NAME ...] [--timeout SECONDS] [--show-equivalent]

For each single-source notebook (`solutions/exNN_*.ipynb`, `solutions/lessons/NN_*.ipynb`)
every solution region (the learner's code) is mutated one small change at a time: a
comparison flipped or loosened, an arithmetic or boolean operator swapped, a number moved
by one, a condition negated, a statement dropped. Each mutant is run in place of the
reference and its check is run on it (an exercise's `check` and `check-stretch` cells; a
lesson stub's `lesson-check` cell). A mutant is killed when a check fails it (an exercise
check raises; a lesson check does not print "passed"), raises, or runs past the timeout.

Prints one row per exercise and per lesson stub: mutants, killed, survived, and how many
survivors are judged equivalent (`EQUIVALENT` below, each with its reason), then every
survivor not judged equivalent: each of those is a wrong answer the check does not catch
yet. Not part of `make test` (it runs every check hundreds of times): `make mutants`.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import io
import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from regions import BEGIN, END

ROOT = Path(__file__).resolve().parents[1]
EXERCISE_CHECKS = ("check", "check-stretch")
LESSON_CHECK = "lesson-check"
SKIPPED = ("learner-code", "raises-exception")  # demonstrations: not needed by a check

# Survivors judged equivalent: "notebook cell-id line: change" -> why it is no wrong answer.
EQUIVALENT: dict[str, str] = {
    "ex01_token_cap ex01-06 L26: > -> >=":
        "a summary exactly at its cap fits either way; compressing it once more only "
        "shortens it, which the stretch contract allows",
    "ex03_citations ex03-06 L5: 3 -> 4":
        "how many hits the answer quotes is the learner's choice; each is still cited",
    "ex03_citations ex03-06 L8: >= -> >":
        "where weak hits are cut is the learner's choice; each hit quoted is still cited",
    "ex03_citations ex03-06 L8: 2 -> 3":
        "where weak hits are cut is the learner's choice; each hit quoted is still cited",
    "ex05_typed_core ex05-08 L44: - -> +":
        "the overflow in the message is extra: the contract asks for the block, its size "
        "and its limit, which the check requires",
    "ex06_memory_tools ex06-05 L26: Assign statement dropped":
        "an Args: section starts with a parameter line, which sets `current` before it is "
        "read",
    "ex06_memory_tools ex06-05 L15: and -> or":
        "list[X] returns before this line, and for a plain type `args` is empty and None "
        "is not among its type arguments, so both forms agree",
    "ex06_memory_tools ex06-08 L34: Return statement dropped":
        "a function that ends returns None anyway",
    "ex06_memory_tools ex06-08 L46: 40 -> 41":
        "how much of a bad name is echoed is the learner's choice (messages stay short)",
    "ex06_memory_tools ex06-08 L47: 1 -> 2": "only the first close match is used",
    "ex06_memory_tools ex06-08 L63: 40 -> 41":
        "how much of a bad argument name is echoed is the learner's choice",
    "ex06_memory_tools ex06-08 L77: 200 -> 201":
        "how much of a tool's error is echoed is the learner's choice",
    "ex08_capstone ex08-03 L28: 120 -> 121":
        "how much of a failed call's text the reply quotes is the learner's choice",
    "ex08_capstone ex08-05 L9: Expr statement dropped":
        "set_tools only makes the context count the schemas; the capstone's sessions run "
        "under the default 4,000-token budget, far from a flush, so the prompt is the same",
    "05_agent_loop c04 L21: Return statement dropped":
        "a function that ends returns None anyway",
}


@dataclass(frozen=True)
class Mutant:
    """One small change to one region: where (cell id, line in the cell) and what."""

    cell: int
    line: int
    change: str
    source: str

    def key(self, notebook: str, cell_id: str) -> str:
        return f"{notebook} {cell_id} L{self.line}: {self.change}"


_COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
            ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
            ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_BINARY = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
           ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv}
_BOOL = {ast.And: ast.Or, ast.Or: ast.And}
_SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
           ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in", ast.Is: "is",
           ast.IsNot: "is not", ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/",
           ast.FloorDiv: "//", ast.Mod: "%", ast.And: "and", ast.Or: "or"}


def _sites(tree: ast.AST, lines: set[int]) -> Iterator[tuple[ast.AST, str, Any]]:
    """(node, what changes, how) for every mutation site inside the region's lines."""
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) not in lines:
            continue
        if isinstance(node, ast.Compare):
            for index, op in enumerate(node.ops):
                if type(op) in _COMPARE:
                    yield node, f"{_SYMBOL[type(op)]} -> {_SYMBOL[_COMPARE[type(op)]]}", \
                        ("op", index)
        elif isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _BINARY:
            yield node, f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[_BINARY[type(node.op)]]}", "bin"
        elif isinstance(node, ast.BoolOp):
            yield node, f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[_BOOL[type(node.op)]]}", "bool"
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, "not x -> x", "not"
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float) and \
                not isinstance(node.value, bool):
            yield node, f"{node.value!r} -> {node.value + 1!r}", "number"
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            yield node, f"{node.value} -> {not node.value}", "flag"
        elif isinstance(node, ast.If | ast.While):
            yield node, f"{type(node).__name__.lower()} condition negated", "negate"
        if isinstance(node, ast.Expr | ast.Assign | ast.AugAssign | ast.Return) and \
                not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            yield node, f"{type(node).__name__} statement dropped", "drop"


def _apply(node: ast.AST, how: Any) -> None:
    """Change `node` in place as `how` says."""
    if isinstance(how, tuple):
        node.ops[how[1]] = _COMPARE[type(node.ops[how[1]])]()
    elif how == "bin":
        node.op = _BINARY[type(node.op)]()
    elif how == "bool":
        node.op = _BOOL[type(node.op)]()
    elif how == "number":
        node.value += 1
    elif how == "flag":
        node.value = not node.value
    elif how == "negate":
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)


class _Dropper(ast.NodeTransformer):
    """Replaces one statement with `pass` (a dropped `return x` becomes `return None`)."""

    def __init__(self, target: ast.AST) -> None:
        self.target = target

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if node is self.target:
            if isinstance(node, ast.Return):
                return ast.copy_location(ast.Return(value=None), node)
            return ast.copy_location(ast.Pass(), node)
        return super().generic_visit(node)


def region_lines(source: str) -> set[int]:
    """The 1-based line numbers inside the cell's solution regions (markers excluded)."""
    found, inside = set(), False
    for number, line in enumerate(source.split("\n"), 1):
        if line.strip() in (BEGIN, END):
            inside = line.strip() == BEGIN
        elif inside:
            found.add(number)
    return found


def mutants(cell: int, source: str) -> list[Mutant]:
    """Every single-change mutant of the solution regions of one cell's `source`."""
    tree = ast.parse(source)
    lines = region_lines(source)
    found = []
    for index, (node, change, how) in enumerate(list(_sites(tree, lines))):
        twin = copy.deepcopy(tree)
        target = [n for n, _, _ in _sites(twin, lines)][index]
        if how == "drop":
            twin = _Dropper(target).visit(twin)
        else:
            _apply(target, how)
        mutated = ast.unparse(ast.fix_missing_locations(twin))
        if mutated != ast.unparse(tree):
            found.append(Mutant(cell, node.lineno, change, mutated))
    return found


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _limit(seconds: float) -> Iterator[None]:
    def stop(signum: int, frame: Any) -> None:
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _tags(cell: Any) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def _run(source: str, namespace: dict[str, Any], name: str) -> str:
    """Run `source` in `namespace`; what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        exec(compile(source, name, "exec"), namespace)
    return out.getvalue()


def killed(nb: Any, mutant: Mutant, base: dict[str, Any], checks: list[int],
           timeout: float) -> bool:
    """Whether the checks reject `mutant`: its cell and the cells up to the last check
    run in a copy of `base` (the namespace just before its cell)."""
    namespace = dict(base)
    try:
        with _limit(timeout):
            for index in range(mutant.cell, checks[-1] + 1):
                cell = nb.cells[index]
                if cell.cell_type != "code" or _tags(cell) & set(SKIPPED):
                    continue
                source = mutant.source if index == mutant.cell else cell.source
                said = _run(source, namespace, f"<cell {index}>")
                if index in checks and LESSON_CHECK in _tags(cell) and \
                        not said.startswith("passed"):
                    return True
    except _Timeout:
        return True
    except Exception:  # noqa: BLE001 - a check that fails, or a mutant that crashes
        return True
    return False


def _checks_of(nb: Any, cell: int) -> list[int]:
    """The check cells that judge the region in `cell`: a lesson stub's own check (the
    next lesson-check cell), or every check cell of an exercise."""
    cells = list(enumerate(nb.cells))
    lesson = [i for i, c in cells[cell + 1:] if LESSON_CHECK in _tags(c)]
    if lesson:
        return lesson[:1]
    return [i for i, c in cells if _tags(c) & set(EXERCISE_CHECKS)]


def _base(nb: Any, upto: int) -> dict[str, Any]:
    """The namespace after every needed cell before `upto` ran (exercise checks and
    demonstrations left out; a lesson's checks run, as they bind the parts it goes on
    with)."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for index, cell in enumerate(nb.cells[:upto]):
        if cell.cell_type == "code" and not _tags(cell) & {*SKIPPED, *EXERCISE_CHECKS}:
            _run(cell.source, namespace, f"<cell {index}>")
    return namespace


def mutate_notebook(path: Path, timeout: float) -> list[tuple[str, int, int, list[str]]]:
    """Per region cell of `path`: (its name, mutants, killed, survivors' keys)."""
    nb = nbformat.read(path, as_version=4)
    rows = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or BEGIN not in cell.source:
            continue
        checks = _checks_of(nb, index)
        base = _base(nb, index)
        name = f"{path.stem} {cell.get('id', index)}"
        if killed(nb, Mutant(index, 0, "none", cell.source), base, checks, timeout):
            raise SystemExit(f"{name}: the reference itself fails its check here, so no "
                             "mutant would tell anything")
        found = mutants(index, cell.source)
        survivors = [m.key(path.stem, cell.get("id", str(index))) for m in found
                     if not killed(nb, m, base, checks, timeout)]
        rows.append((name, len(found), len(found) - len(survivors), survivors))
        print(f"  {name}: {len(found)} mutants, {len(survivors)} survived", file=sys.stderr,
              flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only these notebooks (e.g. ex05_typed_core)")
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds one mutant's checks may run (default 20)")
    args = parser.parse_args(argv)
    paths = sorted((ROOT / "solutions").glob("ex*.ipynb")) + \
        sorted((ROOT / "solutions" / "lessons").glob("[0-9][0-9]_*.ipynb"))
    paths = [p for p in paths if not args.names or p.stem in args.names]
    sys.path.insert(0, str(ROOT / "lib"))
    os.environ.setdefault("MPLBACKEND", "Agg")
    rows = []
    with tempfile.TemporaryDirectory(prefix="vmem-mutants-") as folder:
        os.chdir(folder)  # the checks keep parts in my_parts/ beside the working folder
        for path in paths:
            rows += mutate_notebook(path, args.timeout)
    width = max([len("notebook cell"), *(len(row[0]) for row in rows)])
    print(f"{'notebook cell':<{width}}  mutants  killed  survived  equivalent")
    open_survivors = []
    for name, count, dead, survivors in rows:
        equivalent = [key for key in survivors if key in EQUIVALENT]
        open_survivors += [key for key in survivors if key not in EQUIVALENT]
        print(f"{name:<{width}}  {count:>7}  {dead:>6}  {len(survivors):>8}  {len(equivalent):>10}")
    total = sum(row[1] for row in rows)
    dead = sum(row[2] for row in rows)
    print(f"{'all':<{width}}  {total:>7}  {dead:>6}  {total - dead:>8}  "
          f"{total - dead - len(open_survivors):>10}")
    for _, _, _, survivors in rows:
        for key in survivors:
            if key in EQUIVALENT:
                print(f"equivalent: {key} ({EQUIVALENT[key]})")
    for key in open_survivors:
        print(f"SURVIVED: {key}")
    return 1 if open_survivors else 0


if __name__ == "__main__":
    sys.exit(main())
