"""Notebook 07's detector exercise: the check prints one line and says whether the
learner's detector can be used, and the committed notebook holds the stub, not an answer."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from vmem.course.lesson_checks.l07 import CASES, check_detector
from vmem.supersede import compare

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "07_failure_modes.ipynb"  # the learner's, generated
COMPLETE = ROOT / "solutions" / "lessons" / "07_failure_modes.ipynb"


def vmems(new: str, old: str) -> bool:
    change = compare(new, old)
    return change is not None and change.complete


def stub(new: str, old: str) -> bool:
    raise NotImplementedError("read (person, attribute, value) from both notes")


def test_vmems_detector_passes_the_unseen_cases(capsys):
    assert check_detector(vmems) is vmems
    assert capsys.readouterr().out.startswith("passed: ")


def test_an_untouched_stub_falls_back_to_vmem_with_one_line(capsys):
    assert check_detector(stub) is None  # None: stale_answers uses vmem's rules
    assert capsys.readouterr().out == "not written yet - using vmem's detector\n"


@pytest.mark.parametrize("wrong, phrase", [
    (lambda new, old: True, "another person's fact stands"),
    (lambda new, old: False, "a move changes where someone lives"),
    (lambda new, old: vmems(new, old) or "used to" in new, "past tense"),
    (lambda new, old: vmems(new, old) or ("Oslo" in new and "Oslo" in old), "same value"),
    (lambda new, old: 1 / 0, "ZeroDivisionError"),
])
def test_a_wrong_detector_is_told_what_is_wrong_and_not_used(capsys, wrong, phrase):
    assert check_detector(wrong) is None
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and phrase in line and "using vmem's detector" in line


def test_the_cases_cover_both_answers_and_are_not_shown_in_the_notebook():
    assert {expected for _, _, expected, _ in CASES} == {True, False}
    for notebook in (NOTEBOOK, COMPLETE):
        text = notebook.read_text(encoding="utf-8")
        assert not [new for new, _, _, _ in CASES if new in text]


def test_the_notebook_has_the_stub_then_the_check_then_uses_the_result():
    cells = nbformat.read(COMPLETE, as_version=4).cells
    sources = [cell.source for cell in cells]
    stub_at = next(i for i, s in enumerate(sources) if "### BEGIN SOLUTION" in s)
    assert "def supersedes(new: str, old: str) -> bool:" in sources[stub_at]
    region = sources[stub_at].split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
    assert "# Hint: " in region
    assert "check_detector(supersedes)" in sources[stub_at + 1]
    assert any("detector=rules" in s and "detector is not None" in s for s in sources[stub_at + 2:])
    assert not any("supersede import" in s for s in sources[:stub_at])  # no answer before it
    learner = nbformat.read(NOTEBOOK, as_version=4).cells
    assert "raise NotImplementedError(" in learner[stub_at].source
    assert "not written yet - using vmem's detector" in "".join(
        output.get("text", "") for output in learner[stub_at + 1].outputs)
