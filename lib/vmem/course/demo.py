"""The lesson's scripted agent, played on a real `Memory`: the trace `python -m vmem demo`
prints and notebook 05 replays.

Session 1 (a new agent) follows the lesson's reference build, with no LLM:

1. the user states three facts and the agent saves each with `archival_memory_insert`
   (every insert returns a record id to cite);
2. small talk fills the main context until a flush evicts the oldest turns into recall
   memory and folds them into the running summary;
3. a follow-up question about an evicted fact is answered with `archival_memory_search`,
   and the answer cites the record id, session and turn it came from.

A later session on the same file ("what did I tell you last time?") searches recall for
the earlier conversation and archival memory for the facts, and cites both.

The agent is scripted: its tool calls are fixed, but every answer is written from what
this turn's tool calls returned (the record ids, the hits, the guard's verdicts, read as data
from the agent's `TurnState`), so it never claims more than memory returned and never
quotes a quarantined hit. Time comes from a `StepClock` (session n starts n - 1 weeks after session
1), so the same steps give byte-identical output.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, TextIO

from ..agent import Action, Agent, AssistantTurn, ScriptedPolicy, ToolCall, Turn, TurnState
from ..clock import StepClock
from ..context import Event
from ..memory import Memory
from ..outcomes import ShownHit
from ..text import one_line
from ..tools import ToolResult
from ..turn import Exchange

DEMO_BUDGET = 2210
"""The demo's default `max_tokens`: the tool schemas alone take more than half of it (1,360
of 2,210; it was 1,760 before the three correcting tools added about 400 tokens)."""
DEMO_WARN_AT = 0.8
DEMO_FLUSH_TO = 0.75
DEMO_START = datetime(2024, 3, 4, 9, 0, tzinfo=timezone.utc)

FACTS = (
    "Ana's sister Maya lives in Lisbon.",
    "Ana is allergic to peanuts.",
    "Ana's thesis on tidal energy is due on 14 March.",
)
FIRST_MESSAGE = ("Hi, I'm Ana. Please remember three things: my sister Maya lives in Lisbon, "
                 "I'm allergic to peanuts, and my thesis on tidal energy is due on 14 March.")
QUESTION = "By the way, where does my sister live again?"
RETURN_QUESTION = "Hi, it's Ana again. What did I tell you last time?"

SMALL_TALK: tuple[tuple[str, str], ...] = (
    ("This morning I repotted the basil and the two tomato plants on the balcony. It took "
     "longer than planned because the old pots had cracked, so I had to find new ones in "
     "the cellar, and then I spent far too long watching the pigeons argue over the "
     "railing while the coffee went cold.",
     "A balcony garden and a pigeon show: a good start to the day."),
    ("The bus was late again, so I walked the long way past the old market. The fish "
     "stalls were already packing up, but the bakery on the corner still had warm rye "
     "bread, and the baker told me about the new oven they bought after the old one "
     "finally gave up last winter.", "Warm rye bread makes up for a late bus."),
    ("After lunch I tried a new recipe with lentils, cumin, garlic and lemon, the one a "
     "colleague keeps talking about. It came out better than expected, although I burned "
     "the first batch of onions and the whole kitchen still smells of cumin, which my "
     "flatmate says is not a complaint.", "Lentils with cumin and lemon sound good."),
    ("In the afternoon I read two chapters of a detective novel set on a night ferry "
     "across the North Sea. The captain is clearly hiding something about the missing "
     "cargo, the cook keeps lying about where he was at midnight, and I suspect the quiet "
     "passenger in cabin nine.", "My money is on the quiet passenger too."),
    ("Then I cleaned my bike properly for the first time in months: new brake pads, "
     "oiled chain, pumped tyres, and I finally fixed the bell that only rang on every "
     "second try. The forecast promises sun for the whole weekend, so I want to ride out "
     "along the river to the old mill.", "Sunny rides along the river, then."),
    ("My neighbour brought over a bag of apples from her garden, far more than two "
     "people can eat in a week. She also gave me her grandmother's cake recipe written "
     "on a stained index card, so I might bake tomorrow evening if I can find a tin big "
     "enough for it.", "An heirloom apple cake is a fine plan."),
    ("I also started a jigsaw puzzle of a lighthouse at dusk, a thousand pieces. The "
     "edges went quickly, but most of the sky is exactly the same shade of purple, and "
     "the cat has already stolen two pieces and hidden them somewhere under the sofa, "
     "as far as I can tell.", "A purple sky and a thieving cat: a tough combination."),
    ("Later a friend called about a film festival next month with short documentaries "
     "about rivers, bridges and the people who maintain them. She wants us to go on the "
     "opening night, there is a talk by a bridge engineer afterwards, and tickets are "
     "apparently selling out fast.", "That festival sounds worth booking early."),
)
"""What fills the context in session 1: chatty turns, answered in plain text."""


@dataclass
class Scene:
    """One user turn of the script: the user's text, the agent's fixed actions, and
    optionally a function that writes the final answer from this turn's tool results."""

    user: str
    actions: Sequence[Action] = ()
    answer: Callable[[Sequence[ToolResult]], str] | None = None


