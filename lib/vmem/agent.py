"""The agent loop: the kernel that services a model's memory page faults.

One `Agent.step(user_text)` is one user turn. The policy (a real model, or the scripted and
rule-based stand-ins below) answers with text and/or tool calls. Tool calls run in order
and their results are appended to the main context as tool messages, like a blocking
`read()` returning before the process goes on. The policy is called again when a call
asked for a heartbeat, when a call failed, or when a memory-pressure warning fired;
`send_message`, plain text, or tool calls without a heartbeat end the turn; `max_steps`
bounds the policy calls of one turn. Every message goes through `context.append`, so
evictions happen inside the loop, and a message too big for the context (a user's long
paste, a large tool result) is shown clipped there and kept whole in recall. Nothing a
policy does, raising included, can crash the loop, and what the context or recall refuses
(a message over recall's size limit) ends the turn with `stop_reason` "error" and the
error's text.

Two kinds of policy, two protocols:

- `Policy.respond(messages, tools)` is how a model is asked: the rendered prompt (Chat
  Completions messages) and the tool schemas, nothing else. `OpenAIPolicy`,
  `ScriptedPolicy` and users' policies are these; they see exactly what a model sees.
- `StatePolicy.decide(state)` is for code that stands in for a model (`RulePolicy`, the
  demo's scenes). Code should not read the model's text: the wording is for the model and
  may change. So the agent hands it a typed `TurnState`: the user's message, the step, the
  prompt and the schemas, and the structured `ToolResult`s of this turn (ids, hits, the
  guard's verdicts) whose tool messages are still in the prompt, so that it knows no more
  than a model would. The agent calls `decide` when the policy has it (a `StatePolicy`
  protocol check), else `respond`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .errors import VMemError
from .messages import Message
from .protocols import AgentMemory
from .text import clip
from .tools import MemoryTools, ToolResult
from .turn import AssistantTurn, Exchange, StopReason, ToolCall, TraceRow, Turn, trace_rows

__all__ = ["Action", "Agent", "AnyPolicy", "AssistantTurn", "Exchange", "Policy", "RulePolicy",
           "ScriptedPolicy", "StatePolicy", "StopReason", "ToolCall", "TraceRow", "Turn",
           "TurnState", "trace_rows"]


@runtime_checkable
class Policy(Protocol):
    """Anything that decides the next assistant turn from the prompt and the tools, as a
    model does."""

    def respond(self, messages: list[dict[str, Any]],
                tools: list[dict[str, Any]]) -> AssistantTurn:
        """The next assistant turn for this prompt (Chat Completions messages) and tools."""


@dataclass(frozen=True)
class TurnState:
    """The turn in progress, as data, for a policy that is code rather than a model.

    `user` is the user's message, `step` the policy call being made (1 first), `results`
    this turn's tool results whose messages are still in the prompt, oldest first (a flush
    inside the turn can evict an early one, and then a model would not see it either),
    `messages` and `tools` the prompt and the schemas a model would be given.
    """

    user: str
    step: int
    results: tuple[ToolResult, ...]
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]


@runtime_checkable
class StatePolicy(Protocol):
    """A policy that decides from a `TurnState` (data) instead of the prompt's text."""

    def decide(self, state: TurnState) -> AssistantTurn:
        """The next assistant turn, given what this turn's tool calls returned."""


AnyPolicy = Policy | StatePolicy


