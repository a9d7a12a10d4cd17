"""Notebook 06's checks: the learner's save and reopen, and their citation lookup, print
one line, pass on vmem's answer, fall back to it on a stub, and reject wrong answers
written before the check (each save or reopen leaves out one part of what the prompt is
made of; each lookup gets one part of following a citation wrong)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from verdicts import learners_copy, told_not_right

from vmem import CoreMemory, MainContext
from vmem.course.lesson_checks import l06
from vmem.errors import StoreError
from vmem.storage.base import Filter

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
    told_not_right(capsys, phrase)


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


# --- the citation lookup ---------------------------------------------------------------

def resolver(pattern=l06.CITATION, once=True, grouped=False, by_kind=True, scoped=True,
             missing="none", shown=lambda item: item.cite(), as_int=True, shape=list):
    """vmem's lookup with one part of it wrong (each switch away from its default)."""
    def wrong(reply, recall, archival):
        found = []
        for kind, number in pattern.findall(reply):
            key = (kind, int(number) if as_int else number)
            if once and key in [item[:2] for item in found]:
                continue
            store = recall if kind == "message" or not by_kind else archival
            if not scoped:
                store = type(store)(store.backend)
            try:
                line = shown(store.get(int(number)))
            except StoreError:
                if missing == "raise":
                    raise
                if missing == "skip":
                    continue
                line = None
            found.append((*key, line))
        if grouped:
            found.sort(key=lambda item: item[0] != "message")
        return shape(found) if shape is list else shape((item[:2], item[2]) for item in found)
    return wrong


def test_the_unseen_replies_repeat_invent_and_malform_citations():
    recall, archival = l06.citation_stores()
    answers = {what: l06.resolve_citations(reply, recall, archival)
               for what, reply in l06.CITATION_CASES}
    kinds = {kind for found in answers.values() for kind, _, _ in found}
    nowhere = [(kind, number) for found in answers.values() for kind, number, line in found
               if line is None]
    assert kinds == {"message", "record"} and ("message", 99) in nowhere
    assert ("record", 2) in nowhere and archival.backend.records(Filter(ids=(2,)))  # Oona's
    assert [] in answers.values() and len(recall) == 4 and len(archival) == 2
    for what, reply in l06.CITATION_CASES:
        assert len(answers[what]) <= reply.count("[message ") + reply.count("[record "), what


def test_vmems_lookup_passes_and_is_used(capsys):
    mine = learners_copy(l06.resolve_citations)
    assert l06.check_citations(mine) is mine
    assert capsys.readouterr().out.startswith("passed: ")


@pytest.mark.parametrize("resolve, phrase", [
    (resolver(once=False), "2 times; list each citation once"),
    (resolver(grouped=True), "the order the reply makes them in"),
    (resolver(by_kind=False), "but archival holds it"),
    (resolver(scoped=False), "a citation that points nowhere gets None"),
    (resolver(missing="raise"), "raised StoreError"),
    (resolver(missing="skip"), "left out [message 99], which points nowhere"),
    (resolver(pattern=re.compile(r"(message|record) (\d+)")), "which the reply does not cite"),
    (resolver(pattern=re.compile(r"\[(message|record) ?(\w*)\]")), "raised ValueError"),
    (resolver(shown=lambda item: getattr(item, "content", None) or item.text),
     "its cite() line"),
    (resolver(as_int=False), "expected an int"),
    (resolver(shape=dict), "returned a dict; expected a list"),
    (lambda *args: [(kind.title(), number, line)
                    for kind, number, line in l06.resolve_citations(*args)],
     "expected 'message' or 'record'"),
])
def test_a_wrong_lookup_is_told_what_is_wrong_and_not_used(capsys, resolve, phrase):
    assert l06.check_citations(resolve) is l06.resolve_citations
    told_not_right(capsys, phrase)


def test_an_untouched_lookup_stub_falls_back_to_vmem_with_one_line(capsys):
    assert l06.check_citations(stub) is l06.resolve_citations
    assert capsys.readouterr().out == "not written yet - using vmem's citation lookup\n"


def test_the_replies_are_unseen_and_no_citation_is_parsed_before_the_stub():
    for path in (COMPLETE, LEARNER):
        text = path.read_text(encoding="utf-8")
        assert not [reply for _, reply in l06.CITATION_CASES if reply in text]
        assert not [row[-1] for row in (*l06._MESSAGES, *l06._RECORDS) if row[-1] in text]
    sources = [cell.source if cell.cell_type == "code" else ""
               for cell in nbformat.read(COMPLETE, as_version=4).cells]
    at = [i for i, source in enumerate(sources) if "### BEGIN SOLUTION" in source][1]
    assert "def resolve_citations(" in sources[at]
    parsing = ("import re", "re.findall(", "re.search(", ".split(", ".rsplit(", ".partition(")
    assert not [mark for source in sources[:at] for mark in parsing if mark in source]
    assert "resolve_citations = check_citations(resolve_citations)" in sources[at + 1]
    assert any("resolve_citations(turn.reply," in source for source in sources[at + 2:])
