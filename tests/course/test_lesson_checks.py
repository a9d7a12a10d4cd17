"""Every lesson check passes vmem's own part, says "not written yet" for a stub, and
rejects wrong answers written before the check, each in one line, falling back to vmem's
part so the notebook goes on."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import replace
from datetime import timezone
from pathlib import Path

import nbformat
import pytest
from verdicts import learners_copy, told_not_right

from vmem import count_tokens
from vmem.bm25 import tokenize
from vmem.course.lesson_checks import l02, l03


def stub(*args, **kwargs):
    raise NotImplementedError("write it")


# --- notebook 02 wrong answers ------------------------------------------------------

def _words(text):
    return len(text.split())


TOKENS = {
    "chars / 4": lambda text: len(text) // 4,
    "round, not ceil": lambda text: round(_words(text) * 1.3),
    "floor": lambda text: int(_words(text) * 1.3),
    "split on spaces only": lambda text: math.ceil(len(text.split(" ")) * 1.3) if text else 0,
    "one per word": _words,
    "at least one": lambda text: max(1, math.ceil(_words(text) * 1.3)),
    "a float": lambda text: _words(text) * 1.3,
}


def _head(system, summary):
    return l02.system_message(system, summary)


def render_oldest_first(system, summary, messages, max_tokens):
    room, kept = max_tokens - count_tokens(_head(system, summary)["content"]), []
    for message in messages:
        room -= count_tokens(message["content"])
        if room < 0:
            break
        kept.append(message)
    return [_head(system, summary), *kept]


def render_skips_big_ones(system, summary, messages, max_tokens):
    room, kept = max_tokens - count_tokens(_head(system, summary)["content"]), []
    for message in reversed(messages):
        if count_tokens(message["content"]) <= room:
            room -= count_tokens(message["content"])
            kept.insert(0, message)
    return [_head(system, summary), *kept]


RENDER = {
    "oldest first": render_oldest_first,
    "skips a big message and goes on": render_skips_big_ones,
    "system message not counted": lambda s, m, msgs, n:
        l02.render(s, m, msgs, n + count_tokens(_head(s, m)["content"])),
    "newest first": lambda s, m, msgs, n: [l02.render(s, m, msgs, n)[0],
                                           *reversed(l02.render(s, m, msgs, n)[1:])],
    "summary dropped": lambda s, m, msgs, n: [_head(s, None), *l02.render(s, m, msgs, n)[1:]],
    "no system message": lambda s, m, msgs, n: l02.render(s, m, msgs, n)[1:],
    "everything": lambda s, m, msgs, n: [_head(s, m), *msgs],
}


def append_warns_when_above(queue, message, max_tokens, warn_at=0.7):
    queue.append(message)
    if l02._tokens(queue) > warn_at * max_tokens:
        queue.append({"role": "system", "content": "Memory pressure!"})
        return True
    return False


def append_at_or_above(queue, message, max_tokens, warn_at=0.7):
    before = l02._tokens(queue)
    queue.append(message)
    if before < warn_at * max_tokens <= l02._tokens(queue):
        queue.append({"role": "system", "content": "Memory pressure!"})
        return True
    return False


def append_no_notice(queue, message, max_tokens, warn_at=0.7):
    return l02.append(queue, message, max_tokens, warn_at) and bool(queue.pop())


def append_notice_first(queue, message, max_tokens, warn_at=0.7):
    warned = l02.append(queue, message, max_tokens, warn_at)
    if warned:
        queue[-2:] = queue[-2:][::-1]
    return warned


def append_full_budget(queue, message, max_tokens, warn_at=0.7):
    return l02.append(queue, message, max_tokens, 1.0)


APPEND = {
    "warns on every append above": append_warns_when_above,
    "at or above, not above": append_at_or_above,
    "no notice in the queue": append_no_notice,
    "notice before the message": append_notice_first,
    "warns at the budget, not 70%": append_full_budget,
    "never appends": lambda queue, message, max_tokens, warn_at=0.7: False,
}


def evict_one_by_one(queue, target):
    evicted = []
    while len(queue) > 1 and l02._tokens(queue) > target:
        evicted.append(queue.pop(0))
    return evicted


def evict_newest(queue, target):
    evicted = []
    while len(queue) > 1 and l02._tokens(queue) > target:
        evicted.insert(0, queue.pop())
    return evicted


def evict_everything(queue, target):
    evicted = list(queue) if l02._tokens(queue) > target else []
    del queue[:len(evicted)]
    return evicted


def evict_copy(queue, target):
    return l02.evict(list(queue), target)


def evict_one_group_more(queue, target):
    evicted = l02.evict(queue, target)
    if evicted and len(queue) > 1:
        evicted.append(queue.pop(0))
    return evicted


EVICT = {
    "splits a tool run": evict_one_by_one,
    "newest first": evict_newest,
    "everything, newest included": evict_everything,
    "leaves the queue as it was": evict_copy,
    "one message too many": evict_one_group_more,
    "returns nothing": lambda queue, target: [],
}


def _joined(previous, evicted):
    return " ".join([previous or "", *(m["content"] for m in evicted)]).strip()


FOLD = {
    "ignores the previous summary": lambda previous, evicted: _joined(None, evicted),
    "ignores the evicted": lambda previous, evicted: previous or "",
    "grows without bound": _joined,
    "only the newest message": lambda previous, evicted:
        (evicted[-1]["content"] if evicted else previous),
    "empty": lambda previous, evicted: "",
    "not deterministic": lambda previous, evicted, _calls=[0]:
        (_calls.append(1) or " ".join(_joined(previous, evicted).split()[-59:])
         + f" #{len(_calls)}"),
    "keeps the oldest words": lambda previous, evicted:
        " ".join(_joined(previous, evicted).split()[:60]),
    "forgets previous when nothing is evicted": lambda previous, evicted:
        " ".join(_joined(None, evicted).split()[-60:]),
}

CHECKS = {
    "tokens": (l02.check_tokens, count_tokens, TOKENS),
    "render": (l02.check_render, l02.render, RENDER),
    "append": (l02.check_append, l02.append, APPEND),
    "evict": (l02.check_evict, l02.evict, EVICT),
    "fold": (l02.check_fold, l02.fold, FOLD),
}
# --- notebook 03 wrong answers ------------------------------------------------------

def _norm(doc_len, avgdl, b):
    return 1 - b + b * doc_len / avgdl


TF = {
    "no length normalisation": lambda tf, n, avgdl, k1=1.2, b=0.75:
        l03.saturated_tf(tf, n, avgdl, k1, 0.0),
    "no saturation": lambda tf, n, avgdl, k1=1.2, b=0.75: tf * (k1 + 1) / (1 + k1),
    "norm upside down": lambda tf, n, avgdl, k1=1.2, b=0.75:
        tf * (k1 + 1) / (tf + k1 * (1 - b + b * avgdl / n)) if tf else 0.0,
    "without k1 + 1": lambda tf, n, avgdl, k1=1.2, b=0.75:
        tf / (tf + k1 * _norm(n, avgdl, b)) if tf else 0.0,
    "b misplaced": lambda tf, n, avgdl, k1=1.2, b=0.75:
        tf * (k1 + 1) / (tf + k1 * (1 - b * n / avgdl)) if tf else 0.0,
    "k1 fixed at 1.2": lambda tf, n, avgdl, k1=1.2, b=0.75: l03.saturated_tf(tf, n, avgdl, 1.2, b),
    "raw tf": lambda tf, n, avgdl, k1=1.2, b=0.75: float(tf),
}

IDF = {
    "lucene without 1 +": lambda n, df, okapi=False: math.log((n - df + 0.5) / (df + 0.5)),
    "okapi is lucene": lambda n, df, okapi=False: l03.idf(n, df, False),
    "log10": lambda n, df, okapi=False: l03.idf(n, df, okapi) / math.log(10),
    "no 0.5 smoothing": lambda n, df, okapi=False:
        math.log((0 if okapi else 1) + (n - df + 1e-9) / (df + 1e-9)),
    "N and n swapped": lambda n, df, okapi=False: l03.idf(df, n, okapi) if df <= n else 0.0,
    "okapi floored at zero": lambda n, df, okapi=False: max(0.0, l03.idf(n, df, okapi)),
    "N instead of N - n": lambda n, df, okapi=False:
        math.log((0 if okapi else 1) + (n + 0.5) / (df + 0.5)),
}


def score_distinct_terms(query_terms, doc_terms, *rest, **options):
    return l03.bm25_score(list(dict.fromkeys(query_terms)), doc_terms, *rest, **options)


def score_default_params(query_terms, doc_terms, df, n_docs, avgdl, k1=1.2, b=0.75):
    return l03.bm25_score(query_terms, doc_terms, df, n_docs, avgdl)


def score_okapi(query_terms, doc_terms, df, n_docs, avgdl, k1=1.2, b=0.75):
    counts = Counter(doc_terms)
    return sum(l03.idf(n_docs, df[t], True) * l03.saturated_tf(counts[t], len(doc_terms),
               avgdl, k1, b) for t in query_terms if counts[t])


def score_idf_only(query_terms, doc_terms, df, n_docs, avgdl, k1=1.2, b=0.75):
    return sum(l03.idf(n_docs, df[t]) for t in set(query_terms) if t in doc_terms)


def score_avgdl_for_length(query_terms, doc_terms, df, n_docs, avgdl, k1=1.2, b=0.75):
    counts = Counter(doc_terms)
    return sum(l03.idf(n_docs, df[t]) * l03.saturated_tf(counts[t], avgdl, avgdl, k1, b)
               for t in query_terms if counts[t])


SCORE = {
    "a repeated query term counted once": score_distinct_terms,
    "ignores k1 and b": score_default_params,
    "Okapi's idf": score_okapi,
    "idf only": score_idf_only,
    "every document of average length": score_avgdl_for_length,
}


def search_no_tiebreak(query, docs, k=3):
    scores, _ = _ranked(query, docs)
    ranked = sorted(range(len(docs)), key=lambda i: (-scores[i], -i))
    return [(i, scores[i]) for i in ranked if scores[i] > 0][:k]


def search_keeps_zeros(query, docs, k=3):
    scores, ranked = _ranked(query, docs)
    return [(i, scores[i]) for i in ranked][:k]


def _score_args(query, docs):
    terms, df, avgdl = l03._stats(docs)
    return [(tokenize(query), doc, df, len(docs), avgdl) for doc in terms]


def _ranked(query, docs):
    scores = [l03.bm25_score(*args) for args in _score_args(query, docs)]
    return scores, sorted(range(len(docs)), key=lambda i: (-scores[i], i))


SEARCH = {
    "ties: the later document first": search_no_tiebreak,
    "worst first": lambda q, docs, k=3: l03.search(q, docs, len(docs))[::-1][:k],
    "zero scores kept": search_keeps_zeros,
    "k ignored": lambda q, docs, k=3: l03.search(q, docs, len(docs)),
    "one too few": lambda q, docs, k=3: l03.search(q, docs, k)[:k - 1],
    "positions from 1": lambda q, docs, k=3: [(i + 1, s) for i, s in l03.search(q, docs, k)],
}


def cite_shown(record, **changes):
    """vmem's cited line of `record` with some of its fields changed first."""
    return replace(record, **changes).cite()


