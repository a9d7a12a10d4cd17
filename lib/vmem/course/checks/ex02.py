"""Exercise 2's check: an ablation of BM25's analyzer and length normalisation, measured
with recall@k.

The learner writes `recall_at_k(rank, dataset, k)`, `ablate(facts, questions, configs, k)`
(recall@k of `BM25Index(b=..., analyzer=...)` per configuration, the analyzer built from
`vmem.eval.analysis.analyze` with the configuration's `stopwords` and `stemming` switches),
`choose(results)` (the best configuration and one sentence that justifies it with the
numbers) and, for the stretch tier, `changed_questions(facts, questions, before, after, k)`.

recall@k is checked on made-up scores, so that only recall@k itself is under test.
`ablate` and `changed_questions` run on held-out facts and questions
(`vmem/course/data/ex02_check.json`, never shown in the notebook) with configurations and
k the notebook does not use; `choose` runs on made-up results (a tie included) and on the
notebook's own numbers, computed here from `vmem/course/data/ex02_facts.json`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

from ...bm25 import BM25Index, analyze, tokenize
from ...eval.analysis import analyze as switchable
from .common import calling, fail, learner_check

_Config = Mapping[str, Any]


def _load(name: str) -> dict[str, Any]:
    text = resources.files("vmem.course").joinpath("data", name).read_text("utf-8")
    return json.loads(text)


def course_data() -> dict[str, Any]:
    """The notebook's fact set: facts, questions as (question, relevant positions),
    configurations and k."""
    data = _load("ex02_facts.json")
    data["questions"] = [(q, set(relevant)) for q, relevant in data["questions"]]
    return data


def held_out_cases() -> dict[str, Any]:
    """The check's own facts and questions, never shown in the notebook."""
    data = _load("ex02_check.json")
    data["questions"] = [(q, set(relevant)) for q, relevant in data["questions"]]
    return data


# --- the reference --------------------------------------------------------------------


def _index(facts: Sequence[str], config: _Config, k1: float = 1.2,
           analyzer: Callable[[str], list[str]] | None = None) -> BM25Index:
    if analyzer is None:
        def analyzer(text: str) -> list[str]:
            return switchable(text, stemming=config["stemming"],
                              stopwords=config["stopwords"]).split()
    index = BM25Index(k1=k1, b=config["b"], analyzer=analyzer)
    for position, fact in enumerate(facts):
        index.add(position, fact)
    return index


def _per_question(facts: Sequence[str], questions: Sequence[tuple[str, set[int]]],
                  config: _Config, k: int, **variant: Any) -> list[float]:
    index = _index(facts, config, **variant)
    found = []
    for question, relevant in questions:
        scores = index.scores(question)
        top = sorted(range(len(facts)), key=lambda i: (-scores.get(i, 0.0), i))[:k]
        found.append(len(set(relevant) & set(top)) / len(relevant))
    return found


def _recall(facts: Sequence[str], questions: Sequence[tuple[str, set[int]]],
            config: _Config, k: int, **variant: Any) -> float:
    found = _per_question(facts, questions, config, k, **variant)
    return sum(found) / len(found)


def reference_ablation(facts: Sequence[str], questions: Sequence[tuple[str, set[int]]],
                       configs: Mapping[str, _Config], k: int) -> dict[str, float]:
    """recall@k per configuration, as `ablate` should compute it."""
    return {name: _recall(facts, questions, config, k) for name, config in configs.items()}


@learner_check
def check_ex2(recall_at_k: Callable[..., float], ablate: Callable[..., Mapping[str, float]],
              choose: Callable[..., tuple[str, str]],
              changed_questions: Callable[..., Any] | None = None,
              stretch: bool = False) -> str:
    """Check `recall_at_k` on fixed rankings, `ablate` on held-out facts, `choose` on
    made-up and real results; `stretch=True` also checks `changed_questions`."""
    _check_recall(recall_at_k)
    _check_ablate(ablate)
    _check_choose(choose)
    if not stretch:
        return "passed: ex02: recall@k, the ablation on held-out facts and your choice hold."
    if changed_questions is None:
        fail("the stretch tier needs changed_questions: check_ex2(recall_at_k, ablate, "
             "choose, changed_questions, stretch=True).")
    _check_changed(changed_questions)
    return "passed: ex02 stretch: the questions each switch wins and loses match on held-out facts."


# --- recall@k ---------------------------------------------------------------------------

# Fixed scores instead of a real ranker, so the checks isolate recall@k itself.
_RECALL_DOCS = ["d0", "d1", "d2", "d3", "d4", "d5"]
_RECALL_CASES = [
    # (query, relevant, scores per document, {k: expected recall}, hint when wrong); each
    # case isolates one rule, so the hint can say which.
    ("fraction", {2, 5, 1}, [0.0, 0.3, 0.3, 0.0, 0.0, 0.3], {1: 1 / 3, 2: 2 / 3, 3: 1.0},
     "recall is the fraction of the relevant documents found among exactly the top k "
     "(divide by how many are relevant, not by k)."),
    ("ties", {4}, [1.0] * 6, {2: 0.0, 5: 1.0},
     "documents with equal scores keep the documents' order: the lower index ranks first."),
    ("order", {0, 3}, [0.1, 0.9, 0.5, 0.7, 0.0, 0.2], {1: 0.0, 2: 0.5, 3: 0.5, 5: 1.0},
     "rank by score, highest first, and look only at the top k."),
]