class Agent:
    """A memory driven by a policy through the memory tools.

    `memory` is a `vmem.Memory` or anything that satisfies `vmem.protocols.AgentMemory`
    (a context, the two stores, the session, the scope and the clock its tools use).
    """

    def __init__(self, memory: AgentMemory, policy: AnyPolicy, max_steps: int = 10) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.memory = memory
        self.policy = policy
        self.max_steps = max_steps
        self.context = memory.context
        self.tools = MemoryTools(memory.context, memory.recall, memory.archival,
                                 clock=memory.clock, scope=memory.scope)
        self.context.set_tools(self.tools.schemas())  # the schemas are part of every prompt
        session_id = memory.session_id
        self.turns = 0 if session_id is None else memory.recall.last_turn(session_id)

    def step(self, user_text: str) -> Turn:
        """Run one user turn to its end and report it; never raises for policy failures."""
        self.turns += 1
        turn = Turn(user=user_text)
        first_event = len(self.context.events)
        session_id = self.memory.session_id
        self.tools.session_id, self.tools.turn = session_id, self.turns
        try:
            self.context.append(Message(role="user", content=user_text,
                                        session_id=session_id, turn=self.turns))
            self._run(turn)
        except VMemError as error:
            turn.stop_reason, turn.error = "error", f"{type(error).__name__}: {error}"
        turn.events = list(self.context.events[first_event:])
        return turn

    def _run(self, turn: Turn) -> None:
        for step in range(1, self.max_steps + 1):
            turn.steps = step
            try:
                action = _checked(self._decide(turn, step))
            except Exception as error:  # a failing policy ends the turn, never the program
                turn.stop_reason, turn.error = "error", f"{type(error).__name__}: {error}"
                return
            warnings_before = self._warnings()
            calls = [(call, call.id or f"call_{self.turns}_{step}_{index}")
                     for index, call in enumerate(action.tool_calls, 1)]
            self.context.append(Message(
                role="assistant", content=action.content,
                tool_calls=[call.to_chat(call_id) for call, call_id in calls] or None))
            if not calls:
                turn.reply = action.content
                return
            again, sent = False, None
            for call, call_id in calls:
                result, message_id = self._service(call, call_id)
                turn.calls.append(Exchange(step, call, result, message_id))
                if result.message is not None:
                    sent = result.message
                again = again or result.heartbeat or not result.ok
            if sent is not None or not (again or self._warnings() > warnings_before):
                turn.reply = sent if sent is not None else action.content
                return
        turn.stop_reason = "max_steps"

    def _decide(self, turn: Turn, step: int) -> Any:
        """Ask the policy: a `StatePolicy` gets the turn as data, any other the prompt."""
        messages, tools = self.context.render(), self.tools.schemas()
        if isinstance(self.policy, StatePolicy):
            queued = {message.id for message in self.context.messages}
            results = tuple(exchange.result for exchange in turn.calls
                            if exchange.message_id in queued)
            return self.policy.decide(TurnState(turn.user, step, results, messages, tools))
        return self.policy.respond(messages, tools)

    def _service(self, call: ToolCall, call_id: str) -> tuple[ToolResult, int | None]:
        """Run one call and append its result: (the result, its tool message's id). A
        result too big for the context is kept whole in recall and shown clipped, with a
        note telling the model to ask for less (`vmem.clipping`)."""
        result = self.tools.call(call.name, call.arguments)
        return result, self.context.append(Message(role="tool", content=result.content,
                                                   name=result.name, tool_call_id=call_id)).id

    def _warnings(self) -> int:
        return sum(1 for event in self.context.events if event.kind == "warned")


def _checked(action: Any) -> AssistantTurn:
    """The policy's answer, or a TypeError saying how it is malformed."""
    if not isinstance(action, AssistantTurn):
        raise TypeError(f"a policy must return an AssistantTurn, got {type(action).__name__}")
    if not isinstance(action.content, str):
        raise TypeError(f"AssistantTurn.content must be a string, "
                        f"got {type(action.content).__name__}")
    for call in action.tool_calls:
        if not isinstance(call, ToolCall):
            raise TypeError(f"AssistantTurn.tool_calls must hold ToolCall objects, "
                            f"got {type(call).__name__}")
    return action


Action = str | ToolCall | AssistantTurn | tuple | list


class ScriptedPolicy:
    """Plays a fixed list of actions, one per step: for tests, notebooks and the demo.

    Each action is plain text (a str), one tool call (a `ToolCall`, or a `(name, arguments)`
    tuple), a list of tool calls made in one response, or a whole `AssistantTurn`.
    `seen` keeps every prompt it was shown, so a test can check what the model would see.
    """

    def __init__(self, actions: Sequence[Action]) -> None:
        self.actions = [_as_turn(action) for action in actions]
        self.played = 0
        self.seen: list[list[dict[str, Any]]] = []

    def respond(self, messages: list[dict[str, Any]],
                tools: list[dict[str, Any]]) -> AssistantTurn:
        """The next scripted action; a VMemError once the script is used up."""
        if self.played >= len(self.actions):
            raise VMemError(f"the script has no action left (all {len(self.actions)} played); "
                            "add actions or end the turn with send_message")
        self.seen.append(messages)
        self.played += 1
        return self.actions[self.played - 1]