def cite_local_time(record):
    at = record.created_at
    return cite_shown(record, created_at=at and at.replace(tzinfo=timezone.utc))


def cite_unquoted(record):
    return record.cite().replace(json.dumps(record.text, ensure_ascii=False), record.text)


def cite_ascii_escapes(record):
    return record.cite().replace(json.dumps(record.text, ensure_ascii=False),
                                 json.dumps(record.text))


# label -> (wrong cite, what the one line must say)
CITE_SAYS = {
    "turn and session swapped": (
        lambda r: cite_shown(r, session_id=r.turn_id, turn_id=r.session_id),
        "expected '[record 41 | session 4, turn 12 |"),
    "None instead of ?": (
        lambda r: r.cite().replace("session ?", "session None").replace("turn ?", "turn None"),
        "a record from an unknown session"),
    "local time, not UTC": (cite_local_time, "convert the time to UTC"),
    "None, not unknown time": (lambda r: r.cite().replace("unknown time", "None"),
                               "'unknown time' when created_at is None"),
    "source_url dropped": (lambda r: cite_shown(r, source_url=None),
                           "a record read on a web page"),
    "superseded_by dropped": (lambda r: cite_shown(r, superseded_by=None),
                              ", superseded by record N"),
    "invalidation ignored": (lambda r: cite_shown(r, invalid_at=None), "INVALIDATED"),
    "flag ignored": (lambda r: cite_shown(r, flagged=False), "QUARANTINED"),
    "flagged text not JSON-quoted": (cite_unquoted, "json.dumps(text, ensure_ascii=False)"),
    "ASCII escapes in the quoted text": (cite_ascii_escapes, "\\u2014"),
    "reasons joined by a comma": (
        lambda r: cite_shown(r, flag_reasons=(", ".join(r.flag_reasons),)),
        "joined by '; '"),
    "not a str": (lambda r: r.cite().split(), "expected the cited line as a str"),
}
CITE = {label: wrong for label, (wrong, _) in CITE_SAYS.items()}


