"""What each part of recall's ranking does on each corpus: evidence recall@10 with every
part on, then with one part off at a time.

    python scripts/recall_parts.py [--beam DIR] [--locomo FILE] [--chats 1-10]
                                   [--conversations 1-5]

The library path of `vmem.eval.runner` (`dialog/recall`) on BEAM's chats (`--beam`, its
chats/100K folder; 1-10 were the dev split) and on LoCoMo's conversations (`--locomo`;
1-5 were the dev half). Parts (docs/RETRIEVAL.md): "prompt in document" is the one in the
index (`vmem.ranking.PROMPT_TERMS`, set to 0 here: no prompt is indexed with its reply);
the others are the query-time `Priors`. Besides overall recall, the table shows BEAM's
questions whose evidence includes an assistant turn (where the first-person speaker prior
could cost) and LoCoMo's multi-hop questions (the part of LoCoMo its priors were chosen
for). A corpus not found is skipped, with why.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from unittest import mock

from vmem import ranking
from vmem.eval.beam import load_beam
from vmem.eval.locomo import Conversation, load_locomo
from vmem.eval.runner import evaluate_recall
from vmem.ranking import Priors

Groups = Callable[[list[Conversation]], list[list[Conversation]]]
PARTS: dict[str, dict[str, object]] = {
    "all parts": {},
    "- prompt in document": {"PROMPT_TERMS": 0},
    "- same sitting": {"sitting": 0.0},
    "- speaker": {"speaker": 0.0},
    "- prompt's words": {"prompt_only": 0.0},
    "- opens sitting": {"opening": 0.0},
    "- questions about the present": {"current_state": False},
    "no part (BM25 of analysed words)": {"PROMPT_TERMS": 0, "sitting": 0.0, "speaker": 0.0,
                                         "prompt_only": 0.0, "opening": 0.0,
                                         "current_state": False},
}


def measure(conversations: list[Conversation], change: dict[str, object],
            groups: Groups) -> list[float]:
    """Overall recall@10 and then each group's (`groups` picks them from the corpus: the
    same conversations with fewer questions), in percent, with `change` applied."""
    fields = {f.name for f in dataclasses.fields(Priors)}
    priors = Priors(**{k: v for k, v in change.items() if k in fields})
    limit = int(change.get("PROMPT_TERMS", ranking.PROMPT_TERMS))  # type: ignore[arg-type]
    with mock.patch.object(ranking, "PROMPT_TERMS", limit):  # while it is indexed
        result = [evaluate_recall(conversations, ["dialog/recall"], (10,),
                                  priors=priors)["dialog/recall"]["overall"]["recall@10"]]
        for group in groups(conversations):
            result.append(evaluate_recall(group, ["dialog/recall"], (10,), priors=priors)
                          ["dialog/recall"]["overall"]["recall@10"])
    return result


def with_assistant_evidence(conversations: list[Conversation]) -> list[Conversation]:
    """The same chats keeping only the questions whose evidence includes an assistant turn."""
    kept = []
    for conversation in conversations:
        roles = {m.meta["dia_id"]: m.role for m in conversation.messages()}
        questions = [q for q in conversation.questions
                     if any(roles.get(e) == "assistant" for e in q.evidence)]
        kept.append(dataclasses.replace(conversation, questions=questions))
    return [conversation for conversation in kept if conversation.questions]


def multi_hop(conversations: list[Conversation]) -> list[Conversation]:
    """The same conversations keeping only their multi-hop questions."""
    return [dataclasses.replace(c, questions=[q for q in c.questions if q.category == 1])
            for c in conversations]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beam", type=Path, default=Path("../beam/chats/100K"))
    parser.add_argument("--locomo", type=Path,
                        default=Path("../shared/data/locomo/locomo10.json"))
    parser.add_argument("--chats", default="1-10")
    parser.add_argument("--conversations", default="1-5")
    args = parser.parse_args(argv)
    columns: list[tuple[str, list[Conversation], Groups]] = []
    first, _, last = args.chats.partition("-")
    if args.beam.is_dir():
        beam = load_beam(args.beam, range(int(first), int(last or first) + 1))
        columns.append((f"BEAM {args.chats}|assistant evidence", beam,
                        lambda cs: [with_assistant_evidence(cs)]))
    else:
        print(f"BEAM not found at {args.beam}: skipped (fetch mohammadtavakoli78/BEAM and "
              "pass its chats/100K folder as --beam)")
    if args.locomo.is_file():
        first, _, last = args.conversations.partition("-")
        locomo = load_locomo(args.locomo)[int(first) - 1:int(last or first)]
        columns.append((f"LoCoMo {args.conversations}|multi-hop", locomo,
                        lambda cs: [multi_hop(cs)]))
    else:
        print(f"LoCoMo not found at {args.locomo}: skipped")
    if not columns:
        return 1
    heads = [head for name, _, _ in columns for head in name.split("|")]
    width = max(map(len, PARTS)) + 2
    print("recall@10".ljust(width) + "".join(head.rjust(max(12, len(head) + 2))
                                             for head in heads))
    for part, change in PARTS.items():
        values = [value for _, corpus, groups in columns
                  for value in measure(corpus, change, groups)]
        print(part.ljust(width) + "".join(f"{value:.1f}".rjust(max(12, len(head) + 2))
                                          for value, head in zip(values, heads, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
