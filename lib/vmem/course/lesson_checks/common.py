"""How a lesson check reports: one printed line, and the part the lesson goes on with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..checks.common import is_vmems, judged

NOT_WRITTEN = "not written yet - using vmem's {part}"
_LAST: dict[str, str] = {}
"""The line each part's check printed when it handed vmem's part back: run again on that
part (the notebook rebound the learner's name to it), the check says the same again."""
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
    that no later notebook goes on with an older copy. vmem's own part is never passed as
    the learner's: given it (the check cell run again after it handed vmem's part back),
    the check repeats the line it printed then."""
    if is_vmems(learner):  # e.g. the check cell run again after it handed vmem's part back
        print(_LAST.get(part, f"not right yet: that is vmem's {part}, not yours: run the "
                              f"cell that defines yours, then this check (using vmem's "
                              f"{part} meanwhile)"))
        return fallback
    passed, said = judged(check, learner)
    if passed is None:
        _LAST[part] = NOT_WRITTEN.format(part=part)
        print(_LAST[part])
        return fallback
    if not passed:
        if keep is not None:
            from ..parts import drop  # parts runs checks through checks.common

            drop(keep, origin, said)
        _LAST[part] = f"not right yet: {said} (using vmem's {part} meanwhile)"
        print(_LAST[part])
        return fallback
    if keep is not None:
        from ..parts import keep as keep_part

        said = f"{said} ({keep_part(keep, learner, origin, check)})"
    print(f"passed: {said}")
    return learner
