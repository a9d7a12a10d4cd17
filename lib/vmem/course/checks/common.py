"""What every exercise check shares: how a check fails, and how it calls learner code.

A check fails by raising `CheckFailed` (an `AssertionError`) whose message is one line for
the learner: what their code did, what was expected, and a hint. In a notebook it shows
as that line alone, "not right yet: ...", not as a traceback through the grader's source
(`@learner_check` makes sure of that for anything a check raises), and a check that passes
shows its line "passed: ..." unquoted (`Verdict`): the words of a lesson check. The
learner's `NotImplementedError` stubs pass through unchanged, so the notebook says which
part is still to do; any other exception from learner code becomes a `CheckFailed` that
names the call, the learner's function and line, and the error, so a crash reads as a
failed check, not a grader bug.
"""

from __future__ import annotations

import functools
import linecache
import sysconfig
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from ...signatures import bind, parse_arguments

_VMEM = Path(__file__).resolve().parents[2]  # the vmem package
# Frames in these are not the learner's: the standard library and installed packages.
_LIBRARIES = tuple({Path(sysconfig.get_paths()[key]).resolve()
                    for key in ("stdlib", "platstdlib", "purelib", "platlib")})
_RERUN = "Hint: call it in a cell of its own to see the whole traceback."
_Check = TypeVar("_Check", bound=Callable[..., str])


class CheckFailed(AssertionError):
    """A check's verdict on learner code, meant to be read as one line."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback: the verdict alone, worded as a
        lesson check words it (the frames are the grader's, which say nothing about the
        learner's code)."""
        return [f"not right yet: {self}"]


class Verdict(str):
    """A check's passing line ("passed: ..."), shown in a notebook as the line itself, as
    a lesson check prints it, not as a quoted string."""

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's display: the line, unquoted."""
        printer.text(str(self))


def fail(message: str) -> NoReturn:
    """Fail the check with `message`, which says what failed and hints at why."""
    raise CheckFailed(message)


def learner_frame(error: BaseException) -> str:
    """Where in the learner's code `error` was raised: " (in name, line N: code)" for the
    innermost frame outside vmem, the standard library and installed packages ("" when
    there is none)."""
    found = ""
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        path = Path(code.co_filename)
        if not (path.is_absolute() and any(path.resolve().is_relative_to(folder)
                                           for folder in (_VMEM, *_LIBRARIES))):
            line = linecache.getline(code.co_filename, tb.tb_lineno).strip()
            found = f" (in {code.co_name}, line {tb.tb_lineno}" + (f": {line})" if line else ")")
        tb = tb.tb_next
    return found


def describe(error: BaseException) -> str:
    """"TypeError: message (in name, line N: code)", on one line."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}{': ' + text if text else ''}{learner_frame(error)}"


@contextmanager
def calling(what: str) -> Iterator[None]:
    """Turn an unexpected exception from learner code into a failure naming the call."""
    try:
        yield
    except (CheckFailed, NotImplementedError):
        raise
    except Exception as exc:
        raise CheckFailed(f"{what} raised {describe(exc)}; expected it to return. {_RERUN}") \
            from None


def learner_check(check: _Check) -> _Check:
    """Make every way `check` can fail one `CheckFailed` line: its own verdicts, an
    `assert` in learner code, and any exception learner code raised outside `calling`
    (named by the learner's function and line). Stubs' `NotImplementedError` passes."""

    @functools.wraps(check)
    def run(*args: Any, **kwargs: Any) -> str:
        try:
            return Verdict(check(*args, **kwargs))
        except NotImplementedError:
            raise
        except CheckFailed as verdict:
            raise CheckFailed(str(verdict)) from None
        except Exception as exc:
            raise CheckFailed(f"your code raised {describe(exc)} while {check.__name__} ran "
                              f"it; expected it to return. {_RERUN}") from None

    return run  # type: ignore[return-value]


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


def is_vmems(part: Any) -> bool:
    """Whether `part` is vmem's own (defined in the vmem package): what a check hands back
    as a stand-in, which it must never pass, or keep, as the learner's."""
    home = getattr(part, "__module__", None)
    return isinstance(home, str) and (home == "vmem" or home.startswith("vmem."))


def judged(check: Callable[[Any], str], part: Any) -> tuple[bool | None, str]:
    """Run `check` on a learner's part: (True, its passing line), (False, the one line
    that says what is wrong), or (None, "not written yet") for a stub."""
    try:
        return True, learner_check(check)(part)
    except NotImplementedError:
        return None, "not written yet"
    except CheckFailed as failed:
        return False, str(failed)


def dispatched(tools: dict[str, Callable[..., Any]], name: Any,
               arguments: Any) -> tuple[str | None, Any]:
    """vmem's argument checks (`vmem.signatures`) over plain functions, the stand-in for
    a learner's dispatcher: (None, the tool's result), or (kind, what was wrong) with kind
    unknown_tool, invalid_json, bad_arguments or tool_error."""
    if not isinstance(name, str) or name not in tools:
        return "unknown_tool", f"no tool named {name!r:.40}; the tools are: " \
            f"{', '.join(sorted(tools))}."
    parsed = parse_arguments(arguments)
    if isinstance(parsed, str):
        return "invalid_json", parsed
    problems, kwargs, _ = bind(name, tools[name], parsed)
    if problems:
        return "bad_arguments", " ".join(problems)
    try:
        return None, tools[name](**kwargs)
    except Exception as error:  # the tool's failure is the model's news, not the loop's end
        return "tool_error", f"{name} failed: {type(error).__name__}: {error}"
