"""Notebook 06's check: the learner's save and reopen print one line, pass on vmem's
answer, fall back to it on a stub, and reject wrong answers written before the check
(each leaves out one part of what the prompt is made of)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from vmem import CoreMemory, MainContext
from vmem.course.lesson_checks import l06

ROOT = Path(__file__).resolve().parents[2]
COMPLETE = ROOT / "solutions" / "lessons" / "06_persistence.ipynb"
LEARNER = ROOT / "notebooks" / "06_persistence.ipynb"


def reopen_without(*keys, core=True, archival=True):
    """vmem's reopen, but with some of the saved context state (or the blocks, or the
    archival store) left out."""
    def wrong(text, system, max_tokens, recall, archive, clock):
        saved = json.loads(text)
        state = {key: value for key, value in saved["context"].items() if key not in keys}
        blocks = CoreMemory.from_dict(saved["core"], clock=clock) if core else \
            CoreMemory.default(clock=clock)
        context = MainContext(system, blocks, max_tokens, recall=recall,
                              archival=archive if archival else None, clock=clock)
        context.restore(state)
        return context
    return wrong


def stub(*args):
    raise NotImplementedError("write it")


def test_the_unseen_context_has_a_summary_and_an_evicted_past():
    context, _ = l06.unseen_context()
    assert context.summary and context.state()["evicted_count"] > 0
    assert context.core.get("human").value and len(context.archival) == 1


def test_vmems_answer_passes_and_is_used(capsys):
    assert l06.check_persistence(l06.save_state, l06.reopen) == (l06.save_state, l06.reopen)
    assert capsys.readouterr().out.startswith("passed: ")


@pytest.mark.parametrize("save, reopen, phrase", [
    (l06.save_state, reopen_without("summary"), "renders a different prompt"),
    (l06.save_state, reopen_without(core=False), "renders a different prompt"),
    (l06.save_state, reopen_without(archival=False), "renders a different prompt"),
    (l06.save_state, reopen_without("evicted_count"), "renders a different prompt"),
    (l06.save_state, reopen_without("warning_armed"), "not after one more message"),
    (lambda context: json.dumps({"core": context.core.to_dict(), "context": context.state(),
                                 "queue": [m.content for m in context.messages]}),
     l06.reopen, "save the ids of the queued messages instead"),
    (lambda context: {"core": context.core.to_dict(), "context": context.state()},
     l06.reopen, "expected JSON text"),
])
def test_a_wrong_save_or_reopen_is_told_what_is_wrong_and_not_used(capsys, save, reopen, phrase):
    assert l06.check_persistence(save, reopen) == (l06.save_state, l06.reopen)
    line = capsys.readouterr().out
    assert line.startswith("not right yet: ") and line.count("\n") == 1 and phrase in line, line


def test_an_untouched_stub_falls_back_to_vmem_with_one_line(capsys):
    assert l06.check_persistence(stub, stub) == (l06.save_state, l06.reopen)
    assert capsys.readouterr().out == "not written yet - using vmem's save and reopen\n"


def test_the_state_is_unseen_and_no_answer_comes_before_the_stub():
    for path in (COMPLETE, LEARNER):
        text = path.read_text(encoding="utf-8")
        assert l06.SYSTEM not in text and not [line for line in l06._LINES if line in text]
    sources = [cell.source if cell.cell_type == "code" else ""
               for cell in nbformat.read(COMPLETE, as_version=4).cells]
    at = next(i for i, source in enumerate(sources) if "### BEGIN SOLUTION" in source)
    assert "def save_state(" in sources[at] and "def reopen(" in sources[at]
    assert not any(".state()" in source or ".restore(" in source for source in sources[:at])
    assert "save_state, reopen = check_persistence(save_state, reopen)" in sources[at + 1]
    assert any("reopen(text," in source for source in sources[at + 2:])
