"""How well the guard does: caught and missed per set, false positives, precision/recall.

`measure(poisoning, locomo)` scans every labelled set that is present (see
`vmem.eval.guard_sets` for where each comes from and how it is split) and returns rows
of counts, each for the committed `Guard()`, for its pattern layers alone (the guard
before the learned layer) and for its learned layer alone: what each layer contributes.
Every text is judged as tool output (`scan(text)`, the strictest source), and again as the
user's own words (`source="user"`, the "as user" columns): what the guard still flags when
a user types or pastes it.
`precision_recall(injections, ordinary)` gives the points a plot needs as the learned
layer's threshold moves. `python -m vmem eval guard --data
../shared/data/poisoning [--threshold T]` prints the table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..guard import Guard
from .guard_sets import (
    addressed,
    bipia,
    documents,
    language_sets,
    locomo_turns,
    ordinary_sets,
    repo_data,
)

__all__ = ["PRPoint", "Row", "measure", "precision_recall", "render", "threshold_score"]

FIVE = ("es", "fr", "pt", "de", "it")
# The everyday sets under tests/data that were blind when first measured (each written
# after the last change it judged, read since; see each folder's README): folder -> the
# group its rows are reported in.
BLIND_SETS = {"guard_ordinary_lang2": "second blind ordinary set",
              "guard_ordinary_lang3": "third blind ordinary set",
              "guard_ordinary_lang4": "fourth blind ordinary set",
              "guard_ordinary_lang5": "fifth blind ordinary set",
              "guard_ordinary_lang6": "sixth blind ordinary set",
              "guard_ordinary_lang7": "seventh blind ordinary set"}


@dataclass(frozen=True)
class Row:
    """One set: injections caught of `injections`, ordinary texts flagged of `ordinary`,
    by the whole guard (`caught`, `flagged`), by the patterns alone (`before_*`), by
    the learned layer alone (`model_*`), and by the whole guard with the texts as the
    user's own words (`user_*`)."""

    group: str
    name: str
    caught: int = 0
    injections: int = 0
    flagged: int = 0
    ordinary: int = 0
    before_caught: int = 0
    before_flagged: int = 0
    model_caught: int = 0
    model_flagged: int = 0
    user_caught: int = 0
    user_flagged: int = 0


@dataclass(frozen=True)
class PRPoint:
    threshold: float
    precision: float
    recall: float


class _Scorer:
    """Each text scanned once: the patterns' flag and the learned layer's score, which
    flags from `threshold` (None: the threshold shipped with the weights)."""

    def __init__(self, threshold: float | None = None) -> None:
        self.patterns = Guard(learned_threshold=None)
        self.full = Guard()
        self.threshold = float(threshold if threshold is not None
                               else self.full.learned_threshold or 1.0)
        self.as_user = Guard(learned_threshold=self.threshold)

    def scores(self, texts: Iterable[str]) -> list[tuple[bool, float]]:
        return [(self.patterns.scan(text).flagged, self.full.learned_score(text))
                for text in texts]

    def row(self, group: str, name: str, injections: Sequence[str] = (),
            ordinary: Sequence[str] = ()) -> Row:
        bad, good = self.scores(injections), self.scores(ordinary)
        flag = self.threshold

        def as_user(texts: Sequence[str], scores: list[tuple[bool, float]]) -> int:
            # what the user's own words flag is a part of what tool output flags
            return sum(self.as_user.scan(text, source="user").flagged
                       for text, (p, s) in zip(texts, scores, strict=True) if p or s >= flag)
        return Row(group, name, sum(p or s >= flag for p, s in bad), len(bad),
                   sum(p or s >= flag for p, s in good), len(good),
                   sum(p for p, _s in bad), sum(p for p, _s in good),
                   sum(s >= flag for _p, s in bad), sum(s >= flag for _p, s in good),
                   as_user(injections, bad), as_user(ordinary, good))


def threshold_score(value: str | float) -> float:
    """`value` as a threshold for the learned layer: a score in (0, 1] (at 1 it flags
    nothing). ValueError, naming that range, for anything else ("0", "nan", "high")."""
    try:
        score = float(value)
    except ValueError:
        score = math.nan
    if not 0 < score <= 1:
        raise ValueError(f"the learned layer's threshold is a score in (0, 1], not {value!r}")
    return score