def _as_turn(action: Action) -> AssistantTurn:
    if isinstance(action, AssistantTurn):
        return action
    if isinstance(action, str):
        return AssistantTurn(content=action)
    if isinstance(action, list):
        return AssistantTurn(tool_calls=[_as_call(item) for item in action])
    return AssistantTurn(tool_calls=[_as_call(action)])


def _as_call(item: ToolCall | tuple) -> ToolCall:
    if isinstance(item, ToolCall):
        return item
    if isinstance(item, tuple) and len(item) == 2:
        return ToolCall(name=item[0], arguments=item[1])
    raise TypeError(f"a scripted tool call is a ToolCall or a (name, arguments) tuple, "
                    f"got {item!r}")


# -- the rule policy ------------------------------------------------------------------

_QUESTION_WORDS = frozenset({
    "what", "who", "whom", "whose", "when", "where", "why", "how", "which", "do", "does",
    "did", "is", "are", "was", "were", "can", "could", "will", "would", "should", "have",
    "has", "remind", "tell"})


class RulePolicy:
    """Three honest rules instead of a model, so the demo and chat run offline.

    1. A statement from the user (not a question, three words or more) is saved with
       `archival_memory_insert`, then acknowledged with the record id.
    2. A question triggers `archival_memory_search`, then `conversation_search`, and the
       answer quotes the best stored record (else the best earlier user message) and
       cites it as `[record N]` or `[message N]`. Hits the guard quarantined are never used.
    3. Anything else (a greeting, a word or two) gets a short plain-text reply.

    It does no reasoning: it quotes what retrieval ranked first, which is enough to show
    the memory working and honest about what it is. It is a `StatePolicy`: it reads the
    structured results of the turn (record ids, hits and their verdicts), never the text
    the model would read.
    """

    def decide(self, state: TurnState) -> AssistantTurn:
        """Save a statement, search for a question, or answer from what the searches found."""
        words = re.findall(r"\w+", state.user.lower())
        asking = state.user.rstrip().endswith("?") or (words and words[0] in _QUESTION_WORDS)
        failures = [result for result in state.results if not result.ok]
        if failures:
            return _say(f"I could not use my memory for that: {failures[-1].name}: "
                        f"{failures[-1].reason}")
        results = {result.name: result for result in state.results}
        if asking:
            if "archival_memory_search" not in results:
                return _call("archival_memory_search", query=state.user, request_heartbeat=True)
            if "conversation_search" not in results:
                return _call("conversation_search", query=state.user, request_heartbeat=True)
            return _say(_answer(state.user, results))
        if len(words) >= 3:
            if "archival_memory_insert" not in results:
                return _call("archival_memory_insert", content=state.user,
                             request_heartbeat=True)
            saved = results["archival_memory_insert"].record_id
            return _say(f"Noted, I saved that to archival memory [record {saved}]."
                        if saved is not None else "Noted.")
        return AssistantTurn(content="Hello! Tell me something to remember, or ask me "
                                     "about something you told me.")


QUOTE_CHARS = 1_000
"""The most characters `RulePolicy` quotes of one hit (a long paste is found whole, and
`send_message` takes at most `MAX_STRING_CHARS`)."""


def _answer(question: str, results: dict[str, ToolResult]) -> str:
    """The best usable hit, quoted (clipped to `QUOTE_CHARS`) and cited: a record, else an
    earlier user message that is neither this question nor another one. Quarantined hits
    are never quoted."""
    for hit in results["archival_memory_search"].hits:
        if not hit.quarantined:
            return f"From my archival memory: {clip(hit.text, QUOTE_CHARS, show_length=True)} " \
                   f"[record {hit.id}]"
    for hit in results["conversation_search"].hits:
        if not hit.quarantined and hit.speaker != "assistant" \
                and hit.text.strip() != question.strip() and not hit.text.rstrip().endswith("?"):
            return f"From our earlier conversation: {hit.speaker} said " \
                   f'"{clip(hit.text, QUOTE_CHARS, show_length=True)}" [message {hit.id}]'
    return "I could not find anything about that in my memory."


def _call(name: str, **arguments: Any) -> AssistantTurn:
    return AssistantTurn(tool_calls=[ToolCall(name=name, arguments=arguments)])


def _say(text: str) -> AssistantTurn:
    return _call("send_message", message=text)
