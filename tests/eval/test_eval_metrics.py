"""Metric functions on hand-worked examples."""

from __future__ import annotations

import pytest

from vmem.eval.analysis import analyze, stem
from vmem.eval.errors import DatasetError
from vmem.eval.metrics import (
    MeanTable,
    fifo_window,
    fraction_in,
    queue_window,
    recall_at_k,
    virtual_window,
)


def test_recall_at_k_counts_the_fraction_of_evidence_in_the_top_k():
    ranked = ["D1:4", "D2:1", "D1:1", "D3:3"]
    assert recall_at_k(ranked, ["D1:1", "D3:3"], 2) == 0.0
    assert recall_at_k(ranked, ["D1:1", "D3:3"], 3) == 0.5
    assert recall_at_k(ranked, ["D1:1", "D3:3"], 10) == 1.0
    assert recall_at_k(ranked, ["D9:9"], 4) == 0.0


def test_recall_at_k_accepts_units_that_stand_for_several_turns():
    summaries = [("D2:1", "D2:2"), ("D1:1", "D1:2", "D1:3")]
    assert recall_at_k(summaries, ["D1:2", "D2:2", "D3:1"], 1) == pytest.approx(1 / 3)
    assert recall_at_k(summaries, ["D1:2", "D2:2", "D3:1"], 2) == pytest.approx(2 / 3)


def test_recall_needs_evidence_and_a_positive_k():
    with pytest.raises(DatasetError, match="drop questions"):
        recall_at_k(["D1:1"], [], 5)
    with pytest.raises(DatasetError, match="at least 1"):
        recall_at_k(["D1:1"], ["D1:1"], 0)


def test_fifo_window_keeps_the_newest_turns_that_fit():
    costs = [5, 3, 4, 2]
    assert fifo_window(costs, 6) == 2        # 2 + 4 fit, 3 more would make 9
    assert fifo_window(costs, 9) == 1        # 2 + 4 + 3
    assert fifo_window(costs, 100) == 0
    assert fifo_window(costs, 1) == 4        # not even the last turn fits
    assert fraction_in(range(2, 4), [0, 3]) == 0.5


def test_virtual_window_fills_core_then_the_queue_then_paged_hits():
    costs = [5, 3, 4, 2, 2]
    page_costs = [8, 6, 7, 5, 5]          # a paged hit also pays for its citation header
    # budget 20: core 3 -> room 17; flush target 0.5 * 20 - 3 = 7. Queue: 5, +3, +4 = 12,
    # +2 = 14, +2 = 16 <= 17, so all five turns are queued. Hits 4 (queued), 0 (queued)
    # and 2 add nothing; the whole conversation fits, so nothing is missing.
    assert virtual_window(costs, page_costs, [4, 0, 2, 1], 20, core_tokens=3) == {0, 1, 2, 3, 4}
    # budget 14: room 11, flush target 4. Turn 2 overflows (12): turns 0 and 1 are evicted
    # -> queue [2] (4); turns 3 and 4 join -> queue [2, 3, 4] (8). The best hit, 0, costs 8
    # and does not fit (16 > 11): a flush evicts the queue down to the target (0 + 8 > 4,
    # so all of it), hit 0 is paged in (8); hit 1 (6) no longer fits and is skipped.
    assert virtual_window(costs, page_costs, [0, 1], 14, core_tokens=3) == {0}
    assert virtual_window(costs, page_costs, [], 14, core_tokens=3) == {2, 3, 4}
    # budget 16: room 13, target 5. Turns 0-2 fit (12); turn 3 overflows (14): turns 0, 1
    # and 2 are evicted -> queue [3, 4] (4). Hit 3 is queued, hit 1 fits (10) and is paged,
    # hit 0 (8) does not fit and, with a page already in, causes no flush: it is skipped.
    assert virtual_window(costs, page_costs, [3, 1, 0, 4], 16, core_tokens=3) == {1, 3, 4}
    assert virtual_window(costs, page_costs, [0], 3, core_tokens=3) == set()


def test_queue_window_keeps_everything_until_a_flush_then_the_newest():
    costs = [5, 3, 4, 2, 2]
    assert queue_window(costs, 16, 8) == 0            # 16 tokens: all fit, none evicted
    assert queue_window(costs, 11, 4) == 2            # turn 2 overflows: flush to 4 tokens
    assert queue_window(costs, 11, 0) == 2            # the newest turn always stays
    assert queue_window([9, 9, 9], 10, 5) == 2


def test_a_conversation_that_fits_the_budget_is_never_evicted():
    """Virtual context holds everything a FIFO window holds when the whole chat fits,
    whatever search ranks, like a MainContext that never had to flush."""
    costs = [7, 1, 9, 4, 4, 6, 2]
    page_costs = [cost + 5 for cost in costs]
    for budget in range(sum(costs) + 3, sum(costs) + 40):
        for ranked in ([], [6, 5], list(range(7))):
            inside = virtual_window(costs, page_costs, ranked, budget, core_tokens=3)
            assert inside == set(range(len(costs))), (budget, ranked)


def test_mean_table_reports_percent_per_category_and_overall():
    table = MeanTable()
    table.add("temporal", {"recall@5": 1.0, "recall@10": 1.0})
    table.add("temporal", {"recall@5": 0.0, "recall@10": 0.5})
    table.add("multi-hop", {"recall@5": 0.5, "recall@10": 1.0})
    assert table.as_dict(order=["multi-hop", "temporal"]) == {
        "multi-hop": {"recall@5": 50.0, "recall@10": 100.0},
        "temporal": {"recall@5": 50.0, "recall@10": 75.0},
        "overall": {"recall@5": 50.0, "recall@10": round(250 / 3, 1)},
    }
    assert list(table.as_dict(order=["temporal"])) == ["temporal", "multi-hop", "overall"]
    assert table.count() == 3 and table.count("temporal") == 2


@pytest.mark.parametrize(("word", "expected"), [
    ("painting", "paint"), ("painted", "paint"), ("paints", "paint"), ("hobbies", "hobbi"),
    ("classes", "class"), ("running", "run"), ("kids", "kid"), ("bus", "bus"),
    ("was", "was"), ("2023", "2023"), ("falling", "fall")])
def test_light_stemmer(word, expected):
    assert stem(word) == expected


def test_analyze_drops_stopwords_and_stems_in_order():
    assert analyze("When did Caroline go to the support groups?", stemming=True,
                   stopwords=True) == "carolin go support group"  # a final -e goes too
    assert analyze("When did Caroline") == "when did caroline"