def archive(**changes):
    """A TinyArchive class with one method replaced."""
    return type("Wrong", (l03.TinyArchive,), changes)


def _hits(archive, query, k):
    return [position for position, _ in l03.search(query, [r.text for r in archive.records], k)]


def _insert_then(change):
    """An insert that stores the record as vmem does, then changes the archive with `change`."""
    def insert(self, *record):
        record_id = l03.TinyArchive.insert(self, *record)
        change(self)
        return record_id
    return insert


ARCHIVE = {
    "ids from 0": archive(insert=lambda self, *record:
                          l03.TinyArchive.insert(self, *record) - 1),
    "session and turn swapped": archive(insert=lambda self, text, session, turn, url=None:
                                        l03.TinyArchive.insert(self, text, turn, session, url)),
    "insertion order, not BM25": archive(search=lambda self, query, k=3: [
        l03.cite(self.records[i]) for i in sorted(_hits(self, query, k))]),
    "no citation": archive(search=lambda self, query, k=3: [
        self.records[i].text for i in _hits(self, query, k)]),
    "k ignored": archive(search=lambda self, query, k=3: l03.TinyArchive.search(self, query, 99)),
    "cites the next record": archive(search=lambda self, query, k=3: [
        l03.cite(replace(self.records[i], id=i + 2)) for i in _hits(self, query, k)]),
    "source_url dropped": archive(insert=lambda self, text, session, turn, url=None:
                                  l03.TinyArchive.insert(self, text, session, turn)),
    "no created_at": archive(insert=_insert_then(lambda self: setattr(
        self.records[-1], "created_at", None))),
    "own clock, not self.clock": archive(insert=_insert_then(lambda self: setattr(
        self.records[-1], "created_at", l03._clock()()))),
}

