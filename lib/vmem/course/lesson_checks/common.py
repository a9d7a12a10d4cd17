"""How a lesson check reports: one printed line, and the part the lesson goes on with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..checks.common import CheckFailed, learner_check

NOT_WRITTEN = "not written yet - using vmem's {part}"
_Part = TypeVar("_Part")


def verdict(part: str, learner: _Part, fallback: _Part,
            check: Callable[[Any], str]) -> tuple[str, _Part]:
    """Run `check` on the learner's part: the one line to show, and the part to use (the
    learner's when the check passed, `fallback` when it is a stub or wrong).

    `check` returns the passing line or raises `CheckFailed`; a stub's
    `NotImplementedError` anywhere in it means the part is not written yet. Any other
    exception from the learner's code is turned into one line by `learner_check`."""
    try:
        line = learner_check(check)(learner)
    except NotImplementedError:
        return NOT_WRITTEN.format(part=part), fallback
    except CheckFailed as failed:
        return f"not right yet: {failed} (using vmem's {part} meanwhile)", fallback
    return f"passed: {line}", learner


def use(part: str, learner: _Part, fallback: _Part, check: Callable[[Any], str],
        keep: str | None = None, origin: str = "") -> _Part:
    """Print `verdict`'s line and return the part the notebook goes on with. With `keep`,
    a learner's part that passed is also kept as `my_parts/<keep>.py` for later notebooks
    (`vmem.course.parts`), and the line says so; one that fails is dropped from there, so
    that no later notebook goes on with an older copy."""
    line, chosen = verdict(part, learner, fallback, check)
    if keep is not None and chosen is learner:
        from ..parts import keep as keep_part  # parts reads failures the same way

        line = f"{line} ({keep_part(keep, learner, origin, check)})"
    elif keep is not None and line.startswith("not right yet: "):
        from ..parts import drop

        drop(keep, origin, line.removeprefix("not right yet: ").split(" (using vmem's")[0])
    print(line)
    return chosen
