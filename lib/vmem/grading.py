"""The exercise checks, where the notebooks have always imported them from.

They live in `vmem.course.grading`; this module keeps `from vmem.grading import check_ex1`
working.
"""

from .course.grading import (
    check_ex1,
    check_ex2,
    check_ex3,
    check_ex4,
    check_ex4_sources,
    check_ex5,
    check_ex6,
    check_ex7,
    check_ex8,
)

__all__ = ["check_ex1", "check_ex2", "check_ex3", "check_ex4", "check_ex4_sources", "check_ex5",
           "check_ex6", "check_ex7", "check_ex8"]
