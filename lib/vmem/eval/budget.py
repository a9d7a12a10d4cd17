"""Evidence in budget: does a question's evidence reach a prompt of N tokens?

The lesson's claim, measured without an LLM. For each question (asked after the whole
conversation, as in LoCoMo) and each prompt budget, two prompts are assembled:

- `fifo`: a plain FIFO window, the most recent turns that fit the budget;
- `virtual/<ranker>`: virtual context, i.e. core memory text, the queue a `MainContext`
  of that budget still holds (the whole conversation while it fits; else the newest turns
  its last flush kept), and turns paged in by searching the conversation with the
  question, best hit first, each paged turn costing its cited line (`Message.cite()`), all
  within the same budget (`metrics.virtual_window`).

The value is the mean fraction of the question's evidence turns inside the prompt, per
category and overall, in percent. Tokens are counted with the default `ApproxCounter`;
a turn costs `vmem.tokens.chat_tokens`, the price `MainContext` budgets with (role,
speaker name and text). The question itself and tool schemas are left out of both
prompts alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..tokens import ApproxCounter, Counter, chat_tokens
from .locomo import Conversation
from .metrics import MeanTable, fifo_window, fraction_in, virtual_window
from .runner import CATEGORY_ORDER, RankConfig, ingest_turns

BUDGETS = (1000, 2000, 4000, 8000, 16000)


def budget_label(budget: int) -> str:
    """1000 -> "1k", 1500 -> "1500"."""
    return f"{budget // 1000}k" if budget % 1000 == 0 else str(budget)


def core_text(conversation: Conversation) -> str:
    """The core memory a memory agent would hold for this conversation without an LLM:
    who is talking (names are all it can know for sure)."""
    names = " and ".join(conversation.speakers)
    return ("persona: I keep track of a long conversation and search my memory before "
            f"answering.\nhuman: {names} talk to each other over many sessions.")


def evidence_in_budget(conversations: Sequence[Conversation],
                       budgets: Sequence[int] = BUDGETS,
                       rankers: Sequence[str] = ("dialog/bm25",),
                       counter: Counter | None = None,
                       order: Sequence[str] = CATEGORY_ORDER
                       ) -> dict[str, dict[str, dict[str, float]]]:
    """`{"fifo" or "virtual/<ranker>": {category or "overall": {"1k": percent, ...}}}`."""
    counter = counter or ApproxCounter()
    tables = {"fifo": MeanTable(), **{f"virtual/{name}": MeanTable() for name in rankers}}
    for conversation in conversations:
        turns = conversation.messages()
        position = {m.meta["dia_id"]: i for i, m in enumerate(turns)}
        costs = [chat_tokens(m.to_chat(), counter) for m in turns]
        page_costs = [counter.count(m.cite()) for m in turns]
        core_tokens = counter.count(core_text(conversation))
        starts = {budget: fifo_window(costs, budget) for budget in budgets}
        searchers = {name: ingest_turns(turns, RankConfig.parse(name)) for name in rankers}
        for question in conversation.questions:
            evidence = [position[dia_id] for dia_id in question.evidence]
            if not evidence:
                continue
            category = question.category_name
            tables["fifo"].add(category, {
                budget_label(b): fraction_in(range(starts[b], len(turns)), evidence)
                for b in budgets})
            for name, searcher in searchers.items():
                ranked = searcher.rank(question.question, len(turns))
                tables[f"virtual/{name}"].add(category, {
                    budget_label(b): fraction_in(virtual_window(
                        costs, page_costs, ranked, b, core_tokens=core_tokens), evidence)
                    for b in budgets})
    return {name: table.as_dict(order=order) for name, table in tables.items()}