class ScenePolicy:
    """Plays one `Scene`: its fixed actions in order, then `send_message(answer(results))`.

    A `StatePolicy`: the answer is written from the turn's structured results."""

    def __init__(self, scene: Scene) -> None:
        self.script = ScriptedPolicy(scene.actions)
        self.answer = scene.answer

    def decide(self, state: TurnState) -> AssistantTurn:
        """The scene's scripted actions, then the answer written from this turn's results."""
        if self.answer is None or self.script.played < len(self.script.actions):
            return self.script.respond(state.messages, state.tools)
        return AssistantTurn(tool_calls=[ToolCall("send_message",
                                                  {"message": self.answer(state.results)})])


# -- the script ---------------------------------------------------------------------


def _insert(fact: str, heartbeat: bool = False) -> ToolCall:
    arguments: dict[str, Any] = {"content": fact}
    if heartbeat:
        arguments["request_heartbeat"] = True
    return ToolCall("archival_memory_insert", arguments)


def facts_scene() -> Scene:
    """Turn 1: three facts, three inserts in one response, then a reply citing them."""
    inserts = [_insert(fact, heartbeat=index == len(FACTS) - 1)
               for index, fact in enumerate(FACTS)]
    return Scene(FIRST_MESSAGE, [inserts], answer=_confirm_saved)


def question_scene() -> Scene:
    """The follow-up: the fact is no longer in view, so the agent searches archival memory."""
    search = ToolCall("archival_memory_search",
                      {"query": "sister lives", "request_heartbeat": True})
    return Scene(QUESTION, [search], answer=_answer_from_archival)


def return_scene() -> Scene:
    """A later session: find the last conversation in recall, then the facts in archival."""
    recall = ToolCall("conversation_search", {"query": "please remember things",
                                              "roles": ["user"], "request_heartbeat": True})
    archival = ToolCall("archival_memory_search",
                        {"query": "Ana sister allergic thesis", "request_heartbeat": True})
    return Scene(RETURN_QUESTION, [recall, archival], answer=_answer_last_time)


# -- answers written from the results, like a model reading its search results -----


def usable_hits(results: Sequence[ToolResult]) -> list[ShownHit]:
    """Every search hit of these results that the guard did not quarantine, in the order
    shown."""
    return [hit for result in results for hit in result.hits if not hit.quarantined]


def citation(hit: ShownHit) -> str:
    """The citation an answer appends, e.g. `[record 3, session 1, turn 2]`."""
    return f"[{hit.kind} {hit.id}, session {_known(hit.session_id)}, turn {_known(hit.turn)}]"


def _known(value: int | None) -> str:
    return "?" if value is None else str(value)


def _confirm_saved(results: Sequence[ToolResult]) -> str:
    saved = [result.record_id for result in results if result.record_id is not None]
    listed = ", ".join(f"[record {number}]" for number in saved)
    return f"Saved {len(saved)} facts to archival memory: {listed}." if saved else \
        "I could not save that."


def _answer_from_archival(results: Sequence[ToolResult]) -> str:
    records = [hit for hit in usable_hits(results) if hit.kind == "record"]
    if not records:
        return "I could not find that in my memory."
    best = records[0]
    return f"You told me: {best.text} {citation(best)}"


