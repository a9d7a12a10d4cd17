"""Notebook 04's checks: the schema generator, the dispatcher and the over-limit message
each print one line, pass on the lesson's answers and on vmem's, fall back to vmem's on a
stub, and reject wrong answers written before the checks (one mutant per mistake a
learner makes)."""

from __future__ import annotations

import inspect
import json
import typing
from pathlib import Path

import nbformat
import pytest
from verdicts import learners_copy, told_not_right

from vmem import Block, CoreMemory
from vmem.course.lesson_checks import l04
from vmem.errors import BlockLimitError

ROOT = Path(__file__).resolve().parents[2]
COMPLETE = ROOT / "solutions" / "lessons" / "04_memory_tools.ipynb"
LEARNER = ROOT / "notebooks" / "04_memory_tools.ipynb"
JSON_TYPES = {str: "string", int: "integer", bool: "boolean"}


def schema(function, *, hints=typing.get_type_hints, types=JSON_TYPES, paragraph=True,
           join=True, wrapped=True, required_all=False):
    """A correct generator, or a wrong one with one of its choices flipped."""
    found = hints(function)
    parameters = inspect.signature(function).parameters
    doc = inspect.getdoc(function)
    description = doc.split("\n\n")[0] if paragraph else doc
    description = " ".join(description.split()) if join else description
    inner = {"name": function.__name__, "description": description, "parameters": {
        "type": "object",
        "properties": {name: {"type": types.get(found[name], "string")} for name in parameters},
        "required": [name for name, p in parameters.items()
                     if required_all or p.default is p.empty]}}
    return {"type": "function", "function": inner} if wrapped else inner


def annotations(function):
    return {name: p.annotation for name, p in inspect.signature(function).parameters.items()}


def stub(*args):
    raise NotImplementedError("write it")


def test_the_reference_schema_passes(capsys):
    l04.check_schema(schema)
    assert capsys.readouterr().out.startswith("passed: ")


@pytest.mark.parametrize("wrong, phrase", [
    (lambda f: schema(f, wrapped=False), "returned"),                       # no "function"
    (lambda f: schema(f, required_all=True), "a bool default"),             # defaults required
    (lambda f: schema(f, paragraph=False), "a two-line first paragraph"),   # Args: kept
    (lambda f: schema(f, join=False), "a two-line first paragraph"),        # newline kept
    (lambda f: schema(f, hints=annotations), "rename_block"),               # string annotations
    (lambda f: schema(f, types={**JSON_TYPES, bool: "integer"}), "a bool default"),
    (lambda f: schema(f, types={str: "string", bool: "boolean"}), "int parameters"),
])
def test_a_wrong_schema_is_told_what_is_wrong(capsys, wrong, phrase):
    l04.check_schema(wrong)
    line = told_not_right(capsys, phrase)
    assert "using vmem's schema generator meanwhile" in line


def dispatcher(tools, name, arguments, *, catch_json=True, need_object=True, typed=True,
               bool_is_int=False, catch_tool=True, list_tools=True, extra=True):
    """A correct dispatcher, or a wrong one with one safeguard left out."""
    if name not in tools:
        return f"Error: no tool {name!r}" + (f"; try {', '.join(tools)}" if list_tools else "")
    try:
        args = json.loads(arguments)
    except ValueError:
        if not catch_json:
            raise
        return "Error: the arguments are not valid JSON."
    if need_object and not isinstance(args, dict):
        return "Error: send a JSON object."
    function = tools[name]
    hints, parameters = typing.get_type_hints(function), inspect.signature(function).parameters
    for key, value in args.items():
        if key not in parameters:
            if extra:
                return f"Error: unexpected argument {key!r}."
            continue  # the mutant drops it silently and runs the tool
        expected = hints[key]
        fits = isinstance(value, expected) if bool_is_int else type(value) is expected
        if typed and not fits:
            return f"Error: {key} must be a JSON {JSON_TYPES[expected]}."
    missing = [key for key, p in parameters.items() if p.default is p.empty and key not in args]
    if missing:
        return f"Error: missing {missing[0]!r}."
    args = {key: value for key, value in args.items() if key in parameters}
    if not catch_tool:
        return function(**args)
    try:
        return function(**args)
    except Exception as error:
        return f"Error: {error}"


