"""How the guard reads a text: the normalised views its patterns and signals run on.

Obfuscation is undone before any matching: `normalize` applies NFKC (full-width forms),
removes invisible characters, folds look-alike letters of other scripts to the Latin ones
they imitate and lowers case; `views` adds the text with leetspeak undone and with letters
spaced or dotted apart joined back, each also as a word view ("don't ignore_it!" reads as
"dont ignore it "). `fold_mixed` folds look-alikes only inside words that mix scripts, so
the learned layer still reads Russian or Greek as itself. Every regex is bounded.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

__all__ = ["CONFUSABLES", "fold_mixed", "normalize", "views"]

# Look-alike letters from other scripts, folded to the Latin letter they imitate. Every
# entry maps one character to one character, so folding keeps string positions.
CONFUSABLES = str.maketrans(
    "аеорсухіјѕԁһӏԛԝвкмнтАВЕКМНОРСТХІЈЅԜ"  # Cyrillic
    "αεικνορτυχΑΒΕΗΙΚΜΝΟΡΤΥΧΖ"  # Greek
    "ɡɩıɑᴀʙᴄᴅᴇɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢ",  # Latin small capitals and IPA letters
    "aeopcyxijsdhlqwbkmhtABEKMHOPCTXIJSW"
    "aeikvoptuxABEHIKMNOPTYXZ"
    "giiaabcdeghijklmnoprstuvwyz",
)
_INVISIBLE = {"Cf", "Mn", "Me"}  # format characters (zero-width, bidi), combining marks
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b",
                       "9": "g", "@": "a", "$": "s", "!": "i", "|": "i", "+": "t"})
_LEET_L = str.maketrans({"1": "l", "|": "l", "!": "l"})
_WORD = re.compile(r"[a-z0-9]+")
_LEET_TOKEN = re.compile(r"\S*[a-z]\S*")
_LEET_CHARS = re.compile(r"[0-9@$!|+]")
_LEET_INSIDE = re.compile(r"[a-z][0-9@$|]|[0-9@$|!][a-z]")
# Runs of single characters split by separators: "i g n o r e", "d.i.s.r.e.g.a.r.d".
_SPACED_RUN = re.compile(r"(?<![^\W_])[a-z0-9](?:[\s.\-_*,/|~+'`]{1,3}[a-z0-9](?![^\W_])){2,}")
_SEPARATORS = re.compile(r"[\s.\-_*,/|~+'`]+")
# A word with a Latin letter and a look-alike from another script (Cyrillic, Greek), in
# either order. Latin letters of other languages (Turkish "ı") are never folded here.
_LOOKALIKE = "".join(chr(code) for code in CONFUSABLES
                     if unicodedata.name(chr(code)).startswith(("CYRILLIC", "GREEK")))
_WORD_RUN = re.compile(r"\w+")
_LATIN_LETTER = re.compile(r"[a-zA-Z]")
_LOOKALIKE_LETTER = re.compile(f"[{_LOOKALIKE}]")


def normalize(text: str) -> str:
    """Text as the guard's patterns read it: NFKC, invisible characters removed,
    look-alikes folded, lower case (whitespace is kept: its width tells spaced-out words
    apart)."""
    text = unicodedata.normalize("NFKC", text)
    if not text.isascii():
        text = "".join(ch for ch in text if unicodedata.category(ch) not in _INVISIBLE
                       or ch in "\n\t")
    return text.translate(CONFUSABLES).lower()


def fold_mixed(text: str) -> str:
    """`text` with look-alike letters folded inside words that also hold Latin letters
    ("ignоre" with a Cyrillic "о" reads as "ignore"); words of one script are kept, and so
    is every position."""
    if text.isascii() or not _LOOKALIKE_LETTER.search(text):
        return text
    return _WORD_RUN.sub(_fold_if_mixed, text)


def _fold_if_mixed(match: re.Match[str]) -> str:
    """One word, folded when it holds a Latin letter and a look-alike. Two plain searches
    per word keep this linear: one pattern for "a word with both, in either order" backtracks
    cubically on a long word of look-alikes alone."""
    word = match.group()
    if _LOOKALIKE_LETTER.search(word) and _LATIN_LETTER.search(word):
        return word.translate(CONFUSABLES)
    return word


def _words(text: str) -> str:
    """Only the words, each followed by one space: "don't ignore_it!" -> "dont ignore it ".

    The trailing space lets every pattern end a word with a plain space.
    """
    return " ".join(_WORD.findall(text.replace("'", "").replace("\u2019", ""))) + " "


def _unleet(text: str, table: dict[int, str]) -> str:
    """Leetspeak undone inside tokens that mix letters with digits or symbols."""
    def fix(match: re.Match[str]) -> str:
        token = match.group()
        return token.translate(table) if _LEET_CHARS.search(token) else token
    return _LEET_TOKEN.sub(fix, text)


def _unspace(text: str) -> str:
    """Letters spaced apart joined back into words. A gap wider than the run's narrowest,
    or one with a space in a run mostly split by other marks, separates words:
    "i g n o r e   a l l" -> "ignore all", "i.g.n.o.r.e a.l.l" -> "ignore all"."""
    def join(match: re.Match[str]) -> str:
        run = match.group()
        gaps = _SEPARATORS.findall(run)
        narrow = min(len(gap) for gap in gaps)
        all_spaces = all(gap.isspace() for gap in gaps)
        pieces = _SEPARATORS.split(run)
        out = [pieces[0]]
        for gap, piece in zip(gaps, pieces[1:], strict=True):
            breaks = len(gap) > narrow or (not all_spaces and " " in gap)
            out.append((" " if breaks else "") + piece)
        return "".join(out)
    return _SPACED_RUN.sub(join, text)


def views(text: str) -> Iterator[tuple[str, str, bool]]:
    """(how it was de-obfuscated, view, is the word view), each distinct view once."""
    plain = normalize(text)
    seen: set[str] = set()
    candidates = [("", plain)]
    if _LEET_INSIDE.search(plain):
        candidates.append(("leetspeak", _unleet(plain, _LEET)))
        if "1" in plain or "|" in plain or "!" in plain:
            candidates.append(("leetspeak", _unleet(plain.translate(_LEET_L), _LEET)))
    spaced = _unspace(plain)
    if spaced != plain:
        candidates.append(("letters spaced apart", spaced))
    for how, view in candidates:
        for on_words, form in ((False, view), (True, _words(view))):
            key = f"{on_words}{form}"
            if key not in seen:
                seen.add(key)
                yield how, form, on_words
