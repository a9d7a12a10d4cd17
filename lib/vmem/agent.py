"""The agent loop: the kernel that services a model's memory page faults.

One `Agent.step(user_text)` is one user turn. The policy (a real model, or the scripted and
rule-based stand-ins below) sees the rendered main context and the tool schemas and answers
with text and/or tool calls. Tool calls run in order and their results are appended to the
main context as tool messages, like a blocking `read()` returning before the process goes
on. The policy is called again when a call asked for a heartbeat, when a call failed, or
when a memory-pressure warning fired; `send_message`, plain text, or tool calls without a
heartbeat end the turn; `max_steps` bounds the policy calls of one turn. Every message goes
through `context.append`, so evictions happen inside the loop, and nothing a policy does,
raising included, can crash it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from .errors import ContextOverflowError, VMemError
from .messages import Message
from .tools import MemoryTools, ToolResult

StopReason = Literal["final_message", "max_steps", "error"]


@dataclass
class ToolCall:
    """One tool call a policy asks for; `arguments` is a dict or the raw JSON string."""

    name: str
    arguments: Any = None
    id: str | None = None

    def to_chat(self, call_id: str) -> dict[str, Any]:
        """The call in the Chat Completions shape, arguments as a JSON string."""
        arguments = self.arguments if isinstance(self.arguments, str) else \
            json.dumps(self.arguments if self.arguments is not None else {}, ensure_ascii=False)
        return {"id": call_id, "type": "function",
                "function": {"name": str(self.name), "arguments": arguments}}


@dataclass
class AssistantTurn:
    """What a policy returns for one step: text for the user and/or tool calls."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


@runtime_checkable
class Policy(Protocol):
    """Anything that decides the next assistant turn from the prompt and the tools."""

    def respond(self, messages: list[dict[str, Any]],
                tools: list[dict[str, Any]]) -> AssistantTurn:
        """The next assistant turn for this prompt (Chat Completions messages) and tools."""


@dataclass
class Exchange:
    """One tool call and its result, with the step it ran in (1 = first policy call)."""

    step: int
    call: ToolCall
    result: ToolResult


@dataclass
class Turn:
    """Everything that happened in one `Agent.step`."""

    user: str
    reply: str = ""
    steps: int = 0
    stop_reason: StopReason = "final_message"
    calls: list[Exchange] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)
    error: str | None = None

    def trace(self) -> list[str]:
        """One line per tool call, e.g. `step 1: archival_memory_search {"query": ...}`."""
        lines = []
        for exchange in self.calls:
            status = "ok" if exchange.result.ok else "failed"
            arguments = exchange.call.to_chat("")["function"]["arguments"]
            lines.append(f"step {exchange.step}: {exchange.call.name} {arguments} -> {status}")
        return lines


class Agent:
    """A memory driven by a policy through the memory tools.

    `memory` is a `vmem.Memory` or anything with `.context`, `.recall`, `.archival` and
    `.session_id` (and optionally `.scope` and `.clock`, passed on to the tools).
    """

    def __init__(self, memory: Any, policy: Policy, max_steps: int = 10) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.memory = memory
        self.policy = policy
        self.max_steps = max_steps
        self.context = memory.context
        self.tools = MemoryTools(memory.context, memory.recall, memory.archival,
                                 clock=getattr(memory, "clock", None),
                                 scope=getattr(memory, "scope", None))
        if hasattr(self.context, "set_tools"):  # the schemas are part of every prompt
            self.context.set_tools(self.tools.schemas())
        session_id = getattr(memory, "session_id", None)
        self.turns = 0 if session_id is None else memory.recall.last_turn(session_id)

    def step(self, user_text: str) -> Turn:
        """Run one user turn to its end and report it; never raises for policy failures."""
        self.turns += 1
        turn = Turn(user=user_text)
        first_event = len(self.context.events)
        session_id = getattr(self.memory, "session_id", None)
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
                action = _checked(self.policy.respond(self.context.render(),
                                                      self.tools.schemas()))
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
                result = self._service(call, call_id)
                turn.calls.append(Exchange(step, call, result))
                if result.ok and result.message is not None:
                    sent = result.message
                again = again or result.heartbeat or not result.ok
            if sent is not None or not (again or self._warnings() > warnings_before):
                turn.reply = sent if sent is not None else action.content
                return
        turn.stop_reason = "max_steps"

    def _service(self, call: ToolCall, call_id: str) -> ToolResult:
        """Run one call and append its result; a result too big for the context is
        replaced by a failure saying so, which the model can act on."""
        result = self.tools.call(call.name, call.arguments)
        try:
            self._append_result(result, call_id)
        except ContextOverflowError as error:
            result = self.tools.failure(
                result.name, f"the result does not fit in the main context ({error}). Ask for "
                "less: a narrower query, or fewer words per call.", "too_large")
            self._append_result(result, call_id)
        return result

    def _append_result(self, result: ToolResult, call_id: str) -> None:
        self.context.append(Message(role="tool", content=result.content, name=result.name,
                                    tool_call_id=call_id))

    def _warnings(self) -> int:
        return sum(1 for event in self.context.events if _kind(event) == "warned")


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