@pytest.mark.parametrize("right", [dispatcher, learners_copy(l04.dispatch)])
def test_the_reference_dispatchers_pass_and_are_used(capsys, right):
    assert l04.check_dispatcher(right) is right
    assert capsys.readouterr().out.startswith("passed: ")


@pytest.mark.parametrize("flip, phrase", [
    ({"catch_json": False}, "JSONDecodeError"),
    ({"need_object": False}, "AttributeError"),
    ({"typed": False}, "a string where an int belongs"),
    ({"bool_is_int": True}, "bool is an int"),
    ({"catch_tool": False}, "OSError"),
    ({"list_tools": False}, "say which tools exist"),
    ({"extra": False}, "an argument the tool does not take"),
])
def test_a_wrong_dispatcher_is_told_what_is_wrong_and_not_used(capsys, flip, phrase):
    def wrong(tools, name, arguments):
        return dispatcher(tools, name, arguments, **flip)

    assert l04.check_dispatcher(wrong) is l04.dispatch
    told_not_right(capsys, phrase)


def test_a_dispatcher_that_wraps_good_results_is_rejected(capsys):
    l04.check_dispatcher(lambda tools, name, arguments: f"Error: {name}" if name != "tag_record"
                         else "ok: " + str(dispatcher(tools, name, arguments)))
    assert "the tool's own result" in capsys.readouterr().out


def test_untouched_stubs_fall_back_to_vmem_with_one_line_each(capsys):
    l04.check_schema(stub)
    assert l04.check_dispatcher(stub) is l04.dispatch
    assert capsys.readouterr().out == ("not written yet - using vmem's schema generator\n"
                                       "not written yet - using vmem's dispatcher\n")


def test_the_unseen_cases_are_not_in_the_notebook_and_no_answer_comes_before_the_stubs():
    names = [function.__name__ for function, _ in l04.SCHEMA_CASES] + ["tag_record", "wipe_disk"]
    for path in (COMPLETE, LEARNER):
        text = path.read_text(encoding="utf-8")
        assert not [name for name in names if name in text]
    sources = [cell.source if cell.cell_type == "code" else ""
               for cell in nbformat.read(COMPLETE, as_version=4).cells]
    stubs = [i for i, source in enumerate(sources) if "### BEGIN SOLUTION" in source]
    assert "def tool_schema(" in sources[stubs[0]] and "def dispatch(" in sources[stubs[1]]
    assert not any("get_type_hints" in source for source in sources[:stubs[0]])
    assert not any("json.loads" in source for source in sources[:stubs[1]])
    assert "dispatcher = check_dispatcher(dispatch)" in sources[stubs[1] + 1]
    assert any("dispatcher(TOOLS," in source for source in sources[stubs[1] + 2:])


def message(label, current, adding, limit, *, name=True, now=True, cap=True,
            over=lambda current, adding, limit: current + adding - limit, condense=True,
            archive=True, sep=" ", grouped=False, padding=""):
    """A correct over-limit message, or a wrong one with one of its parts left out or
    miscounted."""
    number = "{:,}".format if grouped else str
    parts = [f"Core block {label if name else 'human'!r}",
             f"holds {number(current if now else current + adding)} characters" +
             (f" of its limit of {number(limit)}." if cap else "."),
             f"This write would put it {number(over(current, adding, limit))} over.",
             "Condense it with core_memory_replace," if condense else "Shorten it,",
             "or move detail to archival_memory_insert." if archive else "or leave it.",
             padding]
    return sep.join(part for part in parts if part)