def measure(poisoning: Path | None, locomo: Path | None, threshold: float | None = None
            ) -> tuple[list[Row], list[str]]:
    """Rows for every set found, and a message for every set skipped; `threshold` moves
    the learned layer's (None: the shipped one), to see what another setting costs."""
    threshold = None if threshold is None else threshold_score(threshold)
    scorer, rows, skipped = _Scorer(threshold), [], []
    attacks = bipia(poisoning) if poisoning else None
    if attacks is None:
        skipped.append(f"BIPIA: no text_attack_train.json / code_attack_train.json under "
                       f"{poisoning} (see ../shared/data/README.md)")
    else:
        for category, strings in attacks.items():
            mine = [s for s in strings if addressed(s)]
            if mine:
                rows.append(scorer.row("BIPIA addressed", category, injections=mine))
        plain = [s for strings in attacks.values() for s in strings if not addressed(s)]
        rows.append(scorer.row("BIPIA plain tasks", "all categories", ordinary=plain))
    sets = language_sets()
    if sets is None:
        skipped.append(f"own sets: {repo_data() / 'guard_lang'} not found (a source checkout)")
    else:
        for lang, split in sets.items():
            rows.append(scorer.row("held-out, by language", lang, split.held_injections,
                                   split.held_ordinary))
    ordinary = ordinary_sets()
    if ordinary is not None:
        for lang, texts in ordinary.items():
            rows.append(scorer.row("held-out ordinary text, by language", lang,
                                   ordinary=texts))
    for folder, group in BLIND_SETS.items():
        blind = ordinary_sets(repo_data() / folder)
        if blind is not None:
            for lang, texts in blind.items():
                rows.append(scorer.row(f"{group}, by language", lang, ordinary=texts))
    gaps = ordinary_sets(repo_data() / "guard_lang_gaps")
    if gaps is not None:
        for lang, texts in gaps.items():
            rows.append(scorer.row("held-out, kinds once missed", lang, injections=texts))
    docs = documents()
    if docs is not None:
        rows.append(scorer.row("held-out, documents and code", "en", docs.held_injections,
                               docs.held_ordinary))
    independent = [repo_data() / f"guard_independent_{kind}.txt"
                   for kind in ("injections", "ordinary")]
    if all(path.is_file() for path in independent):
        bad, good = ([line for line in path.read_text(encoding="utf-8").splitlines()
                      if line.strip()] for path in independent)
        rows.append(scorer.row("independent English set", "en", bad, good))
    turns = locomo_turns(locomo) if locomo else None
    if turns is None:
        skipped.append(f"LoCoMo: {locomo} not found")
    else:
        rows.append(scorer.row("LoCoMo turns", "conversations 5-9 (held out)",
                               ordinary=turns[1]))
        rows.append(scorer.row("LoCoMo turns", "conversations 0-4 (trained on)",
                               ordinary=turns[0]))
    return rows + _totals(rows), skipped


def _totals(rows: list[Row]) -> list[Row]:
    """Sums over the groups the targets are stated for."""
    def total(group: str, name: str, chosen: list[Row]) -> Row:
        return Row(group, name, *(sum(getattr(row, key) for row in chosen) for key in
                                  ("caught", "injections", "flagged", "ordinary",
                                   "before_caught", "before_flagged", "model_caught",
                                   "model_flagged", "user_caught", "user_flagged")))
    langs = [row for row in rows if row.group == "held-out, by language"]
    out = []
    if langs:
        out.append(total("totals", "17 languages other than English",
                         [row for row in langs if row.name != "en"]))
        out.append(total("totals", "es, fr, pt, de, it together",
                         [row for row in langs if row.name in FIVE]))
    plain = [row for row in rows if row.group == "held-out ordinary text, by language"]
    if plain:
        out.append(total("totals", "held-out ordinary text, 18 languages", plain))
    for group in BLIND_SETS.values():
        blind = [row for row in rows if row.group == f"{group}, by language"]
        if blind:
            out.append(total("totals", f"{group}, {len(blind)} languages", blind))
    gaps = [row for row in rows if row.group == "held-out, kinds once missed"]
    if gaps:
        out.append(total("totals", "kinds once missed, 17 languages other than English",
                         [row for row in gaps if row.name != "en"]))
    addressed_rows = [row for row in rows if row.group == "BIPIA addressed"]
    if addressed_rows:
        out.append(total("totals", "BIPIA addressed, all categories", addressed_rows))
    return out


def precision_recall(injections: Sequence[str], ordinary: Sequence[str],
                     thresholds: Sequence[float] | None = None) -> list[PRPoint]:
    """Precision and recall of `Guard()` as the learned layer's threshold moves.

    A text is flagged when the patterns flag it or its learned score reaches the
    threshold; precision is flagged injections over all flagged texts (1.0 when none is).
    """
    scorer = _Scorer()
    bad, good = scorer.scores(injections), scorer.scores(ordinary)
    points = []
    for threshold in thresholds or [i / 20 for i in range(1, 20)] + [0.999]:
        caught = sum(p or s >= threshold for p, s in bad)
        wrong = sum(p or s >= threshold for p, s in good)
        points.append(PRPoint(threshold, caught / (caught + wrong) if caught + wrong else 1.0,
                              caught / len(bad) if bad else 0.0))
    return points


def render(rows: Sequence[Row], skipped: Sequence[str]) -> str:
    """The rows as a plain-text table, grouped, with precision and recall at the end."""
    lines = [f"{'set':<32} {'name':<34} {'caught':>13} {'before':>7} {'model':>6} "
             f"{'as user':>8} {'ordinary flagged':>18} {'before':>7} {'model':>6} "
             f"{'as user':>8}"]
    group = None
    for row in rows:
        if row.group != group:
            lines.append(f"\n{row.group}")
            group = row.group
        caught = f"{row.caught}/{row.injections}" if row.injections else ""
        flagged = f"{row.flagged}/{row.ordinary}" if row.ordinary else ""
        lines.append(f"{'':<32} {row.name:<34} {caught:>13} "
                     f"{row.before_caught if row.injections else '':>7} "
                     f"{row.model_caught if row.injections else '':>6} "
                     f"{row.user_caught if row.injections else '':>8} {flagged:>18} "
                     f"{row.before_flagged if row.ordinary else '':>7} "
                     f"{row.model_flagged if row.ordinary else '':>6} "
                     f"{row.user_flagged if row.ordinary else '':>8}")
    held = [row for row in rows if row.group != "totals" and "trained on" not in row.name]
    caught = sum(row.caught for row in held)
    injections = sum(row.injections for row in held)
    flagged = sum(row.flagged for row in held)
    if injections:
        lines.append(f"\nall sets above (LoCoMo trained half excluded): precision "
                     f"{caught / max(1, caught + flagged):.3f}, recall {caught / injections:.3f}")
    lines += [f"skipped: {message}" for message in skipped]
    return "\n".join(lines) + "\n"