def _answer_last_time(results: Sequence[ToolResult]) -> str:
    hits = usable_hits(results)
    said = next((hit for hit in hits if hit.kind == "message"), None)
    records = [hit for hit in hits if hit.kind == "record"]
    if said is None and not records:
        return "I could not find an earlier conversation in my memory."
    parts = []
    if said is not None:
        parts.append(f"In session {_known(said.session_id)} you told me "
                     f"\"{one_line(said.text, 50)}\" {citation(said)}.")
    if records:
        parts.append("From archival memory: " + "; ".join(
            f"{hit.text.rstrip('.')} [record {hit.id}]" for hit in records) + ".")
    return " ".join(parts)


# -- playing it ---------------------------------------------------------------------


def open_demo_memory(path: str = ":memory:", budget: int = DEMO_BUDGET) -> Memory:
    """The demo agent's memory at `path`, with a clock that starts session n at
    `DEMO_START` plus n - 1 weeks."""
    clock = StepClock(DEMO_START + timedelta(weeks=Memory.count_sessions(path)))
    return Memory.open(path, max_tokens=budget, warn_at=DEMO_WARN_AT, flush_to=DEMO_FLUSH_TO,
                       clock=clock)


def play(memory: Memory, on_turn: Callable[[Turn], None] | None = None) -> list[Turn]:
    """Play the lesson's script on `memory` and return the agent's turns.

    A memory with earlier sessions gets the "what did I tell you last time?" scene; a new
    one gets the lesson's trace: facts, small talk until the first flush (or until the
    small talk runs out, with a large budget), then the follow-up question. `on_turn` sees
    each turn as it ends (the command line prints it then).
    """
    agent = Agent(memory, ScenePolicy(Scene("")))
    turns: list[Turn] = []

    def run(scene: Scene) -> Turn:
        agent.policy = ScenePolicy(scene)
        turn = agent.step(scene.user)
        turns.append(turn)
        if on_turn is not None:
            on_turn(turn)
        return turn

    if len(memory.sessions()) > 1:
        run(return_scene())
        return turns
    run(facts_scene())
    flushed = False
    for user, reply in SMALL_TALK:
        if flushed:
            break
        turn = run(Scene(user, [reply]))
        flushed = any(event.kind == "evicted" for event in turn.events)
    run(question_scene())
    return turns


# -- printing -----------------------------------------------------------------------

ARGUMENT_CHARS = 60
"""Longest string argument shown in a trace line; longer ones are cut with "…"."""



def format_call(step: int, name: str, arguments: Any, outcome: str) -> str:
    """`step 1  archival_memory_insert {"content": "…"} -> record 1`, strings clipped."""
    if isinstance(arguments, dict):
        shown = json.dumps({key: one_line(value, ARGUMENT_CHARS) if isinstance(value, str)
                            else value for key, value in arguments.items()},
                           ensure_ascii=False)
    else:
        shown = one_line(str(arguments), ARGUMENT_CHARS)
    return f"step {step}  {name} {shown}" + (f" -> {outcome}" if outcome else "")


def _outcome(exchange: Exchange) -> str:
    result = exchange.result
    if not result.ok:
        return "failed: " + one_line(f"{result.name}: {result.reason}", 80)
    if result.record_id is not None:
        return f"record {result.record_id}"
    if result.page is not None:
        ids = ", ".join(str(number) for number in result.page.ids)
        kind = "records" if result.name == "archival_memory_search" else "messages"
        return f"{result.page.total} found: {kind if len(result.page.ids) > 1 else kind[:-1]} " \
            f"{ids}" if ids else "nothing found"
    return ""


def format_turn(turn: Turn, label: str, width: int = 100) -> list[str]:
    """The lines the demo prints for one turn: `label` and the user's message, then
    `step_lines`, then the error if the turn ended with one."""
    lines = [f"{label} user: {one_line(turn.user, width - len(label) - 7)}"]
    lines += ["  " + line for line in step_lines(turn, width)]
    if turn.error:
        lines.append(f"  error: {turn.error}")
    return lines


