"""Exercise 3's check: inserted facts keep their provenance, and answers cite exactly the
records they use.

The learner's `insert_fact` fills a fresh `ArchivalStore`, which also holds distractors
written straight into it; `answer_with_citations` then answers one question per fact and
one that nothing answers. A statement in an answer uses a record when it contains a word
that only that record has; every such statement must be followed by its `[id]`, and no
citation may follow a statement that does not use its record.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

from ...archival import ArchivalStore
from .common import calling, fail, learner_check

_FACTS = [  # (text, session_id, turn_id, source_url, question whose answer it holds)
    ("Priya's sister Marta moved to Lisbon in March.", 3, 7,
     "https://chat.example/s/3#7", "Where did Marta move to?"),
    ("The weekly standup now starts at 9:30 on Thursdays.", 5, 2,
     "https://chat.example/s/5#2", "When does the weekly standup start?"),
    ("Priya is allergic to hazelnuts.", 8, 14, "https://notes.example/health",
     "What is Priya allergic to?"),
    ("The staging server is named heron.", 9, 1, "https://wiki.example/infra",
     "What is the staging server named?"),
]
_DISTRACTORS = [  # written straight into the store, not through the learner's insert_fact
    ("The office plants get watered on Mondays.", 1, 1),
    ("Marta's favourite band is Radiohead.", 2, 4),
    ("Lunch orders close at eleven.", 4, 9),
]
_NO_ANSWER = "zeppelin?"
_CITATION = re.compile(r"\[(?:record\s+)?(\d+)\]")
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_BOTH_RECORDS = "What do you know about Marta?"  # two records answer it: Lisbon, Radiohead


class _CheckedStore(ArchivalStore):
    """An `ArchivalStore` whose `insert` names the parameter a positional argument landed
    in when it is not the kind of value that parameter takes: `insert(text, 3, 7, url)`
    would put the session id in `tags` and fail deep inside with "'int' object is not
    iterable", which says nothing about the call."""

    def insert(self, *args: Any, **kwargs: Any) -> int:
        names = list(inspect.signature(ArchivalStore.insert).parameters)[1:]
        for position, (name, value) in enumerate(zip(names, args, strict=False), 1):
            if not _fits(name, value):
                fail(f"insert_fact called store.insert with {value!r} as positional argument "
                     f"{position}, which is the parameter `{name}`; "
                     "expected the citation fields by keyword. Hint: call "
                     "store.insert(text, session_id=..., turn_id=..., source_url=...).")
        return super().insert(*args, **kwargs)


def _fits(name: str, value: Any) -> bool:
    """Whether `value` is the kind of value `ArchivalStore.insert`'s `name` takes."""
    if name == "tags":
        return isinstance(value, (str, list, tuple, set, frozenset))
    if name in ("session_id", "turn_id"):
        return value is None or (isinstance(value, int) and not isinstance(value, bool))
    if name in ("source_url", "source"):
        return value is None or isinstance(value, str)
    return True


@learner_check
def check_ex3(insert_fact: Callable[..., Any], answer_with_citations: Callable[..., str]) -> str:
    """Check that inserts keep provenance and that answers cite exactly the records used."""
    store = _CheckedStore()
    ids = []
    for text, session_id, turn_id, url, _ in _FACTS:
        with calling(f"insert_fact(store, {text!r}, ...)"):
            ids.append(insert_fact(store, text, session_id, turn_id, url))
    for text, session_id, turn_id in _DISTRACTORS:
        store.insert(text, session_id=session_id, turn_id=turn_id)
    if len(set(map(str, ids))) != len(ids) or None in ids:
        fail(f"insert_fact returned {ids!r}: return the id the store gives each record.")
    for record_id, (text, session_id, turn_id, url, _) in zip(ids, _FACTS, strict=True):
        record = _get(store, record_id)
        if record is None:
            fail(f"insert_fact returned {record_id!r}, which store.get cannot find: return "
                 "the id that store.insert gives back.")
        for field, want in (("text", text), ("session_id", session_id),
                            ("turn_id", turn_id), ("source_url", url)):
            if getattr(record, field) != want:
                fail(f"the record for {text!r} has {field}={getattr(record, field)!r}, "
                     f"expected {want!r}: pass every citation field through to "
                     "store.insert so the answer can be traced to its source.")
    texts = {record.id: record.text for record in store.records()}
    marks = _distinctive_words(texts)
    for record_id, (_, _, _, _, question) in zip(ids, _FACTS, strict=True):
        answer = _answer(answer_with_citations, store, question)
        _check_citations(answer, question, texts, marks)
        cited = {int(found) for found in _CITATION.findall(answer)}
        if int(record_id) not in cited:
            fail(f"the answer to {question!r} does not cite the record that answers it "
                 f"(record {record_id}); got {answer!r}. Search the store and cite what you "
                 "use.")
    _check_citations(_answer(answer_with_citations, store, _BOTH_RECORDS), _BOTH_RECORDS,
                     texts, marks)
    answer = _answer(answer_with_citations, store, _NO_ANSWER)
    if _CITATION.search(answer):
        fail(f"the answer to {_NO_ANSWER!r}, which no record matches, cites something: "
             f"{answer!r}. With no hits, say so and cite nothing.")
    return "passed: ex03: every record keeps its source, and every answer cites what it used."


def _get(store: Any, record_id: Any) -> Any:
    try:
        return store.get(int(record_id))
    except Exception:
        return None


def _answer(answer_with_citations: Callable[..., str], store: Any, question: str) -> str:
    with calling(f"answer_with_citations(store, {question!r})"):
        answer = answer_with_citations(store, question)
    if not isinstance(answer, str):
        fail(f"answer_with_citations must return a string; got {type(answer).__name__}.")
    return answer


def _distinctive_words(texts: dict[int, str]) -> dict[int, set[str]]:
    """Per record, the words of its text that no other record contains."""
    words = {record_id: set(_WORD.findall(text.lower())) for record_id, text in texts.items()}
    return {record_id: own - set().union(*(w for other, w in words.items() if other != record_id))
            for record_id, own in words.items()}


def _check_citations(answer: str, question: str, texts: dict[int, str],
                     marks: dict[int, set[str]]) -> None:
    """Split the answer into statements, each ending in its citations, and check each.

    Citations belong to the sentence right before them: in "A. B. [1] [2]" the sentence A
    has none, so a statement cannot borrow the citations grouped after another one."""
    pieces = re.split(r"((?:\s*\[(?:record\s+)?\d+\])+)", answer)
    statements = []
    for text, citations in zip(pieces[0::2], [*pieces[1::2], ""], strict=True):
        sentences = _SENTENCE_END.split(text)
        statements += [(sentence, "") for sentence in sentences[:-1]]
        statements.append((sentences[-1], citations))
    for statement, citations in statements:
        words = set(_WORD.findall(statement.lower()))
        cited = [int(found) for found in _CITATION.findall(citations)]
        for record_id in cited:
            if record_id not in texts:
                fail(f"the answer to {question!r} cites record {record_id}, which does not "
                     "exist: cite the ids the store returned.")
            if not words & marks[record_id]:
                fail(f"the answer to {question!r} cites record {record_id} after a statement "
                     f"that does not use it ({statement.strip()!r}): put each citation "
                     "right after the statement drawn from that record.")
        for record_id, own in marks.items():
            if words & own and record_id not in cited:
                fail(f"in the answer to {question!r}, the statement {statement.strip()!r} "
                     f"uses record {record_id} but is not followed by [{record_id}]: every "
                     "statement drawn from a record needs its citation right after it, not "
                     "grouped at the end of the answer.")
