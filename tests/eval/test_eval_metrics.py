"""Metric functions on hand-worked examples."""

from __future__ import annotations

import pytest

from vmem.eval.analysis import analyze, stem
from vmem.eval.errors import DatasetError
from vmem.eval.metrics import MeanTable, fifo_window, fraction_in, recall_at_k, virtual_window


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


def test_virtual_window_fills_core_then_recent_then_paged_hits():
    costs = [5, 3, 4, 2, 2]
    page_costs = [8, 6, 7, 5, 5]          # a paged hit also pays for its citation header
    # budget 20: core 3 -> 17 left; recent share 4 -> turns 3, 4 (cost 4) -> 13 left;
    # hits in rank order: 4 is already in, 0 costs 8 (fits, 5 left), 2 costs 7 (skipped),
    # 1 costs 6 (skipped)
    inside = virtual_window(costs, page_costs, [4, 0, 2, 1], 20, core_tokens=3,
                            recent_tokens=4)
    assert inside == {0, 3, 4}
    assert virtual_window(costs, page_costs, [0], 3, core_tokens=3, recent_tokens=4) == set()


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
    ("painting", "paint"), ("painted", "paint"), ("paints", "paint"), ("hobbies", "hobby"),
    ("classes", "class"), ("running", "run"), ("kids", "kid"), ("bus", "bus"),
    ("was", "was"), ("2023", "2023"), ("falling", "fall")])
def test_light_stemmer(word, expected):
    assert stem(word) == expected


def test_analyze_drops_stopwords_and_stems_in_order():
    assert analyze("When did Caroline go to the support groups?", stemming=True,
                   stopwords=True) == "caroline go support group"
    assert analyze("When did Caroline") == "when did caroline"
