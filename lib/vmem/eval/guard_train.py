"""Training the guard's learned layer: logistic regression by seeded SGD, standard library.

`training_examples` gathers the anchored sentences of the training splits (see
`vmem.eval.guard_sets`): injections as positives, ordinary text (preferences and
instructions about the user included) as negatives. `train` fits the weights in a fixed
order from a fixed seed and rounds them, so the same data gives the same file on every
machine; `scripts/train_guard.py` writes it and `--check` compares it with the shipped one.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..guard.model import Model, anchored, features
from .guard_sets import (
    LabelledSet,
    addressed,
    bipia,
    language_sets,
    locomo_turns,
    repo_data,
    training_sets,
)

__all__ = ["EPOCHS", "THRESHOLD", "train", "training_examples"]

EPOCHS = 30
THRESHOLD = 0.85  # chosen on the DEV lines and the four folds of the training lines
KEEP = 6000  # weights kept, by size
_ENGLISH_TRAIN = (("guard_injections.txt", 1), ("guard_injections_novel.txt", 1),
                  ("guard_ordinary.txt", 0), ("guard_ordinary_novel.txt", 0))


def training_examples(poisoning: Path | None, locomo: Path | None,
                      skip_categories: Iterable[str] = (), *,
                      dev: bool | frozenset[int] = False,
                      extra: Mapping[str, LabelledSet] | None = None,
                      ) -> list[tuple[str, int, str]]:
    """(anchored sentence, label, source) from every training split that is present
    (with `dev`, without the lines that tuning holds out), and the training lines of the
    public sets in `extra` (`vmem.eval.public_sets`, read with the same `dev`), by name."""
    texts: list[tuple[str, int, str]] = []
    for lang, split in sorted((language_sets(dev=dev) or {}).items()):
        texts += [(text, 1, lang) for text in split.train_injections]
        texts += [(text, 0, lang) for text in split.train_ordinary]
    for lang, split in sorted((training_sets(dev=dev) or {}).items()):
        texts += [(text, 1, f"{lang}-train") for text in split.train_injections]
        texts += [(text, 0, f"{lang}-train") for text in split.train_ordinary]
    for name, label in _ENGLISH_TRAIN:
        path = repo_data() / name
        if path.is_file():
            texts += [(line, label, name) for line in path.read_text(encoding="utf-8")
                      .splitlines() if line.strip()]
    skip = set(skip_categories)
    for category, attacks in sorted(((poisoning and bipia(poisoning)) or {}).items()):
        if category not in skip:
            texts += [(attack.split("```")[0], 1, "bipia") for attack in attacks
                      if addressed(attack)]
    turns = locomo_turns(locomo) if locomo else None
    if turns:
        texts += [(turn, 0, "locomo") for turn in turns[0]]
    for name, split in sorted((extra or {}).items()):
        texts += [(text, 1, name) for text in split.train_injections]
        texts += [(text, 0, name) for text in split.train_ordinary]
    return [(sentence, label, source) for text, label, source in texts
            for sentence in anchored(text)]


def train(examples: Sequence[tuple[str, int, str]], *, epochs: int = EPOCHS,
          meta: dict[str, object] | None = None) -> Model:
    """Fit the model on `examples`; deterministic for the same examples."""
    rows = [(sorted(features(sentence)), label) for sentence, label, _source in examples]
    counts = Counter(gram for grams, _label in rows for gram in grams)
    rows = [([g for g in grams if counts[g] >= 2], label) for grams, label in rows]
    positives = sum(label for _grams, label in rows) or 1
    negatives = len(rows) - positives or 1
    class_weight = {1: len(rows) / (2 * positives), 0: len(rows) / (2 * negatives)}
    weights: dict[str, float] = {}
    bias = 0.0
    order = list(range(len(rows)))
    rng = random.Random(0)
    for epoch in range(epochs):
        rng.shuffle(order)
        rate = 0.1 / (1 + 0.2 * epoch)
        for index in order:
            grams, label = rows[index]
            z = bias + sum(weights.get(g, 0.0) for g in grams)
            p = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
            step = rate * class_weight[label] * (label - p)
            bias += step
            for g in grams:
                w = weights.get(g, 0.0)
                weights[g] = w + step - rate * 1e-4 * w
    kept = sorted(weights.items(), key=lambda item: (-abs(item[1]), item[0]))[:KEEP]
    rounded = {gram: round(w, 3) for gram, w in sorted(kept) if round(w, 3) != 0}
    sources = Counter(f"{source}:{label}" for _s, label, source in examples)
    info = {"examples": len(examples), "epochs": epochs, "features": len(rounded),
            "sources": dict(sorted(sources.items())), **(meta or {})}
    return Model(round(bias, 3), rounded, THRESHOLD, info)
