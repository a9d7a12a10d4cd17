"""The checks behind the five exercise notebooks: `check_ex1` ... `check_ex5`.

Each check takes the learner's functions or classes, runs them on cases the notebook never
shows, and returns a one-line success message, or raises `AssertionError` whose message
says what failed and hints at why without handing over the answer. Instructors and
external graders call these functions directly, so their signatures are fixed.

The checks test behaviour, not code: any implementation that meets the contract written
in the exercise notebook passes. The learner's `NotImplementedError` stubs pass through
unchanged (the message says which part is still to do); any other unexpected exception
becomes an `AssertionError` that names the call that raised it.

The hidden cases for exercise 4 live in `vmem/course/data/ex04_check.json`. They ship with the
library, so they deter rather than prevent a student who goes looking for them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import Any

from ..bm25 import BM25Index
from ..tokens import count_tokens


def _fail(message: str) -> None:
    raise AssertionError(message)


@contextmanager
def _calling(what: str) -> Iterator[None]:
    """Turn an unexpected exception from learner code into a failure naming the call."""
    try:
        yield
    except (AssertionError, NotImplementedError):
        raise
    except Exception as exc:
        raise AssertionError(f"{what} raised {type(exc).__name__}: {exc}") from exc


def _raises(call: Callable[[], Any]) -> Exception | None:
    """Run `call`; return the exception it raised (None if it returned normally)."""
    try:
        call()
    except NotImplementedError:
        raise
    except Exception as exc:
        return exc
    return None


# --- exercise 1: a token cap with a recursive summary ------------------------------------

def _words(tag: str, count: int) -> str:
    return " ".join(f"{tag}w{i}" for i in range(count))


def check_ex1(approx_tokens: Callable[[str], int], CappedContext: type) -> str:  # noqa: N803
    """Check `approx_tokens` and a `CappedContext` with and without a summarizer."""
    _check_approx_tokens(approx_tokens)
    _check_cap(CappedContext)
    _check_cap_with_summary(CappedContext)
    return "ex01 passed: token counts, the cap, eviction order and recursive summaries all hold."


def _check_approx_tokens(approx_tokens: Callable[[str], int]) -> None:
    for text in ["", "   ", "one", "two words", "a b c", _words("x", 7), _words("y", 10),
                 "alpha\nbeta\tgamma  delta", _words("z", 23)]:
        with _calling(f"approx_tokens({text!r})"):
            got = approx_tokens(text)
        want = count_tokens(text)
        if not isinstance(got, int) or isinstance(got, bool):
            _fail(f"approx_tokens({text!r}) returned {got!r} ({type(got).__name__}); "
                  "a token count must be an int (round up, then convert).")
        if got != want:
            _fail(f"approx_tokens({text!r}) returned {got}, expected {want}: count "
                  "whitespace-separated words (newlines and tabs separate words too), "
                  "multiply by 1.3 and round up; empty text has no tokens.")


def _new_context(CappedContext: type, cap: int, summarize: Any = None) -> Any:  # noqa: N803
    with _calling(f"CappedContext({cap}, summarize=...)"):
        return CappedContext(cap, summarize=summarize)


def _state(ctx: Any) -> tuple[list[str], list[str], Any]:
    with _calling("reading messages/evicted/summary"):
        return list(ctx.messages), list(ctx.evicted), ctx.summary


def _tokens(ctx: Any) -> int:
    with _calling("CappedContext.tokens()"):
        return ctx.tokens()


def _append(ctx: Any, text: str, step: int) -> None:
    with _calling(f"append #{step} ({count_tokens(text)} tokens)"):
        ctx.append(text)


def _check_invariants(ctx: Any, appended: list[str], cap: int) -> None:
    messages, evicted, summary = _state(ctx)
    step = len(appended)
    if evicted + messages != appended:
        _fail(f"after {step} appends, evicted + messages is not every appended text in "
              "order: nothing may be lost or duplicated, and the oldest texts must leave "
              "first (evicted in the order they were appended).")
    want = sum(count_tokens(m) for m in messages)
    if summary is not None:
        want += count_tokens(summary)
    got = _tokens(ctx)
    if got != want:
        _fail(f"after {step} appends, tokens() is {got} but the messages"
              f"{' plus the summary' if summary is not None else ''} come to {want}: "
              "tokens() must count exactly what is in context, the summary included.")
    if got > cap:
        _fail(f"after {step} appends, tokens() is {got}, over the cap of {cap}: keep "
              "evicting the oldest text until the total fits.")


def _check_cap(CappedContext: type) -> None:  # noqa: N803
    cap = 20
    # Word counts chosen so that one step fills the cap exactly and later ones overflow it.
    sizes = [5, 3, 6, 2, 10, 1, 1, 15, 4, 7, 9]
    ctx = _new_context(CappedContext, cap)
    if _state(ctx) != ([], [], None):
        _fail("a new CappedContext must start with messages == [], evicted == [] and "
              "summary None.")
    appended: list[str] = []
    for step, size in enumerate(sizes, 1):
        text = _words(f"m{step}", size)
        _append(ctx, text, step)
        appended.append(text)
        _check_invariants(ctx, appended, cap)
        messages, _, summary = _state(ctx)
        kept, total = 0, 0
        for earlier in reversed(appended):
            if total + count_tokens(earlier) > cap:
                break
            total += count_tokens(earlier)
            kept += 1
        if len(messages) < kept:
            _fail(f"after {step} appends, only {len(messages)} texts are kept although the "
                  f"newest {kept} ({total} tokens) fit under the cap of {cap}: evict only "
                  "while the total is over the cap (a total equal to the cap fits).")
        if summary is not None:
            _fail("without a summarizer, summary must stay None.")
    oversize = _words("big", 16)  # 21 tokens, more than the cap on its own
    before = _state(ctx)
    error = _raises(lambda: ctx.append(oversize))
    if not isinstance(error, ValueError):
        _fail(f"appending one text of {count_tokens(oversize)} tokens to a context capped at "
              f"{cap} must raise ValueError (it can never fit); got "
              f"{'no error' if error is None else type(error).__name__}.")
    if _state(ctx) != before:
        _fail("a refused append changed the context: check the size before changing "
              "anything.")


def _check_cap_with_summary(CappedContext: type) -> None:  # noqa: N803
    cap = 20
    calls: list[list[str]] = []

    def summarize(texts: Sequence[str]) -> str:
        calls.append(list(texts))
        return f"summary-{len(calls)}"

    ctx = _new_context(CappedContext, cap, summarize)
    appended: list[str] = []
    for step, size in enumerate([4, 5, 3, 6, 8, 2, 9, 1, 5, 7, 3], 1):
        text = _words(f"s{step}", size)
        _append(ctx, text, step)
        appended.append(text)
        _check_invariants(ctx, appended, cap)
        _, evicted, summary = _state(ctx)
        if not evicted:
            if calls or summary is not None:
                _fail("the summarizer was used before anything was evicted: summary must "
                      "stay None (and summarize uncalled) until the first eviction.")
            continue
        if not calls:
            _fail("texts were evicted but the summarizer was never called: pass the "
                  "evicted texts to summarize and keep what it returns as the summary.")
        if summary != f"summary-{len(calls)}":
            _fail(f"summary is {summary!r} but the summarizer last returned "
                  f"'summary-{len(calls)}': keep the latest summary as it is returned.")
        fresh: list[str] = []
        for number, args in enumerate(calls, 1):
            if number > 1:
                previous = f"summary-{number - 1}"
                if not args or args[0] != previous:
                    _fail(f"summarize call {number} got {args!r}; it must start with the "
                          f"previous summary ({previous!r}) followed by the newly evicted "
                          "texts, so that what was summarised before is not forgotten.")
                args = args[1:]
            elif args and args[0] in (None, ""):
                _fail("the first summarize call got an empty previous summary: pass only "
                      "the evicted texts while there is no summary yet.")
            if not args:
                _fail(f"summarize call {number} got no newly evicted texts.")
            fresh.extend(args)
        if fresh != evicted:
            _fail("the texts handed to summarize (besides the previous summary) must be "
                  "exactly the evicted texts, each once, oldest first.")


# --- exercise 2: BM25 and recall@k ---------------------------------------------------------

_BM25_DOCS = [
    "The cat sat on the mat.",
    "A dog chased the cat around the garden and the cat ran up a tree in the garden.",
    "Dogs and cats can live together.",
    "The quarterly report lists the cat food budget.",
    "Tea",
    "Garden tools: a spade, a rake, a hoe, shears, gloves, a watering can and a wheelbarrow.",
]
_BM25_QUERIES = ["cat garden", "the cat", "spade report", "tea dog", "unicorn"]


def _bm25_reference(query: str, docs: Sequence[str], k1: float, b: float) -> list[float]:
    index = BM25Index(k1=k1, b=b, idf="lucene")
    for position, doc in enumerate(docs):
        index.add(position, doc)
    scores = index.scores(query)
    return [scores.get(position, 0.0) for position in range(len(docs))]


def _scores(bm25_scores: Callable[..., list[float]], query: str, docs: Sequence[str],
            **params: float) -> list[float]:
    shown = ", ".join(f"{k}={v}" for k, v in params.items())
    with _calling(f"bm25_scores({query!r}, docs{', ' + shown if shown else ''})"):
        got = bm25_scores(query, list(docs), **params)
    try:
        values = [float(value) for value in got]
    except (TypeError, ValueError):
        values = []
        _fail(f"bm25_scores must return a list of numbers, one per document; got {got!r}.")
    if len(values) != len(docs):
        _fail(f"bm25_scores returned {len(values)} scores for {len(docs)} documents: return "
              "one score per document, in the documents' order (0.0 where nothing matches).")
    return values


def check_ex2(bm25_scores: Callable[..., list[float]],
              recall_at_k: Callable[..., float]) -> str:
    """Check `bm25_scores` against BM25 (Lucene IDF) and `recall_at_k` on fixed rankings."""
    _check_bm25_shape(bm25_scores)
    _check_bm25_values(bm25_scores)
    _check_recall(recall_at_k)
    return "ex02 passed: BM25 scores match (tf saturation, IDF, length norm) and recall@k holds."


def _check_bm25_shape(bm25_scores: Callable[..., list[float]]) -> None:
    """Probe one property at a time so that a failure can say which part is off."""
    same_length = ["apple x1 x2 x3 x4 x5 x6 x7 x8 x9", "apple " * 9 + "apple",
                   "y1 y2 y3 y4 y5 y6 y7 y8 y9 y10"]
    once, ten, _ = _scores(bm25_scores, "apple", same_length)
    if once <= 0 or ten <= 0:
        _fail(f"a document containing the query word scored {min(once, ten):.4f}: a match "
              "must add a positive amount. Use the Lucene IDF, ln(1 + (N - n + 0.5) / "
              "(n + 0.5)), which is never negative, and check its sign.")
    if ten <= once:
        _fail("a document with the query word ten times should outscore one with it once "
              "(same length): count how often each query term occurs in the document.")
    if ten / once >= 2.5:
        _fail("ten occurrences score more than 2.5 times one occurrence: term frequency "
              "must saturate (with k1=1.5 its contribution can never exceed k1 + 1 times "
              "the IDF).")
    short_long = ["pear z1", "pear z1 z2 z3 z4 z5 z6 z7 z8 z9 z10 z11", "q1 q2 q3 q4 q5 q6"]
    short, long_, _ = _scores(bm25_scores, "pear", short_long)
    if not short > long_:
        _fail("the same word once in a short and in a long document scored the same (or "
              "the long one higher): BM25 normalises by document length, using b and the "
              "average document length.")
    rare_common = ["rare w1 w2", "common w3 w4", "common w5 w6", "common w7 w8", "v1 v2 v3"]
    rare, common, *_ = _scores(bm25_scores, "rare common", rare_common)
    if rare <= common:
        _fail("a word found in one document weighed no more than a word found in three: "
              "rarer words must weigh more (check the IDF and its sign).")


def _check_bm25_values(bm25_scores: Callable[..., list[float]]) -> None:
    for params in ({}, {"k1": 1.2, "b": 0.5}, {"k1": 2.0, "b": 0.0}, {"k1": 0.9, "b": 1.0}):
        k1, b = params.get("k1", 1.5), params.get("b", 0.75)
        for query in _BM25_QUERIES:
            got = _scores(bm25_scores, query, _BM25_DOCS, **params)
            want = _bm25_reference(query, _BM25_DOCS, k1, b)
            for position, (g, w) in enumerate(zip(got, want, strict=True)):
                if not math.isclose(g, w, rel_tol=1e-6, abs_tol=1e-9):
                    setting = f"k1={k1}, b={b}"
                    _fail(f"for query {query!r} with {setting}, document {position} scored "
                          f"{g:.6f}, expected {w:.6f}. Check that you tokenize with "
                          "vmem.bm25.tokenize, use the k1 and b you were given (defaults "
                          "1.5 and 0.75), count each query word, and average the length "
                          "over all documents.")


# Fixed scores instead of a real ranker, so the checks isolate recall@k itself.
_RECALL_DOCS = ["d0", "d1", "d2", "d3", "d4", "d5"]
_RECALL_CASES = [
    # (query, relevant, scores per document, {k: expected recall}, hint when wrong); each
    # case isolates one rule, so the hint can say which.
    ("fraction", {2, 5, 1}, [0.0, 0.3, 0.3, 0.0, 0.0, 0.3], {1: 1 / 3, 2: 2 / 3, 3: 1.0},
     "recall is the fraction of the relevant documents found among exactly the top k "
     "(divide by how many are relevant, not by k)."),
    ("ties", {4}, [1.0] * 6, {2: 0.0, 5: 1.0},
     "documents with equal scores keep the documents' order: the lower index ranks first."),
    ("order", {0, 3}, [0.1, 0.9, 0.5, 0.7, 0.0, 0.2], {1: 0.0, 2: 0.5, 3: 0.5, 5: 1.0},
     "rank by score, highest first, and look only at the top k."),
]


def _check_recall(recall_at_k: Callable[..., float]) -> None:
    table = {query: scores for query, _, scores, _, _ in _RECALL_CASES}

    def rank(query: str, docs: Sequence[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
        return list(table[query])

    for query, relevant, scores, expected, hint in _RECALL_CASES:
        dataset = {"docs": list(_RECALL_DOCS), "queries": [(query, set(relevant))]}
        for k, want in expected.items():
            with _calling(f"recall_at_k(rank, dataset, k={k})"):
                got = recall_at_k(rank, dataset, k)
            if not isinstance(got, (int, float)) or not math.isclose(got, want, abs_tol=1e-9):
                _fail(f"recall_at_k returned {got!r} at k={k} for one query with relevant "
                      f"documents {sorted(relevant)} and scores {scores}; expected "
                      f"{want:.3f}: {hint}")
    dataset = {"docs": list(_RECALL_DOCS),
               "queries": [(query, set(relevant)) for query, relevant, *_ in _RECALL_CASES]}
    with _calling("recall_at_k(rank, dataset, k=2)"):
        got = recall_at_k(rank, dataset, 2)
    want = (2 / 3 + 0.0 + 0.5) / 3
    if not isinstance(got, (int, float)) or not math.isclose(got, want, abs_tol=1e-9):
        _fail(f"with three queries recall_at_k returned {got!r} at k=2, expected {want:.3f}: "
              "average the per-query recall over all queries.")


# --- exercise 3: citations ------------------------------------------------------------------

_FACTS = [  # (text, session_id, turn_id, source_url, question whose answer it holds)
    ("Priya's sister Marta moved to Lisbon in March.", 3, 7,
     "https://chat.example/s/3#7", "Where did Marta move to?"),
    ("The weekly standup now starts at 9:30 on Thursdays.", 5, 2,
     "https://chat.example/s/5#2", "When does the weekly standup start?"),
    ("Priya is allergic to hazelnuts.", 8, 14, "https://notes.example/health",
     "What is Priya allergic to?"),
    ("The staging server is named heron.", 9, 1, "https://wiki.example/infra",
     "What is the staging server named?"),
]
_DISTRACTORS = [  # written straight into the store, not through the learner's insert_fact
    ("The office plants get watered on Mondays.", 1, 1),
    ("Marta's favourite band is Radiohead.", 2, 4),
    ("Lunch orders close at eleven.", 4, 9),
]
_NO_ANSWER = "zeppelin?"
_CITATION = re.compile(r"\[(?:record\s+)?(\d+)\]")
_WORD = re.compile(r"[a-z0-9]+")


def check_ex3(insert_fact: Callable[..., Any], answer_with_citations: Callable[..., str]) -> str:
    """Check that inserts keep provenance and that answers cite exactly the records used."""
    from ..archival import ArchivalStore

    store = ArchivalStore()
    ids = []
    for text, session_id, turn_id, url, _ in _FACTS:
        with _calling(f"insert_fact(store, {text!r}, ...)"):
            ids.append(insert_fact(store, text, session_id, turn_id, url))
    for text, session_id, turn_id in _DISTRACTORS:
        store.insert(text, session_id=session_id, turn_id=turn_id)
    if len(set(map(str, ids))) != len(ids) or None in ids:
        _fail(f"insert_fact returned {ids!r}: return the id the store gives each record.")
    for record_id, (text, session_id, turn_id, url, _) in zip(ids, _FACTS, strict=True):
        record = _get(store, record_id)
        if record is None:
            _fail(f"insert_fact returned {record_id!r}, which store.get cannot find: return "
                  "the id that store.insert gives back.")
        for field, want in (("text", text), ("session_id", session_id),
                            ("turn_id", turn_id), ("source_url", url)):
            if getattr(record, field) != want:
                _fail(f"the record for {text!r} has {field}={getattr(record, field)!r}, "
                      f"expected {want!r}: pass every citation field through to "
                      "store.insert so the answer can be traced to its source.")
    texts = {record.id: record.text for record in store.records()}
    marks = _distinctive_words(texts)
    for record_id, (_, _, _, _, question) in zip(ids, _FACTS, strict=True):
        answer = _answer(answer_with_citations, store, question)
        _check_citations(answer, question, texts, marks)
        cited = {int(found) for found in _CITATION.findall(answer)}
        if int(record_id) not in cited:
            _fail(f"the answer to {question!r} does not cite the record that answers it "
                  f"(record {record_id}); got {answer!r}. Search the store and cite what you "
                  "use.")
    answer = _answer(answer_with_citations, store, _NO_ANSWER)
    if _CITATION.search(answer):
        _fail(f"the answer to {_NO_ANSWER!r}, which no record matches, cites something: "
              f"{answer!r}. With no hits, say so and cite nothing.")
    return "ex03 passed: every record keeps its source, and every answer cites what it used."


def _get(store: Any, record_id: Any) -> Any:
    try:
        return store.get(int(record_id))
    except Exception:
        return None


def _answer(answer_with_citations: Callable[..., str], store: Any, question: str) -> str:
    with _calling(f"answer_with_citations(store, {question!r})"):
        answer = answer_with_citations(store, question)
    if not isinstance(answer, str):
        _fail(f"answer_with_citations must return a string; got {type(answer).__name__}.")
    return answer


def _distinctive_words(texts: dict[int, str]) -> dict[int, set[str]]:
    """Per record, the words of its text that no other record contains."""
    words = {record_id: set(_WORD.findall(text.lower())) for record_id, text in texts.items()}
    return {record_id: own - set().union(*(w for other, w in words.items() if other != record_id))
            for record_id, own in words.items()}


def _check_citations(answer: str, question: str, texts: dict[int, str],
                     marks: dict[int, set[str]]) -> None:
    """Split the answer into statements, each ending in its citations, and check each."""
    pieces = re.split(r"((?:\s*\[(?:record\s+)?\d+\])+)", answer)
    statements = list(zip(pieces[0::2], [*pieces[1::2], ""], strict=True))
    for statement, citations in statements:
        words = set(_WORD.findall(statement.lower()))
        cited = [int(found) for found in _CITATION.findall(citations)]
        for record_id in cited:
            if record_id not in texts:
                _fail(f"the answer to {question!r} cites record {record_id}, which does not "
                      "exist: cite the ids the store returned.")
            if not words & marks[record_id]:
                _fail(f"the answer to {question!r} cites record {record_id} after a statement "
                      f"that does not use it ({statement.strip()!r}): put each citation "
                      "right after the statement drawn from that record.")
        for record_id, own in marks.items():
            if words & own and record_id not in cited:
                _fail(f"in the answer to {question!r}, the statement {statement.strip()!r} "
                      f"uses record {record_id} but is not followed by [{record_id}]: every "
                      "statement drawn from a record needs its citation.")


# --- exercise 4: a guard against memory poisoning ----------------------------------------

MIN_CAUGHT = 0.90
MAX_FLAGGED = 0.05


def _ex04_cases() -> dict[str, list[str]]:
    text = resources.files("vmem.course").joinpath("data", "ex04_check.json").read_text("utf-8")
    return json.loads(text)


def check_ex4(is_directive: Callable[[str], bool]) -> str:
    """Check the guard on held-out injections and ordinary memories."""
    cases = _ex04_cases()
    verdicts: dict[str, list[bool]] = {}
    for kind in ("injections", "ordinary"):
        verdicts[kind] = []
        for number, text in enumerate(cases[kind], 1):
            with _calling(f"is_directive on held-out {kind[:-1] if kind == 'injections' else kind} "
                          f"text #{number}"):
                verdict = is_directive(text)
            if not isinstance(verdict, bool):
                _fail(f"is_directive returned {verdict!r} ({type(verdict).__name__}); return "
                      "True or False (wrap a regex match in bool(...)).")
            verdicts[kind].append(verdict)
    caught, total = sum(verdicts["injections"]), len(verdicts["injections"])
    flagged, ordinary = sum(verdicts["ordinary"]), len(verdicts["ordinary"])
    if caught < MIN_CAUGHT * total:
        _fail(f"caught {caught} of {total} held-out injections ({caught / total:.0%}); at "
              f"least {MIN_CAUGHT:.0%} are needed. Injections come in many phrasings: "
              "orders to ignore or override earlier instructions, claims to be the system "
              "or a new role, rules 'from now on', requests to hide something from the user, "
              "to reveal secrets or to send data somewhere. Generalise beyond the one "
              "planted sentence.")
    if flagged > MAX_FLAGGED * ordinary:
        _fail(f"flagged {flagged} of {ordinary} held-out ordinary memories "
              f"({flagged / ordinary:.0%}); at most {MAX_FLAGGED:.0%} is allowed. Ordinary "
              "memories mention instructions, rules, passwords, 'always' and 'never' too: "
              "flag text that gives the assistant orders, not text that merely contains "
              "such words.")
    return (f"ex04 passed: caught {caught}/{total} held-out injections, flagged "
            f"{flagged}/{ordinary} ordinary memories.")


# --- exercise 5: typed core memory in the MemGPT/Letta shape -----------------------------

_BLOCK_KEYS = ("label", "value", "limit", "description", "read_only")


def check_ex5(to_memgpt: Callable[..., list[dict[str, Any]]], TypedCore: type) -> str:  # noqa: N803
    """Check the conversion to MemGPT/Letta blocks and the limits and read-only rules."""
    _check_to_memgpt(to_memgpt)
    _check_typed_core(TypedCore)
    return "ex05 passed: blocks have the MemGPT/Letta shape, and limits and read-only hold."


def _check_to_memgpt(to_memgpt: Callable[..., list[dict[str, Any]]]) -> None:
    flat = {"persona": "I am Sam, a patient tutor.", "human": "Name: Ada. Likes tea.",
            "project": ""}
    with _calling("to_memgpt(core)"):
        blocks = to_memgpt(dict(flat))
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        _fail(f"to_memgpt must return a list of dicts, one per section; got {blocks!r}.")
    labels = [block.get("label") for block in blocks]
    if labels != list(flat):
        _fail(f"to_memgpt gave blocks labelled {labels}, expected {list(flat)}: one block "
              "per section, in the order of the dict.")
    for block in blocks:
        missing = [key for key in _BLOCK_KEYS if key not in block]
        if missing:
            _fail(f"block {block['label']!r} lacks {missing}: every block needs "
                  f"{', '.join(_BLOCK_KEYS)}.")
        if block["value"] != flat[block["label"]]:
            _fail(f"block {block['label']!r} has value {block['value']!r}, expected the "
                  "section's text unchanged.")
        if block["limit"] != 2000 or isinstance(block["limit"], bool):
            _fail(f"block {block['label']!r} has limit {block['limit']!r}; with no limits "
                  "given, every block gets the default of 2000 characters.")
        if block["read_only"] is not False:
            _fail(f"block {block['label']!r} has read_only={block['read_only']!r}; sections "
                  "converted from a flat dict are writable (False).")
        described = isinstance(block["description"], str) and block["description"].strip()
        if block["label"] in ("persona", "human") and not described:
            _fail(f"block {block['label']!r} needs a description: the model reads it to "
                  "learn what belongs in the block.")
        if block["label"] not in ("persona", "human") and block["description"] != "":
            _fail(f"block {block['label']!r} has description {block['description']!r}; "
                  "sections other than persona and human get an empty description.")
    if json.loads(json.dumps(blocks)) != blocks:
        _fail("the blocks do not survive a JSON round trip: use only str, int and bool.")
    with _calling("to_memgpt(core, limits={'persona': 60})"):
        limited = to_memgpt(dict(flat), limits={"persona": 60})
    got = {block.get("label"): block.get("limit") for block in limited}
    if got != {"persona": 60, "human": 2000, "project": 2000}:
        _fail(f"with limits={{'persona': 60}} the limits were {got}: a given limit applies to "
              "its section, the rest keep the default.")
    error = _raises(lambda: to_memgpt({"human": "x" * 61}, limits={"human": 60}))
    if not isinstance(error, ValueError):
        _fail("a section longer than its limit must raise ValueError naming it, never be "
              f"truncated or passed through; got {'no error' if error is None else error!r}.")


def _core(TypedCore: type, blocks: list[dict[str, Any]]) -> Any:  # noqa: N803
    with _calling("TypedCore.from_memgpt(blocks)"):
        return TypedCore.from_memgpt([dict(block) for block in blocks])


def _dump(core: Any) -> list[dict[str, Any]]:
    with _calling("core.to_memgpt()"):
        return core.to_memgpt()


def _block(label: str, value: str, limit: int, read_only: bool = False,
           description: str = "") -> dict[str, Any]:
    return {"label": label, "value": value, "limit": limit, "description": description,
            "read_only": read_only}


def _refuses(core: Any, edit: str, args: tuple[str, ...], needs: Sequence[str],
             why: str) -> None:
    """An edit must raise an error whose message contains `needs`, and change nothing."""
    before = _dump(core)
    error = _raises(lambda: getattr(core, edit)(*args))
    call = f"{edit}{args!r}"
    if error is None:
        _fail(f"{call} was accepted, but {why}; it must raise an error instead (never "
              "truncate or drop text silently).")
    if isinstance(error, AssertionError):
        raise error
    message = str(error).lower()
    for need in needs:
        if need.lower() not in message:
            _fail(f"{call} raised {type(error).__name__}({str(error)!r}); a model reading it "
                  f"needs to see {need!r} in it ({why}) to fix its next call.")
    if _dump(core) != before:
        _fail(f"the refused {call} still changed the block: validate first, then change.")


def _exact_fit(core: Any, edit: str, args: tuple[str, ...], position: int, want: str) -> None:
    """An edit whose result is exactly at the block's limit must be accepted."""
    error = _raises(lambda: getattr(core, edit)(*args))
    label = args[0]
    if error is not None:
        _fail(f"an {edit} that fills block {label!r} exactly to its limit raised "
              f"{type(error).__name__}({str(error)!r}); it must be accepted: the limit is the "
              "largest allowed size.")
    got = _dump(core)[position]["value"]
    if got != want:
        _fail(f"after an {edit} on block {label!r} its value is {got!r}, expected {want!r}.")


