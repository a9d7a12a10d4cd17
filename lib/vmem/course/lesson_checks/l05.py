"""Notebook 05's check of the learner's agent loop.

The learner writes `tiny_loop(memory, tools, policy, user_text, max_steps)`: one user
turn, returning the reply (None when `max_steps` ran out). `check_loop` plays scripts the
notebook does not show (`ScriptedPolicy`) through it and through `vmem.Agent`, each on a
fresh memory, and compares the reply, the number of model calls and the prompt left
behind. It prints one line, as every lesson check does, and returns the loop the rest of
the notebook uses: the learner's when it passed, else `agent_loop` (vmem's `Agent`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...agent import Agent, ScriptedPolicy
from ...clock import StepClock
from ...memory import Memory
from ...tools import MemoryTools
from ..checks.common import calling, fail
from .common import use

Loop = Callable[..., Any]
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
    """Print one line about the learner's `tiny_loop`; return it when it passed, else
    `agent_loop`, which the rest of the notebook calls."""
    return use("Agent loop", loop, agent_loop, _check_loop)
