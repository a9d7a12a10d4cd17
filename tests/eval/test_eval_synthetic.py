"""The synthetic long-horizon generator: determinism, planted facts, changes, injections."""

from __future__ import annotations

import time

import pytest

from vmem.archival import ArchivalStore
from vmem.eval.paraphrase import paraphrased
from vmem.eval.synthetic import generate, pooled_stale, stale_answers, stale_counts
from vmem.tokens import ApproxCounter


def _snapshot(data):
    conv = data.conversation
    return ([(m.name, m.content, m.session_id, m.turn, m.created_at, m.meta)
             for m in conv.messages()],
            [(q.question, q.evidence, q.answer, q.category_name) for q in conv.questions],
            data.injections)


def test_same_seed_same_output_other_seed_other_output():
    assert _snapshot(generate(7, 20_000)) == _snapshot(generate(7, 20_000))
    assert _snapshot(generate(7, 20_000)) != _snapshot(generate(8, 20_000))


def test_length_reaches_the_requested_tokens():
    data = generate(3, 30_000)
    counter = ApproxCounter()
    total = sum(counter.count(m.content) for m in data.conversation.messages())
    assert total == data.tokens
    assert 30_000 <= total < 30_200


def test_planted_facts_are_stated_at_their_evidence_turns():
    data = generate(1, 50_000)
    turns = {m.meta["dia_id"]: m for m in data.conversation.messages()}
    assert data.facts and data.changes
    for question in data.conversation.questions:
        (dia_id,) = question.evidence
        turn = turns[dia_id]
        assert str(question.answer) in turn.content
        assert turn.name in question.question or any(
            f.subject in question.question and f.subject in turn.content for f in data.facts)
    for fact in data.facts:
        turn = turns[fact.dia_id]
        # a speaker states their own facts; others are named in the text
        assert fact.subject == turn.name or fact.subject in turn.content
        assert fact.value in turn.content


def test_current_questions_point_at_the_later_statement_and_previous_at_the_earlier():
    data = generate(2, 80_000)
    messages = data.conversation.messages()
    order = {m.meta["dia_id"]: i for i, m in enumerate(messages)}
    by_question = {q.question: q for q in data.conversation.questions}
    for change in data.changes:
        assert order[change.old.dia_id] < order[change.new.dia_id]
        assert change.old.value != change.new.value
        current = [q for q in by_question.values() if q.category_name == "current"
                   and q.evidence == (change.new.dia_id,)]
        previous = [q for q in by_question.values() if q.category_name == "previous"
                    and q.evidence == (change.old.dia_id,)]
        assert len(current) == 1 and current[0].answer == change.new.value
        assert len(previous) == 1 and previous[0].answer == change.old.value
    static = [q for q in by_question.values() if q.category_name == "static"]
    changed = {(c.subject, c.attribute) for c in data.changes}
    assert static and all(f.dia_id not in {c.old.dia_id for c in data.changes}
                          for f in data.facts if (f.subject, f.attribute) not in changed)


def test_injections_are_directive_shaped_and_marked():
    data = generate(4, 30_000)
    turns = {m.meta["dia_id"]: m for m in data.conversation.messages()}
    assert len(data.injections) >= 3
    for dia_id in data.injections:
        assert turns[dia_id].meta.get("injection") is True
        text = turns[dia_id].content.lower()
        assert any(word in text for word in ("ignore", "disregard", "must"))
    marked = [d for d, m in turns.items() if m.meta.get("injection")]
    assert marked == data.injections


def test_invalidation_removes_stale_answers():
    data = generate(0, 100_000)
    plain = stale_answers(data, "none")
    careful = stale_answers(data, "oracle")
    assert careful["stale"] == 0.0
    assert plain["stale"] > 0.0
    assert careful["current"] >= plain["current"]
    for result in (plain, careful):
        assert result["stale"] + result["current"] + result["missed"] == pytest.approx(
            100.0, abs=0.2)
        assert result["false_invalidations"] == 0.0  # the oracle retires only changed facts
    with pytest.raises(ValueError, match="policy must be one of"):
        stale_answers(data, "sometimes")


# The library as shipped (the detector, and the stores' default ranking that reads "now"):
# issue 15's targets, as a regression test on reworded seeds the newest-first rule was
# refined on; the held-out evidence is the pooled test below (docs/RELIABILITY.md).
@pytest.mark.parametrize("seed", [1, 2, 4])
def test_the_detector_with_the_default_ranking_meets_the_targets_on_reworded_facts(seed):
    data = paraphrased(generate(seed, 100_000), seed)
    shipped = stale_answers(data, "detector", newest_first=True)
    assert shipped["stale"] <= 10.0 and shipped["false_invalidations"] <= 2.0
    assert shipped["current"] >= 85.0