CHECKS.update({
    "tf": (l03.check_tf, l03.saturated_tf, TF),
    "idf": (l03.check_idf, l03.idf, IDF),
    "score": (l03.check_score, l03.bm25_score, SCORE),
    "search": (l03.check_search, l03.search, SEARCH),
    "cite": (l03.check_cite, l03.cite, CITE),
    "archive": (l03.check_archive, l03.TinyArchive, ARCHIVE),
})

WRONG = [(name, label, wrong) for name, (_, _, mutants) in CHECKS.items()
         for label, wrong in mutants.items()]


@pytest.mark.parametrize("name", CHECKS)
def test_vmems_part_written_by_the_learner_passes(name, capsys):
    check, fallback, _ = CHECKS[name]
    mine = learners_copy(fallback)
    assert check(mine) is mine
    out = capsys.readouterr().out
    assert out.startswith("passed: ") and out.count("\n") == 1


@pytest.mark.parametrize("name", CHECKS)
@pytest.mark.parametrize("first", ["stub", "wrong"])
def test_a_check_run_again_on_the_part_it_handed_back_says_the_same_again(name, first,
                                                                          capsys):
    """The re-run hole: the notebook rebinds the learner's name to vmem's part, so a check
    cell run again gets vmem's part; it must not pass it as the learner's."""
    check, fallback, wrong = CHECKS[name]
    assert check(stub if first == "stub" else next(iter(wrong.values()))) is fallback
    said = capsys.readouterr().out
    assert said.startswith("not written yet" if first == "stub" else "not right yet: ")
    assert check(fallback) is fallback
    assert capsys.readouterr().out == said


