"""Notebook 07's check of the learner's supersession detector.

The learner writes `supersedes(new, old) -> bool`: does the newer note say that a fact in
the older one changed (same person, same attribute, new value)? `check_detector` runs it
on cases the notebook does not show and prints one line, as every lesson check does
(`lesson_checks.common`): "not written yet" when the stub is untouched (the notebook then
uses `vmem.supersede`'s rules), what is wrong when a case fails, "passed" when all do. It
returns the detector the rest of the notebook uses.
"""

from __future__ import annotations

from collections.abc import Callable

from ..checks.common import CheckFailed
from .common import use

# (newer note, older note, whether the newer one replaces the older one, what it tests)
CASES: tuple[tuple[str, str, bool, str], ...] = (
    ("Ivo moved to Oslo.", "Ivo lives in Cork.", True, "a move changes where someone lives"),
    ("Ivo works as a baker now.", "Ivo works as a welder.", True, "a new job replaces the old"),
    ("The user works as a nurse now.", "The user works as a pilot.", True,
     "'the user' is a person too"),
    ("Sara: we moved from Cork to Oslo.", "Sara: I live in Cork.", True,
     "'I' and 'we' are the speaker named before the colon"),
    ("Ivo moved to Oslo.", "Ana lives in Cork.", False, "another person's fact stands"),
    ("Ivo moved to Oslo.", "Ivo works as a welder.", False,
     "a move says nothing about the job"),
    ("Ivo lives in Oslo.", "Ivo lives in Oslo, near the fjord.", False,
     "the same value is no change"),
    ("Ivo used to live in Cork.", "Ivo lives in Oslo.", False,
     "the past tense states nothing current"),
    ("Ivo's dog is called Tom.", "Ivo lives in Cork.", False, "a fact about something else"),
    ("...and then moved to Oslo.", "Ivo lives in Cork.", False,
     "a note that names no one changes no one's fact"),
)


def _check_detector(supersedes: Callable[[str, str], bool]) -> str:
    """The passing line, or `CheckFailed` naming the first unseen case it gets wrong."""
    for new, old, expected, what in CASES:
        answer = supersedes(new, old)
        if answer is not expected:
            raise CheckFailed(f"supersedes({new!r}, {old!r}) returned {answer!r}, expected "
                              f"{expected} ({what})")
    return f"your detector is right on all {len(CASES)} unseen cases; the table below " \
           "measures it beside vmem's"


def check_detector(supersedes: Callable[[str, str], bool]
                   ) -> Callable[[str, str], bool] | None:
    """Print one line about the learner's `supersedes`; return it when it passed, else
    None, which `stale_answers` reads as vmem's own rules (`vmem.supersede`)."""
    return use("detector", supersedes, None, _check_detector)
