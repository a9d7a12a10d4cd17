"""The guard's labelled sets, read and split the same way by training and evaluation.

- BIPIA's train split of attack strings (`../shared/data/poisoning/bipia`, MIT; not in the
  repository): a string is *addressed* when its instruction (the part before any code
  block) says "your"; the rest are plain user tasks that an ordinary memory could hold.
- The project's own sets per language (`tests/data/guard_lang/<code>.txt`, written for
  this project): injections, and ordinary sentences whose `{s}` is filled with each of
  the file's subjects. Line i of a section is held out when i % 10 is 3, 6 or 9, the same
  lines in every language, so a held-out meaning is unseen in every language.
- `tests/data/guard_lang_train/<code>.txt`: more training lines per language (ordinary
  text that speaks of "your answer", "AI" or "the user" without ordering anything, and
  injections that name neither the model nor its answer), never held out; with `dev`,
  their DEV lines are what tuning measures instead.
- `tests/data/guard_ordinary_lang/<code>.txt`: ordinary text only, one text a line, held
  out entirely (never trained on, never used to choose a setting).
- `tests/data/guard_ordinary_lang2/<code>.txt`: a second ordinary set (es, id, vi, en,
  pt, th, tl), read by `ordinary_sets` the same way, committed blind before the changes it
  first measured, since seen (its flagged lines guided the next change); never trained on.
- `tests/data/guard_ordinary_lang3/` to `guard_ordinary_lang7/`: five more ordinary sets,
  all 18 languages, written by people who never saw the guard, each measured before anyone
  read a line of it (see each README), read since; never trained on.
- LoCoMo dialogue turns: conversations 0-4 for training, 5-9 held out.
- `tests/data/guard_documents.txt`: instructions hidden in web pages, tables, resumes,
  e-mails and code comments, with ordinary documents of the same kinds: held out only.

Every loader returns None when its files are absent, so callers can skip with a message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DEV", "FOLDS", "HELD_OUT", "LabelledSet", "addressed", "bipia", "documents",
           "language_sets",
           "locomo_turns", "ordinary_sets", "repo_data", "training_sets"]

HELD_OUT = frozenset({3, 6, 9})  # line index % 10 of the held-out lines
DEV = frozenset({1, 5})  # of the training lines, those a tuning run holds out instead
# The training lines cut four ways by index % 10 (DEV first): cross-validation over all of
# them, for settings that the DEV lines alone are too few to show (`scripts/train_guard.py`).
FOLDS = (DEV, frozenset({0, 4}), frozenset({2, 7}), frozenset({8}))
_ADDRESSED = re.compile(r"\byour\b", re.IGNORECASE)


@dataclass
class LabelledSet:
    """Injections and ordinary texts of one language (or one source), split two ways."""

    train_injections: list[str] = field(default_factory=list)
    train_ordinary: list[str] = field(default_factory=list)
    held_injections: list[str] = field(default_factory=list)
    held_ordinary: list[str] = field(default_factory=list)


def repo_data() -> Path:
    """`tests/data` of the checkout this package runs from (absent in an installed copy)."""
    return Path(__file__).resolve().parents[3] / "tests" / "data"


def addressed(attack: str) -> bool:
    """True when the instruction part of a BIPIA string (before any code) says "your"."""
    return bool(_ADDRESSED.search(attack.split("```")[0]))


def bipia(path: Path) -> dict[str, list[str]] | None:
    """BIPIA's attack strings by category (text attacks first), or None when absent."""
    folder = path / "bipia" if (path / "bipia").is_dir() else path
    files = [folder / "text_attack_train.json", folder / "code_attack_train.json"]
    if not all(file.is_file() for file in files):
        return None
    categories: dict[str, list[str]] = {}
    for file in files:
        categories.update(json.loads(file.read_text(encoding="utf-8")))
    return categories


