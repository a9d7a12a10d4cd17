"""Tool schemas from Python signatures, and model arguments checked against them.

The memory tools are plain methods with type hints and Google-style docstrings. `schema`
turns one into the Chat Completions tool format (what the model reads), and `bind` checks
the arguments a model sent against the same signature (what the code runs), so the two can
never drift apart. Every problem is said in words a model can act on; nothing here raises
for anything a model can send.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import typing
from collections.abc import Callable, Iterator
from types import NoneType, UnionType
from typing import Any, Literal

from .text import clip

HEARTBEAT = "request_heartbeat"
HEARTBEAT_DESCRIPTION = "true to read the result and continue; omitted ends your turn."
NO_HEARTBEAT = "send_message"
"""The one tool that ends the turn by itself, so it takes no heartbeat argument."""

MAX_STRING_CHARS = 20_000
"""The longest string argument accepted; longer text should be split or condensed."""
MAX_ARGUMENTS_CHARS = 200_000
"""The longest raw JSON argument string parsed at all."""
MAX_NESTING = 1000
"""The deepest nesting of JSON arrays and objects parsed at all: deeper text is refused
before `json.loads` sees it, since CPython gives up near there with a RecursionError and
Pyodide (the browser course's kernel) overflows its stack, a fatal error, not an exception."""

quoted = functools.partial(clip, limit=80, show_length=True)
"""A model's input, quoted back to it: clipped, with its length when clipped."""
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


# -- schema generation ----------------------------------------------------------------


def schema(name: str, method: Callable[..., Any]) -> dict[str, Any]:
    """The Chat Completions tool schema of `method`, from its signature and docstring."""
    description, arg_docs = _parse_docstring(inspect.getdoc(method) or "")
    hints = typing.get_type_hints(method)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in inspect.signature(method).parameters.values():
        spec, _ = _json_type(hints[parameter.name])
        properties[parameter.name] = {**spec, "description": arg_docs[parameter.name]}
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)
    if name != NO_HEARTBEAT:
        properties[HEARTBEAT] = {"type": "boolean", "description": HEARTBEAT_DESCRIPTION}
    return {"type": "function", "function": {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required,
                       "additionalProperties": False},
    }}


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {argument: description})."""
    head, _, args = doc.partition("\nArgs:\n")
    arg_docs: dict[str, str] = {}
    for line in args.splitlines():
        match = re.fullmatch(r" {4}(\w+): (.*)", line)
        if match:
            current = match.group(1)
            arg_docs[current] = match.group(2).strip()
        elif line.strip():  # a continuation line, indented deeper
            arg_docs[current] += " " + line.strip()
    return " ".join(head.split()), arg_docs


def _json_type(tp: Any) -> tuple[dict[str, Any], bool]:
    """(JSON schema, accepts None) for the few Python types the tools use."""
    inner = _without_none(tp)
    if inner is not tp:
        return _json_type(inner)[0], True
    origin = typing.get_origin(tp)
    if origin is list:
        (item,) = typing.get_args(tp)
        return {"type": "array", "items": _json_type(item)[0]}, False
    if origin is Literal:
        return {"type": "string", "enum": list(typing.get_args(tp))}, False
    return {"type": {str: "string", int: "integer", bool: "boolean"}[tp]}, False


def _without_none(tp: Any) -> Any:
    """`X` for `X | None`, else `tp` unchanged."""
    if typing.get_origin(tp) in (typing.Union, UnionType):
        (inner,) = [arg for arg in typing.get_args(tp) if arg is not NoneType]
        return inner
    return tp


# -- argument checking ----------------------------------------------------------------


def parse_arguments(arguments: Any) -> dict[str, Any] | str:
    """The arguments as a dict, or the text of why they cannot be used."""
    example = 'a JSON object such as {"query": "birthday"}'
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, (str, bytes, bytearray)):
        if len(arguments) > MAX_ARGUMENTS_CHARS:
            return (f"the arguments are {len(arguments)} characters long, over the "
                    f"{MAX_ARGUMENTS_CHARS} limit. Send shorter text, split over several calls.")
        if _too_deep(arguments):
            return (f"the arguments are not valid JSON here (nested over {MAX_NESTING} levels "
                    f"deep). Send {example}.")
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as error:
            return f"the arguments are not valid JSON ({quoted(str(error))}). Send {example}."
    if not isinstance(arguments, dict):
        return f"the arguments must be {example}, not a JSON {json_kind(arguments)}."
    return arguments


def _too_deep(text: str | bytes | bytearray) -> bool:
    """Whether arrays and objects nest deeper than `MAX_NESTING` in JSON text (brackets in
    strings do not count). Text with fewer brackets than that is not scanned: a normal call
    costs two counts."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return False
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return True
        elif char in "]}":
            depth -= 1
    return False


