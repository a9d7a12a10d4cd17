"""Notebook 05's checks: the learner's heartbeat decision, then the loop built on it.

- `wants_another_step(results, warned) -> bool` is the kernel's decision after one step's
  tool calls ran: call the model again or end the turn. `check_decision` plays unseen
  steps (each rule alone, then rules together) through `vmem.Agent`, each on a fresh
  memory, hands the learner the same `ToolResult`s and the same "a warning fired" flag,
  and compares the answer with what the Agent did (did it call the model a second time?).
- `tiny_loop(memory, tools, policy, user_text, max_steps)` is one user turn, returning the
  reply (None when `max_steps` ran out). `check_loop` plays scripts the notebook does not
  show (`ScriptedPolicy`) through it and through `vmem.Agent`, each on a fresh memory, and
  compares the reply, the number of model calls and the prompt left behind.

Each prints one line, as every lesson check does, and returns the part the rest of the
notebook uses: the learner's when it passed, else vmem's (`wants_another_step` below, the
rule `Agent` applies, and `kernel_loop`, which matches `Agent` over any memory and tools).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from ...agent import Agent, ScriptedPolicy
from ...clock import StepClock
from ...memory import Memory
from ...messages import Message
from ...outcomes import ToolResult
from ...tools import MemoryTools
from ..checks.common import calling, fail
from .common import use

ORIGIN = "notebook 05"  # where a kept part was written (vmem.course.parts)

Loop = Callable[..., Any]
Decision = Callable[[list[ToolResult], bool], Any]

# --- the decision -------------------------------------------------------------------


def wants_another_step(results: Sequence[ToolResult], warned: bool) -> bool:
    """vmem's answer, the rule `Agent` applies after a step's calls ran: a send_message that
    went through ends the turn; else a heartbeat, a failure or a new warning wakes the
    model."""
    if any(result.message is not None for result in results):
        return False
    return warned or any(result.heartbeat or not result.ok for result in results)


_ORCHARD = ("Teo's orchard has twelve pear trees along the north wall, planted by his "
            "grandmother in 1961; the two nearest the gate are Conference pears, the rest "
            "an old local variety nobody can name, and every October the whole street comes "
            "to help with the harvest before the first frost.")
_SAVE = ("archival_memory_insert", {"content": "Teo grows pears."})
_SAVE_AND_WAKE = ("archival_memory_insert", {"content": "Teo grows pears.",
                                             "request_heartbeat": True})
_LOOK_AND_WAKE = ("archival_memory_search", {"query": "pears", "request_heartbeat": True})
_FAILS = ("core_memory_append", {"label": "orchard", "content": "pears"})  # no such block
_SEND = ("send_message", {"message": "Noted, pears."})
_BIG_SAVE = ("archival_memory_insert", {"content": _ORCHARD})

# (the calls of one answer, a warning fires during the step, what vmem.Agent does:
#  True = calls the model again, what it tests)
DECISIONS: tuple[tuple[list[Any], bool, bool, str], ...] = (
    ([_SAVE_AND_WAKE], False, True, "a call that asks for a heartbeat wakes the model"),
    ([_SAVE], False, False, "a call without a heartbeat ends the turn"),
    ([_FAILS], False, True, "a failed call wakes the model, so it can fix the call"),
    ([_BIG_SAVE], True, True, "a memory-pressure warning during the step wakes the model"),
    ([_SEND], False, False, "send_message ends the turn"),
    ([_SAVE_AND_WAKE, _SEND], False, False,
     "send_message ends the turn even when another call asked for a heartbeat"),
    ([_SEND, _LOOK_AND_WAKE], False, False,
     "send_message ends the turn wherever it stands among the calls"),
    ([("send_message", {"message": "Noted.", "request_heartbeat": True})], False, True,
     "a send_message that failed (it takes no heartbeat argument) sent nothing, so it wakes "
     "the model like any failed call"),
    ([_SAVE_AND_WAKE, _SAVE], False, True,
     "one heartbeat among the calls is enough, even when a later call has none"),
    ([_SAVE, _LOOK_AND_WAKE], False, True,
     "one heartbeat among the calls is enough, even when an earlier call has none"),
    ([_FAILS, _SAVE], False, True,
     "a failed call wakes the model even when a later call went through"),
    ([_SAVE, _SAVE], False, False, "calls without heartbeats end the turn, however many"),
    ([_FAILS, _SEND], False, False, "send_message ends the turn even after a failed call"),
    ([_BIG_SAVE, _SEND], True, False,
     "send_message ends the turn even when a memory-pressure warning fired"),
)
_NEXT = "What else should I keep about the orchard?"  # the second answer, when asked for
_ASKER = "Please keep a note of Teo's pear trees."


class _Watched:
    """A scripted model that notes the prompt's tokens and warnings each time it is asked."""

    def __init__(self, memory: Memory, script: list[Any]) -> None:
        self.memory, self.policy = memory, ScriptedPolicy(script)
        self.seen: list[tuple[int, int]] = []

    def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        self.seen.append(_gauge(self.memory))
        return self.policy.respond(messages, tools)


