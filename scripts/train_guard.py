"""Train the guard's learned layer and write `lib/vmem/data/guard_model.json`.

    .venv/bin/python scripts/train_guard.py            # train and write the shipped file
    .venv/bin/python scripts/train_guard.py --check    # exit 1 unless the file matches
    .venv/bin/python scripts/train_guard.py --cross-validate   # BIPIA, categories held out

It reads the training splits described in `tests/data/guard_lang/README.md`: the
project's own sets, BIPIA's train split and LoCoMo (from ../shared/data; the shipped file
was trained with both present, so `--check` needs them too).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vmem.eval.guard_sets import addressed, bipia
from vmem.eval.guard_train import THRESHOLD, train, training_examples
from vmem.guard import Guard
from vmem.guard_model import MODEL_FILE

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "lib" / "vmem" / "data" / MODEL_FILE
SHARED = ROOT.parent / "shared" / "data"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file")
    parser.add_argument("--cross-validate", action="store_true",
                        help="BIPIA caught when its categories are left out of training")
    parser.add_argument("--data", type=Path, default=SHARED, help="the shared data folder")
    args = parser.parse_args(argv)
    poisoning, locomo = args.data / "poisoning", args.data / "locomo" / "locomo10.json"
    if not (poisoning / "bipia").is_dir() or not locomo.is_file():
        print(f"skipped: BIPIA or LoCoMo not found under {args.data}", file=sys.stderr)
        return 0 if args.check else 2
    if args.cross_validate:
        return cross_validate(poisoning, locomo)
    model = train(training_examples(poisoning, locomo))
    text = model.to_json()
    if args.check:
        same = SHIPPED.is_file() and SHIPPED.read_text(encoding="utf-8") == text
        print("shipped model matches training" if same else f"{SHIPPED} differs from training")
        return 0 if same else 1
    SHIPPED.write_text(text, encoding="utf-8")
    print(f"wrote {SHIPPED.relative_to(ROOT)}: {model.meta['features']} weights from "
          f"{model.meta['examples']} sentences")
    return 0


def cross_validate(poisoning: Path, locomo: Path, folds: int = 4) -> int:
    """Train without every fourth BIPIA category and count its addressed strings caught."""
    categories = sorted(bipia(poisoning) or {})
    patterns = Guard(learned_threshold=None)
    caught = total = 0
    for fold in range(folds):
        held = categories[fold::folds]
        model = train(training_examples(poisoning, locomo, skip_categories=held))
        for category in held:
            attacks = [a for a in (bipia(poisoning) or {})[category] if addressed(a)]
            hits = 0
            for attack in attacks:
                best = model.best(attack)
                hits += patterns.scan(attack).flagged or bool(best and best[0] >= THRESHOLD)
            print(f"fold {fold}  {category:<36} {hits}/{len(attacks)}")
            caught, total = caught + hits, total + len(attacks)
    print(f"BIPIA addressed, categories held out of training: {caught}/{total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