def _check_recall(recall_at_k: Callable[..., float]) -> None:
    table = {query: scores for query, _, scores, _, _ in _RECALL_CASES}

    def rank(query: str, docs: Sequence[str]) -> list[float]:
        return list(table[query])

    for query, relevant, scores, expected, hint in _RECALL_CASES:
        dataset = {"docs": list(_RECALL_DOCS), "queries": [(query, set(relevant))]}
        for k, want in expected.items():
            with calling(f"recall_at_k(rank, dataset, k={k})"):
                got = recall_at_k(rank, dataset, k)
            if not isinstance(got, (int, float)) or not math.isclose(got, want, abs_tol=1e-9):
                fail(f"recall_at_k returned {got!r} at k={k} for one query with relevant "
                     f"documents {sorted(relevant)} and scores {scores}; expected "
                     f"{want:.3f}: {hint}")
    dataset = {"docs": list(_RECALL_DOCS),
               "queries": [(query, set(relevant)) for query, relevant, *_ in _RECALL_CASES]}
    with calling("recall_at_k(rank, dataset, k=2)"):
        got = recall_at_k(rank, dataset, 2)
    want = (2 / 3 + 0.0 + 0.5) / 3
    if not isinstance(got, (int, float)) or not math.isclose(got, want, abs_tol=1e-9):
        fail(f"with three queries recall_at_k returned {got!r} at k=2, expected {want:.3f}: "
             "average the per-query recall over all queries.")


# --- the ablation -----------------------------------------------------------------------

# Names and settings the notebook does not use, so a hard-coded table cannot pass.
_HELD_OUT_CONFIGS: dict[str, dict[str, Any]] = {
    "A": {"stopwords": False, "stemming": False, "b": 0.3},
    "B": {"stopwords": True, "stemming": False, "b": 1.0},
    "C": {"stopwords": False, "stemming": True, "b": 0.0},
    "D": {"stopwords": True, "stemming": True, "b": 0.5},
    "E": {"stopwords": True, "stemming": False, "b": 0.0},
}
_HELD_OUT_K = (1, 2)

# Plausible mistakes, each a variant of the reference, and what to say when the learner's
# numbers match one of them exactly.
_MISTAKES: list[tuple[str, dict[str, Any], Callable[[_Config], _Config]]] = [
    ("every configuration scored as if b were 0.75: build each BM25Index with that "
     "configuration's b.", {}, lambda c: {**c, "b": 0.75}),
    ("every configuration scored like BM25Index's default analyzer (stop words dropped, "
     "stemmed): pass analyzer= built from analyze(text, stemming=..., stopwords=...) with "
     "that configuration's switches.", {"analyzer": lambda text: analyze(text)}, dict),
    ("every configuration scored with plain words: the analyzer must apply that "
     "configuration's stopwords and stemming switches.", {"analyzer": tokenize}, dict),
    ("the stopwords and stemming switches are swapped.", {},
     lambda c: {**c, "stopwords": c["stemming"], "stemming": c["stopwords"]}),
]


def _diagnose(facts: Sequence[str], questions: Sequence[tuple[str, set[int]]],
              configs: Mapping[str, _Config], k: int, got: Mapping[str, float]) -> str:
    for hint, variant, change in _MISTAKES:
        wrong = {name: _recall(facts, questions, change(config), k, **variant)
                 for name, config in configs.items()}
        if all(math.isclose(got[name], wrong[name], abs_tol=1e-9) for name in configs):
            return hint
    return ("for each configuration index every fact with BM25Index(b=config['b'], "
            "analyzer=...) and measure recall_at_k over all the questions.")


_WEAK_MATCH = (  # the answers share only a common word with the question: they score < 1
    ["Ana has a red bike.", "Ana has a blue car.", "Ana has a green boat.", "Tom naps.",
     "Lea naps."],
    [("What does Ana have?", {0, 1, 2})])


