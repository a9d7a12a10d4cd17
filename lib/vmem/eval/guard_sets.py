"""The labelled text the guard is trained and measured on, loaded from where it lives.

- BIPIA's train split (`bipia/text_attack_train.json`, `bipia/code_attack_train.json` under
  the poisoning data folder): attack strings by category. A string is *addressed* when its
  instruction (the part before any code block) speaks to the model ("... your response"):
  an injection. The rest are plain user tasks ("What is the capital of Brazil?") that an
  ordinary memory could hold; no guard should flag them.
- The project's own sets in `tests/data`: one text a line (`guard_*.txt`), or
  `lang<TAB>label<TAB>style<TAB>text` rows (`guard_lang_*.tsv`, with "\\n" for a line break).
- LoCoMo's dialogue turns, as ordinary English conversation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import DatasetError

BIPIA_FILES = {"text": "text_attack_train.json", "code": "code_attack_train.json"}
_ADDRESSED = re.compile(r"\byour\b", re.IGNORECASE)


@dataclass(frozen=True)
class Attack:
    """One BIPIA attack string: its `category`, `source` ("text" or "code"), `fold` (0 or
    1: every other category, in name order, within its source), and whether it is
    `addressed` to the model."""

    category: str
    source: str
    fold: int
    text: str

    @property
    def instruction(self) -> str:
        """The instruction part: the text before any code block."""
        return self.text.split("```", 1)[0].strip()

    @property
    def addressed(self) -> bool:
        return bool(_ADDRESSED.search(self.instruction))


@dataclass(frozen=True)
class Labelled:
    """One row of a `guard_lang_*.tsv` set."""

    language: str
    injection: bool
    style: str
    text: str


def load_bipia(folder: Path) -> list[Attack]:
    """BIPIA's train-split attacks under `folder` (the folder holding `bipia/`)."""
    attacks: list[Attack] = []
    for source, name in BIPIA_FILES.items():
        path = Path(folder) / "bipia" / name
        try:
            table = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise DatasetError(f"cannot read BIPIA's {source} attacks at {path}: {error}") from None
        for index, category in enumerate(sorted(table)):
            attacks.extend(Attack(category, source, index % 2, text) for text in table[category])
    return attacks


def load_lines(path: Path) -> list[str]:
    """The non-blank lines of a one-text-a-line set."""
    return [line for line in Path(path).read_text(encoding="utf-8").splitlines()
            if line.strip()]


def load_labelled(path: Path) -> list[Labelled]:
    """The rows of a `lang<TAB>label<TAB>style<TAB>text` set ("#" lines are comments)."""
    rows: list[Labelled] = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 4 or parts[1] not in ("injection", "ordinary"):
            raise DatasetError(f"{path}:{number}: want lang, injection|ordinary, style, text "
                               "separated by tabs")
        language, label, style, text = parts
        rows.append(Labelled(language, label == "injection", style, text.replace("\\n", "\n")))
    return rows


def locomo_turns(path: Path) -> list[str]:
    """The text of every dialogue turn in LoCoMo's `locomo10.json`."""
    try:
        samples = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DatasetError(f"cannot read LoCoMo at {path}: {error}") from None
    return [turn["text"] for sample in samples
            for key, session in sample["conversation"].items()
            if re.fullmatch(r"session_\d+", key) for turn in session]
