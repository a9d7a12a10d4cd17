"""How a lesson check reports: one printed line, and the part the lesson goes on with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..checks.common import judged

NOT_WRITTEN = "not written yet - using vmem's {part}"
_Part = TypeVar("_Part")


def use(part: str, learner: _Part, fallback: _Part, check: Callable[[Any], str],
        keep: str | None = None, origin: str = "") -> _Part:
    """Run `check` on the learner's part, print one line, and return the part the notebook
    goes on with: the learner's when the check passed, `fallback` when it is a stub or
    wrong.

    `check` returns the passing line or raises `CheckFailed`; a stub's
    `NotImplementedError` anywhere in it means the part is not written yet, and any other
    exception from the learner's code becomes one line (`judged`). With `keep`, a part
    that passed is also kept as `my_parts/<keep>.py` for later notebooks
    (`vmem.course.parts`), and the line says so; one that fails is dropped from there, so
    that no later notebook goes on with an older copy."""
    passed, said = judged(check, learner)
    if passed is None:
        print(NOT_WRITTEN.format(part=part))
        return fallback
    if not passed:
        if keep is not None:
            from ..parts import drop  # parts runs checks through checks.common

            drop(keep, origin, said)
        print(f"not right yet: {said} (using vmem's {part} meanwhile)")
        return fallback
    if keep is not None:
        from ..parts import keep as keep_part

        said = f"{said} ({keep_part(keep, learner, origin, check)})"
    print(f"passed: {said}")
    return learner