@pytest.mark.parametrize("name", CHECKS)
def test_a_stub_is_not_written_yet(name, capsys):
    check, fallback, _ = CHECKS[name]
    assert check(stub) is fallback
    out = capsys.readouterr().out
    assert out.startswith("not written yet - using vmem's ") and out.count("\n") == 1


@pytest.mark.parametrize("name", CHECKS)
def test_each_check_has_at_least_five_wrong_answers(name):
    assert len(CHECKS[name][2]) >= 5


@pytest.mark.parametrize(("name", "label", "wrong"), WRONG,
                         ids=[f"{name}-{label}" for name, label, _ in WRONG])
def test_a_wrong_answer_gets_one_line_and_vmems_part(name, label, wrong, capsys):
    check, fallback, _ = CHECKS[name]
    assert check(wrong) is fallback, label
    out = told_not_right(capsys)
    assert "Traceback" not in out and "vmem/course" not in out


def test_a_crash_in_learner_code_is_one_line_naming_it(capsys):
    def crashes(text):
        return {}[text]
    assert l02.check_tokens(crashes) is count_tokens
    told_not_right(capsys, "KeyError", "crashes")


@pytest.mark.parametrize("label", CITE_SAYS)
def test_a_wrong_cite_is_told_where_its_line_differs(label, capsys):
    wrong, said = CITE_SAYS[label]
    assert l03.check_cite(wrong) is l03.cite
    told_not_right(capsys, said)


def test_the_cite_check_covers_every_part_of_the_line():
    lines = [record.cite() for _, record, _ in l03._CITED]
    for part in ("session ?", "turn ?", "unknown time", " | https://", "INVALIDATED]",
                 "superseded by record", "QUARANTINED", "\\n", '\\"', "—", "東京"):
        assert any(part in line for line in lines), part
    assert any(record.created_at and record.created_at.utcoffset()
               for _, record, _ in l03._CITED)


def test_the_cited_records_are_unseen_and_cite_is_used_after_its_check():
    root = Path(__file__).resolve().parents[2]
    complete = root / "solutions" / "lessons" / "03_archival_store.ipynb"
    for path in (complete, root / "notebooks" / "03_archival_store.ipynb"):
        text = path.read_text(encoding="utf-8")
        assert not [record.text for _, record, _ in l03._CITED if record.text in text]
        cells = nbformat.read(path, 4).cells
        at = next(i for i, cell in enumerate(cells) if "check_cite(" in cell.source)
        assert not any("cite(" in cell.source for cell in cells[:at - 1]
                       if cell.cell_type == "code")
        assert "print(cite(" in cells[at + 2].source
    archive = next(cell for cell in nbformat.read(complete, 4).cells
                   if "class TinyArchive" in cell.source)
    assert "cite(self.records[" in archive.source