def forgot_return(*args):
    """The message is built, then the function ends without `return`."""
    message(*args)


def test_vmems_wording_and_other_right_wordings_pass_and_are_used(capsys):
    for right in (learners_copy(l04.over_limit_error), message,
                  lambda *args: message(*args, grouped=True)):          # "1,985" is 1985
        assert l04.check_over_limit(right) is right
        assert capsys.readouterr().out.startswith("passed: ")


@pytest.mark.parametrize("wrong, phrase", [
    (lambda *a: message(*a, name=False), "does not name the block"),    # always 'human'
    (lambda *a: message(*a, now=False), "current size, 412"),            # the size after
    (lambda *a: message(*a, cap=False), "its limit, 500"),
    (lambda *a: message(*a, over=lambda c, a, limit: a), "goes over, 42"),   # the write's size
    (lambda *a: message(*a, over=lambda c, a, limit: limit - c), "goes over, 42"),  # room left
    (lambda *a: message(*a, over=lambda c, a, limit: c + a - limit + 1), "goes over, 42"),
    (lambda *a: message(*a, condense=False), "core_memory_replace"),
    (lambda *a: message(*a, archive=False), "archival_memory_insert"),
    (lambda *a: message(*a, sep="\n"), "keep the message to one line"),
    (lambda *a: message(*a, padding="Core memory is pinned in every prompt. " * 5),
     "keep it to at most 300"),
    (forgot_return, "return it, do not print it"),
])
def test_a_wrong_over_limit_message_is_told_what_is_wrong_and_not_used(capsys, wrong, phrase):
    assert l04.check_over_limit(wrong) is l04.bare_refusal
    line = told_not_right(capsys, phrase)
    assert "using vmem's bare refusal meanwhile" in line


def test_vmems_wording_is_the_refusal_core_memory_raises():
    core = CoreMemory([Block("human", "x" * 36, 200)])
    with pytest.raises(BlockLimitError) as refused:
        core.append("human", "y" * 250)
    assert l04.over_limit_error("human", 36, 251, 200) == str(refused.value)
    with pytest.raises(ValueError, match="nothing to refuse"):
        l04.over_limit_error("human", 36, 164, 200)


def test_an_untouched_over_limit_stub_falls_back_to_vmem_with_one_line(capsys):
    assert l04.check_over_limit(stub) is l04.bare_refusal
    assert capsys.readouterr().out == "not written yet - using vmem's bare refusal\n"


def test_the_over_limit_cases_are_unseen_and_the_notebook_shows_the_learners_message():
    for path in (COMPLETE, LEARNER):
        text = path.read_text(encoding="utf-8")
        assert not [label for label, *_ in l04.OVER_LIMIT_CASES if label in text]
    cells = nbformat.read(COMPLETE, as_version=4).cells
    at = next(i for i, cell in enumerate(cells) if "def over_limit_error(" in cell.source)
    assert "### BEGIN SOLUTION" in cells[at].source
    shown = "".join(output.get("text", "") for cell in cells[:at] if cell.cell_type == "code"
                    for output in cell.outputs)
    assert "over its limit" not in shown  # vmem's refusal is not shown before the stub
    assert "over_limit_error = check_over_limit(over_limit_error)" in cells[at + 1].source
    assert "over_limit_error(label," in cells[at + 3].source
    shown = " ".join("".join(output.get("text", "") for output in cells[at + 3].outputs).split())
    assert "core_memory_append: Core block 'human' holds 36 characters" in shown  # the answer's
    cells = nbformat.read(LEARNER, as_version=4).cells
    shown = " ".join("".join(output.get("text", "") for output in cells[at + 3].outputs).split())
    assert "core_memory_append: Error: block 'human' is full." in shown  # the bare refusal
    learner = " ".join(LEARNER.read_text(encoding="utf-8").split())
    assert "would hold 287 characters" not in learner  # vmem's wording is never shown
