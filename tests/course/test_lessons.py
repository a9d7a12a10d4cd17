"""notebooks/ is generated from solutions/lessons/, and every lesson check speaks once.

- The sync check: regenerating into a temporary folder gives byte-identical notebooks,
  outputs aside (the generator runs each learner notebook for its outputs; nbval strict
  proves those outputs are what a fresh run prints, so this test compares the rest).
- The two-version check: in the committed outputs, every check after a stub prints exactly
  "not written yet - using vmem's <part>" in the learner version and "passed: ..." in the
  complete one, and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from test_exercises import load_script

ROOT = Path(__file__).resolve().parents[2]
LESSONS, LEARNER = ROOT / "solutions" / "lessons", ROOT / "notebooks"
STEMS = sorted(path.stem for path in LEARNER.glob("[0-9][0-9]_*.ipynb"))
# lesson -> stubs, each checked
CHECKED = {"02_main_context": 5, "03_archival_store": 6, "04_memory_tools": 3,
           "05_agent_loop": 2, "06_persistence": 2,
           "07_failure_modes": 1}

pytestmark = pytest.mark.skipif(not LESSONS.is_dir(),
                                reason="a student release has no solutions/ to generate from")
make_lessons, regions = load_script("make_lessons"), load_script("regions")


def test_every_lesson_has_one_source():
    assert sorted(path.stem for path in LESSONS.glob("*.ipynb")) == STEMS
    assert len(STEMS) == 10


def test_committed_learner_lessons_match_a_fresh_generation(tmp_path):
    assert make_lessons.main(["--lessons", str(LESSONS), "--out", str(tmp_path),
                              "--no-execute"]) == 0
    stale = []
    for stem in STEMS:
        committed = regions.clear_outputs(nbformat.read(LEARNER / f"{stem}.ipynb", 4))
        nbformat.write(committed, tmp_path / f"{stem}.committed")
        if (tmp_path / f"{stem}.ipynb").read_bytes() != \
                (tmp_path / f"{stem}.committed").read_bytes():
            stale.append(stem)
    assert not stale, f"notebooks/ is out of date for {stale}: run `make lessons`"


def _checks(path: Path) -> list[tuple[str, str]]:
    """(cell id, printed text) of each lesson-check cell, from the committed outputs."""
    cells = nbformat.read(path, 4).cells
    return [(cell.id, "".join(output.get("text", "") for output in cell.outputs
                              if output.output_type == "stream"))
            for cell in cells if "lesson-check" in cell.metadata.get("tags", [])]


@pytest.mark.parametrize("stem", STEMS)
def test_each_stub_is_followed_at_once_by_its_check(stem):
    cells = nbformat.read(LESSONS / f"{stem}.ipynb", 4).cells
    stubs = [i for i, cell in enumerate(cells) if regions.BEGIN in cell.source]
    assert len(stubs) == CHECKED.get(stem, 0)
    assert all("stub" in cells[i].metadata.get("tags", []) for i in stubs)
    assert all("lesson-check" in cells[i + 1].metadata.get("tags", []) for i in stubs)
    assert len(_checks(LESSONS / f"{stem}.ipynb")) == len(stubs)


@pytest.mark.parametrize("stem", sorted(CHECKED))
def test_every_check_says_not_written_on_the_learner_version_and_passes_on_the_complete(stem):
    learner, complete = _checks(LEARNER / f"{stem}.ipynb"), _checks(LESSONS / f"{stem}.ipynb")
    assert [cell for cell, _ in learner] == [cell for cell, _ in complete]
    for cell, text in learner:
        assert text.startswith("not written yet - using vmem's "), (cell, text)
        assert text.count("\n") == 1 and text.endswith("\n"), (cell, text)
    for cell, text in complete:
        assert text.startswith("passed: ") and text.count("\n") == 1, (cell, text)


def test_a_learner_lesson_shows_no_solution():
    for stem in CHECKED:
        source = "".join(cell.source for cell in nbformat.read(LEARNER / f"{stem}.ipynb", 4).cells)
        assert regions.BEGIN not in source and "raise NotImplementedError(" in source


def test_region_lines_counts_what_the_learner_types():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    # Hint: h\n    y = x\n\n    return y\n" \
             "    ### END SOLUTION\n"
    assert regions.region_lines(source) == 2
    assert regions.region_lines("x = 1") == 0


def test_lessons_02_to_06_hold_at_least_18_learner_stubs():
    """Issue 12's floor: every component 02-06 teach is written by the learner."""
    assert sum(CHECKED[stem] for stem in CHECKED if "02" <= stem[:2] <= "06") >= 18


def test_lesson_lines_counts_the_stubs_and_the_typed_lines():
    lesson_lines = load_script("lesson_lines")
    for stem, stubs in CHECKED.items():
        counted, typed, read = lesson_lines.lines(LESSONS / f"{stem}.ipynb")
        assert counted == stubs and typed >= 5 and read > typed
        assert lesson_lines.lines(LEARNER / f"{stem}.ipynb")[:2] == (0, 0)  # stubs only
