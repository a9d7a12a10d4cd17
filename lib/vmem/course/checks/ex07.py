"""Exercise 7's check: the learner's agent loop, run on a real `vmem.Memory` and
`vmem.MemoryTools` with `vmem.ScriptedPolicy` scripts, compared with `vmem.Agent` on the
same scripts.

The contract (stated in the notebook): `run_turn(memory, tools, policy, user_text,
max_steps)` appends the user's message, then asks the policy (`policy.respond(prompt,
schemas)`), appends its answer, runs its tool calls in order and appends each result; it
asks again when a call asked for a heartbeat, when a call failed, or when a memory-pressure
warning fired during the step; it stops on `send_message`, on plain text or on calls that
need no answer, and after `max_steps` policy calls. It returns `(reply, stop)`: the text
sent (or the plain text), and "final_message" or "max_steps". The stretch tier adds "error":
a policy that raises or returns something malformed ends the turn, never the program.

Compared per script: the reply, the stop reason, how many times the policy was asked, and
the roles and tool names of the messages the turn put into the context, in order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...agent import Agent, ScriptedPolicy
from ...clock import StepClock
from ...errors import VMemError
from ...memory import Memory
from ...tools import MemoryTools
from ...turn import AssistantTurn, ToolCall
from ..lesson_checks.l05 import kernel_loop
from ..parts import dropped_on_failure, keep
from .common import describe, fail, learner_check

QUESTION = "What did I say about the allotment?"
FACT = "The allotment is plot 14, behind the old mill."


def _hb(name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    return name, {**arguments, "request_heartbeat": True}


class _Raises:
    """A policy that fails on its second call, as a model API can."""

    def __init__(self) -> None:
        self.played = 0

    def respond(self, messages: list, tools: list) -> AssistantTurn:
        """Ask for a search with a heartbeat, then time out."""
        self.played += 1
        if self.played > 1:
            raise TimeoutError("the model API timed out")
        return AssistantTurn(tool_calls=[ToolCall("archival_memory_search", {
            "query": "allotment", "request_heartbeat": True})])


class _Malformed:
    """A policy that answers with a dict instead of an AssistantTurn."""

    played = 0

    def respond(self, messages: list, tools: list) -> Any:
        """Answer with the wrong type."""
        self.played += 1
        return {"content": "hello"}


# (what the script shows, the actions, max_steps, max_tokens, the mistake it catches)
SCRIPTS: list[tuple[str, list[Any], int, int, str]] = [
    ("chaining three calls with heartbeats",
     [_hb("archival_memory_insert", content=FACT),
      _hb("archival_memory_search", query="allotment plot"),
      ("send_message", {"message": "Plot 14 [record 1]."})], 10, 4000,
     "call the policy again whenever a result asked for a heartbeat"),
    ("a call without a heartbeat, which ends the turn",
     [("archival_memory_insert", {"content": FACT}), "never read"], 10, 4000,
     "stop when no call asked for a heartbeat, failed, or raised a warning"),
    ("a failed call the model must retry",
     [("archival_memory_search", {"qury": "allotment"}),
      _hb("archival_memory_search", query="allotment"),
      ("send_message", {"message": "Nothing saved yet."})], 10, 4000,
     "a failed result (result.ok is False) must wake the policy even without a heartbeat"),
    ("a runaway model", [_hb("conversation_search", query="allotment")] * 20, 4, 4000,
     "count policy calls and stop at max_steps with stop 'max_steps'"),
    ("plain text instead of a tool call", ["Hello! What shall I remember?"], 10, 4000,
     "an answer without tool calls is the reply: return its text"),
    ("two calls in one answer, the second send_message",
     [[_hb("archival_memory_insert", content=FACT),
       ("send_message", {"message": "Saved [record 1]."})], "never read"], 10, 4000,
     "run every call of one answer in order, and stop once send_message ran"),
    ("a pressure warning that must wake the loop",
     [("archival_memory_insert", {"content": FACT + " " + "It has raspberries. " * 30}),
      ("send_message", {"message": "Saved, and I will tidy my memory."})], 10, 2270,
     "compare the context's warning count (events of kind 'warned') before and after "
     "the step's calls"),
]
STRETCH_SCRIPTS: list[tuple[str, Callable[[], Any], str]] = [
    ("a script that runs out mid-turn",
     lambda: ScriptedPolicy([_hb("archival_memory_search", query="allotment")]),
     "wrap the policy call in try/except and stop with 'error'"),
    ("a policy that times out on its second call", _Raises,
     "wrap the policy call in try/except and stop with 'error'"),
    ("a policy that returns a dict", _Malformed,
     "check isinstance(answer, AssistantTurn) and stop with 'error' when it is not"),
]


def _fresh(max_tokens: int) -> tuple[Memory, MemoryTools]:
    memory = Memory.open(":memory:", max_tokens=max_tokens, clock=StepClock())
    tools = MemoryTools(memory.context, memory.recall, memory.archival, clock=memory.clock,
                        scope=memory.scope)
    memory.context.set_tools(tools.schemas())
    return memory, tools


def _shape(memory: Memory) -> list[tuple[str, str | None]]:
    return [(m.role, m.name) for m in memory.context.messages
            if m.role in ("user", "assistant", "tool")]


def _reference(make: Callable[[], Any], max_steps: int, max_tokens: int) -> dict[str, Any]:
    memory, _ = _fresh(max_tokens)
    policy = make()
    turn = Agent(memory, policy, max_steps=max_steps).step(QUESTION)
    result = {"reply": turn.reply, "stop": turn.stop_reason, "asked": policy.played,
              "shape": _shape(memory), "warned": sum(e.kind == "warned"
                                                       for e in memory.context.events)}
    memory.close()
    return result


def _learner(run_turn: Callable[..., Any], make: Callable[[], Any], max_steps: int,
             max_tokens: int, what: str, hint: str) -> dict[str, Any]:
    memory, tools = _fresh(max_tokens)
    policy = make()
    try:
        got = run_turn(memory, tools, policy, QUESTION, max_steps)
    except NotImplementedError:
        raise
    except Exception as exc:
        fail(f"run_turn raised {describe(exc)} on {what}; expected the turn to "
             f"end with a stop reason. Hint: {hint}.")
    finally:
        shape = _shape(memory)
        memory.close()
    if not (isinstance(got, tuple) and len(got) == 2):
        fail(f"run_turn returned {got!r:.80} on {what}; expected a (reply, stop) tuple.")
    return {"reply": got[0], "stop": got[1], "asked": policy.played, "shape": shape}


def _compare(got: dict[str, Any], want: dict[str, Any], what: str, hint: str) -> None:
    labels = {"stop": "stop reason", "asked": "number of policy calls", "reply": "reply",
              "shape": "messages (role, tool name) in the context"}
    for key in ("stop", "asked", "reply", "shape"):
        if got[key] != want[key]:
            shown, expected = repr(got[key]), repr(want[key])
            if key == "shape":
                shown = f"{len(got[key])} messages ending {got[key][-2:]!r}"
                expected = f"{len(want[key])} ending {want[key][-2:]!r}"
            fail(f"on {what}, run_turn gave {labels[key]} {shown:.120}; vmem.Agent gives "
                 f"{expected:.120}. Hint: {hint}.")


@learner_check
def check_ex7(run_turn: Callable[..., Any], stretch: bool = False) -> str:
    """Run the learner's loop and `vmem.Agent` on the same scripts; `stretch=True` also
    grades a policy that fails (raises, runs out, answers garbage). A loop that passed is
    kept for the capstone (`my_parts/ex07_run_turn.py`)."""
    with dropped_on_failure("run_turn", "exercise 7", KEPT_AS):
        line = _grade(run_turn, stretch)
    return f"{line} ({keep('run_turn', run_turn, 'exercise 7', loop_passes, stem=KEPT_AS)})."


KEPT_AS = "ex07_run_turn"
"""The file in `my_parts/` a loop that passed is kept in."""


def loop_passes(run_turn: Callable[..., Any]) -> str:
    """The core check alone: what the capstone runs again on a kept copy."""
    return _grade(run_turn, stretch=False)


def _grade(run_turn: Callable[..., Any], stretch: bool) -> str:
    for what, actions, max_steps, max_tokens, hint in SCRIPTS:
        def make(actions: list[Any] = actions) -> ScriptedPolicy:
            return ScriptedPolicy(actions)
        want = _reference(make, max_steps, max_tokens)
        if what.startswith("a pressure") and not want["warned"]:  # pragma: no cover
            raise VMemError("the pressure script no longer raises a warning: resize it")
        _compare(_learner(run_turn, make, max_steps, max_tokens, what, hint), want, what, hint)
    if stretch:
        for what, factory, hint in STRETCH_SCRIPTS:
            want = _reference(factory, 10, 4000)
            _compare(_learner(run_turn, factory, 10, 4000, what, hint), want, what, hint)
    tier = "stretch" if stretch else "core"
    count = len(SCRIPTS) + (len(STRETCH_SCRIPTS) if stretch else 0)
    return f"passed: ex07 {tier}: your loop matches vmem.Agent on {count} scripts"


def reference_run_turn(memory: Any, tools: Any, policy: Any, user_text: str,
                       max_steps: int = 10) -> tuple[str, str]:
    """vmem's loop with this exercise's contract (`vmem.course.lesson_checks.l05`'s
    `kernel_loop`): what the capstone uses until the learner's is kept."""
    reply = kernel_loop(memory, tools, policy, user_text, max_steps)
    return ("", "max_steps") if reply is None else (reply, "final_message")
