"""An agent made of the learner's parts: the few adapters that put them behind the
interfaces a loop meets.

The learner's loop (notebook 05) needs a `memory` whose `context` can `append` a
`Message`, `render` the prompt and list its `events`, and `tools` that can `call(name,
arguments)` and give their `schemas()`. The learner's other parts have the shapes the
lessons gave them: context functions over a queue of chat dicts (02), a `TinyArchive`
that cites its hits (03), and a dispatcher over plain functions that answers a bad call
with text starting "Error: " (04). The classes here only translate between the two:

- `DispatchedTools`: tools a loop calls through a learner's dispatcher;
- `PartsContext`: notebook 02's functions as a main context;
- `PartsAgent`: all of them together, one JSON file per agent, so a second session can
  answer from the first;
- `ReadingPolicy`: a scripted model that makes one call and then answers with what the
  call returned, so an answer is only ever what memory gave back.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..agent import AssistantTurn, ScriptedPolicy, ToolCall
from ..clock import Clock
from ..messages import Message
from ..outcomes import ToolResult

ERROR = "Error: "
Functions = dict[str, Callable[..., Any]]


@dataclass(frozen=True)
class CallResult:
    """What a loop reads of one call that went through a learner's dispatcher."""

    name: str
    content: str
    ok: bool
    heartbeat: bool = False
    message: str | None = None


def learner_parts(names: tuple[str, ...] | None = None,
                  folder: Path | None = None) -> SimpleNamespace:
    """The parts an agent is made of (all that notebooks 02 to 05 keep, or `names`): each
    the learner's from `my_parts/`, checked again, else vmem's stand-in; one line each."""
    from .lesson_checks import l02, l03, l04, l05
    from .parts import load

    found = SimpleNamespace()
    for lesson in (l02, l03, l04, l05):
        for name, (fallback, check) in lesson.KEPT.items():
            if names is None or name in names:
                setattr(found, name, load(name, lesson.ORIGIN, fallback, check, folder))
    return found


class DispatchedTools:
    """Tools a loop calls through `dispatch(functions, name, arguments_json)`.

    `request_heartbeat` is the kernel's argument, not the tool's: it is taken out before
    the call and set on the result when the call went through. A text result starting
    "Error: " is a failed call (notebook 04's dispatcher), as is `{"ok": False, "message":
    ...}` (exercise 6's, whose `{"ok": True, "result": ...}` is unwrapped); a `ToolResult`
    (from a wrapped `MemoryTools` method) is passed on as it is."""

    def __init__(self, functions: Functions, dispatch: Callable[[Functions, str, str], Any],
                 schemas: Callable[[], list[dict[str, Any]]]) -> None:
        self.functions, self.dispatch, self._schemas = functions, dispatch, schemas

    def schemas(self) -> list[dict[str, Any]]:
        return self._schemas()

    def call(self, name: str, arguments: dict[str, Any] | str) -> CallResult | ToolResult:
        heartbeat, sent = False, arguments
        if isinstance(arguments, dict):
            sent = {key: value for key, value in arguments.items()
                    if key != "request_heartbeat"}
            heartbeat = arguments.get("request_heartbeat") is True
        text = sent if isinstance(sent, str) else json.dumps(sent)
        out = self.dispatch(self.functions, name, text)
        if isinstance(out, dict) and isinstance(out.get("ok"), bool):  # exercise 6's shape
            out = out["result"] if out["ok"] else f"{ERROR}{out.get('message')}"
        if isinstance(out, ToolResult):
            return dataclasses.replace(out, heartbeat=heartbeat and out.ok)
        content = str(out)
        ok = not content.startswith(ERROR)
        message = sent.get("message") if ok and name == "send_message" and \
            isinstance(sent, dict) else None
        return CallResult(name, content, ok, heartbeat and ok, message)


def memory_tool_functions(tools: Any, names: tuple[str, ...]) -> Functions:
    """`MemoryTools` methods as plain functions a learner's dispatcher can run: the same
    signatures (so the dispatcher checks the arguments), each returning its `ToolResult`."""

    def plain(method: Callable[..., ToolResult]) -> Callable[..., ToolResult]:
        @functools.wraps(method)
        def run(**arguments: Any) -> ToolResult:
            return method(**arguments)
        return run

    return {name: plain(getattr(tools, name)) for name in names}


