"""The checks behind the exercise notebooks: `check_ex1` ... `check_ex8`, and exercise 4's
second, `check_ex4_sources` (its source rule).

Each check takes the learner's functions or classes, runs them on cases the notebook never
shows, and returns a one-line success message, or raises `CheckFailed` (an
`AssertionError`) whose one-line message says what the learner's code did, what was
expected, and a hint aimed at the likely mistake, without handing over the answer; a
notebook shows that line alone, not a traceback through the grader. Instructors and
external graders call these functions directly, so their signatures are fixed.

The checks test behaviour, not code: any implementation that meets the contract written
in the exercise notebook passes. The learner's `NotImplementedError` stubs pass through
unchanged (the message says which part is still to do); any other unexpected exception
becomes a `CheckFailed` that names the call, the learner's function and line, and the error.

Each check lives in its own module under `vmem.course.checks` (`ex01` ... `ex08`), with
the cases it uses; this module is where notebooks and graders import them from. A check
with a stretch tier grades it with `stretch=True`; `vmem.course.classroom.STRETCH` lists
those calls.
"""

from .checks.ex01 import check_ex1
from .checks.ex02 import check_ex2
from .checks.ex03 import check_ex3
from .checks.ex04 import check_ex4, check_ex4_sources
from .checks.ex05 import check_ex5
from .checks.ex06 import check_ex6
from .checks.ex07 import check_ex7
from .checks.ex08 import check_ex8

__all__ = ["check_ex1", "check_ex2", "check_ex3", "check_ex4", "check_ex4_sources", "check_ex5",
           "check_ex6", "check_ex7", "check_ex8"]