@pytest.mark.parametrize("seed, reworded", [(0, False), (2, True)])
def test_reading_now_in_the_question_answers_with_the_newest_fact_without_invalidating(
        seed, reworded):
    """The store's default ranking (vmem.ranking): "...live now?" puts the newest of the
    close hits first, so no policy has to hide the old statement (reworded seed 2 is the
    set the detector fails on)."""
    data = generate(seed, 100_000)
    data = paraphrased(data, seed) if reworded else data
    assert stale_answers(data)["stale"] > 20.0
    newest = stale_answers(data, newest_first=True)
    assert newest["stale"] <= 5.0 and newest["current"] >= 90.0
    assert newest["false_invalidations"] == 0.0


# Issue 15's targets at 100k tokens: stale <= 10%, false invalidations <= 2%, current >= 85%.
# Reworded seed 0 is the set the rules were refined on (a regression test, not evidence that
# they generalise); on reworded seeds 1 and 2 they miss (docs/RELIABILITY.md, "Stale facts").
@pytest.mark.parametrize("seed, reworded", [(0, False), (1, False), (0, True)])
def test_the_detector_meets_the_targets_without_the_ground_truth(seed, reworded):
    data = generate(seed, 100_000)
    data = paraphrased(data, seed) if reworded else data
    plain, detector = stale_answers(data, "none"), stale_answers(data, "detector")
    assert plain["stale"] > 20.0  # there is a problem to solve
    assert detector["stale"] <= 10.0 and detector["false_invalidations"] <= 2.0
    assert detector["current"] >= 85.0


def test_pooled_figures_add_up_the_counts_of_each_seed():
    datasets = [paraphrased(generate(seed, 40_000), seed) for seed in (3, 4)]
    counts = [stale_counts(data, "detector", newest_first=True) for data in datasets]
    row = pooled_stale(datasets)["detector+newest-first"]
    changes = sum(c["stale"] + c["current"] + c["missed"] for c in counts)
    assert row["overall"]["stale"] == round(100 * sum(c["stale"] for c in counts) / changes, 1)
    assert row["overall"]["false_invalidations"] == round(
        100 * sum(c["hidden"] for c in counts) / sum(c["unchanged"] for c in counts), 1)
    each = [stale_answers(data, "detector", newest_first=True) for data in datasets]
    assert row["worst seed"]["current"] == min(one["current"] for one in each)
    assert row["worst seed"]["stale"] == max(one["stale"] for one in each)


# Issue 15's targets on the held-out seeds (16-31, reworded, measured once after the rules
# were final), pooled: one seed holds about 14 changes, too few for a percentage.
def test_the_library_meets_the_targets_on_held_out_seeds_pooled():
    pooled = pooled_stale(paraphrased(generate(seed, 100_000), seed) for seed in range(16, 32))
    for row in ("detector", "detector+newest-first"):
        overall = pooled[row]["overall"]
        assert overall["stale"] <= 10.0 and overall["current"] >= 85.0, (row, overall)
        assert overall["false_invalidations"] <= 2.0, (row, overall)
    assert pooled["plain"]["overall"]["stale"] > 50.0  # there is a problem to solve


def test_false_invalidations_count_the_unchanged_facts_a_policy_hid(monkeypatch):
    data = generate(0, 30_000)

    def retire_everything_older(store, record_id, **_):  # a detector that always fires
        for record in store.records():
            if record.id < record_id:
                store.invalidate(record.id, superseded_by=record_id)
        return []

    monkeypatch.setattr(ArchivalStore, "retire_superseded", retire_everything_older)
    result = stale_answers(data, "detector")
    assert result["false_invalidations"] > 90.0


def test_paraphrases_keep_the_ground_truth_and_change_the_wording():
    data = generate(0, 30_000)
    reworded = paraphrased(data, 0)
    before = {m.meta["dia_id"]: m.content for m in data.conversation.messages()}
    after = {m.meta["dia_id"]: m.content for m in reworded.conversation.messages()}
    facts = {fact.dia_id for fact in data.facts}
    assert reworded.facts == data.facts and reworded.changes == data.changes
    assert all(before[d] == after[d] for d in before if d not in facts)
    assert all(before[d] != after[d] for d in facts)
    for fact in reworded.facts:
        assert fact.value in after[fact.dia_id]
    assert before == {m.meta["dia_id"]: m.content for m in generate(0, 30_000)
                      .conversation.messages()}  # the original is left as it was


def test_a_million_tokens_in_seconds():
    started = time.perf_counter()
    data = generate(5, 1_000_000)
    assert data.tokens >= 1_000_000
    assert time.perf_counter() - started < 10
    assert len(data.conversation.sessions) > 1000


def test_too_short_is_refused():
    with pytest.raises(ValueError, match="at least 500"):
        generate(0, 100)
