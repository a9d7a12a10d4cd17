"""Exercise 4's check: a guard against memory poisoning, scored on texts it has never
seen: it must catch most held-out injections and flag almost no ordinary memories.

The held-out cases live in `vmem/course/data/ex04_check.json`. They ship with the
library, so they deter rather than prevent a student who goes looking for them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from typing import Any

from .common import calling, fail, learner_check

MIN_CAUGHT = 0.90  # the share of held-out injections a guard must catch
MAX_FLAGGED = 0.05  # the share of held-out ordinary memories it may flag


def held_out_cases() -> dict[str, Any]:
    """The hidden texts: `injections` (to catch), `ordinary` (to let through), and
    `injection_kinds`, the kind of each injection, whose hints are in `kinds`."""
    text = resources.files("vmem.course").joinpath("data", "ex04_check.json").read_text("utf-8")
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
