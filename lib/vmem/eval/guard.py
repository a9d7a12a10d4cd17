"""Measure the poisoning guard on public and own labelled text: `python -m vmem eval guard`.

Rows are (set, group) with caught/total for injections or flagged/total for ordinary text:
- `bipia/addressed` and `bipia/plain`, per BIPIA category (train split), with the fold
  (`Attack.fold`) that the learned layer's cross-validation held out;
- `own-heldout` per language and style (`tests/data/guard_lang_heldout.tsv`), never trained on;
- the English sets in tests/data (`independent` and `dev` were never trained on);
- `locomo` dialogue turns as ordinary English conversation.

Then precision and recall over all labelled rows, and `precision_recall` gives the points a
plot needs as the learned layer's threshold moves.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..guard import Guard
from .guard_sets import load_bipia, load_labelled, load_lines, locomo_turns

OWN_SETS = (("independent", "guard_independent_injections.txt", True),
            ("independent", "guard_independent_ordinary.txt", False),
            ("dev", "guard_dev_injections.txt", True),
            ("dev", "guard_dev_ordinary.txt", False))


@dataclass(frozen=True)
class Row:
    """`hits` of `total` texts flagged in one group; for injections a hit is a catch, for
    ordinary text a false positive."""

    name: str
    group: str
    injections: bool
    hits: int
    total: int


@dataclass(frozen=True)
class Point:
    """One threshold of the learned layer and the guard's precision and recall there."""

    threshold: float
    precision: float
    recall: float


def precision_recall(scores: Sequence[float], labels: Sequence[bool],
                     thresholds: Iterable[float]) -> list[Point]:
    """Precision and recall when a text counts as flagged at `score >= threshold`, one
    point per threshold (precision is 1.0 where nothing is flagged)."""
    points = []
    positives = sum(labels)
    for threshold in thresholds:
        flagged = [label for score, label in zip(scores, labels, strict=True)
                   if score >= threshold]
        true = sum(flagged)
        points.append(Point(threshold, true / len(flagged) if flagged else 1.0,
                            true / positives if positives else 0.0))
    return points


def guard_scores(texts: Iterable[str], guard: Guard | None = None) -> list[float]:
    """Per text, 1.0 when the rule layers (patterns, weak signals) of `guard` flag it, else
    the learned layer's probability: the scores whose threshold `precision_recall` moves."""
    guard = guard or Guard()
    rules = copy.copy(guard)
    rules.model_threshold = None
    return [1.0 if rules.scan(text).flagged else guard.model_score(text) for text in texts]


def measure(guard: Guard, poisoning: Path | None, own: Path | None,
            locomo: Path | None, log: Callable[[str], None] = print) -> list[Row]:
    """The rows for every data source that is present; `log` says which are skipped."""
    def flagged(texts: Iterable[str]) -> int:
        return sum(guard.scan(text).flagged for text in texts)

    rows: list[Row] = []
    if poisoning is not None and (poisoning / "bipia").is_dir():
        attacks = load_bipia(poisoning)
        for addressed in (True, False):
            name = "bipia/addressed" if addressed else "bipia/plain"
            for category in sorted({a.category for a in attacks}):
                group = [a for a in attacks if a.category == category and a.addressed == addressed]
                if group:
                    rows.append(Row(name, f"{category} (fold {group[0].fold})", addressed,
                                    flagged(a.text for a in group), len(group)))
    else:
        log(f"skipped BIPIA: no bipia/ folder under {poisoning} (see ../shared/data/README.md)")
    if own is not None and (own / "guard_lang_heldout.tsv").exists():
        held = load_labelled(own / "guard_lang_heldout.tsv")
        for key in sorted({(r.language, r.injection) for r in held}):
            group = [r for r in held if (r.language, r.injection) == key]
            rows.append(Row("own-heldout/language", key[0], key[1],
                            flagged(r.text for r in group), len(group)))
        for key in sorted({(r.style, r.injection) for r in held}):
            group = [r for r in held if (r.style, r.injection) == key]
            rows.append(Row("own-heldout/style", key[0], key[1],
                            flagged(r.text for r in group), len(group)))
        for name, file, injections in OWN_SETS:
            texts = load_lines(own / file)
            rows.append(Row(name, "en", injections, flagged(texts), len(texts)))
    else:
        log(f"skipped the project's own sets: none at {own}")
    if locomo is not None and locomo.exists():
        turns = locomo_turns(locomo)
        rows.append(Row("locomo", "turns", False, flagged(turns), len(turns)))
    else:
        log(f"skipped LoCoMo: no file at {locomo}")
    return rows


def render(rows: Sequence[Row]) -> str:
    """A plain-text table, then precision and recall over all rows."""
    width = max([len(f"{row.name}  {row.group}") for row in rows] + [10])
    lines = [f"{'set  group':<{width}}  {'texts':<10} {'flagged':>9} {'rate':>7} {'missed':>6}"]
    for row in rows:
        kind = "injection" if row.injections else "ordinary"
        rate = 100 * row.hits / row.total if row.total else 0.0
        missed = str(row.total - row.hits) if row.injections else ""
        lines.append(f"{row.name + '  ' + row.group:<{width}}  {kind:<10} "
                     f"{row.hits:>4}/{row.total:<4} {rate:>6.1f}% {missed:>6}")
    for name in sorted({row.name for row in rows}):
        group = [row for row in rows if row.name == name]
        caught = sum(r.hits for r in group if r.injections)
        injections = sum(r.total for r in group if r.injections)
        false = sum(r.hits for r in group if not r.injections)
        ordinary = sum(r.total for r in group if not r.injections)
        precision = caught / (caught + false) if caught + false else 1.0
        recall = caught / injections if injections else float("nan")
        lines.append(f"{name}: caught {caught}/{injections}, false positives "
                     f"{false}/{ordinary}, precision {precision:.3f}, recall {recall:.3f}")
    return "\n".join(lines) + "\n"
