"""BEAM's chats (`vmem.eval.beam`) and `eval beam`: a fixture in BEAM's folder layout,
written here (BEAM's data is never copied into the repository)."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path

import pytest

from vmem.eval.beam import MAX_CONTENT_CHARS, QUESTION_TYPES, START, load_beam, parse_anchor
from vmem.eval.cli import BEAM_CONFIGS, main
from vmem.eval.errors import DatasetError

CHAT = [
    {"batch_number": 1, "time_anchor": None, "turns": [
        [{"role": "user", "id": 0, "time_anchor": "March-15-2024",
          "content": "Hi, I want help planning my garden."},
         {"role": "assistant", "id": 1, "content": "Happy to help with your garden plan."}],
        [{"role": "user", "id": 2, "time_anchor": "March-15-2024", "index": "1,1",
          "content": "My first sprint ends on March 29. ->-> 1,1"},
         {"role": "assistant", "id": 3,
          "content": "Your first sprint ends March 29; plan the sprint review for it."}],
    ]},
    {"batch_number": 2, "turns": [
        [{"role": "user", "id": 4, "time_anchor": "April-2-2024",
          "content": "I moved the review to April 5. ->->2,1"},
         {"role": "assistant", "id": 5, "content": "x" * (MAX_CONTENT_CHARS + 10)}],
    ]},
]
QUESTIONS = {
    "temporal_reasoning": [{"question": "When does my first sprint end?",
                            "source_chat_ids": {"first_event": [2], "second_event": [4]}}],
    "information_extraction": [{"question": "What did I want help planning?",
                                "source_chat_ids": [0, 99], "answer": "the garden"}],
    "abstention": [{"question": "What is my dog's name?", "source_chat_ids": []}],
    "a_new_kind": [{"question": "Which review moved?", "source_chat_ids": [4]}],
}


def _write_chat(root: Path, number: int, chat=CHAT, questions=QUESTIONS) -> Path:
    folder = root / str(number)
    (folder / "probing_questions").mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    (folder / "probing_questions" / "probing_questions.json").write_text(
        json.dumps(questions), encoding="utf-8")
    return folder


@pytest.fixture
def beam(tmp_path: Path) -> Path:
    for number in (1, 2):
        _write_chat(tmp_path, number)
    return tmp_path


def test_a_chat_becomes_user_and_assistant_messages_in_order(beam):
    (chat,) = load_beam(beam, range(1, 2))
    messages = chat.messages()
    assert [m.role for m in messages] == ["user", "assistant"] * 3
    assert [m.meta["dia_id"] for m in messages] == ["0", "1", "2", "3", "4", "5"]
    assert [m.meta["turn"] for m in messages] == [0, 1, 2, 3, 4, 5]
    assert [m.session_id for m in messages] == [1, 1, 1, 1, 2, 2]
    assert all(m.name is None for m in messages)
    assert messages[2].content == "My first sprint ends on March 29."  # the marker goes
    assert messages[4].content == "I moved the review to April 5."
    assert len(messages[5].content) == MAX_CONTENT_CHARS


def test_times_follow_the_latest_anchor_one_second_per_message(beam):
    (chat,) = load_beam(beam, range(1, 2))
    times = [m.created_at for m in chat.messages()]
    march, april = parse_anchor("March-15-2024"), parse_anchor("April-2-2024")
    second = timedelta(seconds=1)
    # an anchor (even the same day again) restarts the count; the next batch keeps it
    assert times == [march, march + second, march, march + second, april, april + second]
    no_anchor = [{"batch_number": 1, "turns": [[{"role": "user", "id": 0, "content": "a"},
                                                {"role": "assistant", "id": 1,
                                                 "content": "b"}]]}]
    (plain,) = load_beam(_write_chat(beam / "other", 1, no_anchor).parent)
    assert [m.created_at for m in plain.messages()] == [START, START + timedelta(seconds=1)]


def test_evidence_is_flattened_and_ids_naming_no_message_are_kept_apart(beam):
    (chat,) = load_beam(beam, range(1, 2))
    by_question = {q.question: q for q in chat.questions}
    temporal = by_question["When does my first sprint end?"]
    assert temporal.evidence == ("2", "4")
    assert temporal.category_label == "temporal_reasoning"
    assert temporal.category == QUESTION_TYPES.index("temporal_reasoning") + 1
    extraction = by_question["What did I want help planning?"]
    assert extraction.evidence == ("0",) and extraction.dropped_evidence == ("99",)
    assert extraction.answer == "the garden"
    assert by_question["What is my dog's name?"].evidence == ()
    assert by_question["Which review moved?"].category == 0


@pytest.mark.parametrize("text", ["March-15-2024", "march-5-2024", " July-04-2023 "])
def test_anchors_read_as_midnight_utc(text):
    moment = parse_anchor(text)
    assert (moment.hour, moment.minute, moment.utcoffset()) == (0, 0, timedelta(0))


@pytest.mark.parametrize("text", ["15-03-2024", "Marchy-15-2024", "February-30-2024", ""])
def test_an_unreadable_anchor_says_what_it_wanted(text):
    with pytest.raises(ValueError, match="expected e.g. 'March-15-2024'"):
        parse_anchor(text)


def test_missing_and_malformed_data_fail_with_what_to_do(tmp_path, beam):
    with pytest.raises(DatasetError, match="fetch the BEAM repository"):
        load_beam(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="holds no chat folders"):
        load_beam(tmp_path / "empty")
    with pytest.raises(DatasetError, match="has no chat 7 .it has 1-2."):
        load_beam(beam, range(7, 8))
    broken = _write_chat(tmp_path / "broken", 1)
    (broken / "chat.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DatasetError, match="cannot read .*chat.json"):
        load_beam(broken.parent)
    system = [{"batch_number": 1, "turns": [[{"role": "system", "id": 0, "content": "x"}]]}]
    with pytest.raises(DatasetError, match="role 'system' is neither user nor assistant"):
        load_beam(_write_chat(tmp_path / "system", 1, system).parent)


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_eval_beam_reports_each_question_type_for_the_three_rankers(beam):
    status, text = _run("beam", "--data", str(beam), "--k", "1,10", "--json")
    assert status == 0
    table = json.loads(text)
    assert list(table) == list(BEAM_CONFIGS)
    for rows in table.values():
        # the types in QUESTION_TYPES' order, then others; abstention's question has no
        # evidence and is skipped; then the mean over questions
        assert list(rows) == ["information_extraction", "temporal_reasoning", "a_new_kind",
                              "overall"]
        assert set(rows["overall"]) == {"recall@1", "recall@10"}
        # message 2 shares the question's words and comes first; message 4 ("I moved the
        # review to April 5") shares none, so no ranker reaches it: half the evidence
        assert rows["temporal_reasoning"] == {"recall@1": 50.0, "recall@10": 50.0}
        assert rows["information_extraction"]["recall@1"] == 100.0
        assert rows["overall"]["recall@10"] == pytest.approx(100 * 2.5 / 3, abs=0.05)


def test_eval_beam_as_tables_and_one_chat(beam):
    status, text = _run("beam", "--data", str(beam), "--chats", "2", "--k", "10",
                        "--configs", "dialog/recall")
    assert status == 0
    lines = [line.split() for line in text.splitlines() if line.strip()]
    assert lines[0] == ["recall@10"]
    assert {line[0] for line in lines[1:]} == {"dialog/recall"}
    assert ["dialog/recall", "temporal_reasoning", "50.0"] in lines
    assert ["dialog/recall", "overall", "83.3"] in lines


@pytest.mark.parametrize(("argv", "message"), [
    (["--chats", "3-4"], "has no chat 3, 4"),
    (["--chats", "one"], "--chats wants A-B or A"),
    (["--k", "0"], "--k wants positive integers"),
    (["--configs", "dialog/bogus"], "bogus"),
])
def test_eval_beam_refuses_bad_arguments_with_why(beam, capsys, argv, message):
    status, text = _run("beam", "--data", str(beam), *argv)
    assert status == 2 and text == ""
    assert message in capsys.readouterr().err


def test_eval_beam_without_the_data_says_where_to_get_it(tmp_path, capsys):
    status, _ = _run("beam", "--data", str(tmp_path / "nowhere"))
    assert status == 2
    assert "fetch the BEAM repository" in capsys.readouterr().err
