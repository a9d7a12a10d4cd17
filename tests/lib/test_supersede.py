"""The rule-based supersession detector (`vmem.supersede`): which claims a text states,
and when a newer text replaces an older one. The cases are written here, not taken from
the generator, so they test the rules rather than its templates."""

from __future__ import annotations

import pytest

from vmem import ArchivalStore
from vmem.supersede import Claim, claims, compare, full_names, namesakes, subject_words, supersedes


@pytest.mark.parametrize("text, expected", [
    ("Maya lives in Lisbon.", [("maya", "city", "lisbon", None)]),
    ("Ana: we moved from Lisbon to Porto last spring!", [("ana", "city", "porto", "lisbon")]),
    ("The user works as a nurse and lives in Cork.",
     [("user", "job", "nurse", None), ("user", "city", "cork", None)]),
    ("I work as an architect.", [("user", "job", "architect", None)]),
    ("My cousin Ivo Berg stopped working as a welder and is a baker now.",
     [("ivo berg", "job", "baker", "welder")]),
    ("Ivo Berg? Ivo relocated to New York.", [("ivo berg", "city", "new york", None)]),
    ("Leeds is where Tove Xu lives.", [("tove xu", "city", "leeds", None)]),
    ("Rosa's home is Graz.", [("rosa", "city", "graz", None)]),
])
def test_claims_read_subject_attribute_and_value(text, expected):
    assert [(c.subject, c.attribute, c.value, c.previous) for c in claims(text)] == expected


@pytest.mark.parametrize("text", [
    "Maya used to live in Lisbon.",          # past tense
    "Maya was working as a nurse.",
    "Maya might move to Porto next year.",   # not (yet) true
    "Our neighbour, who is a nurse, fixed the fence.",  # nobody named
    "My colleague lives in Oslo.",
    "We watched a film about Lisbon.",      # no claim at all
    "My dog is called Biscuit.",
])
def test_past_tense_hypotheticals_and_unnamed_people_make_no_claim(text):
    assert claims(text) == ()


def test_a_new_value_supersedes_and_a_shared_word_does_not():
    old = Claim("maya", "job", "nurse")
    assert supersedes(Claim("maya", "job", "pilot"), old)
    assert not supersedes(Claim("maya", "job", "senior nurse"), old)  # maybe the same job
    assert supersedes(Claim("maya", "job", "senior nurse", previous="nurse"), old)
    assert not supersedes(Claim("maya", "city", "pilot"), old)   # another attribute
    assert not supersedes(Claim("ana", "job", "pilot"), old)     # another person
    assert supersedes(Claim("maya rossi", "job", "pilot"), Claim("maya", "job", "nurse"))


def test_compare_says_what_still_stands_and_how_sure_it_is():
    whole = compare("Maya moved to Porto.", "Maya lives in Lisbon.")
    assert whole.superseded == (Claim("maya", "city", "lisbon"),) and whole.complete
    part = compare("Maya moved to Porto.", "Maya lives in Lisbon and works as a nurse.")
    assert part.kept == (Claim("maya", "job", "nurse"),) and not part.complete
    assert compare("Maya moved to Porto.", "Ana lives in Lisbon.") is None
    assert compare("Maya moved to Porto.", "Maya lives in Porto.") is None  # no change
    unsure = compare("Maya Rossi moved to Porto.", "Maya lives in Lisbon.")
    assert unsure.superseded and not unsure.certain and not unsure.complete
    known = compare("Maya Rossi moved to Porto.", "Maya lives in Lisbon.", {"maya rossi"})
    assert known.complete  # the one Maya the store knows
    two = compare("Maya Rossi moved to Porto.", "Maya lives in Lisbon.",
                  {"maya rossi", "maya chen"})
    assert not two.complete


def test_a_speaker_who_names_someone_by_their_own_first_name_is_someone_else():
    said = "Rosa: Rosa Andersen has a job as a welder now."
    assert namesakes(said) == {("rosa", "rosa andersen")}
    assert namesakes("Rosa: I work as a welder.") == set()
    assert namesakes("Rosa Diaz: Rosa Andersen works as a welder.") == set()  # a full name
    mine = "Rosa: I work as a beekeeper."
    assert compare(said, mine, {"rosa andersen"}).complete  # the one Rosa the store knows...
    assert not compare(said, mine, {"rosa andersen"}, namesakes(said)).complete  # ...is not her


def test_the_store_keeps_a_speakers_fact_when_a_namesakes_changes(clock):
    store = ArchivalStore(":memory:", clock=clock)
    mine = store.insert("Rosa: I work as a beekeeper, have been for years.")
    theirs = store.insert("Rosa: Rosa Andersen has a job as a welder downtown.")
    store.retire_superseded(theirs)
    assert store.get(mine).is_valid
    moved = store.insert("Rosa: I work as a gardener now.")
    store.retire_superseded(moved)
    assert not store.get(mine).is_valid and store.get(theirs).is_valid


def test_the_words_to_search_older_records_by():
    assert subject_words("Ana: my cousin Ivo Berg moved to Oslo, and I moved to Oslo too.") \
        == ["ivo", "berg", "ana"]
    assert full_names("Ivo Berg lives in Oslo. Ana works as a nurse.") == {"ivo berg"}
    assert subject_words("Nice weather today.") == []


@pytest.mark.parametrize("text", ["", " ", "x" * 50_000, "Lisbon " * 2000, "\u00e9 \ud83d\ude00",
                                  "moved to to to", "I" * 1000])
def test_any_text_is_read_without_error(text):
    assert isinstance(claims(text), tuple)
