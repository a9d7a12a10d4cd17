"""The guard's learned layer: logistic regression over character n-grams, in any language.

The phrase patterns and weak signals of `vmem.guard` read English. This layer reads the
shape of an injection in 18 languages: a text is split into sentences (and lines), each
sentence becomes a bag of character 1- to 4-grams and words, and a linear model scores it;
a text scores as its most directive sentence. Character n-grams need no tokenizer, so the
same model reads Thai and Japanese (no spaces) as well as Spanish ("en tu respuesta") and
survives inflection and machine-translation variants of one phrase.

The weights (`data/guard_model.json`, a few hundred kilobytes) are trained by
`scripts/train_guard.py` from BIPIA's train split and the project's own labelled sets, which
it names; inference below is the standard library only.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import cache
from importlib import resources

from .guard_languages import anchor, detect_language

__all__ = ["THRESHOLD", "Model", "features", "load_model", "sentences"]

# The probability at which the guard flags an anchored sentence, chosen on LoCoMo and the
# English development set (docs/RELIABILITY.md): LoCoMo is not an independent check of it.
THRESHOLD = 0.7
NGRAM_SIZES = (1, 2, 3, 4)
MIN_SENTENCE_CHARS = 12  # shorter pieces are joined to the next one
MAX_SENTENCE_CHARS = 600  # longer ones are cut, so one sentence costs a bounded amount
_DIGITS = re.compile(r"\d")
_SPACES = re.compile(r"\s+")
_WORDS = re.compile(r"\w+")
# Sentence ends in the scripts the model reads: Latin and Cyrillic punctuation, the CJK
# full stop and marks, the Arabic question mark, the Devanagari danda; and line breaks.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？؟।])|\n+|(?<=-->)|(?=<!--)|\s*\|\s*")


def _prepare(text: str) -> str:
    """NFKC, format characters (zero-width, bidi) removed, lower case, digits folded to 0,
    whitespace collapsed. Combining marks stay: Devanagari, Bengali and Thai write vowels
    with them."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return _SPACES.sub(" ", _DIGITS.sub("0", text.lower())).strip()


def sentences(text: str) -> list[str]:
    """The pieces of `text` the model scores one by one: sentences and lines (table cells
    and HTML comments count as lines), short pieces joined to the next, long ones cut."""
    pieces: list[str] = []
    carry = ""
    for piece in _SENTENCE_END.split(text):
        piece = (carry + " " + piece).strip() if carry else piece.strip()
        if len(piece) < MIN_SENTENCE_CHARS:
            carry = piece
            continue
        carry = ""
        pieces.extend(piece[start:start + MAX_SENTENCE_CHARS]
                      for start in range(0, len(piece), MAX_SENTENCE_CHARS))
    if carry:
        pieces.append(carry)
    return pieces


def features(sentence: str) -> dict[str, float]:
    """The sentence as model input: counts of character n-grams ("c" + gram), words
    ("w" + word) and word pairs ("b" + pair), scaled to unit length."""
    text = " " + _prepare(sentence) + " "
    counts: Counter[str] = Counter()
    for size in NGRAM_SIZES:
        counts.update("c" + text[i:i + size] for i in range(len(text) - size + 1))
    words = _WORDS.findall(text)
    counts.update("w" + word for word in words)
    counts.update(f"b{first} {second}" for first, second in zip(words, words[1:], strict=False))
    norm = math.sqrt(sum(count * count for count in counts.values())) or 1.0
    return {feature: count / norm for feature, count in counts.items()}


@dataclass(frozen=True)
class Model:
    """A linear model over `features`: `weights` and `bias`."""

    weights: dict[str, float]
    bias: float

    def probability(self, sentence: str) -> float:
        """How injection-like one sentence is, from 0 to 1."""
        weights = self.weights
        z = self.bias + sum(weights.get(feature, 0.0) * value
                            for feature, value in features(sentence).items())
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))

    def score(self, text: str, language: str | None = None) -> tuple[float, str]:
        """The highest probability of a sentence in `text` that holds an anchor of its
        `language` (detected when None; see `vmem.guard_languages.anchor`), and that
        sentence; (0.0, "") when none does."""
        best, where = 0.0, ""
        anchors = anchor(detect_language(text) if language is None else language)
        for sentence in sentences(text):
            if not anchors.search(_prepare(sentence)):
                continue
            probability = self.probability(sentence)
            if probability > best:
                best, where = probability, sentence
        return best, where

    def to_json(self) -> str:
        """The model as the JSON the package ships (weights sorted, so output is stable)."""
        return json.dumps({"bias": round(self.bias, 5),
                           "weights": dict(sorted(self.weights.items()))},
                          ensure_ascii=False, separators=(",", ":")) + "\n"


@cache
def load_model() -> Model:
    """The shipped model, read once on first use (so `import vmem` stays fast)."""
    raw = resources.files("vmem").joinpath("data", "guard_model.json").read_text("utf-8")
    data = json.loads(raw)
    return Model(data["weights"], data["bias"])