class PartsContext:
    """Notebook 02's functions as a main context: a queue of chat dicts, a summary, and
    the events a loop reads (`kind == "warned"` when `append_message` warned).

    When a message would not fit in `max_tokens`, `evict_oldest` first brings the queue
    down to half and `fold_summary` folds what left into the summary (a flush before the
    append, as `MainContext` does, so a result is never evicted as it arrives)."""

    def __init__(self, system: str, max_tokens: int, parts: SimpleNamespace,
                 summary: str | None = None, queue: list[dict[str, Any]] | None = None) -> None:
        self.system, self.max_tokens, self.parts = system, max_tokens, parts
        self.summary, self.queue = summary, list(queue or [])
        self.events: list[SimpleNamespace] = []

    def tokens(self) -> int:
        return sum(self.parts.approx_tokens(message["content"]) for message in self.queue)

    def append(self, message: Message) -> None:
        chat = message.to_chat()
        chat["content"] = chat.get("content") or ""
        if self.tokens() + self.parts.approx_tokens(chat["content"]) > self.max_tokens:
            evicted = self.parts.evict_oldest(self.queue, self.max_tokens // 2)
            self.summary = self.parts.fold_summary(self.summary, evicted)
            self.events.append(SimpleNamespace(kind="evicted", count=len(evicted)))
        if self.parts.append_message(self.queue, chat, self.max_tokens):
            self.events.append(SimpleNamespace(kind="warned"))

    def render(self) -> list[dict[str, Any]]:
        return self.parts.render_prompt(self.system, self.summary, self.queue,
                                        self.max_tokens)


class PartsAgent:
    """An agent of the learner's parts, kept in one JSON file between sessions.

    `parts` holds approx_tokens, render_prompt, append_message, evict_oldest and
    fold_summary (02), TinyArchive (03), tool_schema and dispatch (04) and tiny_loop (05).
    Opening the file starts the next session: the summary and the queue come back, and
    the archive is rebuilt by inserting each saved fact again with its session, turn and
    time (the agent keeps its own list of what it saved, so any archive with the lesson's
    `insert` and `search` will do). `close()` writes them back."""

    SYSTEM = "You are an assistant with a long-term memory. Cite what you read from it."

    def __init__(self, parts: SimpleNamespace, path: str | Path, clock: Clock,
                 max_tokens: int = 400) -> None:
        self.parts, self.path, self.clock = parts, Path(path), clock
        saved = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.session = saved.get("session", 0) + 1
        self.turn = 0
        self.context = PartsContext(self.SYSTEM, max_tokens, parts, saved.get("summary"),
                                    saved.get("queue"))
        self.facts: list[dict[str, Any]] = saved.get("facts", [])
        replayed = deque(datetime.fromisoformat(fact["time"]) for fact in self.facts)
        self._stamp = clock()

        def archive_clock() -> datetime:  # the saved times first, then the agent's clock
            self._stamp = replayed.popleft() if replayed else clock()
            return self._stamp

        self.archive = parts.TinyArchive(clock=archive_clock)
        for fact in self.facts:
            self.archive.insert(fact["text"], session=fact["session"], turn=fact["turn"])
        self.tools = DispatchedTools(self._functions(), parts.dispatch, self._schemas)

    def _functions(self) -> Functions:
        def archival_memory_insert(content: str) -> str:
            """Save a fact to long-term memory; returns its record id, to cite.

            Args:
                content: The fact, one self-contained sentence.
            """
            number = self.archive.insert(content, session=self.session, turn=self.turn)
            self.facts.append({"text": content, "session": self.session, "turn": self.turn,
                               "time": self._stamp.isoformat()})
            return f"saved as record {number}"

        def archival_memory_search(query: str) -> str:
            """Search long-term memory; returns the best facts, each with its citation.

            Args:
                query: What to look for.
            """
            return "\n".join(self.archive.search(query, k=2)) or "nothing found"

        def send_message(message: str) -> str:
            """Reply to the user; ends the turn.

            Args:
                message: The reply.
            """
            return "sent"

        return {f.__name__: f for f in (archival_memory_insert, archival_memory_search,
                                        send_message)}

    def _schemas(self) -> list[dict[str, Any]]:
        return [self.parts.tool_schema(function) for function in self.tools.functions.values()]

    def step(self, policy: Any, user_text: str) -> str | None:
        """One user turn through the learner's loop; the reply, None out of steps."""
        self.turn += 1
        return self.parts.tiny_loop(self, self.tools, policy, user_text)

    def close(self) -> None:
        """Write the session's end state: what the next session opens."""
        self.path.write_text(json.dumps({
            "session": self.session, "summary": self.context.summary,
            "queue": self.context.queue, "facts": self.facts}, ensure_ascii=False))


class ReadingPolicy:
    """A scripted model for one kind of turn: first `name(argument=the user's message)`
    with a heartbeat, then `send_message` of `lead` and the first line that call returned.
    Like a model that answers only from what its memory tools gave back."""

    def __init__(self, name: str, argument: str, lead: str) -> None:
        self.name, self.argument, self.lead = name, argument, lead
        self.called = False

    def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if not self.called:
            self.called = True
            asked = _newest(messages, "user")
            return AssistantTurn(tool_calls=[ToolCall(self.name, {
                self.argument: asked, "request_heartbeat": True})])
        self.called = False
        returned = (_newest(messages, "tool") or "nothing").splitlines()[0]
        return AssistantTurn(tool_calls=[ToolCall("send_message", {
            "message": f"{self.lead} {returned}"})])


def _newest(messages: list[dict[str, Any]], role: str) -> str:
    """The content of the newest message with `role` in a rendered prompt ("" if none)."""
    return next((m["content"] for m in reversed(messages) if m["role"] == role), "")


def model_answers(turn: Any) -> list[Any]:
    """What the model answered in a `vmem.Agent` turn, step by step, as a `ScriptedPolicy`
    script: each step's calls as (name, arguments) pairs, and a plain-text reply last."""
    steps: dict[int, list[tuple[str, Any]]] = {}
    for exchange in turn.calls:
        steps.setdefault(exchange.step, []).append((exchange.call.name,
                                                    exchange.call.arguments))
    answers: list[Any] = [steps[step] for step in sorted(steps)]
    if not any(exchange.call.name == "send_message" for exchange in turn.calls):
        answers.append(turn.reply)
    return answers


def replay(turns: list[Any], loop: Callable[..., Any],
           dispatch: Callable[[Functions, str, str], Any], memory: Any) -> list[Any]:
    """Play the model's answers of `turns` (a `vmem.Agent` run) again on `memory` through
    `loop` and `dispatch`, with the real memory tools; the replies, one per turn. Each turn
    is stamped with its session and number first, as `Agent.step` does, so saved facts
    cite the same turns."""
    from ..tools import TOOL_NAMES, MemoryTools

    real = MemoryTools(memory.context, memory.recall, memory.archival, clock=memory.clock)
    memory.context.set_tools(real.schemas())
    tools = DispatchedTools(memory_tool_functions(real, TOOL_NAMES), dispatch, real.schemas)
    replies = []
    for number, turn in enumerate(turns, 1):
        real.session_id, real.turn = memory.session_id, number
        replies.append(loop(memory, tools, ScriptedPolicy(model_answers(turn)), turn.user))
    return replies


def without_call_ids(prompt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A rendered prompt with the tool-call ids left out: two kernels may number their
    calls differently and still leave the same prompt."""
    def strip(message: dict[str, Any]) -> dict[str, Any]:
        kept = {key: value for key, value in message.items() if key != "tool_call_id"}
        if message.get("tool_calls"):
            kept["tool_calls"] = [{key: value for key, value in call.items() if key != "id"}
                                  for call in message["tool_calls"]]
        return kept
    return [strip(message) for message in prompt]