def _check_ablate(ablate: Callable[..., Mapping[str, float]]) -> None:
    facts, questions = _WEAK_MATCH
    want = reference_ablation(facts, questions, _HELD_OUT_CONFIGS, 1)
    with calling("ablate(<5 facts>, <1 question>, configs, k=1)"):
        got = ablate(list(facts), list(questions), dict(_HELD_OUT_CONFIGS), 1)
    if isinstance(got, Mapping) and set(got) == set(want) and any(
            not isinstance(got[name], (int, float)) or not math.isclose(got[name], want[name])
            for name in want):
        fail(f"on five facts where the answers match the question only by 'Ana' (a low "
             f"score), ablate gave recall@1 {dict(got)!r}; expected {want['A']:.3f} for "
             "each. Hint: a fact that matches no query word scores 0, below every match.")
    cases = held_out_cases()
    facts, questions = cases["facts"], cases["questions"]
    for k in _HELD_OUT_K:
        want = reference_ablation(facts, questions, _HELD_OUT_CONFIGS, k)
        with calling(f"ablate(facts, questions, configs, k={k})"):
            got = ablate(list(facts), list(questions), dict(_HELD_OUT_CONFIGS), k)
        if not isinstance(got, Mapping) or set(got) != set(_HELD_OUT_CONFIGS):
            fail(f"ablate must return a dict with one recall per configuration name "
                 f"({sorted(_HELD_OUT_CONFIGS)}); got {got!r}.")
        if not all(isinstance(value, (int, float)) for value in got.values()):
            fail(f"ablate's values must be numbers (recall@k); got {dict(got)!r}.")
        for name, config in _HELD_OUT_CONFIGS.items():
            if not math.isclose(got[name], want[name], abs_tol=1e-9):
                fail(f"on held-out facts ablate gave recall@{k} {got[name]:.3f} for "
                     f"configuration {config}, expected {want[name]:.3f}: "
                     + _diagnose(facts, questions, _HELD_OUT_CONFIGS, k, got))


# --- the choice -------------------------------------------------------------------------

_CHOOSE_CASES = [  # made-up results: a clear winner, a tie (the first listed wins), a loss
    {"lean": 0.55, "stemmed only": 0.72, "everything": 0.64, "nothing": 0.41},
    {"x": 0.5, "y": 0.8125, "z": 0.8125, "w": 0.25},
    {"b=0.75": 0.9, "b=0": 0.875},
]
_NUMBER = re.compile(r"\d+\.\d+")


def _check_choose(choose: Callable[..., tuple[str, str]]) -> None:
    data = course_data()
    course = reference_ablation(data["facts"], data["questions"], data["configs"], data["k"])
    for results in (*_CHOOSE_CASES, course):
        with calling("choose(results)"):
            got = choose(dict(results))
        if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(part, str)
                                                                    for part in got)):
            fail(f"choose must return (configuration name, sentence); got {got!r}.")
        name, why = got
        ranked = sorted(results, key=lambda n: -results[n])  # stable: the first listed wins
        best, runner_up = ranked[0], ranked[1]
        shown = f"for results {dict(results)}"
        if name != best:
            fail(f"choose picked {name!r} {shown}; expected {best!r}: pick the highest "
                 "recall, and on a tie the configuration listed first.")
        if "\n" in why.strip() or len(why) > 300:
            fail(f"choose's reason must be one sentence on one line (at most 300 characters); "
                 f"got {why!r}.")
        for needed, what in ((best, "the chosen configuration"),
                             (runner_up, "the runner-up (the best of the rest)")):
            if needed not in why or f"{results[needed]:.2f}" not in why:
                fail(f"choose's reason {why!r} {shown} must name {what}, {needed!r}, and "
                     f"quote its recall to two decimals ({results[needed]:.2f}).")
        allowed = {f"{value:.2f}" for value in results.values()}
        bare = why
        for config in sorted(results, key=len, reverse=True):  # names may hold numbers
            bare = bare.replace(config, " ")
        for number in _NUMBER.findall(bare):
            if number not in allowed:
                fail(f"choose's reason quotes {number}, which is no configuration's recall "
                     f"{shown}: every number in the sentence must come from the results.")


# --- stretch: which questions each switch wins and loses ----------------------------------

_CHANGE_CASES = [  # (before, after, k)
    ({"stopwords": False, "stemming": False, "b": 0.75},
     {"stopwords": True, "stemming": False, "b": 0.75}, 1),
    ({"stopwords": False, "stemming": False, "b": 0.75},
     {"stopwords": False, "stemming": True, "b": 0.75}, 1),
    ({"stopwords": True, "stemming": False, "b": 0.75},
     {"stopwords": True, "stemming": False, "b": 0.0}, 2),
]


def _check_changed(changed_questions: Callable[..., Any]) -> None:
    cases = held_out_cases()
    facts, questions = cases["facts"], cases["questions"]
    for before, after, k in _CHANGE_CASES:
        old = _per_question(facts, questions, before, k)
        new = _per_question(facts, questions, after, k)
        gained = [i for i, (o, n) in enumerate(zip(old, new, strict=True)) if n > o]
        lost = [i for i, (o, n) in enumerate(zip(old, new, strict=True)) if n < o]
        with calling(f"changed_questions(facts, questions, before, after, k={k})"):
            got = changed_questions(list(facts), list(questions), dict(before), dict(after), k)
        try:
            got = (list(got[0]), list(got[1])) if len(got) == 2 else None
        except TypeError:
            got = None
        if got is None:
            fail("changed_questions must return (gained, lost): two lists of question "
                 "positions.")
        if got == (lost, gained) and gained != lost:
            fail(f"changed_questions returned (gained, lost) the wrong way round going from "
                 f"{before} to {after}: gained are the questions whose recall rose.")
        if got != (gained, lost):
            fail(f"going from {before} to {after} at k={k} on held-out facts, "
                 f"changed_questions returned gained={got[0]}, lost={got[1]}; expected "
                 f"gained={gained}, lost={lost}: compare each question's own recall@k "
                 "under both configurations, and list positions in increasing order.")
