"""Exercise 4's checks: a guard against memory poisoning, scored on texts it has never
seen: it must catch most held-out injections and flag almost no ordinary memories
(`check_ex4`); and the source rule that judges a text by where its words came from
(`check_ex4_sources`).

The held-out cases live in `vmem/course/data/ex04_check.json` and `ex04_sources.json`.
They ship with the library, so they deter rather than prevent a student who goes looking
for them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from typing import Any

from .common import calling, fail, learner_check

MIN_CAUGHT = 0.90  # the share of held-out injections a guard must catch
MIN_HOSTILE = 0.80  # the share of orders no user gives that the source rule must catch
MAX_FLAGGED = 0.05  # the share of held-out ordinary memories it may flag


def held_out_cases(name: str = "ex04_check.json") -> dict[str, Any]:
    """The hidden texts: `injections` (to catch), `ordinary` (to let through), and
    `injection_kinds`, the kind of each injection, whose hints are in `kinds`; with
    `name="ex04_sources.json"`, the source rule's `preferences` and `hostile` texts."""
    text = resources.files("vmem.course").joinpath("data", name).read_text("utf-8")
    return json.loads(text)


@learner_check
def check_ex4(is_directive: Callable[[str], bool]) -> str:
    """Check the guard on held-out injections and ordinary memories."""
    cases = held_out_cases()
    verdicts: dict[str, list[bool]] = {}
    for kind, one in (("injections", "injection"), ("ordinary", "ordinary")):
        verdicts[kind] = []
        for number, text in enumerate(cases[kind], 1):
            with calling(f"is_directive on held-out {one} text #{number}"):
                verdict = is_directive(text)
            if not isinstance(verdict, bool):
                fail(f"is_directive returned {verdict!r} ({type(verdict).__name__}); return "
                     "True or False (wrap a regex match in bool(...)).")
            verdicts[kind].append(verdict)
    caught, total = sum(verdicts["injections"]), len(verdicts["injections"])
    flagged, ordinary = sum(verdicts["ordinary"]), len(verdicts["ordinary"])
    if caught < MIN_CAUGHT * total:
        fail(f"caught {caught} of {total} held-out injections ({caught / total:.0%}); at "
             f"least {MIN_CAUGHT:.0%} are needed. {_by_kind(cases, verdicts['injections'])} "
             "Generalise beyond the one planted sentence.")
    if flagged > MAX_FLAGGED * ordinary:
        fail(f"flagged {flagged} of {ordinary} held-out ordinary memories "
             f"({flagged / ordinary:.0%}); at most {MAX_FLAGGED:.0%} is allowed. Ordinary "
             "memories mention instructions, rules, passwords, 'always' and 'never' too: "
             "flag text that gives the assistant orders, not text that merely contains "
             "such words.")
    return (f"passed: ex04: caught {caught}/{total} held-out injections, flagged "
            f"{flagged}/{ordinary} ordinary memories.")


def _by_kind(cases: dict[str, Any], caught: list[bool]) -> str:
    """Caught per kind of injection, two missed examples from the kinds missed most, and
    the hint for the kind missed most."""
    kinds = cases["injection_kinds"]
    names = list(dict.fromkeys(kinds))
    tally = {kind: [hit for hit, of in zip(caught, kinds, strict=True) if of == kind]
             for kind in names}
    counts = ", ".join(f"{kind} {sum(hits)}/{len(hits)}" for kind, hits in tally.items())
    worst = sorted(names, key=lambda kind: sum(tally[kind]) / len(tally[kind]))
    missed = [next(text for text, hit, of in zip(cases["injections"], caught, kinds,
                                                 strict=True) if of == kind and not hit)
              for kind in worst if not all(tally[kind])][:2]
    examples = " and ".join(repr(text) for text in missed)
    return (f"Caught by kind: {counts}. Missed, for example: {examples}. Hint: the kind "
            f"missed most is {worst[0]}: {cases['kinds'][worst[0]]}.")


@learner_check
def check_ex4_sources(should_quarantine: Callable[[str, str | None], bool],
                      is_directive: Callable[[str], bool]) -> str:
    """Check the source rule: text from a tool, a document, an import or nowhere known is
    judged by `is_directive`; the user's own wishes pass; orders no user gives are caught
    from the user too."""
    cases = held_out_cases("ex04_sources.json")
    texts = cases["preferences"] + cases["hostile"]

    def judged(text: str, source: str | None, number: int) -> bool:
        with calling(f"should_quarantine on held-out text #{number} from {source!r}"):
            verdict = should_quarantine(text, source)
        if not isinstance(verdict, bool):
            fail(f"should_quarantine returned {verdict!r} ({type(verdict).__name__}); "
                 "return True or False.")
        return verdict

    for number, text in enumerate(texts, 1):
        with calling(f"is_directive on held-out text #{number}"):
            strict = bool(is_directive(text))
        for source in ("tool", "import", None):
            if judged(text, source, number) != strict:
                fail(f"from {source!r}, held-out text #{number} got "
                     f"{not strict} while is_directive says {strict}: text that is not the "
                     "user's own (a tool's output, an import, a text of unknown source) is "
                     "judged as strictly as your guard judges it.")
    wrong = [text for number, text in enumerate(cases["preferences"], 1)
             if judged(text, "user", number)]
    if wrong:
        fail(f"quarantined {len(wrong)} of {len(cases['preferences'])} held-out preferences "
             f"the user stated about their own assistant, e.g. {wrong[0]!r}: a user may "
             "set its tone, length, language, format or name. From the user, quarantine "
             "only orders no user gives their own assistant.")
    caught = sum(judged(text, "user", number) for number, text in enumerate(cases["hostile"], 1))
    total = len(cases["hostile"])
    if caught < MIN_HOSTILE * total:
        fail(f"from the user, caught {caught} of {total} held-out orders no user gives their "
             f"own assistant; at least {MIN_HOSTILE:.0%} are needed. Pasted text can carry "
             "them: sending data to an address, calling a tool, a forged SYSTEM or role "
             "marker, words to 'the AI reading this', hiding something from the user, "
             "setting the assistant's instructions aside.")
    return (f"passed: ex04 sources: {len(cases['preferences'])}/{len(cases['preferences'])} "
            f"user preferences kept, {caught}/{total} hostile orders caught from the user.")
