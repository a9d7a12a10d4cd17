"""What every exercise check shares: how a check fails, and how it calls learner code.

A check fails by raising `AssertionError` whose message is meant for the learner. The
learner's `NotImplementedError` stubs pass through unchanged, so the notebook says which
part is still to do; any other exception from learner code becomes an `AssertionError`
that names the call that raised it, so a crash reads as a failed check, not a grader bug.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn


def fail(message: str) -> NoReturn:
    """Fail the check with `message`, which says what failed and hints at why."""
    raise AssertionError(message)


@contextmanager
def calling(what: str) -> Iterator[None]:
    """Turn an unexpected exception from learner code into a failure naming the call."""
    try:
        yield
    except (AssertionError, NotImplementedError):
        raise
    except Exception as exc:
        raise AssertionError(f"{what} raised {type(exc).__name__}: {exc}") from exc


def raised(call: Callable[[], Any]) -> Exception | None:
    """Run `call`; return the exception it raised (None if it returned normally), for
    checks that expect learner code to refuse something."""
    try:
        call()
    except NotImplementedError:
        raise
    except Exception as exc:
        return exc
    return None
