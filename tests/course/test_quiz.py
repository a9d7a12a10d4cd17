"""The self-check quizzes: the packaged file's shape, the verdicts, the widget headless.

Expected verdicts come from the JSON file read directly (its "answer" index and "why"
list), never from the code under test.
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from pathlib import Path

import pytest

from vmem.course.quiz import Feedback, QuizError, check_answer, load_quiz, parse_quiz, questions_for

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
STEMS = sorted(path.stem for path in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def raw() -> dict:
    """The packaged quiz file, decoded with nothing but json."""
    quiz = resources.files("vmem.course").joinpath("data", "quiz.json")
    return json.loads(quiz.read_text("utf-8"))


def test_every_lesson_notebook_has_two_or_three_questions() -> None:
    assert len(STEMS) == 10 and STEMS[0] == "00_start_here" and STEMS[-1] == "09_where_next"
    data = raw()
    assert sorted(data) == STEMS
    for stem in STEMS:
        assert 2 <= len(data[stem]) <= 3, stem


def test_every_question_has_choices_a_valid_answer_and_a_reason_per_choice() -> None:
    for stem, entries in raw().items():
        for number, entry in enumerate(entries, 1):
            where = f"{stem} question {number}"
            assert set(entry) == {"question", "choices", "answer", "why"}, where
            assert entry["question"].strip().endswith("?"), where
            assert 3 <= len(entry["choices"]) == len(set(entry["choices"])), where
            assert type(entry["answer"]) is int and 0 <= entry["answer"] < len(entry["choices"])
            assert len(entry["why"]) == len(entry["choices"]), where
            assert all(len(why.split()) >= 5 for why in entry["why"]), where


def test_the_right_answer_is_not_always_in_the_same_place() -> None:
    answers = [entry["answer"] for entries in raw().values() for entry in entries]
    assert {0, 1, 2} <= set(answers)
    assert max(answers.count(i) for i in set(answers)) <= len(answers) / 2


def test_load_quiz_matches_the_file() -> None:
    quizzes, data = load_quiz(), raw()
    assert sorted(quizzes) == sorted(data)
    for stem, questions in quizzes.items():
        for number, (question, entry) in enumerate(zip(questions, data[stem], strict=True), 1):
            assert (question.notebook, question.number) == (stem, number)
            assert question.choices == tuple(entry["choices"])
            assert question.answer == entry["answer"]
            assert question.why == tuple(entry["why"])


def test_check_answer_says_right_or_wrong_and_why_for_every_choice() -> None:
    for stem, entries in raw().items():
        for question, entry in zip(questions_for(stem), entries, strict=True):
            for choice, why in enumerate(entry["why"]):
                assert check_answer(question, choice) == Feedback(choice == entry["answer"], why)


def test_check_answer_refuses_a_choice_that_does_not_exist() -> None:
    question = questions_for("02_main_context")[0]
    for bad in (-1, len(question.choices), True, "0", None):
        with pytest.raises(QuizError, match="pass an index from 0 to"):
            check_answer(question, bad)


def test_an_unknown_notebook_is_refused_with_the_known_stems() -> None:
    with pytest.raises(QuizError, match=r"no quiz for '02_main'.*02_main_context"):
        questions_for("02_main")


GOOD = {"question": "Why?", "choices": ["a", "b"], "answer": 1, "why": ["no", "yes"]}


@pytest.mark.parametrize(("data", "message"), [
    ([], "non-empty JSON object"),
    ({}, "non-empty JSON object"),
    ({"main_context": [GOOD]}, "not a notebook stem"),
    ({"02_main_context": []}, "non-empty list of questions"),
    ({"02_main_context": ["Why?"]}, "question 1 must be an object"),
    ({"02_main_context": [GOOD, {"question": "Why?", "choices": ["a", "b"], "answr": 1,
                                 "why": ["no", "yes"]}]},
     "question 2: missing answer; unknown answr"),
    ({"02_main_context": [{**GOOD, "question": " "}]}, "'question' must be a non-empty"),
    ({"02_main_context": [{**GOOD, "choices": ["a"], "why": ["x"], "answer": 0}]},
     "at least 2 non-empty"),
    ({"02_main_context": [{**GOOD, "choices": ["a", "a"]}]}, "same text"),
    ({"02_main_context": [{**GOOD, "answer": 2}]}, "from 0 to 1, not 2"),
    ({"02_main_context": [{**GOOD, "answer": True}]}, "index of the right choice"),
    ({"02_main_context": [{**GOOD, "why": ["yes"]}]}, "one explanation per choice"),
    ({"02_main_context": [{**GOOD, "why": ["", "yes"]}]}, "one explanation per choice"),
])
def test_a_malformed_file_is_refused_naming_what_is_wrong(tmp_path, data, message) -> None:
    path = tmp_path / "quiz.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(QuizError, match=re.escape(message)) as raised:
        load_quiz(path)
    assert str(path) in str(raised.value)


def test_invalid_json_is_refused_with_where_it_broke(tmp_path) -> None:
    path = tmp_path / "quiz.json"
    path.write_text('{"02_main_context": [', encoding="utf-8")
    with pytest.raises(QuizError, match=r"not valid JSON .*line 1"):
        load_quiz(path)


def test_parse_quiz_accepts_a_minimal_quiz() -> None:
    (question,) = parse_quiz({"02_main_context": [GOOD]})["02_main_context"]
    assert check_answer(question, 1) == Feedback(True, "yes")
    assert check_answer(question, 0) == Feedback(False, "no")


# -- the widget, headless -------------------------------------------------------------

def facts_of(markup: str) -> dict:
    found = re.search(r'data-facts="([^"]*)"', markup)
    assert found, "the view has no data-facts attribute"
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.parametrize("stem", STEMS)
def test_quiz_widget_checks_every_choice_of_every_question(stem) -> None:
    pytest.importorskip("ipywidgets")
    from vmem.viz import Quiz

    quiz = Quiz(stem)
    entries = raw()[stem]
    assert len(quiz.questions) == len(quiz.choices) == len(quiz.check) == len(entries)
    assert repr(quiz) == f"Quiz({stem!r}, {len(entries)} questions, 0 answered right)"
    for i, entry in enumerate(entries):
        radio = quiz.choices[i]
        letters = "ABCDEFGH"[:len(entry["choices"])]
        assert radio.options == tuple((letter, index) for index, letter in enumerate(letters))
        question_markup = quiz.children[i].children[0].value
        assert facts_of(question_markup)["question"] == i + 1
        for letter, text in zip(letters, entry["choices"], strict=True):
            assert f"<b>{letter}.</b> {html.escape(text, quote=True)}" in question_markup
        assert radio.value is None and quiz.feedback[i].value == ""
        for choice, why in enumerate(entry["why"]):
            radio.value = choice
            assert quiz.feedback[i].value == ""  # nothing judged before Check
            quiz.check[i].click()
            right = choice == entry["answer"]
            markup = quiz.feedback[i].value
            assert quiz.results[i] == Feedback(right, why)
            assert facts_of(markup) == {"view": "quiz-feedback", "notebook": stem,
                                        "question": i + 1, "choice": choice, "correct": right}
            assert html.escape(why, quote=True) in markup
            assert ("Right." in markup) == right and ("Wrong." in markup) != right
    answered = [quiz.submit(i, entry["answer"]) for i, entry in enumerate(entries)]
    assert all(feedback.correct for feedback in answered)
    assert repr(quiz) == f"Quiz({stem!r}, {len(entries)} questions, " \
                         f"{len(entries)} answered right)"


def test_quiz_widget_asks_for_a_choice_and_clears_a_stale_verdict() -> None:
    pytest.importorskip("ipywidgets")
    from vmem.viz import Quiz

    quiz = Quiz("03_archival_store")
    right = raw()["03_archival_store"][0]["answer"]
    quiz.check[0].click()
    assert "Pick an answer first" in quiz.feedback[0].value
    assert quiz.results[0] is None and quiz.score() == 0

    assert quiz.submit(0, right).correct and quiz.score() == 1
    quiz.choices[0].value = (right + 1) % len(quiz.questions[0].choices)
    assert quiz.feedback[0].value == "" and quiz.results[0] is None and quiz.score() == 0
    assert quiz.feedback[1].value == ""  # the other questions are untouched


def test_quiz_markup_escapes_question_text() -> None:
    from vmem.viz import feedback_html, question_html

    (question,) = parse_quiz({"02_main_context": [{
        "question": "Is <b> bold?", "choices": ["<i>", "no"], "answer": 0,
        "why": ["a <script> tag", "plain"]}]})["02_main_context"]
    assert "&lt;b&gt;" in question_html(question) and "<b> bold" not in question_html(question)
    markup = feedback_html(question, 0, check_answer(question, 0))
    assert "&lt;script&gt;" in markup and "<script>" not in markup


@pytest.mark.parametrize("stem", STEMS)
def test_each_notebook_ends_with_its_quiz_before_the_recap(stem) -> None:
    cells = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]
    intro, quiz, recap = cells[-3:]
    assert intro["id"] == "quiz-intro" and "".join(intro["source"]).startswith("## Check yourself")
    assert quiz["id"] == "quiz"
    assert "".join(quiz["source"]) == \
        f'# NBVAL_IGNORE_OUTPUT\nfrom vmem.viz import Quiz\n\nQuiz("{stem}")'
    assert "".join(recap["source"]).startswith("## Recap")
