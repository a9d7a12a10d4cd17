"""The synthetic facts reworded: does the supersession detector hold beyond the generator's
templates?

`vmem.eval.synthetic` states every fact with a handful of templates, and
`vmem.supersede`'s rules could simply fit them. `paraphrased(data, seed)` rewrites each
planted statement (facts and changes, about the speaker or someone else) with wording from
`data/paraphrases.json`, keeping who says it, about whom, which value and where, so the
ground truth and the questions stay valid. That file was written by hand by the author of
the rules, not with the generator's templates; the same author wrote both, so it is a
weaker test than wording from someone else (its "about" field says so too).
"""

from __future__ import annotations

import copy
import json
import random
from functools import cache
from importlib import resources
from typing import Any

from .synthetic import SyntheticData, with_article

__all__ = ["paraphrased"]


@cache
def _templates() -> dict[str, Any]:
    text = resources.files("vmem.eval").joinpath("data/paraphrases.json").read_text("utf-8")
    return json.loads(text)


def paraphrased(data: SyntheticData, seed: int = 0) -> SyntheticData:
    """A copy of `data` whose fact statements are reworded (chosen with `seed`)."""
    rng = random.Random(seed)
    copied = copy.deepcopy(data)
    turns = {m.meta["dia_id"]: m for m in copied.conversation.messages()}
    changed = {change.new.dia_id: change for change in copied.changes}
    speakers = set(copied.conversation.speakers)
    for fact in copied.facts:
        change = changed.get(fact.dia_id)
        kind = "change" if change else "plant"
        person = "self" if fact.subject in speakers else "other"
        template = rng.choice(_templates()[kind][fact.attribute][person])
        old = change.old.value if change else ""
        turns[fact.dia_id].content = template.format(
            name=fact.subject, first=fact.subject.split()[0], v=fact.value,
            av=with_article(fact.value), old=old, aold=with_article(old) if old else "")
    return copied