def language_sets(folder: Path | None = None, *,
                  dev: bool | frozenset[int] = False) -> dict[str, LabelledSet] | None:
    """The project's per-language sets, split into train and held-out lines.

    With `dev`, the held-out lines are left out altogether and the DEV lines of the
    training split take their place: what tuning (model settings, threshold) looks at
    (`dev` may name other residues of index % 10 instead, one of `FOLDS`).
    """
    folder = folder or repo_data() / "guard_lang"
    files = sorted(folder.glob("*.txt")) if folder.is_dir() else []
    if not files:
        return None
    return {file.stem: _read_language(file, dev) for file in files}


def training_sets(folder: Path | None = None, *,
                  dev: bool | frozenset[int] = False) -> dict[str, LabelledSet] | None:
    """The per-language training-only lines (`tests/data/guard_lang_train`): all of them
    train; with `dev`, the DEV lines are held out of training and measured instead."""
    folder = folder or repo_data() / "guard_lang_train"
    files = sorted(folder.glob("*.txt")) if folder.is_dir() else []
    if not files:
        return None
    return {file.stem: _read_language(file, dev, held_out=False) for file in files}


def ordinary_sets(folder: Path | None = None) -> dict[str, list[str]] | None:
    """The held-out ordinary texts per language (`tests/data/guard_ordinary_lang`)."""
    folder = folder or repo_data() / "guard_ordinary_lang"
    files = sorted(folder.glob("*.txt")) if folder.is_dir() else []
    if not files:
        return None
    return {file.stem: [line.strip() for line in file.read_text(encoding="utf-8").splitlines()
                        if line.strip()] for file in files}


def _held(index: int, dev: bool | frozenset[int], held_out: bool = True) -> bool | None:
    """True: held out; False: training; None: neither (the real held-out, when tuning).
    Without `held_out` (training-only files) no line is held out except, with `dev`, the
    DEV lines."""
    if held_out and index % 10 in HELD_OUT:
        return None if dev else True
    return index % 10 in (DEV if dev is True else dev) if dev else False


def _read_language(file: Path, dev: bool | frozenset[int],
                   held_out: bool = True) -> LabelledSet:
    sections: dict[str, list[str]] = {}
    current = sections.setdefault("", [])
    for line in file.read_text(encoding="utf-8").splitlines():
        if line.startswith("# ") and line[2:] in ("subjects", "ordinary", "injections"):
            current = sections.setdefault(line[2:], [])
        elif line.strip():
            current.append(line.strip())
    out = LabelledSet()
    for index, line in enumerate(sections.get("injections", [])):
        held = _held(index, dev, held_out)
        if held is not None:
            (out.held_injections if held else out.train_injections).append(line)
    for index, line in enumerate(sections.get("ordinary", [])):
        held = _held(index, dev, held_out)
        if held is None:
            continue
        filled = ([line.replace("{s}", subject) for subject in sections.get("subjects", [])]
                  if "{s}" in line else [line])
        (out.held_ordinary if held else out.train_ordinary).extend(filled)
    return out


def documents(file: Path | None = None) -> LabelledSet | None:
    """Instructions hidden in documents and code, and ordinary documents: all held out."""
    file = file or repo_data() / "guard_documents.txt"
    if not file.is_file():
        return None
    out = LabelledSet()
    for line in file.read_text(encoding="utf-8").splitlines():
        if line.startswith("+ "):
            out.held_injections.append(line[2:].replace("\\n", "\n"))
        elif line.startswith("- "):
            out.held_ordinary.append(line[2:].replace("\\n", "\n"))
    return out


def locomo_turns(path: Path) -> tuple[list[str], list[str]] | None:
    """LoCoMo's dialogue turns as (conversations 0-4, conversations 5-9), or None."""
    if not path.is_file():
        return None
    samples = json.loads(path.read_text(encoding="utf-8"))
    halves: tuple[list[str], list[str]] = ([], [])
    for index, sample in enumerate(samples):
        for key, session in sample["conversation"].items():
            if re.fullmatch(r"session_\d+", key):
                halves[index >= 5].extend(turn["text"] for turn in session)
    return halves
