"""Exercise 6's check: tool schemas generated from a function, and a dispatcher that never
raises, scored on tools the notebook never shows and on hostile calls a model can make.

The contract (stated in the notebook):

- `tool_schema(fn)` returns the Chat Completions tool format: `{"type": "function",
  "function": {"name", "description", "parameters": {"type": "object", "properties",
  "required"}}}`. The description is the docstring's first paragraph on one line; each
  property has a JSON type (`str` string, `int` integer, `float` number, `bool` boolean)
  and the description from the docstring's `Args:` section; `required` lists the
  parameters without a default, in signature order.
- `dispatch(tools, name, arguments)` runs `tools[name]` with `arguments` (a dict, a JSON
  object string, or None) and returns `{"ok": True, "result": value}` or `{"ok": False,
  "error": kind, "message": text}` with kind `unknown_tool`, `invalid_json`,
  `bad_arguments` or `tool_error`. It never raises, never runs a tool on bad arguments,
  and its message names what was wrong (the argument, or the tools that exist).

The stretch tier adds `list[str]` (an array of strings) and `X | None = None` (optional,
null allowed) to both, and a "did you mean" suggestion for a misspelt tool name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..parts import dropped_on_failure, keep
from .common import calling, dispatched, fail, learner_check

MAX_STRING_CHARS = 10_000  # the longest string argument a dispatcher must accept
KINDS = ("unknown_tool", "invalid_json", "bad_arguments", "tool_error")
_NAMES = {  # what a failed result's message must name, per kind (stated in the notebook)
    "unknown_tool": "an unknown tool's message lists the tools that exist.",
    "invalid_json": "an invalid_json message says the arguments are not valid JSON (the word "
                    "'JSON') and, for a list or a number, that an object was expected.",
    "bad_arguments": "a bad_arguments message names the argument that was wrong.",
    "tool_error": "a tool_error message repeats what the tool raised.",
}


class _Calls:
    """Hidden tools the check dispatches to, counting every real call."""

    def __init__(self) -> None:
        self.count = 0

    def plant(self, tree: str, height_m: int = 2, potted: bool = False) -> str:
        """Plant a tree in the garden
        and remember where it went.

        Use it when the user has bought a tree.

        Args:
            tree: The kind of tree, e.g. "olive".
            height_m: How tall it is, in whole metres.
            potted: Whether it stays in a pot
                through the winter.
        """
        self.count += 1
        return f"planted {tree} ({height_m} m{', potted' if potted else ''})"

    def tidy(self) -> str:
        """Tidy the shed."""
        self.count += 1
        return "tidied"

    def water(self, litres: float) -> str:
        """Water the garden.

        Args:
            litres: How much water to use.

        Returns:
            What was watered.
        """
        self.count += 1
        if litres > 100:
            raise ValueError("the tank holds 100 litres")
        return f"watered {litres:g} l"

    def harvest(self, crops: list[str], note: str | None = None) -> str:
        """Harvest some crops.

        Args:
            crops: The crops to pick, e.g. ["beans"].
            note: An optional note for the log.
        """
        self.count += 1
        return f"picked {', '.join(crops)}" + (f" ({note})" if note else "")


def _expected(name: str, description: str, properties: dict[str, Any],
              required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required}}}


def _check_schemas(tool_schema: Callable[..., dict], calls: _Calls, stretch: bool) -> None:
    cases = [(calls.plant, _expected(
        "plant", "Plant a tree in the garden and remember where it went.",
        {"tree": {"type": "string", "description": 'The kind of tree, e.g. "olive".'},
         "height_m": {"type": "integer", "description": "How tall it is, in whole metres."},
         "potted": {"type": "boolean",
                    "description": "Whether it stays in a pot through the winter."}},
        ["tree"])),
        (calls.water, _expected("water", "Water the garden.", {
            "litres": {"type": "number", "description": "How much water to use."}},
            ["litres"]))]
    if stretch:
        cases.append((calls.harvest, _expected("harvest", "Harvest some crops.", {
            "crops": {"type": "array", "items": {"type": "string"},
                      "description": 'The crops to pick, e.g. ["beans"].'},
            "note": {"type": "string", "description": "An optional note for the log."}},
            ["crops"])))
    for fn, want in cases:
        with calling(f"tool_schema({fn.__name__})"):
            got = tool_schema(fn)
        if not isinstance(got, dict) or not isinstance(got.get("function"), dict):
            fail(f"tool_schema({fn.__name__}) returned {_short(got)}; expected a dict "
                 '{"type": "function", "function": {...}}.')
        if got.get("type") != "function":
            fail(f'tool_schema({fn.__name__}) has "type" {got.get("type")!r}; expected '
                 '"function" at the top level (the Chat Completions tool format).')
        _compare(fn.__name__, got["function"], want["function"])


def _compare(name: str, got: dict, want: dict) -> None:
    for key in ("name", "description"):
        if got.get(key) != want[key]:
            fail(f"tool_schema({name}) gave {key} {_short(got.get(key))}; expected "
                 f"{want[key]!r}. Hint: " + ("use the function's __name__." if key == "name"
                 else "take the docstring's first paragraph and join its lines with spaces."))
    params = got.get("parameters")
    if not isinstance(params, dict) or params.get("type") != "object":
        fail(f"tool_schema({name}) parameters are {_short(params)}; expected an object "
             'schema {"type": "object", "properties": ..., "required": ...}.')
    props, wprops = params.get("properties") or {}, want["parameters"]["properties"]
    if list(props) != list(wprops):
        fail(f"tool_schema({name}) lists properties {list(props)}; expected {list(wprops)} "
             "(every parameter of the signature, in order, without self).")
    for key, spec in wprops.items():
        for field in spec:
            if props[key].get(field) != spec[field]:
                hint = ("read it from the docstring's Args: section" if field == "description"
                        else "map the annotation to a JSON type")
                fail(f"tool_schema({name}) property {key!r} has {field} "
                     f"{_short(props[key].get(field))}; expected {spec[field]!r}. Hint: {hint}.")
    required = params.get("required")
    if required != want["parameters"]["required"]:
        fail(f"tool_schema({name}) required is {_short(required)}; expected "
             f"{want['parameters']['required']}. Hint: only parameters without a default "
             "are required.")


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _dispatch(dispatch: Callable[..., dict], tools: dict, name: Any, arguments: Any,
              what: str) -> dict:
    try:
        got = dispatch(tools, name, arguments)
    except NotImplementedError:
        raise
    except Exception as exc:
        fail(f"dispatch raised {type(exc).__name__} on {what}; expected a failed result, "
             "never an exception. Hint: catch what the tool or the parsing raises and "
             "return it as {'ok': False, ...}.")
    if not isinstance(got, dict) or not isinstance(got.get("ok"), bool):
        fail(f"dispatch returned {_short(got)} on {what}; expected a dict with 'ok' True or "
             "False.")
    return got


def _check_dispatch(dispatch: Callable[..., dict], calls: _Calls, stretch: bool) -> None:
    tools = {"plant": calls.plant, "water": calls.water, "tidy": calls.tidy}
    good = [  # (name, arguments, result, what the call has, the hint when it fails)
        ("plant", {"tree": "olive"}, "planted olive (2 m)", "a dict of arguments",
         "pass the arguments to the tool by keyword"),
        ("plant", '{"tree": "fig", "height_m": 3, "potted": true}',
         "planted fig (3 m, potted)", "a JSON object string",
         "parse a string with json.loads, then pass what it holds by keyword"),
        ("water", {"litres": 2}, "watered 2 l", "an int where a float is expected",
         "JSON has one kind of number: an int is a fine value for a float parameter "
         "(a bool is not)"),
        ("tidy", None, "tidied", "arguments None, for a tool without parameters",
         "None means no arguments at all, the same as {}"),
        ("plant", {"tree": "o" * MAX_STRING_CHARS}, f"planted {'o' * MAX_STRING_CHARS} (2 m)",
         f"a string of exactly {MAX_STRING_CHARS} characters",
         "MAX_STRING_CHARS is the longest string allowed, so it fits"),
    ]
    for name, arguments, result, what, hint in good:
        got = _dispatch(dispatch, tools, name, arguments, f"a valid call with {what}")
        if got != {"ok": True, "result": result}:
            fail(f"dispatch({name!r}, {_short(arguments)}) returned {_short(got)}; expected "
                 f"{{'ok': True, 'result': {_short(result)}}}. Hint: {hint}.")
    hostile = [  # (what, name, arguments, kind, what the message names, hint)
        ("an unknown tool", "dig", {}, "unknown_tool", "plant",
         "look the name up in `tools` first"),
        ("a tool name that is not a string", None, {}, "unknown_tool", "plant",
         "test isinstance(name, str) before using it as a key"),
        ("broken JSON", "plant", '{"tree": "olive"', "invalid_json", "json",
         "json.loads raises ValueError on broken text: catch it"),
        ("a JSON array instead of an object", "plant", '["olive"]', "invalid_json", "object",
         "json.loads can return a list, a number or a string: require a dict"),
        ("a wrong type (42 for a string)", "plant", {"tree": 42}, "bad_arguments", "tree",
         "compare each value's type with the parameter's annotation"),
        ("a bool where an int is expected", "plant", {"tree": "fig", "height_m": True},
         "bad_arguments", "height_m", "isinstance(True, int) is True in Python: rule bools out"),
        ("a float where an int is expected", "plant", {"tree": "fig", "height_m": 2.5},
         "bad_arguments", "height_m", "2.5 is not an int: only a float parameter takes it"),
        ("a bool where a number is expected", "water", {"litres": True}, "bad_arguments",
         "litres", "a bool is not a number for a float parameter either"),
        ("a string where a number is expected", "water", {"litres": "lots"},
         "bad_arguments", "litres", "a float parameter takes an int or a float, nothing else"),
        ("a missing argument", "plant", {"height_m": 3}, "bad_arguments", "tree",
         "every parameter without a default must be present"),
        ("arguments None for a tool that needs one", "plant", None, "bad_arguments", "tree",
         "None means no arguments, so a required one is missing"),
        ("an extra argument", "plant", {"tree": "fig", "colour": "red"}, "bad_arguments",
         "colour", "refuse names the signature does not have, do not drop them silently"),
        ("null for a required argument", "plant", {"tree": None}, "bad_arguments", "tree",
         "None is not a str: null only fits an optional `X | None` parameter"),
        (f"a string over {MAX_STRING_CHARS} characters", "plant",
         {"tree": "o" * (MAX_STRING_CHARS * 10)}, "bad_arguments", "tree",
         "refuse strings longer than MAX_STRING_CHARS before they reach a tool or the prompt"),
        ("a tool that raises", "water", {"litres": 500}, "tool_error", "100 litres",
         "run the tool inside try/except Exception and report what it raised"),
    ]
    if stretch:
        tools = {**tools, "harvest": calls.harvest}
        hostile += [
            ("a list with a non-string item", "harvest", {"crops": ["beans", 7]},
             "bad_arguments", "crops", "check every item of a list[str] argument"),
            ("a string where a list is expected", "harvest", {"crops": "beans"},
             "bad_arguments", "crops", "a str is not a list, though you can iterate over it"),
            ("a number for an optional string", "harvest", {"crops": ["beans"], "note": 5},
             "bad_arguments", "note", "a value for `X | None` that is not None must be an X"),
            ("a misspelt tool name", "plnat", {"tree": "fig"}, "unknown_tool",
             "did you mean 'plant'", "difflib.get_close_matches finds the nearest name"),
        ]
        for arguments, result in (({"crops": ["beans"], "note": None}, "picked beans"),
                                  ({"crops": ["peas", "kale"]}, "picked peas, kale"),
                                  ({"crops": ["peas"], "note": "for soup"},
                                   "picked peas (for soup)")):
            got = _dispatch(dispatch, tools, "harvest", arguments, "a valid list argument")
            if got != {"ok": True, "result": result}:
                fail(f"dispatch('harvest', {arguments}) returned {_short(got)}; expected "
                     f"{{'ok': True, 'result': {result!r}}}. Hint: null is fine for an "
                     "optional `X | None` parameter, and list[str] means a list of strings.")
    for what, name, arguments, kind, named, hint in hostile:
        before = calls.count
        got = _dispatch(dispatch, tools, name, arguments, what)
        if got.get("ok") is not False or got.get("error") != kind:
            fail(f"dispatch on {what} returned {_short(got)}; expected ok False with error "
                 f"{kind!r}. Hint: {hint}.")
        if kind != "tool_error" and calls.count != before:
            fail(f"dispatch ran the tool on {what}; a call with bad arguments must be refused "
                 "before the tool runs.")
        message = got.get("message")
        if not isinstance(message, str) or named.lower() not in message.lower():
            fail(f"dispatch on {what} gave the right error kind but said {_short(message)}; "
                 f"the model needs to see {named!r} in the message to fix its call. Hint: "
                 f"{_NAMES[kind]}")
        if isinstance(message, str) and len(message) > 500:
            fail(f"dispatch on {what} wrote a {len(message)}-character message; keep it under "
                 "500 (do not echo huge arguments back into the prompt).")


@learner_check
def check_ex6(tool_schema: Callable[..., dict], dispatch: Callable[..., dict],
              stretch: bool = False) -> str:
    """Check the schema generator and the dispatcher; `stretch=True` grades the stretch tier
    (lists, optional parameters, a "did you mean" suggestion) on top of the core. A
    dispatcher that passed is kept for the capstone (`my_parts/ex06_dispatch.py`)."""
    calls = _Calls()
    _check_schemas(tool_schema, calls, stretch)
    with dropped_on_failure("dispatch", "exercise 6", KEPT_AS):
        _check_dispatch(dispatch, calls, stretch)
    tier = "stretch" if stretch else "core"
    kept = keep("dispatch", dispatch, "exercise 6", dispatch_passes, stem=KEPT_AS)
    return f"passed: ex06 {tier}: schemas for unseen tools, and every hostile call answered " \
        f"({kept})."


KEPT_AS = "ex06_dispatch"
"""The file in `my_parts/` a dispatcher that passed is kept in (notebook 04 keeps its own,
of another shape, as `dispatch`)."""


def dispatch_passes(dispatch: Callable[..., dict]) -> str:
    """The core dispatcher check alone: what the capstone runs again on a kept copy."""
    _check_dispatch(dispatch, _Calls(), stretch=False)
    return "every hostile call answered"


def reference_dispatch(tools: dict[str, Callable[..., Any]], name: Any,
                       arguments: Any = None) -> dict[str, Any]:
    """vmem's dispatcher with this exercise's contract, on vmem's own argument checks
    (`dispatched`, which know the memory tools' types: str, int, bool, lists and optional
    values, not float): what the capstone uses until the learner's is kept."""
    kind, out = dispatched(tools, name, arguments)
    if kind is None:
        return {"ok": True, "result": out}
    return {"ok": False, "error": kind, "message": out}
