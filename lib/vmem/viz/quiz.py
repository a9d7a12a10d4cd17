"""`Quiz`: a lesson notebook's self-check questions, answered in place.

Optional extra: the widget needs ipywidgets; `question_html`, `feedback_html` and
`quiz_html` (the static picture `Quiz.snapshot()` shows) need only the standard library.
The questions and the checking live in `vmem.course.quiz`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..course.quiz import Feedback, Question, check_answer, questions_for
from ..text import plural
from .box import Box, require_widgets, widgets
from .markup import BUDGET_COLOR, escape, root

RIGHT_COLOR, WRONG_COLOR = "#009E73", BUDGET_COLOR


def choice_letter(index: int) -> str:
    """A, B, C, ...: the label of a choice (radio button labels cannot wrap long text, so
    the buttons carry letters and the choices are written out above them)."""
    return chr(ord("A") + index)


def question_html(question: Question) -> str:
    """One quiz question, numbered, with its choices lettered A, B, C..., as HTML."""
    facts = {"view": "quiz-question", "notebook": question.notebook,
             "question": question.number, "choices": len(question.choices)}
    choices = "".join(f'<div style="margin:2px 0 2px 12px"><b>{choice_letter(i)}.</b> '
                      f"{escape(text)}</div>" for i, text in enumerate(question.choices))
    return root("quiz-question", facts, f'<div style="margin-top:10px"><b>{question.number}. '
                                         f"{escape(question.question)}</b></div>{choices}")


def feedback_html(question: Question, choice: int | None,
                  feedback: Feedback | None) -> str:
    """What Check writes under a question: right or wrong and why, or, when nothing is
    selected (`choice` and `feedback` None), a prompt to pick an answer first."""
    facts = {"view": "quiz-feedback", "notebook": question.notebook,
             "question": question.number, "choice": choice,
             "correct": None if feedback is None else feedback.correct}
    if feedback is None:
        return root("quiz-feedback", facts, "<i>Pick an answer first, then press Check.</i>")
    verdict, color = (("Right.", RIGHT_COLOR) if feedback.correct
                      else ("Wrong.", WRONG_COLOR))
    retry = "" if feedback.correct else " Try another answer."
    return root("quiz-feedback", facts,
                 f'<div style="border-left:3px solid {color}; padding-left:8px">'
                 f'<b style="color:{color}">{verdict}</b> {escape(feedback.explanation)}'
                 f"{retry}</div>")


def quiz_html(questions: Sequence[Question],
              checked: Sequence[tuple[int, Feedback] | None] = ()) -> str:
    """A lesson's quiz as one static picture: every question with its lettered choices and,
    where a question was checked (its entry of `checked` is the choice and the verdict),
    the verdict. The answers are not shown: the picture invites the reader to run the
    notebook."""
    notebook = questions[0].notebook if questions else ""
    parts = []
    for i, question in enumerate(questions):
        parts.append(question_html(question))
        answer = checked[i] if i < len(checked) else None
        if answer is not None:
            parts.append(feedback_html(question, *answer))
    note = ('<div style="margin-top:8px; color:#777"><i>Run the notebook to answer: each '
            "question has radio buttons and a Check button that says whether you are right, "
            "and why.</i></div>")
    facts = {"view": "quiz", "notebook": notebook, "questions": len(questions),
             "checked": sum(answer is not None for answer in checked)}
    return root("quiz", facts, "".join(parts) + note)


class Quiz(Box):
    """The self-check questions of one lesson notebook, answered in place.

    Example::

        from vmem.viz import Quiz

        Quiz("02_main_context")

    Each question lists its choices as A, B, C... and has radio buttons with those
    letters (`.choices[i]`, whose value is the index of the selected choice, or None)
    and a Check button (`.check[i]`) that writes right or
    wrong, and why, into `.feedback[i]`. Changing the selection clears the verdict.
    `.submit(i, choice)` selects and checks from code; `.results[i]` is the last
    `Feedback` (None until checked). `.questions` are the `vmem.course.quiz.Question`s.
    """

    def __init__(self, notebook: str) -> None:
        require_widgets("Quiz")
        self.notebook = notebook
        self.questions = questions_for(notebook)
        self.results: list[Feedback | None] = [None] * len(self.questions)
        self.choices, self.check, self.feedback = [], [], []
        rows = []
        for i, question in enumerate(self.questions):
            choices = widgets.RadioButtons(
                options=[(choice_letter(index), index) for index in range(len(question.choices))],
                value=None, orientation="horizontal", description="answer")
            check = widgets.Button(description="Check", tooltip="check this answer")
            feedback = widgets.HTML()
            choices.observe(lambda change, i=i: self._clear(i), names="value")
            check.on_click(lambda button, i=i: self._check(i))
            self.choices.append(choices)
            self.check.append(check)
            self.feedback.append(feedback)
            rows.append(widgets.VBox([widgets.HTML(question_html(question)),
                                      widgets.HBox([choices, check]), feedback]))
        super().__init__(children=rows)

    def submit(self, i: int, choice: int) -> Feedback:
        """Select `choice` for question `i` (both 0-based) and press Check."""
        self.choices[i].value = choice
        self.check[i].click()
        result = self.results[i]
        assert result is not None  # a selection was made, so Check gave a verdict
        return result

    def picture(self) -> str:
        """The questions (and any verdicts given so far) as static HTML, see `quiz_html`."""
        return quiz_html(self.questions, [
            None if result is None else (choice.value, result)
            for choice, result in zip(self.choices, self.results, strict=True)])

    def score(self) -> int:
        """How many questions were last checked with the right answer."""
        return sum(bool(result and result.correct) for result in self.results)

    def _check(self, i: int) -> None:
        question, choice = self.questions[i], self.choices[i].value
        self.results[i] = None if choice is None else check_answer(question, choice)
        self.feedback[i].value = feedback_html(question, choice, self.results[i])

    def _clear(self, i: int) -> None:
        self.results[i] = None
        self.feedback[i].value = ""

    def __repr__(self) -> str:
        return (f"Quiz({self.notebook!r}, {plural(len(self.questions), 'question')}, "
                f"{self.score()} answered right)")
