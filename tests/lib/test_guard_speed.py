"""What keeps the guard fast stays exact: every gated pattern and signal finds what it
finds ungated, and `import vmem` loads no table or weight of the guard."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vmem.guard.literals import Gated, needs, words
from vmem.guard.patterns import TEXT_PATTERNS, WORD_PATTERNS
from vmem.guard.signals import SIGNALS
from vmem.guard.views import views

DATA = Path(__file__).resolve().parents[1] / "data"


def _texts() -> list[str]:
    """Every labelled line of the project's guard sets, injections and ordinary text."""
    lines = []
    for path in sorted(DATA.rglob("guard_*")) + sorted(DATA.glob("guard_*/*.txt")):
        if path.is_file() and path.suffix == ".txt":
            lines += [line for line in path.read_text(encoding="utf-8").splitlines()
                      if line.strip() and not line.startswith("#")]
    return lines


@pytest.fixture(scope="module")
def viewed() -> list[tuple[str, set[str], bool]]:
    texts = _texts()
    assert len(texts) > 5_000
    return [(view, words(view), on_words) for text in texts
            for _how, view, on_words in views(text)]


def test_the_words_a_regex_needs_are_found_in_its_parse_tree():
    assert needs(r"\byour (?:answer|reply)\b") == {"answer", "reply"}
    after_a_stop = needs(r"(?:^|[.!?]\s{0,5})(?:please )?(?:ignore|forget)\b")
    assert after_a_stop is not None and {"ignore", "forget"} <= after_a_stop
    assert after_a_stop <= {"ignore", "forget", "please"}  # "please ignore" holds both
    in_a_group = needs(r"\b(?:nothing else|every (?:answer|reply))\b")  # edges outside it
    assert in_a_group and in_a_group <= {"nothing", "else", "every", "answer", "reply"}
    assert needs(r"\bsummari[sz]e (?:it|this)\b") == {"summarise", "summarize"}
    assert needs(r"ab\s+cd") is None  # "ab" may end a longer word, "cd" begin one
    assert needs(r"[a-z]{2,20}gpt\b") is None
    assert needs(r"\b(?:hi|hey)\b|\bbye") is None  # one branch needs no whole word


@pytest.mark.parametrize("kind, regex", [(kind, rx) for kind, rx in WORD_PATTERNS] +
                         [(kind, rx) for kind, rx in TEXT_PATTERNS] +
                         [(name, rx) for name, _weight, rx in SIGNALS])
def test_a_gated_regex_finds_what_the_regex_finds(viewed, kind, regex):
    gated = Gated.compile(regex)
    for view, present, _on_words in viewed:
        if not gated.possible(present):
            assert gated.regex.search(view) is None, (kind, view)


def test_import_vmem_loads_no_table_or_weight_of_the_guard():
    probe = ("import sys, vmem; print(sorted(m for m in sys.modules if m in "
             "('vmem.guard.model', 'vmem.guard.languages')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
    first_scan = probe.replace("print(", "vmem.Guard().scan('hi'); print(")
    out = subprocess.run([sys.executable, "-c", first_scan], capture_output=True, text=True,
                         check=True).stdout
    assert "vmem.guard.model" in out
