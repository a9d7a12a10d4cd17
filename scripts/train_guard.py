"""Train the guard's learned layer and write `lib/vmem/data/guard_model.json`.

    PYTHONPATH=lib python scripts/train_guard.py [--data ../shared/data/poisoning]
        [--own tests/data] [--out lib/vmem/data/guard_model.json] [--check]

Data (and nothing else):
- BIPIA's train split: the addressed attacks' instruction parts are injections, the plain
  text tasks ("What is the capital of Brazil?") ordinary. BIPIA's test split and other
  published injection benchmarks are never used.
- The project's own sets in tests/data: `guard_lang_train.tsv` (18 languages),
  `guard_injections.txt`, `guard_injections_novel.txt` (injections), `guard_ordinary.txt`,
  `guard_ordinary_novel.txt` (ordinary turns). Never `guard_lang_heldout.tsv`,
  `guard_dev_*` or `guard_independent_*`: those measure it.

Method: logistic regression on `vmem.guard_model.features`, trained by AdaGrad in a fixed
order (seeded shuffles) with L2 regularisation and balanced classes, so the same data gives
byte-identical weights; features seen in fewer than MIN_COUNT texts and weights under PRUNE
are dropped to keep the file small. Before the
final fit, a 2-fold split by BIPIA category (`Attack.fold`) trains on one half of BIPIA's
categories and reports recall on the other half, so the figure printed for BIPIA is on
categories the model never saw. `--check` exits 1 when the written file differs.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from vmem.eval.guard_sets import Attack, load_bipia, load_labelled, load_lines
from vmem.guard_model import THRESHOLD, Model, features, sentences

ROOT = Path(__file__).resolve().parents[1]
EPOCHS = 12
RATE = 0.5
L2 = 1e-5
PRUNE = 0.05
MIN_COUNT = 3  # a feature must occur in this many training texts
SEED = 16

Example = tuple[str, bool]


def training_examples(attacks: Sequence[Attack], own: Path) -> list[Example]:
    """(text, is injection) pairs: BIPIA's given `attacks` and the project's own sets.

    Ordinary texts of several sentences count once per sentence, as the guard scores them.
    """
    examples: list[Example] = [(attack.instruction, True) for attack in attacks
                               if attack.addressed]
    examples += [(attack.instruction, False) for attack in attacks
                 if not attack.addressed and attack.source == "text"]
    examples += [(row.text, row.injection) for row in load_labelled(own / "guard_lang_train.tsv")]
    for name, injection in (("guard_injections.txt", True), ("guard_injections_novel.txt", True),
                            ("guard_ordinary.txt", False), ("guard_ordinary_novel.txt", False)):
        examples += [(line, injection) for line in load_lines(own / name)]
    split: list[Example] = []
    for text, injection in examples:
        split += [(text, True)] if injection else [(piece, False) for piece in sentences(text)]
    return split


def train(examples: Sequence[Example]) -> Model:
    """Logistic regression by AdaGrad over `examples`, deterministic for given data."""
    rows = [(features(text), 1.0 if injection else 0.0) for text, injection in examples]
    seen = Counter(feature for x, _label in rows for feature in x)
    rows = [({f: v for f, v in x.items() if seen[f] >= MIN_COUNT}, label) for x, label in rows]
    positives = sum(label for _x, label in rows)
    class_weight = {1.0: len(rows) / (2 * positives),
                    0.0: len(rows) / (2 * (len(rows) - positives))}
    weights: dict[str, float] = {}
    squares: dict[str, float] = {}
    bias, bias_square = 0.0, 1e-8
    order = list(range(len(rows)))
    shuffle = random.Random(SEED)
    for _epoch in range(EPOCHS):
        shuffle.shuffle(order)
        for index in order:
            x, label = rows[index]
            z = bias + sum(weights.get(feature, 0.0) * value for feature, value in x.items())
            error = (1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z)))) - label)
            error *= class_weight[label]
            for feature, value in x.items():
                gradient = error * value + L2 * weights.get(feature, 0.0)
                squares[feature] = squares.get(feature, 1e-8) + gradient * gradient
                weights[feature] = (weights.get(feature, 0.0)
                                    - RATE * gradient / math.sqrt(squares[feature]))
            bias_square += error * error
            bias -= RATE * error / math.sqrt(bias_square)
    kept = {feature: round(weight, 4) for feature, weight in weights.items()
            if abs(weight) >= PRUNE}
    return Model(kept, bias)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "poisoning")
    parser.add_argument("--own", type=Path, default=ROOT / "tests" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "lib" / "vmem" / "data" /
                        "guard_model.json")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the trained model differs from --out")
    args = parser.parse_args(argv)
    attacks = load_bipia(args.data)
    for fold in (0, 1):
        model = train(training_examples([a for a in attacks if a.fold != fold], args.own))
        unseen = [a for a in attacks if a.fold == fold]
        caught = sum(model.score(a.text)[0] >= THRESHOLD for a in unseen if a.addressed)
        flagged = sum(model.score(a.text)[0] >= THRESHOLD for a in unseen
                      if not a.addressed)
        print(f"BIPIA fold {fold} held out ({len({a.category for a in unseen})} categories): "
              f"addressed {caught}/{sum(a.addressed for a in unseen)} caught, "
              f"plain {flagged}/{sum(not a.addressed for a in unseen)} flagged")
    model = train(training_examples(attacks, args.own))
    text = model.to_json()
    print(f"{len(model.weights)} weights, {len(text.encode()) // 1024} KiB")
    if args.check:
        same = args.out.exists() and args.out.read_text(encoding="utf-8") == text
        print("the shipped model is up to date" if same else f"{args.out} is out of date")
        return 0 if same else 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
