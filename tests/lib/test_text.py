"""The shared text helpers: one way to shorten text and to count nouns."""

from __future__ import annotations

from vmem.text import clip, one_line, plural


def test_clip_keeps_short_text_and_cuts_long_text_to_the_limit():
    assert clip("short", 10) == "short"
    assert clip("exactly10!", 10) == "exactly10!"
    cut = clip("a sentence that is far too long", 12)
    assert cut == "a sentence…" and len(cut) <= 12


def test_clip_can_say_how_long_the_whole_was():
    assert clip("x" * 500, 20, show_length=True) == "x" * 19 + "… (500 characters)"
    assert clip("fits", 20, show_length=True) == "fits"


def test_one_line_flattens_whitespace_then_clips():
    assert one_line("two\nlines\t and  spaces") == "two lines and spaces"
    assert one_line("first line\nsecond line", 12) == "first line…"


def test_plural_is_singular_only_for_exactly_one():
    assert [plural(n, "record") for n in (0, 1, 2)] == ["0 records", "1 record", "2 records"]