def _check_typed_core(TypedCore: type) -> None:  # noqa: N803
    blocks = [_block("persona", "I am Sam.", 40, description="Who you are."),
              _block("human", "Name: Ada.", 30, description="Who the user is."),
              _block("rules", "Be kind.", 100, read_only=True)]
    core = _core(TypedCore, blocks)
    if _dump(core) != blocks:
        _fail(f"TypedCore.from_memgpt(blocks).to_memgpt() gave {_dump(core)!r}, expected the "
              "same blocks back: keep each block's value, limit, description and read_only.")

    probe = _core(TypedCore, [_block("notes", "abc", 2000)])
    with _calling("append('notes', 'xyz')"):
        probe.append("notes", "xyz")
    grown = _dump(probe)[0]["value"]
    sep = grown[3:-3] if grown.startswith("abc") and grown.endswith("xyz") else None
    if sep not in ("", " ", "\n"):
        _fail(f"appending 'xyz' to 'abc' gave {grown!r}: append keeps the old value and adds "
              "the new text at its end (joined by a newline).")

    room = 30 - len("Name: Ada.") - len(sep)
    _refuses(core, "append", ("human", "x" * (room + 1)), ["human", "30"],
             "it would take block 'human' one character over its limit of 30")
    _exact_fit(core, "append", ("human", "y" * room), 1, "Name: Ada." + sep + "y" * room)
    _refuses(core, "append", ("rules", "Be brief."), ["rules", "read"],
             "block 'rules' is read-only")
    _refuses(core, "replace", ("rules", "kind", "rude"), ["rules", "read"],
             "block 'rules' is read-only")
    _refuses(core, "append", ("mood", "happy"), ["mood"], "there is no block 'mood'")
    _refuses(core, "replace", ("persona", "Bob", "Rob"), ["persona", "Bob"],
             "'Bob' does not occur in block 'persona'")
    _refuses(core, "replace", ("persona", "", "x"), ["persona"],
             "an empty old text matches everywhere")
    extra = 40 - len("I am Sam.")
    _refuses(core, "replace", ("persona", "Sam", "Sam" + "z" * (extra + 1)), ["persona", "40"],
             "the result would be one character over block 'persona''s limit of 40")
    _exact_fit(core, "replace", ("persona", "Sam", "Sam" + "z" * extra), 0,
               "I am Sam" + "z" * extra + ".")