def _gauge(memory: Memory) -> tuple[int, int]:
    """(the prompt's tokens, the warnings so far)."""
    warned = sum(1 for event in memory.context.events if event.kind == "warned")
    return memory.context.tokens(), warned


def _play(calls: list[Any], budget: int) -> tuple[tuple[ToolResult, ...], bool, bool]:
    """One answer with `calls` through `vmem.Agent`: (its step's results, whether a warning
    fired during the step, whether the Agent called the model again)."""
    with Memory.open(":memory:", max_tokens=budget, clock=StepClock()) as memory:
        model = _Watched(memory, [calls, _NEXT])
        turn = Agent(memory, model, max_steps=2).step(_ASKER)
        (_, before), (_, after) = model.seen[0], (model.seen[1:] or [_gauge(memory)])[0]
        results = tuple(exchange.result for exchange in turn.calls if exchange.step == 1)
        return results, after > before, model.policy.played > 1


def _pressure_budget(calls: list[Any]) -> int:
    """A budget whose warning line lies halfway through the step's calls, measured on a
    roomy memory first, so that the case holds however long the tool schemas grow."""
    with Memory.open(":memory:", max_tokens=1_000_000, clock=StepClock()) as memory:
        model = _Watched(memory, [calls])
        Agent(memory, model, max_steps=1).step(_ASKER)
        (start, _), (end, _) = model.seen[0], _gauge(memory)
        return round((start + end) / 2 / memory.context.warn_at)


@cache
def decision_steps() -> tuple[tuple[tuple[ToolResult, ...], bool, bool, str], ...]:
    """Each case played through `vmem.Agent`: (results, warned, called again, what)."""
    steps = []
    for calls, pressure, _, what in DECISIONS:
        budget = _pressure_budget(calls) if pressure else 8000
        steps.append((*_play(calls, budget), what))
    return tuple(steps)


def _shown(results: Sequence[ToolResult]) -> str:
    return "[" + ", ".join(
        f"{result.name}(ok={result.ok}, heartbeat={result.heartbeat}"
        + (f", message={result.message!r}" if result.message is not None else "") + ")"
        for result in results) + "]"


def _check_decision(decide: Decision) -> str:
    for results, warned, again, what in decision_steps():
        call = f"wants_another_step({_shown(results)}, warned={warned})"
        with calling(call):
            got = decide(list(results), warned)
        if not isinstance(got, bool):
            fail(f"{what}: {call} returned {got!r:.60}; return True (call the model again) "
                 "or False (end the turn)")
        if got != again:
            did = "called the model again" if again else "ended the turn"
            fail(f"{what}: {call} returned {got}, but vmem.Agent {did}")
    return f"your decision matches vmem.Agent on all {len(DECISIONS)} unseen steps"


def check_decision(decide: Decision) -> Decision:
    """Print one line about the learner's `wants_another_step`; return it when it passed,
    else vmem's (`wants_another_step` above), which the loop then calls."""
    return use("heartbeat decision", decide, wants_another_step, _check_decision)


# --- the loop -------------------------------------------------------------------------

_BEES = "Ana keeps bees on the roof of the old mill in Braga."

# (script, max_steps, budget, what it tests)
CASES: tuple[tuple[list[Any], int, int, str], ...] = (
    ([("archival_memory_insert", {"content": _BEES, "request_heartbeat": True}),
      ("archival_memory_search", {"query": "bees mill", "request_heartbeat": True}),
      ("send_message", {"message": "On the old mill's roof [record 1]."})],
     10, 4000, "heartbeats chain three steps"),
    ([("core_memory_append", {"label": "hobbies", "content": "bees"}),
      ("core_memory_append", {"label": "human", "content": "Keeps bees."}),
      ("send_message", {"message": "Noted."})],
     10, 4000, "a failed call wakes the model so it can fix the call"),
    ([("conversation_search", {"query": "zebra", "request_heartbeat": True})] * 20,
     4, 4000, "a model that never stops is stopped by max_steps"),
    ([("archival_memory_insert", {"content": _BEES}), ("send_message", {"message": "Late."})],
     10, 4000, "a call without a heartbeat ends the turn"),
    (["Bees are lovely."], 10, 4000, "plain text ends the turn"),
    ([[("archival_memory_insert", {"content": _BEES}),
       ("archival_memory_search", {"query": "bees", "request_heartbeat": True})],
      ("send_message", {"message": "Found it [record 1]."})],
     10, 4000, "the calls of one answer run in order (the search finds the insert)"),
    ([[("send_message", {"message": "Saved."}),
       ("archival_memory_insert", {"content": _BEES, "request_heartbeat": True})],
      "never played"],
     10, 4000, "send_message ends the turn, after the other calls of its answer ran"),
    ([("archival_memory_insert", {"content": _BEES}), ("send_message", {"message": "Saved."})],
     10, 2200, "a memory-pressure warning during a step wakes the model"),
)
USER = "Please remember this: I keep bees on the roof of the old mill."


