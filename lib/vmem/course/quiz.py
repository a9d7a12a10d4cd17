"""Self-check quizzes for the lesson notebooks: a few multiple-choice questions each.

The questions live in `vmem/course/data/quiz.json`, keyed by notebook stem ("02_main_context"),
so they can be edited without touching code. Every choice carries its own "why", so a
learner who picks a wrong answer learns what is wrong with it, not only that it is wrong.
The file is validated when it is read: a malformed entry raises a `QuizError` that names
the notebook, the question and the field, and says what shape is expected.

`vmem.viz.Quiz` draws these questions as radio buttons with a Check button; this module
is the part that needs nothing but the standard library.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import VMemError

STEM = re.compile(r"^\d\d_[a-z0-9_]+$")
FIELDS = ("question", "choices", "answer", "why")


class QuizError(VMemError):
    """A quiz file is malformed, names no known notebook, or an answer is not a choice."""


@dataclass(frozen=True)
class Question:
    """One multiple-choice question: `choices[answer]` is right, `why[i]` explains choice i."""

    notebook: str
    number: int  # 1-based, in file order
    question: str
    choices: tuple[str, ...]
    answer: int
    why: tuple[str, ...]


@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer and the reason for it."""

    correct: bool
    explanation: str


def check_answer(question: Question, choice: int) -> Feedback:
    """Judge `choice` (an index into `question.choices`) and explain it."""
    if isinstance(choice, bool) or not isinstance(choice, int) \
            or not 0 <= choice < len(question.choices):
        raise QuizError(f"choice {choice!r} is not one of question {question.number} of "
                        f"{question.notebook}: pass an index from 0 to "
                        f"{len(question.choices) - 1}.")
    return Feedback(choice == question.answer, question.why[choice])


def load_quiz(path: str | Path | None = None) -> dict[str, tuple[Question, ...]]:
    """All questions by notebook stem, from `path` or the packaged `quiz.json`."""
    if path is None:
        source = "vmem/course/data/quiz.json"
        text = resources.files("vmem.course").joinpath("data", "quiz.json").read_text("utf-8")
    else:
        source = str(path)
        text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise QuizError(f"{source} is not valid JSON ({error}); fix the syntax at that "
                        "line and column.") from None
    return parse_quiz(data, source)


def questions_for(notebook: str, path: str | Path | None = None) -> tuple[Question, ...]:
    """The questions of one notebook, by stem ("02_main_context")."""
    quizzes = load_quiz(path)
    if notebook not in quizzes:
        raise QuizError(f"there is no quiz for {notebook!r}; use a notebook stem such as "
                        f"{', '.join(sorted(quizzes))}.")
    return quizzes[notebook]


def parse_quiz(data: Any, source: str = "quiz data") -> dict[str, tuple[Question, ...]]:
    """Validate the decoded JSON and turn it into `Question`s.

    Expected shape: an object mapping notebook stems to non-empty lists of questions, each
    `{"question": str, "choices": [str, ...] (at least 2, distinct), "answer": index,
    "why": [str, ...] (one non-empty explanation per choice)}` and nothing else.
    """
    if not isinstance(data, dict) or not data:
        raise QuizError(f"{source}: expected a non-empty JSON object mapping notebook stems "
                        "to lists of questions.")
    quizzes = {}
    for notebook, entries in data.items():
        if not STEM.match(notebook):
            raise QuizError(f"{source}: {notebook!r} is not a notebook stem; use the file "
                            "name without .ipynb, e.g. '02_main_context'.")
        if not isinstance(entries, list) or not entries:
            raise QuizError(f"{source}: {notebook} must map to a non-empty list of questions.")
        quizzes[notebook] = tuple(_question(notebook, number, entry, source)
                                  for number, entry in enumerate(entries, 1))
    return quizzes


def _question(notebook: str, number: int, entry: Any, source: str) -> Question:
    where = f"{source}: {notebook}, question {number}"
    if not isinstance(entry, dict):
        raise QuizError(f"{where} must be an object with the keys {', '.join(FIELDS)}.")
    missing = [key for key in FIELDS if key not in entry]
    extra = sorted(set(entry) - set(FIELDS))
    if missing or extra:
        problems = ([f"missing {', '.join(missing)}"] if missing else []) \
            + ([f"unknown {', '.join(extra)}"] if extra else [])
        raise QuizError(f"{where}: {'; '.join(problems)}. A question has exactly the keys "
                        f"{', '.join(FIELDS)}.")
    if not _text(entry["question"]):
        raise QuizError(f"{where}: 'question' must be a non-empty string.")
    choices, why, answer = entry["choices"], entry["why"], entry["answer"]
    if not isinstance(choices, list) or len(choices) < 2 or not all(map(_text, choices)):
        raise QuizError(f"{where}: 'choices' must be a list of at least 2 non-empty strings.")
    if len(set(choices)) != len(choices):
        raise QuizError(f"{where}: two choices have the same text; make every choice distinct.")
    if isinstance(answer, bool) or not isinstance(answer, int) \
            or not 0 <= answer < len(choices):
        raise QuizError(f"{where}: 'answer' must be the index of the right choice, from 0 to "
                        f"{len(choices) - 1}, not {answer!r}.")
    if not isinstance(why, list) or len(why) != len(choices) or not all(map(_text, why)):
        raise QuizError(f"{where}: 'why' must be a list of {len(choices)} non-empty strings, "
                        "one explanation per choice, in the same order.")
    return Question(notebook, number, entry["question"].strip(), tuple(choices), answer,
                    tuple(why))


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())
