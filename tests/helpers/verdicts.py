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