def bind(name: str, method: Callable[..., Any],
         arguments: dict[str, Any]) -> tuple[list[str], dict[str, Any], bool]:
    """Check arguments against the signature: (problems, keyword arguments, heartbeat)."""
    parameters = inspect.signature(method).parameters
    hints = typing.get_type_hints(method)
    problems: list[str] = []
    kwargs: dict[str, Any] = {}
    heartbeat = False
    for key, value in arguments.items():
        if key == HEARTBEAT and name != NO_HEARTBEAT:
            if isinstance(value, bool):
                heartbeat = value
            elif value is not None:
                problems.append(f"{HEARTBEAT} must be true or false, not a JSON "
                                f"{json_kind(value)}.")
        elif key not in parameters:
            problems.append(f"unexpected argument {json.dumps(quoted(str(key)))}; {name} takes "
                            f"only: {', '.join(_accepted(name, parameters))}.")
        elif value is None and parameters[key].default is not inspect.Parameter.empty:
            continue  # null for an optional argument means "use the default"
        else:
            problem = _type_problem(key, value, hints[key])
            if problem:
                problems.append(problem)
            else:
                kwargs[key] = value
    for key, parameter in parameters.items():
        if parameter.default is inspect.Parameter.empty and key not in arguments:
            problems.append(f"missing required argument {key!r}.")
    return problems, kwargs, heartbeat


def _type_problem(key: str, value: Any, tp: Any) -> str | None:
    """Why `value` does not fit `tp` (a type the schema describes), or None when it does."""
    spec, _ = _json_type(tp)
    wanted = spec["type"]
    if wanted == "string":
        if not isinstance(value, str):
            return f"{key} must be a string, not a JSON {json_kind(value)}."
        if "enum" in spec and value not in spec["enum"]:
            return (f"{key} must be one of {', '.join(map(json.dumps, spec['enum']))}, "
                    f"not {json.dumps(quoted(value))}.")
        return text_problem(value, key)
    if wanted == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{key} must be a whole number, not a JSON {json_kind(value)}."
        return None
    if wanted == "boolean":
        return None if isinstance(value, bool) else \
            f"{key} must be true or false, not a JSON {json_kind(value)}."
    if not isinstance(value, list):
        return f"{key} must be a list, not a JSON {json_kind(value)}."
    (item_type,) = typing.get_args(_without_none(tp))
    for index, item in enumerate(value):
        problem = _type_problem(f"{key}[{index}]", item, item_type)
        if problem:
            return problem
    return None


def text_problem(value: str, key: str) -> str | None:
    """Why a store cannot keep `value` well (too long, control characters, broken
    Unicode), or None when it can."""
    if len(value) > MAX_STRING_CHARS:
        return (f"{key} is {len(value)} characters long, over the {MAX_STRING_CHARS} limit; "
                "condense it or split it over several calls.")
    control = _CONTROL.search(value)
    if control:
        return (f"{key} contains the control character U+{ord(control.group()):04X} at "
                f"position {control.start()}; remove it and send plain text.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        return (f"{key} contains an unpaired surrogate at position {error.start}; "
                "send valid Unicode text.")
    return None


def usage(name: str, method: Callable[..., Any]) -> str:
    """A short call example built from the schema, e.g. `send_message({"message": ...})`."""
    parameters = inspect.signature(method).parameters
    shown = [f'"{key}": ...' if parameter.default is inspect.Parameter.empty
             else f'"{key}" (optional)' for key, parameter in parameters.items()]
    return f"{name}({{{', '.join(shown)}}})"


def _accepted(name: str, parameters: Any) -> Iterator[str]:
    yield from parameters
    if name != NO_HEARTBEAT:
        yield HEARTBEAT


def json_kind(value: Any) -> str:
    """The JSON name of a value's type, for messages such as "not a JSON number"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