def step_lines(turn: Turn, width: int = 100, answer: bool = True) -> list[str]:
    """The terminal style of the turn's timeline (`Turn.rows()`): one line per tool call,
    with its arguments and outcome, and one per memory event (warning, flush, summary), in
    the order they happened, then a plain-text answer. Long arguments are clipped; the
    answer is shown whole, or left out with `answer=False`."""
    lines = []
    for row in turn.rows():
        if row.kind == "result" and row.exchange is not None:
            line = _call_line(row.exchange, answer)
        else:
            line = _event_line(row.event, width) if row.event is not None else None
        if line:
            lines.append(line)
    if answer and turn.reply and not any(exchange.call.name == "send_message"
                                         for exchange in turn.calls):
        lines.append(f"step {turn.steps}  (plain text) {turn.reply}")
    return lines


def _call_line(exchange: Exchange, answer: bool) -> str | None:
    arguments = exchange.call.arguments
    if exchange.call.name == "send_message" and exchange.result.ok:
        if not answer:
            return None
        return f"step {exchange.step}  send_message {json.dumps(arguments, ensure_ascii=False)}"
    return format_call(exchange.step, exchange.call.name, arguments, _outcome(exchange))


def _event_line(event: Event, width: int) -> str | None:
    if event.kind == "warned":
        return (f"! memory pressure at {event.tokens - event.size} tokens: a warning joins "
                "the queue")
    if event.kind == "evicted":
        ids = event.message_ids
        return (f"! flush: the {len(ids)} oldest messages (ids {ids[0]}-{ids[-1]}, "
                f"{event.size} tokens) evicted to recall; the prompt is now {event.tokens}")
    if event.kind == "summarized":
        return "! summary: " + "\n      ".join(one_line(line, width - 6)
                                                for line in event.detail.splitlines())
    if event.kind == "summary_failed":
        return f"! summary failed: {event.detail}"
    if event.kind == "clipped":
        return f"! too big for the context ({event.size} tokens): shown clipped, kept whole " \
               "in recall"
    return None


def describe_budget(memory: Memory) -> str:
    """Where the budget goes before any message, e.g. for the demo's header."""
    parts = memory.context.overview()
    fixed = parts["total"] - parts["messages"]
    context = memory.context
    summary = f", summary {parts['summary']}" if parts["summary"] else ""
    return (f"budget {parts['max_tokens']} tokens, {fixed} taken before any message (system "
            f"{parts['system']}, core {parts['core']}{summary}, status {parts['status']}, tool "
            f"schemas {parts['tools']}); warning at {context.warn_at:.0%}, flush down to "
            f"{context.flush_to:.0%}")


def run_demo(path: str = ":memory:", budget: int = DEMO_BUDGET,
             out: TextIO | None = None) -> int:
    """`python -m vmem demo`: play the script on the agent at `path` and print its trace."""
    out = out or sys.stdout
    with open_demo_memory(path, budget) as memory:
        where = "memory only" if path in ("", ":memory:") else path
        print(f"vmem demo: the lesson's scripted agent, no LLM (session {memory.session_id}, "
              f"{where})", file=out)
        shown = 0

        def show(turn: Turn) -> None:
            nonlocal shown
            if not shown:
                print(describe_budget(memory), file=out)
            shown += 1
            print("", *format_turn(turn, f"[s{memory.session_id} t{shown}]"), sep="\n",
                  file=out)

        turns = play(memory, on_turn=show)
        if memory.session_id == 1 and not any(event.kind == "evicted" for turn in turns
                                              for event in turn.events):
            print(f"\n(no flush: {budget} tokens still had room; try a smaller --budget)",
                  file=out)
        context = memory.context.overview()
        print(f"\nend of session {memory.session_id}: {len(memory.recall)} messages in "
              f"recall, {len(memory.archival)} records in archival, "
              f"{context['in_context']} messages in context ({context['total']}/"
              f"{context['max_tokens']} tokens)", file=out)
        print("run again with the same --db to start the next session" if where != "memory only"
              else "add --db PATH, then run again, to see a second session recall this one",
              file=out)
    return 0
