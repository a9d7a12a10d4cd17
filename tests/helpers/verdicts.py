"""What a lesson check prints for a wrong part, asserted the same way everywhere."""

from __future__ import annotations

from typing import Any


def told_not_right(capsys: Any, *phrases: str) -> str:
    """The one line the check printed: "not right yet: ...", naming every phrase; returned
    for the test's own further asserts."""
    line = capsys.readouterr().out
    assert line.startswith("not right yet: ") and line.count("\n") == 1, line
    assert all(phrase in line for phrase in phrases), (phrases, line)
    return line


def learners_copy(part: Any) -> Any:
    """vmem's part as a learner would write it: the same behaviour, defined outside vmem
    (a check never passes vmem's own part as the learner's)."""
    if isinstance(part, type):
        return type(part.__name__, (part,), {})

    def copy(*args: Any, **kwargs: Any) -> Any:
        return part(*args, **kwargs)
    return copy
