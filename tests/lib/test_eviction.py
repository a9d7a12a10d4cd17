"""Eviction planning on its own: where the queue may be cut, and how far a flush cuts.

`tests/lib/test_context.py` checks the same rules through `MainContext`; these tests pin
the pure functions with hand-made queues and token totals.
"""

from __future__ import annotations

from vmem.eviction import (
    FlushPlan,
    evictable_groups,
    groups,
    leading,
    plan_flush,
    protected,
    run_is_open,
)
from vmem.messages import Message


def call(*call_ids: str) -> Message:
    return Message("assistant", "", tool_calls=[
        {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        for cid in call_ids])


def result(call_id: str) -> Message:
    return Message("tool", f"result {call_id}", tool_call_id=call_id)


QUEUE = [Message("user", "u0"), call("a", "b"), result("a"), result("b"),
         Message("assistant", "reply"), Message("user", "u5"), call("c"), result("c")]


def test_a_tool_call_and_its_results_form_one_group():
    assert groups(QUEUE) == [[0], [1, 2, 3], [4], [5], [6, 7]]


def test_a_tool_message_without_a_call_before_it_stands_alone():
    assert groups([Message("user", "u"), result("x"), result("y")]) == [[0], [1], [2]]


def test_the_newest_user_message_and_the_newest_group_are_protected():
    assert protected(QUEUE) == {5, 6, 7}
    assert protected([]) == set()
    assert evictable_groups(QUEUE) == [[0], [1, 2, 3], [4]]


def test_a_run_is_open_until_every_call_has_its_result():
    assert run_is_open([Message("user", "u"), call("a", "b"), result("a")])
    assert not run_is_open([Message("user", "u"), call("a", "b"), result("a"), result("b")])
    assert not run_is_open([Message("user", "u")])
    assert not run_is_open([])


def test_leading_gives_the_messages_of_the_first_groups_in_order():
    texts = [m.content for m in leading(QUEUE, evictable_groups(QUEUE), 2)]
    assert texts == ["u0", "", "result a", "result b"]


# plan_flush over three one-message groups of 10 tokens each and a fixed 50 tokens; a
# summary costs its length, each message noted as left out of the summary costs 1.

def total_after(count: int, summary: str | None, unsummarized: int) -> int:
    return 50 + 10 * (3 - count) + len(summary or "") + unsummarized


def plan(summaries: dict[int, tuple[str | None, str | None]], *, target: float = 75,
         summary: str | None = None, unsummarized: int = 0) -> tuple[FlushPlan | None, list[int]]:
    """The plan for a budget of 100, and the group counts that summarize was asked for."""
    asked: list[int] = []

    def summarize(count: int) -> tuple[str | None, str | None]:
        asked.append(count)
        return summaries[count]

    found = plan_flush([[0], [1], [2]], summary=summary, unsummarized=unsummarized,
                       total_after=total_after, summarize=summarize, target=target,
                       limit=100)
    return found, asked


def test_the_fewest_groups_that_reach_the_target_go():
    assert plan({1: ("s", None)}) == (FlushPlan(1, "s", None), [1])


def test_nothing_is_planned_when_the_prompt_is_already_at_the_target():
    assert plan({}, target=80) == (None, [])


def test_a_summary_that_grows_past_the_target_evicts_more_and_is_redone():
    # One group out leaves 70, but a 6-character summary makes it 76: a second group goes.
    assert plan({1: ("123456", None), 2: ("123", None)}) == (FlushPlan(2, "123", None), [1, 2])


def test_a_summary_too_long_for_the_budget_counts_as_a_failure():
    found, asked = plan({1: ("x" * 30, None), 3: ("x" * 60, None)})
    assert asked == [1, 3]  # 3 groups out and a 60-character summary come to 110 > 100
    assert found == FlushPlan(1, None, "the new summary is too long for the token budget")


def test_after_a_failure_the_note_on_unsummarized_messages_is_counted():
    # Two groups out would reach 70 <= 71, but noting them as unsummarized makes it 72.
    found, _ = plan({2: (None, "boom")}, target=71, summary="12345678", unsummarized=2)
    assert found == FlushPlan(3, None, "boom")


def test_groups_with_nothing_to_summarize_are_evicted_without_a_summary():
    assert plan({1: (None, None)}) == (FlushPlan(1, None, None), [1])
