"""`python -m vmem grade`: one learner's folder and a whole class, robust to broken notebooks."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from vmem.course.classroom import EXERCISES, STRETCH, grade_notebook, main

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS, EXERCISE_DIR = ROOT / "solutions", ROOT / "exercises"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*.ipynb"))}


def test_the_unsolved_exercises_score_zero_and_are_left_untouched(capsys):
    before = _snapshot(EXERCISE_DIR)
    assert main([str(EXERCISE_DIR), "--timeout", "60"]) == 1
    out = capsys.readouterr().out
    assert out.strip().endswith(f"score 0/{len(EXERCISES)}, stretch 0/{len(STRETCH)}")
    for name in EXERCISES:
        line = next(line for line in out.splitlines() if line.startswith(name))
        assert "failed" in line and "NotImplementedError" in line
        assert ("failed   NotImplementedError" if name in STRETCH else "-") in line
    assert _snapshot(EXERCISE_DIR) == before


@pytest.mark.skipif(not SOLUTIONS.is_dir(), reason="a student release has no solutions/")
def test_the_solutions_in_an_exercises_folder_score_full_stretch_included(tmp_path, capsys):
    learner = tmp_path / "exercises"
    shutil.copytree(SOLUTIONS, learner, ignore=shutil.ignore_patterns("my_parts"))
    assert main([str(learner), "--timeout", "60"]) == 0
    out = capsys.readouterr().out
    full = f"score {len(EXERCISES)}/{len(EXERCISES)}, stretch {len(STRETCH)}/{len(STRETCH)}"
    assert out.strip().endswith(full)
    assert out.count("passed") == len(EXERCISES) + len(STRETCH)
    # no my_parts/ beside them (each notebook runs in a folder of its own): stand-ins ran
    capstone = next(line for line in out.splitlines() if line.startswith("ex08_capstone"))
    assert capstone.endswith("ran on vmem's stand-in dispatcher (exercise 6 not kept) and "
                             "vmem's stand-in loop (exercise 7 not kept)"), capstone


def _write(folder: Path, name: str, nb) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{name}.ipynb")


def _exercise_with(name: str, source: str):
    """The committed exercise with one extra code cell inserted at the top."""
    nb = nbformat.read(EXERCISE_DIR / f"{name}.ipynb", as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(source))
    return nb


@pytest.mark.skipif(not SOLUTIONS.is_dir(), reason="a student release has no solutions/")
def test_a_class_grades_into_a_gradebook_despite_broken_notebooks(tmp_path, capsys):
    klass = tmp_path / "class"
    ada = klass / "ada" / "exercises"  # notebooks in an exercises/ subfolder
    _write(ada, "ex01_token_cap", _exercise_with("ex01_token_cap", "while True:\n    pass"))
    _write(ada, "ex02_bm25", _exercise_with("ex02_bm25", "import os\nos._exit(1)"))
    (ada / "ex04_poisoning.ipynb").write_text('{"cells": [', encoding="utf-8")
    shutil.copy(SOLUTIONS / "ex05_typed_core.ipynb", ada)  # ex03 is missing
    bob = klass / "bob"  # notebooks directly in the student folder
    tampered = nbformat.read(EXERCISE_DIR / "ex01_token_cap.ipynb", as_version=4)
    tampered.cells[-1].source = "print('all good')"  # the check cell, edited to pass
    _write(bob, "ex01_token_cap", tampered)
    gradebook = tmp_path / "grades.csv"

    assert main([str(klass), "--csv", str(gradebook), "--timeout", "5"]) == 1

    rows = list(csv.DictReader(gradebook.open(encoding="utf-8")))
    assert [row["student"] for row in rows] == ["ada", "bob"]
    ada_row, bob_row = rows
    assert [ada_row[name] for name in EXERCISES] == ["0", "0", "0", "0", "1", "0", "0", "0"]
    assert ada_row["score"] == "1"
    for expected in ("ex01_token_cap: timeout", "ex02_bm25: crashed",
                     "ex03_citations: missing", "ex04_poisoning: invalid"):
        assert expected in ada_row["notes"]
    assert [bob_row[name] for name in EXERCISES] == ["0"] * len(EXERCISES)
    assert bob_row["ex06_memory_tools stretch"] == "0"
    assert "ex01_token_cap: failed (NotImplementedError" in bob_row["notes"]
    table = capsys.readouterr().out
    assert "ada" in table and "1/8" in table and "0/8" in table


@pytest.mark.skipif(not SOLUTIONS.is_dir(), reason="a student release has no solutions/")
def test_every_official_check_of_an_exercise_must_pass(tmp_path):
    """Exercise 4 ends with two checks: a right guard with a source rule that ignores the
    source fails on the second."""
    nb = nbformat.read(SOLUTIONS / "ex04_poisoning.ipynb", as_version=4)
    first = next(i for i, cell in enumerate(nb.cells) if "check" in cell.metadata.get("tags", []))
    nb.cells.insert(first, nbformat.v4.new_code_cell(
        "def should_quarantine(text, source):\n    return is_directive(text)"))
    _write(tmp_path, "ex04_poisoning", nb)
    result = grade_notebook(tmp_path / "ex04_poisoning.ipynb", "ex04_poisoning", timeout=60)
    assert result.status == "failed"
    assert result.message.startswith("not right yet: ") and "preferences" in result.message


def test_a_missing_folder_is_a_usage_error(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere")]) == 2
    assert "no folder" in capsys.readouterr().err


def test_a_release_leaves_out_the_answers(tmp_path):
    dest = tmp_path / "student"
    script = ROOT / "scripts" / "release.py"
    subprocess.run([sys.executable, str(script), str(dest)], check=True, capture_output=True)
    assert not (dest / "solutions").exists()
    assert not (dest / "tests" / "test_grading.py").exists()
    assert not (dest / "tests" / "course" / "test_held_out.py").exists()  # it runs solutions
    assert _snapshot(dest / "exercises") == _snapshot(EXERCISE_DIR)
    assert (dest / "lib" / "vmem" / "grading.py").is_file()
    assert not (dest / ".venv").exists()
    again = subprocess.run([sys.executable, str(script), str(dest)], capture_output=True, text=True)
    assert again.returncode != 0 and "not empty" in again.stderr
