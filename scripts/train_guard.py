"""Train the guard's learned layer and write `lib/vmem/data/guard_model.json`.

    .venv/bin/python scripts/train_guard.py            # train and write the shipped file
    .venv/bin/python scripts/train_guard.py --check    # exit 1 unless the file matches
                                                       # (and, saying why, without the data)
    .venv/bin/python scripts/train_guard.py --cross-validate   # BIPIA, categories held out
    .venv/bin/python scripts/train_guard.py --dev      # trained without the DEV lines:
                                                       # the DEV figures settings are chosen on
    .venv/bin/python scripts/train_guard.py --folds    # the same over four folds of training
    .venv/bin/python scripts/train_guard.py --agentdojo /tmp/agentdojo --dev
                        # with AgentDojo's injections too (any of the modes above)

It reads the training splits described in `tests/data/guard_lang/README.md`: the
project's own sets, BIPIA's train split and LoCoMo (from ../shared/data; the shipped file
was trained with both present, so `--check` needs them too, and fails naming them when
they are missing). `--agentdojo PATH` adds AgentDojo's injections and ordinary tool texts
(`vmem.eval.public_sets`; PATH is the wheel that `pip download agentdojo==0.1.35
--no-deps -d PATH` fetches, or that folder); when the shipped file names a public set among
its sources, `--check` fails naming it unless its path is given.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vmem.eval.guard_sets import (
    DEV,
    FOLDS,
    addressed,
    bipia,
    language_sets,
    repo_data,
    training_sets,
)
from vmem.eval.guard_train import THRESHOLD, train, training_examples
from vmem.eval.public_sets import AGENTDOJO_VERSION, agentdojo
from vmem.guard import Guard
from vmem.guard.model import MODEL_FILE, Model

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "lib" / "vmem" / "data" / MODEL_FILE
SHARED = ROOT.parent / "shared" / "data"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file")
    parser.add_argument("--cross-validate", action="store_true",
                        help="BIPIA caught when its categories are left out of training")
    parser.add_argument("--dev", action="store_true",
                        help="train without the DEV lines and print the figures on them")
    parser.add_argument("--folds", action="store_true",
                        help="like --dev, over all four folds of the training lines")
    parser.add_argument("--data", type=Path, default=SHARED, help="the shared data folder")
    parser.add_argument("--agentdojo", type=Path, metavar="PATH",
                        help=f"train on AgentDojo's injections too: its wheel, or the folder "
                             f"`pip download agentdojo=={AGENTDOJO_VERSION} --no-deps -d` "
                             f"wrote it to")
    parser.add_argument("--measure-only", action="store_true",
                        help="with --dev or --folds: show the public sets' rows, train "
                             "without them (the figures to compare with)")
    args = parser.parse_args(argv)
    poisoning, locomo = args.data / "poisoning", args.data / "locomo" / "locomo10.json"
    public = {"agentdojo": args.agentdojo}
    needed = _public_needed(public) if args.check else []
    if needed:
        print(f"cannot check: the shipped weights were trained with {' and '.join(needed)} "
              f"too, and its path was not given (--agentdojo PATH, after `pip download "
              f"agentdojo=={AGENTDOJO_VERSION} --no-deps -d PATH`; docs/RELIABILITY.md says "
              "where each set comes from); without it training cannot reproduce the "
              "shipped file.", file=sys.stderr)
        return 1
    missing = [str(path) for path in (poisoning / "bipia", locomo) if not path.exists()]
    if missing:
        print(f"cannot train: {' and '.join(missing)} not found. The shipped weights were "
              "trained with BIPIA's train split and LoCoMo present (see "
              "../shared/data/README.md for where each comes from); without them training "
              "cannot reproduce the shipped file, so --check fails rather than pass "
              "unchecked. CI, which has no fetched data, pins the shipped weights' scores "
              "instead (tests/eval/test_guard_eval.py).", file=sys.stderr)
        return 1 if args.check else 2
    extra = {}
    for name, path in public.items():
        if path is not None:
            if agentdojo(path) is None:
                print(f"cannot train: no copy of {name} at {path}", file=sys.stderr)
                return 1 if args.check else 2
            extra[name] = path
    if args.cross_validate:
        return cross_validate(poisoning, locomo, extra)
    if args.dev or args.folds:
        return dev_figures(poisoning, locomo, extra, folds=args.folds,
                           train_public=not args.measure_only)
    model = train(training_examples(poisoning, locomo, extra=_public(extra)))
    text = model.to_json()
    if args.check:
        same = SHIPPED.is_file() and SHIPPED.read_text(encoding="utf-8") == text
        print("shipped model matches training" if same else f"{SHIPPED} differs from training")
        return 0 if same else 1
    SHIPPED.write_text(text, encoding="utf-8")
    print(f"wrote {SHIPPED.relative_to(ROOT)}: {model.meta['features']} weights from "
          f"{model.meta['examples']} sentences")
    return 0


def _public_needed(paths: dict[str, Path | None]) -> list[str]:
    """The public sets the shipped file was trained with (by the sources its meta
    counts) whose path is not given."""
    shipped = Model.from_json(SHIPPED.read_text(encoding="utf-8")) if SHIPPED.is_file() \
        else None
    sources = shipped.meta.get("sources") if shipped else None
    sources = sources if isinstance(sources, dict) else {}
    return sorted(name for name, path in paths.items()
                  if path is None and any(key.startswith(f"{name}:") for key in sources))


def _public(paths: dict[str, Path], dev: bool | frozenset[int] = False) -> dict:
    """The public sets named in `paths`, read (with `dev`, split for tuning)."""
    return {name: agentdojo(path, dev=dev) for name, path in paths.items()}


def cross_validate(poisoning: Path, locomo: Path, extra: dict[str, Path],
                   folds: int = 4) -> int:
    """Train without every fourth BIPIA category and count its addressed strings caught."""
    categories = sorted(bipia(poisoning) or {})
    patterns = Guard(learned_threshold=None)
    caught = total = 0
    for fold in range(folds):
        held = categories[fold::folds]
        model = train(training_examples(poisoning, locomo, skip_categories=held,
                                        extra=_public(extra)))
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


def dev_figures(poisoning: Path, locomo: Path, extra: dict[str, Path], folds: bool = False,
                train_public: bool = True,
                thresholds: tuple[float, ...] = (0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)) -> int:
    """Train without the DEV lines (`vmem.eval.guard_sets.DEV`) and print, per language
    and threshold, DEV injections caught and DEV ordinary texts flagged: what every
    setting is chosen on (with the DEV goals and texts of the public sets in `extra`, one
    row each). With `folds`, the same over all four `FOLDS` in turn (each
    training line scored once by a model that did not see it). The real held-out lines
    are neither trained on nor shown."""
    patterns = Guard(learned_threshold=None)
    bad: dict[str, list[tuple[bool, float]]] = {}
    good: dict[str, list[tuple[bool, float]]] = {}

    def score(guard: Guard, lang: str, injections: list[str], ordinary: list[str]) -> None:
        for texts, out in ((injections, bad), (ordinary, good)):
            out.setdefault(lang, []).extend(
                (patterns.scan(text).flagged, guard.learned_score(text)) for text in texts)

    for number, fold in enumerate(FOLDS if folds else (DEV,)):
        public = _public(extra, dev=fold)
        guard = Guard(model=train(training_examples(poisoning, locomo, dev=fold,
                                                    extra=public if train_public else None)))
        for sets in (language_sets(dev=fold) or {}, training_sets(dev=fold) or {}, public):
            for lang, split in sets.items():
                score(guard, lang, split.held_injections, split.held_ordinary)
        english = [repo_data() / f"guard_dev_{kind}.txt" for kind in ("injections", "ordinary")]
        if number == 0 and all(path.is_file() for path in english):
            score(guard, "en dev files", *(
                [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
                for path in english))
    print(f"{'DEV lines' if not folds else 'all folds':<14}"
          + "".join(f"{t:>16}" for t in thresholds))
    totals = [[0, 0, 0, 0] for _t in thresholds]
    for lang in sorted(bad):
        cells = []
        for index, t in enumerate(thresholds):
            caught = sum(p or s >= t for p, s in bad[lang])
            flagged = sum(p or s >= t for p, s in good[lang])
            totals[index] = [totals[index][0] + caught, totals[index][1] + len(bad[lang]),
                             totals[index][2] + flagged, totals[index][3] + len(good[lang])]
            cells.append(f"{caught:>3}/{len(bad[lang]):<3} {flagged:>2}/{len(good[lang]):<4}")
        print(f"{lang:<14}" + "".join(f"{cell:>16}" for cell in cells))
    print(f"{'all':<14}" + "".join(f"{c:>4}/{n:<4}{f:>3}/{m:<4}" for c, n, f, m in totals))
    print("cells: injections caught, ordinary flagged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