def agent_loop(memory: Memory, tools: MemoryTools, policy: Any, user_text: str,
               max_steps: int = 10) -> str | None:
    """vmem's loop with the learner's signature: `Agent.step` (which builds its own
    `MemoryTools` on the same memory) and its reply, None when it ran out of steps."""
    turn = Agent(memory, policy, max_steps=max_steps).step(user_text)
    return None if turn.stop_reason == "max_steps" else turn.reply


def kernel_loop(memory: Any, tools: Any, policy: Any, user_text: str,
                max_steps: int = 10) -> str | None:
    """vmem's loop with the learner's signature, over any memory and tools of the shapes
    the lesson uses (`memory.context.append/render/events`, `tools.call/schemas`), so it
    also stands in for the learner's loop in an agent made of the learner's parts."""
    context = memory.context
    context.append(Message(role="user", content=user_text))
    for step in range(1, max_steps + 1):
        warned = sum(1 for event in context.events if event.kind == "warned")
        action = policy.respond(context.render(), tools.schemas())
        calls = [(call, call.id or f"call_1_{step}_{i}")
                 for i, call in enumerate(action.tool_calls, 1)]
        context.append(Message(role="assistant", content=action.content, tool_calls=[
            call.to_chat(call_id) for call, call_id in calls] or None))
        if not calls:
            return action.content
        results = []
        for call, call_id in calls:
            results.append(tools.call(call.name, call.arguments))
            context.append(Message(role="tool", content=results[-1].content,
                                   name=results[-1].name, tool_call_id=call_id))
        warned = sum(1 for event in context.events if event.kind == "warned") > warned
        if not wants_another_step(results, warned):
            sent = [result.message for result in results if result.message is not None]
            return sent[-1] if sent else action.content
    return None


def fresh(budget: int = 4000) -> tuple[Memory, MemoryTools]:
    """An empty in-memory agent memory and its tools, schemas counted in the budget, and
    saved facts stamped as turn 1 of the memory's session (as `Agent.step` stamps them)."""
    memory = Memory.open(":memory:", max_tokens=budget, clock=StepClock())
    tools = MemoryTools(memory.context, memory.recall, memory.archival, clock=memory.clock)
    tools.session_id, tools.turn = memory.session_id, 1
    memory.context.set_tools(tools.schemas())
    return memory, tools


def _check_loop(loop: Loop) -> str:
    for script, max_steps, budget, what in CASES:
        ours, tools = fresh(budget)
        policy = ScriptedPolicy(script)
        with calling(f"tiny_loop on a script where {what}"):
            reply = loop(ours, tools, policy, USER, max_steps)
        theirs, _ = fresh(budget)
        reference = ScriptedPolicy(script)
        expected = agent_loop(theirs, None, reference, USER, max_steps)
        if policy.played != reference.played:
            fail(f"{what}: your loop called the model {policy.played} times, vmem.Agent "
                 f"{reference.played}")
        if reply != expected:
            fail(f"{what}: your loop replied {reply!r:.80}, vmem.Agent {expected!r:.80}")
        if ours.context.render() != theirs.context.render():
            fail(f"{what}: the prompt after your loop differs from vmem.Agent's (a tool "
                 "result missing, out of order, or a message too many)")
        ours.close()
        theirs.close()
    return f"your loop matches vmem.Agent on all {len(CASES)} unseen scripts"


def check_loop(loop: Loop) -> Loop:
    """Print one line about the learner's `tiny_loop` (built on whichever decision
    `check_decision` returned); return it when it passed, else `kernel_loop`, which the
    rest of the notebook calls."""
    return use("loop", loop, kernel_loop, _check_loop, keep="tiny_loop", origin=ORIGIN)


KEPT = {"tiny_loop": (kernel_loop, _check_loop)}
"""The parts this notebook keeps for later ones: name -> (vmem's stand-in, its check)."""
