"""The pool benchmark and the parts table report the library path: at the defaults they
equal `eval locomo`'s `dialog/recall`, and the pool is put back after each row."""

from __future__ import annotations

import pytest
import recall_pool as bench  # benchmarks/recall_pool.py: conftest puts benchmarks/ on sys.path

from vmem import tier
from vmem.eval.locomo import load_locomo
from vmem.eval.runner import evaluate_recall


def test_the_default_pool_gives_eval_locomos_figure_and_is_restored(locomo_path):
    conversations = load_locomo(locomo_path)[:1]
    default = tier.POOL
    rows = bench.recall_per_pool(conversations, [5, default])
    assert default == tier.POOL
    expected = evaluate_recall(conversations, ["dialog/recall"], (10,))["dialog/recall"]
    assert rows[default][0] == pytest.approx(expected["overall"]["recall@10"], abs=0.05)
    assert rows[default][1] == pytest.approx(expected["multi-hop"]["recall@10"], abs=0.05)
    # a pool of five reranks less: the priors reach fewer of the evidence turns
    assert rows[5][0] < rows[default][0]


def test_the_parts_table_starts_from_eval_locomos_figure_and_puts_the_index_back(locomo_path):
    """scripts/recall_parts.py: "all parts" is the library path; turning the prompt out
    of the document re-indexes with PROMPT_TERMS 0 and leaves the constant as it was."""
    import recall_parts  # noqa: PLC0415 - scripts/ is on sys.path (conftest)

    from vmem import ranking  # noqa: PLC0415

    conversations = load_locomo(locomo_path)[:1]
    kept = ranking.PROMPT_TERMS
    every = recall_parts.measure(conversations, {}, lambda cs: [])
    without = recall_parts.measure(conversations, recall_parts.PARTS["- prompt in document"],
                                   lambda cs: [])
    assert kept == ranking.PROMPT_TERMS
    expected = evaluate_recall(conversations, ["dialog/recall"], (10,))["dialog/recall"]
    assert every == [pytest.approx(expected["overall"]["recall@10"], abs=0.05)]
    assert without[0] < every[0]  # LoCoMo's replies are found through their prompts