def _kind(event: Any) -> str | None:
    return getattr(event, "kind", None) or (event.get("kind") if isinstance(event, dict) else None)


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
_SAVED = re.compile(r"archival record (\d+)")
_RECORD = re.compile(r"\[record (\d+) \|([^\]\n]*)\] ([^\n]*)")
_MESSAGE = re.compile(r"\[message (\d+) \|([^\]\n]*)\] ([^:\n]+): ([^\n]*)")


class RulePolicy:
    """Three honest rules instead of a model, so the demo and chat run offline.

    1. A statement from the user (not a question, three words or more) is saved with
       `archival_memory_insert`, then acknowledged with the record id.
    2. A question triggers `archival_memory_search`, then `conversation_search`, and the
       answer quotes the best stored record (else the best earlier user message) and
       cites it as `[record N]` or `[message N]`. Quarantined records and messages are
       never used.
    3. Anything else (a greeting, a word or two) gets a short plain-text reply.

    It does no reasoning: it quotes what retrieval ranked first, which is enough to show
    the memory working and honest about what it is.
    """

    def respond(self, messages: list[dict[str, Any]],
                tools: list[dict[str, Any]]) -> AssistantTurn:
        """Save a statement, search for a question, or answer from what the searches found."""
        user_text, results, failures = _since_last_user(messages)
        words = re.findall(r"\w+", user_text.lower())
        asking = user_text.rstrip().endswith("?") or (words and words[0] in _QUESTION_WORDS)
        if failures:
            return _say(f"I could not use my memory for that: {failures[-1]}")
        if asking:
            if "archival_memory_search" not in results:
                return _call("archival_memory_search", query=user_text, request_heartbeat=True)
            if "conversation_search" not in results:
                return _call("conversation_search", query=user_text, request_heartbeat=True)
            return _say(_answer(user_text, results))
        if len(words) >= 3:
            if "archival_memory_insert" not in results:
                return _call("archival_memory_insert", content=user_text,
                             request_heartbeat=True)
            saved = _SAVED.search(results["archival_memory_insert"])
            return _say(f"Noted, I saved that to archival memory [record {saved.group(1)}]."
                        if saved else "Noted.")
        return AssistantTurn(content="Hello! Tell me something to remember, or ask me "
                                     "about something you told me.")


def _since_last_user(messages: list[dict[str, Any]]) -> tuple[str, dict[str, str], list[str]]:
    """(latest user text, {tool name: result text}, failure texts) for the current turn."""
    start = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    user_text = messages[start]["content"] if start >= 0 else ""
    names: dict[str, str] = {}
    results: dict[str, str] = {}
    failures: list[str] = []
    for message in messages[start + 1:]:
        for call in message.get("tool_calls") or ():
            names[call["id"]] = call["function"]["name"]
        if message.get("role") == "tool":
            content = message.get("content", "")
            name = names.get(message.get("tool_call_id"), "")
            if content.startswith("[failed"):
                failures.append(content.split("] ", 1)[-1])
            else:
                results[name] = content
    return user_text, results, failures


def _answer(question: str, results: dict[str, str]) -> str:
    records = [(record_id, text) for record_id, head, text
               in _RECORD.findall(results["archival_memory_search"]) if "QUARANTINED" not in head]
    if records:
        record_id, text = records[0]
        return f"From my archival memory: {text} [record {record_id}]"
    for message_id, head, speaker, text in _MESSAGE.findall(results["conversation_search"]):
        if "QUARANTINED" not in head and speaker != "assistant" \
                and text.strip() != question.strip() \
                and not text.rstrip().endswith("?"):
            return f'From our earlier conversation: {speaker} said "{text}" [message {message_id}]'
    return "I could not find anything about that in my memory."


def _call(name: str, **arguments: Any) -> AssistantTurn:
    return AssistantTurn(tool_calls=[ToolCall(name=name, arguments=arguments)])


def _say(text: str) -> AssistantTurn:
    return _call("send_message", message=text)
