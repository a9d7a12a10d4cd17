"""The LoCoMo loader: message shape, times, evidence normalisation, and the real file's totals."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from vmem.eval.errors import DatasetError
from vmem.eval.locomo import load_locomo, normalize_evidence, parse_session_date

TINY = [{
    "sample_id": "tiny-1",
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Pixel."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Cute! Here is my garden.",
             "blip_caption": "a photo of tomatoes on a vine", "query": "garden",
             "img_url": ["http://example.invalid/x.jpg"]},
        ],
        "session_2_date_time": "9:05 am on 12 June, 2023",
        "session_2": [
            {"speaker": "Bob", "dia_id": "D2:1", "text": "I started running marathons."},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "Pixel knocked over my coffee."},
        ],
        "session_3_date_time": "10:00 am on 1 July, 2023",  # a date with no session
    },
    "qa": [
        {"question": "What did Ann name her cat?", "answer": "Pixel",
         "evidence": ["D1:01"], "category": 4},
        {"question": "How many marathons did Bob run?", "answer": 3,
         "evidence": ["D2:1; D1:2"], "category": 1},
        {"question": "What did Ann paint?", "adversarial_answer": "tomatoes",
         "evidence": ["D:2:2", "D9:9", "D"], "category": 5},
        {"question": "Would Bob enjoy hiking?", "answer": "Likely yes", "evidence": [],
         "category": 3},
    ],
    "observation": {"session_1_observation": {
        "Ann": [["Ann adopted a cat named Pixel.", "D1:1"]],
        "Bob": [["Bob grows tomatoes.", ["D1:2", "D1:1"]]]}},
    "session_summary": {"session_1_summary": "Ann got a cat; Bob showed his garden.",
                        "session_2_summary": "Bob runs marathons."},
}]


@pytest.fixture
def tiny_path(tmp_path: Path) -> Path:
    path = tmp_path / "tiny_locomo.json"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    return path


def test_turns_become_named_user_messages_with_dia_ids_and_spread_times(tiny_path):
    (conv,) = load_locomo(tiny_path)
    messages = conv.messages()
    assert [m.meta["dia_id"] for m in messages] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    assert {m.role for m in messages} == {"user"}
    assert [m.name for m in messages] == ["Ann", "Bob", "Bob", "Ann"]
    assert [(m.session_id, m.turn) for m in messages] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert messages[0].created_at == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert messages[1].created_at == datetime(2023, 5, 8, 13, 56, 1, tzinfo=timezone.utc)
    assert messages[2].created_at == datetime(2023, 6, 12, 9, 5, tzinfo=timezone.utc)
    # the caption is metadata, not spoken text; the image query and URL are not kept
    assert messages[1].content == "Cute! Here is my garden."
    assert messages[1].meta == {"dia_id": "D1:2", "blip_caption": "a photo of tomatoes on a vine"}
    assert [s.session_id for s in conv.sessions] == [1, 2]  # session_3 has only a date


def test_questions_keep_answers_and_normalise_evidence(tiny_path):
    (conv,) = load_locomo(tiny_path)
    cat, count, adversarial, no_evidence = conv.questions
    assert cat.evidence == ("D1:1",) and cat.category_name == "single-hop"
    assert count.answer == 3 and count.evidence == ("D2:1", "D1:2")
    assert count.category_name == "multi-hop"
    assert adversarial.answer is None and adversarial.adversarial_answer == "tomatoes"
    assert adversarial.evidence == ("D2:2",)
    assert adversarial.dropped_evidence == ("D9:9", "D")
    assert adversarial.category_name == "adversarial"
    assert no_evidence.evidence == () and no_evidence.category_name == "open-domain"


def test_observations_and_summaries_map_back_to_turns(tiny_path):
    (conv,) = load_locomo(tiny_path)
    assert [(u.text, u.dia_ids, u.speaker) for u in conv.observations] == [
        ("Ann adopted a cat named Pixel.", ("D1:1",), "Ann"),
        ("Bob grows tomatoes.", ("D1:2", "D1:1"), "Bob")]
    assert [(u.session_id, u.dia_ids) for u in conv.summaries] == [
        (1, ("D1:1", "D1:2")), (2, ("D2:1", "D2:2"))]


@pytest.mark.parametrize(("text", "expected"), [
    ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)),
    ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=timezone.utc)),
    ("12:30 pm on 1 January, 2022", datetime(2022, 1, 1, 12, 30, tzinfo=timezone.utc)),
])
def test_session_dates_parse_to_utc(text, expected):
    assert parse_session_date(text) == expected


def test_unreadable_date_is_a_clear_error():
    with pytest.raises(ValueError, match="expected e.g."):
        parse_session_date("sometime in spring")


def test_evidence_extraction_handles_every_known_malformation():
    known = {"D8:6", "D9:17", "D11:26", "D30:5"}
    kept, dropped = normalize_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D8:6", "D1:1"],
                                       known)
    assert kept == ("D8:6", "D9:17", "D11:26", "D30:5")
    assert dropped == ("D1:1",)


def test_missing_file_says_where_to_get_it(tmp_path):
    with pytest.raises(DatasetError, match="locomo10.json"):
        load_locomo(tmp_path / "nope.json")


def test_real_file_totals(locomo_path):
    conversations = load_locomo(locomo_path)
    assert len(conversations) == 10
    assert sum(len(c.sessions) for c in conversations) == 272
    assert sum(len(c.messages()) for c in conversations) == 5882
    questions = [q for c in conversations for q in c.questions]
    assert len(questions) == 1986
    assert sum(len(c.observations) for c in conversations) == 2541
    assert sum(len(c.summaries) for c in conversations) == 272
    by_category = {}
    for q in questions:
        by_category[q.category_name] = by_category.get(q.category_name, 0) + 1
    assert by_category == {"multi-hop": 282, "temporal": 321, "open-domain": 96,
                           "single-hop": 841, "adversarial": 446}
    assert all(m.created_at is not None for c in conversations for m in c.messages())
    assert sum(1 for q in questions if not q.evidence) == 4
