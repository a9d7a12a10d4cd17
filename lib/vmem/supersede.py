"""Does a new fact replace an old one? A rule-based supersession detector, no model needed.

When an agent hears "Maya moved to Porto" after saving "Maya lives in Lisbon", both
records stay in archival memory and BM25 cannot tell which is current. This module reads
the few claims a fact states as (subject, attribute, value) and says which claims of an
older text a newer one supersedes:

- **Claims.** Two attributes: where someone lives ("lives in", "moved to", "is based
  in"...) and what they work as ("works as", "a new job as", "is a pilot now"...). A
  claim can also name the value it replaces ("moved from Lisbon to Porto", "stopped
  working as a nurse"). Past tense ("lived in", "used to work as", "was a") states
  nothing current, so it makes no claim.
- **The subject** is the nearest person mentioned before the value: a name, "the user",
  or I/we/my, meaning the speaker (a leading "Maya: " names the speaker; without one,
  "user"); "Leeds is where Tove Xu lives" names it after. A first name alone means the
  full name the same text used before it. An unnamed person ("our neighbour, who is a
  nurse") makes no claim.
- **Supersession.** A new claim supersedes an old one when the subject and attribute
  match (one name's words within the other's: "Hana" may be "Hana Chen") and either the
  new claim names the old value or the two values share no word ("senior nurse" does not
  replace "nurse": that may be the same job). A new claim that names the old value also
  supersedes an older text the rules cannot read, when that text mentions the same full
  name and that value ("Ivo Berg is a chemist at the lab").

`compare(new_text, old_text, people)` returns a `Supersession`: the old text's claims
that are superseded, those that still stand, and whether the subjects are surely the same
person (equal, or a first name that only one of the known full names `people` starts
with). `complete` (every claim superseded, surely the same person) is what the offline
policy invalidates on; anything less is a conflict to show the model. The rules are small
on purpose: notebook 07 measures where they fail, with the generator's ground truth as
the upper bound.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Claim", "Supersession", "claims", "compare", "full_names", "namesakes",
           "subject_words", "supersedes"]

USER = "user"
"""The subject of a first-person claim when no speaker is known."""

_CITY = r"[A-Z][a-zA-Z'-]+(?: [A-Z][a-zA-Z'-]+)?"
_NOUN = (r"[a-z]+(?: (?!(?:now|and|or|at|in|for|from|by|with|since|but|who|so|too|again|"
         r"this|that|these|last|next|mostly|long|full|part|here|there|today|lately)\b)[a-z]+)?")
_JOB = rf"(?:an? )?{_NOUN}"
_HOME = r"(?:place|flat|apartment|house|room|home|address)"
_VALUE_RULES: tuple[tuple[str, str], ...] = (  # verbs in any case, values as written
    ("city", rf"\b(?i:moved|relocated)(?i: back| away| over| house)?(?i: all the way)?"
             rf"(?: (?i:from) (?P<previous>{_CITY}))? (?i:to) (?P<value>{_CITY})"),
    ("city", rf"\b(?i:lives|live|living|resides|reside|residing|settled|based|staying) "
             rf"(?i:now )?(?i:in) (?P<value>{_CITY})"),
    ("city", rf"\b(?i:home|calls?)(?i: for \w+)?(?i: is)? (?i:now )?(?i:in )?(?P<value>{_CITY})"),
    ("city", rf"\b(?i:{_HOME}) (?i:is )?(?i:now )?(?i:in) (?P<value>{_CITY})"),
    ("city", rf"\b(?:is|am|'m|are|'re) (?:now )?in (?P<value>{_CITY}) now\b"),
    ("city", rf"\b(?P<value>{_CITY}) (?i:is where) (?P<subject>I|we|{_CITY}) (?i:lives?|live)"),
    ("job", rf"\b(?i:works|work|working|employed|job|position|role|career|living) as "
            rf"(?P<value>{_JOB})"),
    ("job", rf"\b(?i:became|becoming|retrained as|trained as|qualified as|hired as) "
            rf"(?P<value>{_JOB})"),
    ("job", rf"\b(?i:switched|changed|went)(?: careers| jobs)? from (?:being )?"
            rf"(?P<previous>an? {_NOUN}) to (?:being )?(?P<value>an? {_NOUN})"),
    ("job", rf"\b(?:is|am|are|'s|'m) (?:now )?(?P<value>an? {_NOUN}) "
            rf"(?:now|by trade|by profession)\b"),
    ("job", rf"\b(?:is|am|are|'s|'m) now (?P<value>an? {_NOUN})"),
    ("job", rf"\b(?:who is|I'm|I am|'ve been|has been|have been) (?P<value>an? {_NOUN})"
            rf"(?=,| for )"),
)
_PREVIOUS_RULES: tuple[tuple[str, str], ...] = (
    ("job", rf"\b(?i:stopped|quit|left|gave up|no longer|isn't|is not)"
            rf"(?i: working as| being| (?:his|her|my|their|the|our) job as)? "
            rf"(?P<previous>an? {_NOUN})"),
    ("city", rf"\b(?i:left|moved away from|moved out of|isn't in|is not in|no longer in) "
             rf"(?P<previous>{_CITY})"),
)
_PAST = re.compile(r"\b(?:used to|was|were|had been|no longer|never|did not|didn't|would|"
                   r"will|might|may|could|should|wants? to|plans? to|hopes? to|thinking of|"
                   r"about to)"
                   r"(?: \w+)?\s*$", re.IGNORECASE)
_SPEAKER = re.compile(r"^\s*(?P<name>[A-Z][\w'-]*(?: [A-Z][\w'-]*)?):\s")
_WORD = re.compile(r"[A-Za-z][\w'-]*|[.,!?;]")
_FIRST_PERSON = frozenset({"i", "i'm", "i've", "i'd", "we", "we're", "we've", "me", "us",
                           "my", "our", "myself"})
_THIRD_PERSON = frozenset({"he", "she", "they", "him", "her", "his", "their", "them",
                           "he's", "she's", "they're"})
_UNNAMED = frozenset({
    "friend", "cousin", "colleague", "neighbour", "neighbor", "classmate", "flatmate",
    "roommate", "sister", "brother", "mother", "father", "mum", "mom", "dad", "aunt",
    "uncle", "partner", "wife", "husband", "boss", "someone", "somebody", "everyone",
    "people", "guy", "woman", "man", "stranger", "nobody"})
_NOT_NAMES = frozenset({
    "a", "an", "the", "and", "but", "so", "or", "oh", "wow", "ha", "haha", "hey", "hi",
    "big", "did", "guess", "news", "update", "quick", "good", "great", "yes", "no", "also",
    "well", "turns", "remember", "after", "since", "last", "next", "now", "today",
    "yesterday", "finally", "anyway", "apparently", "honestly", "actually", "meanwhile",
    "this", "that", "these", "those", "there", "here", "what", "who", "when", "where",
    "why", "how", "not", "just", "in", "at", "on", "from", "for", "to", "it", "it's",
    "as", "by", "of", "with", "fun", "funny", "speaking", "long", "short", "story",
    "small", "fyi", "ps", "btw", "reminder", "note", "new", "fact", "heads", "sad",
    "happy", "exciting", "crazy", "lol", "omg", "okay", "ok", "right", "sure", "about",
    "because", "if", "then", "though", "once", "every", "each", "some", "any", "all",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "june", "july", "august", "september",
    "october", "november", "december"}) | _FIRST_PERSON | _THIRD_PERSON


@dataclass(frozen=True)
class Claim:
    """One current fact a text states: `subject`'s `attribute` ("city" or "job") is
    `value`; `previous` is a value the text says it replaces. All lowercase."""

    subject: str
    attribute: str
    value: str
    previous: str | None = None


@dataclass(frozen=True)
class Supersession:
    """What a newer text does to an older one: the older text's claims it `superseded`,
    and those that still stand (`kept`)."""

    superseded: tuple[Claim, ...]
    kept: tuple[Claim, ...] = ()
    certain: bool = True
    """False when a subject matched only in part ("Hana" and "Hana Chen"): maybe the
    same person, maybe not."""

    @property
    def complete(self) -> bool:
        """True when nothing the older text claims still stands, and the subjects are
        surely the same: it can be invalidated without asking."""
        return not self.kept and self.certain


@lru_cache(maxsize=4096)  # an insert reads the new text and each candidate's more than once
def claims(text: str) -> tuple[Claim, ...]:
    """The (subject, attribute, value) claims `text` states, in the order it states them.

    A leading "Name: " says who speaks (I/we/my mean that person); without it they mean
    the user. One claim per subject and attribute: the first value stated.
    """
    speaker_match = _SPEAKER.match(text)
    speaker = speaker_match["name"].lower() if speaker_match else USER
    body = text[speaker_match.end():] if speaker_match else text
    masked = _masked(body)
    previous = _matches(body, _PREVIOUS_RULES)
    replaced = [range(m.start(), m.end()) for _, m in previous]
    olds = [(attribute, _subject(masked[:m.start("previous")], speaker), m["previous"])
            for attribute, m in previous]
    found: dict[tuple[str, str], Claim] = {}
    for attribute, match in _matches(body, _VALUE_RULES):
        if any(match.start() in span for span in replaced):
            continue  # "stopped working as a nurse" names the old job, not a new one
        named = match.groupdict().get("subject")
        subject = _subject(named or (masked[:match.start()] + masked[
            match.start():match.start("value")].lower()), speaker)  # a verb is no name
        subject = _full_name(subject, masked[:match.start()])
        if subject is None or (subject, attribute) in found:
            continue
        previous = match.groupdict().get("previous") or next(
            (value for kind, who, value in olds
             if kind == attribute and who and _same_subject(who, subject)), None)
        found[(subject, attribute)] = Claim(subject, attribute, _clean(match["value"]),
                                            _clean(previous) if previous else None)
    return tuple(found.values())


def supersedes(new: Claim, old: Claim) -> bool:
    """True when claim `new` replaces claim `old` (see the module's rules)."""
    if new.attribute != old.attribute or not _same_subject(new.subject, old.subject):
        return False
    old_words = set(old.value.split())
    if new.previous is not None and set(new.previous.split()) & old_words:
        return True
    return not set(new.value.split()) & old_words


def compare(new_text: str, old_text: str, people: Collection[str] = (),
            namesakes: Collection[tuple[str, str]] = ()) -> Supersession | None:
    """Which claims of `old_text` the newer `new_text` supersedes; None when none.

    `people` are the full names known (e.g. every subject in the store): a first name
    alone surely means a full name when exactly one of them starts with it, unless
    `namesakes` (see `namesakes`) says that first name is someone else.
    """
    new_claims = claims(new_text)
    old_claims = claims(old_text) + _named_values(new_claims, old_text)
    pairs = [(new, old) for old in old_claims for new in new_claims if supersedes(new, old)]
    superseded = tuple(dict.fromkeys(old for _, old in pairs))
    if not superseded:
        return None
    return Supersession(superseded, tuple(c for c in old_claims if c not in superseded),
                        all(_surely_same(new.subject, old.subject, people, namesakes)
                            for new, old in pairs))


def namesakes(text: str) -> set[tuple[str, str]]:
    """(first name, full name) pairs `text` shows to be two people: a speaker called by a
    first name who states a fact about someone with that first name and a surname ("Rosa:
    Rosa Andersen works as a welder") is not that person, as nobody names themselves in
    the third person."""
    speaker = _SPEAKER.match(text)
    if speaker is None or " " in speaker["name"]:
        return set()
    first = speaker["name"].lower()
    return {(first, claim.subject) for claim in claims(text)
            if " " in claim.subject and claim.subject.split()[0] == first}


def full_names(text: str) -> set[str]:
    """The subjects of `text`'s claims named with more than one word ("hana chen")."""
    return {claim.subject for claim in claims(text) if " " in claim.subject}


def subject_words(text: str) -> list[str]:
    """The words naming the subjects `text` makes claims about (what to search older
    records by), each once, in order."""
    words = (word for claim in claims(text) for word in claim.subject.split())
    return list(dict.fromkeys(words))


# -- the rules' parts ------------------------------------------------------------------


def _matches(body: str, rules: tuple[tuple[str, str], ...]
             ) -> list[tuple[str, re.Match[str]]]:
    """(attribute, match) of every rule match not in the past tense, in text order."""
    found = [(attribute, match) for attribute, pattern in rules
             for match in re.finditer(pattern, body) if not _PAST.search(body[:match.start()])]
    return sorted(found, key=lambda item: item[1].start())


def _masked(body: str) -> str:
    """`body` with every value and replaced value blanked out, so that a city is never
    read as the subject of a later claim ("lives in Lisbon and works as...")."""
    chars = list(body)
    for _, pattern in (*_VALUE_RULES, *_PREVIOUS_RULES):
        for match in re.finditer(pattern, body):
            for group in ("value", "previous"):
                if match.groupdict().get(group):
                    chars[match.start(group):match.end(group)] = " " * len(match[group])
    return "".join(chars)


def _subject(prefix: str, speaker: str) -> str | None:
    """The nearest person mentioned in `prefix`, reading back from its end."""
    words = _WORD.findall(prefix)
    index = len(words) - 1
    while index >= 0:
        word = words[index]
        lower = word.lower()
        if lower in _FIRST_PERSON:
            return speaker
        if lower == USER:
            return USER
        if lower in _UNNAMED:
            return None
        if _is_name(word):
            span = [lower.removesuffix("'s")]
            while index > 0 and _is_name(words[index - 1]):
                index -= 1
                span.insert(0, words[index].lower())
            return " ".join(span)
        index -= 1
    return None


def _full_name(subject: str | None, before: str) -> str | None:
    """A first name alone means the full name the text used before it, if any ("Ivo
    Berg ... Ivo became a pilot")."""
    if subject is None or " " in subject:
        return subject
    for full in reversed(re.findall(r"[A-Z][\w'-]+ [A-Z][\w'-]+", before)):
        if full.lower().split()[0] == subject:
            return full.lower()
    return subject


def _is_name(word: str) -> bool:
    return word[0].isupper() and word.lower() not in _NOT_NAMES


def _named_values(new_claims: tuple[Claim, ...], old_text: str) -> tuple[Claim, ...]:
    """Claims the rules could not read in `old_text` but a new claim names: "Ivo Berg
    switched from being a chemist" supersedes "Ivo Berg is a chemist at the lab" when the
    old text mentions that full name (or its speaker is the subject) and the old value."""
    words = re.findall(r"[a-z][\w'-]*", old_text.lower())
    joined = " ".join(words)
    speaker = _SPEAKER.match(old_text)
    found = []
    for claim in new_claims:
        if claim.previous is None or f" {claim.previous} " not in f" {joined} ":
            continue
        about = (" " in claim.subject and f" {claim.subject} " in f" {joined} ") or (
            speaker is not None and speaker["name"].lower() == claim.subject)
        if about:
            found.append(Claim(claim.subject, claim.attribute, claim.previous))
    return tuple(found)


def _surely_same(one: str, other: str, people: Collection[str],
                 namesakes: Collection[tuple[str, str]] = ()) -> bool:
    """Equal subjects, or a first name that only one known full name starts with and
    that is not known to be someone else of that name."""
    if one == other:
        return True
    first, full = sorted((one, other), key=len)
    return " " not in first and (first, full) not in namesakes and \
        [p for p in set(people) if p.split()[0] == first and " " in p] == [full]


def _same_subject(one: str, other: str) -> bool:
    a, b = set(one.split()), set(other.split())
    return a <= b or b <= a


def _clean(value: str) -> str:
    """A value as compared: lowercase, without a leading article."""
    return re.sub(r"^an? ", "", value.strip().lower())
