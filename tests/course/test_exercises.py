"""exercises/ is generated from solutions/, and the stubs fail exactly where they should.

- The sync check: regenerating into a temporary folder gives byte-identical notebooks.
- The invert check: every generated exercise, executed as a learner first sees it, fails
  every `check` cell while every untagged cell runs.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import nbformat
import pytest

from vmem.course.classroom import EXERCISES, STRETCH, execute

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS, EXERCISE_DIR = ROOT / "solutions", ROOT / "exercises"

pytestmark = pytest.mark.skipif(not SOLUTIONS.is_dir(),
                                reason="a student release has no solutions/ to generate from")


def load_script(name: str):
    """Import scripts/<name>.py (the scripts import each other, so scripts/ goes on the path)."""
    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_exercises, regions = load_script("make_exercises"), load_script("regions")


def test_committed_exercises_match_a_fresh_generation(tmp_path):
    assert make_exercises.main(["--solutions", str(SOLUTIONS), "--out", str(tmp_path)]) == 0
    fresh = sorted(path.name for path in tmp_path.glob("*.ipynb"))
    assert fresh == sorted(path.name for path in EXERCISE_DIR.glob("*.ipynb"))
    assert fresh == [f"{name}.ipynb" for name in EXERCISES]
    stale = [name for name in fresh
             if (tmp_path / name).read_bytes() != (EXERCISE_DIR / name).read_bytes()]
    assert not stale, f"exercises/ is out of date for {stale}: run `make exercises`"


def test_exercises_keep_everything_but_the_solutions():
    for name in EXERCISES:
        solution = nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4)
        exercise = nbformat.read(EXERCISE_DIR / f"{name}.ipynb", as_version=4)
        assert "widgets" not in exercise.metadata
        assert [c.id for c in solution.cells] == [c.id for c in exercise.cells]
        for sol, ex in zip(solution.cells, exercise.cells, strict=True):
            assert sol.metadata == ex.metadata
            if sol.cell_type != "code":
                assert sol.source == ex.source
                continue
            assert ex.outputs == [] and ex.execution_count is None
            solution_cell = sol.metadata.get("nbgrader", {}).get("solution", False)
            assert ("### BEGIN SOLUTION" in sol.source) == solution_cell
            if solution_cell:
                assert "raise NotImplementedError(" in ex.source
                assert "BEGIN SOLUTION" not in ex.source
            else:
                assert sol.source == ex.source


def test_each_exercise_ends_with_one_check_cell_per_official_check():
    for name, calls in EXERCISES.items():
        cells = nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4).cells
        checks = [cell for cell in cells if "check" in cell.metadata.get("tags", [])]
        assert [cell.source for cell in checks] == calls.splitlines()
        assert all(cell is check for cell, check in zip(cells[-len(checks):], checks,
                                                        strict=True))


def test_each_stretch_tier_has_one_stretch_cell_that_calls_its_official_check():
    for name in EXERCISES:
        cells = nbformat.read(SOLUTIONS / f"{name}.ipynb", as_version=4).cells
        stretch = [cell.source for cell in cells
                   if "check-stretch" in cell.metadata.get("tags", [])]
        assert stretch == ([STRETCH[name]] if name in STRETCH else [])


@pytest.mark.parametrize("name", list(EXERCISES))
def test_invert_check_stubs_fail_every_check_and_nothing_else(name, tmp_path):
    nb = nbformat.read(EXERCISE_DIR / f"{name}.ipynb", as_version=4)
    execute(nb, tmp_path, timeout=120)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        errors = [out for out in cell.outputs if out.output_type == "error"]
        if "check" in tags or "check-stretch" in tags:
            assert errors, f"{name} cell {index}: a check passed on the unsolved stub"
            assert errors[0].ename == "NotImplementedError", errors[0].ename
        elif "learner-code" not in tags:
            assert not errors, f"{name} cell {index} fails without any learner code: " \
                               f"{errors[0].ename}: {errors[0].evalue}"


@pytest.mark.parametrize(("source", "problem"), [
    ("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION", "# Hint"),
    ("def f():\n    ### BEGIN SOLUTION\n    # Hint: x\n    return 1", "without"),
    ("def f():\n    return 1\n    ### END SOLUTION", "without"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n# Hint: x\n### END SOLUTION", "inside"),
])
def test_malformed_regions_are_refused(source, problem):
    with pytest.raises(ValueError, match=problem):
        regions.stub_source(source)


def test_a_region_becomes_a_stub_with_its_hint_at_the_same_indentation():
    source = ("def f(x):\n    \"\"\"Doc.\"\"\"\n    ### BEGIN SOLUTION\n"
              "    # Hint: double it.\n    return 2 * x\n    ### END SOLUTION\n\nf")
    assert regions.stub_source(source) == (
        "def f(x):\n    \"\"\"Doc.\"\"\"\n    # YOUR CODE HERE\n"
        "    raise NotImplementedError('double it.')\n\nf")
