"""`RetrievalExplorer`: BM25 over an archival store's records, live, beside token overlap.

Optional extra: the widget needs ipywidgets; the pure functions (`retrieval_view`,
`overlap_ranking`, `retrieval_html`, ...) need only the standard library.

`retrieval_view` ranks the records with the pure-Python `BM25Index` under any k1 and b,
splits each hit's score by query term (with each term's tf, idf and the record's length
normalisation, which the view prints in a small table under the hit), and ranks the
same records by the token-overlap baseline; `retrieval_html` draws both side by side.
The widget wires a query box and the top_k, k1 and b sliders to them.

The explorer teaches textbook BM25, where every word counts: `build_index` indexes with
`tokenize` (not the stores' stemming `analyze`), and the view reads the query's terms with
the index's own analyzer, so the legend, bars and term tables name the terms it scores.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..bm25 import BM25Index, TermExplanation, tokenize
from ..messages import Record
from ..text import one_line, plural
from .box import Box, require_widgets, widgets
from .markup import TERM_COLORS, bar, escape, root, swatch


@dataclass(frozen=True)
class RankedHit:
    """One BM25 hit: its score and each query term's share of it (terms in query order).

    `terms` explain the shares, one per distinct query term the record contains: its tf,
    idf, the record's length normalisation and the share (a word repeated in the query
    adds its share twice); `length` is the record's length in terms.
    """

    record_id: int
    text: str
    score: float
    parts: tuple[tuple[str, float], ...]
    terms: tuple[TermExplanation, ...] = ()
    length: int = 0


@dataclass(frozen=True)
class OverlapHit:
    """One hit of the baseline: the distinct query terms the record contains."""

    record_id: int
    text: str
    matched: tuple[str, ...]


@dataclass(frozen=True)
class RetrievalView:
    """What `RetrievalExplorer` draws for one query and one setting of k1, b and top_k."""

    query: str
    terms: tuple[str, ...]  # distinct query terms, in query order
    idf: tuple[float, ...]
    df: tuple[int, ...]
    k1: float
    b: float
    top_k: int
    records: int
    bm25: tuple[RankedHit, ...]
    overlap: tuple[OverlapHit, ...]
    relevant: frozenset[int] = frozenset()  # ids the lesson marks relevant (may be none)
    avgdl: float = 0.0  # the records' average length in terms, which `norm` divides by
    unlabelled: bool = False  # the lesson labelled other queries, not this one: no recall

    def recall(self, ids: Sequence[int]) -> float | None:
        """recall@top_k of a ranking's ids: the share of `relevant` it shows (None when
        no relevant ids were given, so there is nothing to measure)."""
        return len(self.relevant & set(ids)) / len(self.relevant) if self.relevant else None

    def facts(self) -> dict[str, Any]:
        """The rankings the view draws, as JSON-ready values (tests compare these)."""
        return {"view": "retrieval", "query": self.query, "k1": round(self.k1, 2),
                "b": round(self.b, 2), "top_k": self.top_k,
                "bm25": [hit.record_id for hit in self.bm25],
                "scores": [round(hit.score, 3) for hit in self.bm25],
                "overlap": [hit.record_id for hit in self.overlap],
                "relevant": sorted(self.relevant),
                "recall": {"bm25": self.recall([hit.record_id for hit in self.bm25]),
                           "overlap": self.recall([hit.record_id for hit in self.overlap])},
                "unmatched": list(self.unmatched),
                "terms": {str(hit.record_id): [[t.term, t.tf, round(t.idf, 3), round(t.norm, 3),
                                                round(t.contribution, 3)] for t in hit.terms]
                          for hit in self.bm25}}

    @property
    def unmatched(self) -> tuple[str, ...]:
        """Query terms no record contains: they add nothing to any score, so the view
        greys them out instead of showing their (highest possible) idf."""
        return tuple(term for term, df in zip(self.terms, self.df, strict=True) if df == 0)


def build_index(records: Sequence[Record]) -> BM25Index:
    """A pure-Python textbook `BM25Index` over the records' text, keyed by record id:
    every word `tokenize` finds is a term (no stop words dropped, no stemming)."""
    index = BM25Index(analyzer=tokenize)
    for record in records:
        index.add(record.id, record.text)
    return index


def overlap_ranking(query: str, records: Sequence[Record], top_k: int, *,
                    analyzer: Callable[[str], list[str]] = tokenize) -> list[OverlapHit]:
    """The baseline: records ranked by how many distinct query terms they contain, ties
    in insertion order; records sharing no term are left out. Terms are `analyzer`'s
    (`tokenize`'s words by default; `retrieval_view` passes its index's analyzer)."""
    terms = list(dict.fromkeys(analyzer(query)))
    hits = []
    for record in records:
        words = set(analyzer(record.text))
        matched = tuple(term for term in terms if term in words)
        if matched:
            hits.append(OverlapHit(record.id, record.text, matched))
    hits.sort(key=lambda hit: -len(hit.matched))  # stable: ties keep insertion order
    return hits[:top_k]


Scorer = Callable[..., Sequence[float]]  # (query, texts, k1=, b=) -> one score per text


def scored_ranking(scorer: Scorer, records: Sequence[Record], query: str, *, k1: float,
                   b: float, top_k: int) -> list[tuple[int, float]]:
    """The `top_k` (record id, score) pairs by `scorer`'s scores, best first, ties in
    record order, records scoring 0 left out (as `BM25Index.search` ranks)."""
    scores = [float(score) for score in scorer(query, [r.text for r in records], k1=k1, b=b)]
    if len(scores) != len(records):
        raise ValueError(f"the scorer returned {len(scores)} scores for {len(records)} "
                         "records: it must return one score per text, in order")
    ranked = sorted(range(len(records)), key=lambda i: (-scores[i], i))
    return [(records[i].id, scores[i]) for i in ranked if scores[i] > 0][:top_k]


def retrieval_view(index: BM25Index, records: Sequence[Record], query: str, *,
                   k1: float, b: float, top_k: int,
                   relevant: frozenset[int] = frozenset(),
                   scorer: Scorer | None = None, unlabelled: bool = False) -> RetrievalView:
    """BM25 under `k1` and `b` beside the overlap baseline, `top_k` hits each.

    `index` must index `records` (see `build_index`); it is not changed: scoring runs on a
    shallow copy that shares its postings and takes its own k1 and b. With a `scorer`
    (a learner's BM25, say) the BM25 column is ranked and scored by it instead; the
    per-term tables still come from `index`, so a scorer that disagrees with BM25 shows
    its scores beside terms whose shares do not add up to them. `unlabelled` says that
    `relevant` belongs to other queries, so no recall is shown. Query terms (legend,
    bars, tables and the baseline's matches) come from `index.analyzer`, the analyzer
    the index scores with.
    """
    tuned = copy.copy(index)
    tuned.k1, tuned.b = k1, b
    terms = tuple(dict.fromkeys(index.analyzer(query)))
    text = {record.id: record.text for record in records}
    hits = []
    ranking = tuned.search(query, k=top_k) if scorer is None else scored_ranking(
        scorer, records, query, k1=k1, b=b, top_k=top_k)
    for record_id, score in ranking:
        explained = tuned.explain(query, record_id)
        rows: dict[str, TermExplanation] = {}
        for part in explained.terms:  # a repeated word counts twice
            if part.tf:
                seen = rows.get(part.term)
                rows[part.term] = part if seen is None else replace(
                    seen, contribution=seen.contribution + part.contribution)
        hits.append(RankedHit(record_id, text[record_id], score,
                              tuple((row.term, row.contribution) for row in rows.values()
                                    if row.contribution),
                              tuple(rows.values()), explained.doc_len))
    return RetrievalView(query, terms, tuple(tuned.idf(term) for term in terms),
                         tuple(tuned.df(term) for term in terms), k1, b, top_k, len(records),
                         tuple(hits),
                         tuple(overlap_ranking(query, records, top_k, analyzer=index.analyzer)),
                         relevant,
                         tuned.avgdl, unlabelled)


def retrieval_html(view: RetrievalView) -> str:
    """The `RetrievalExplorer` picture of `view`, as HTML."""
    if not view.terms:
        body = (f"Type a query to rank the {plural(view.records, 'record')} "
                "(it has no searchable words yet).")
        return root("retrieval", view.facts(), body)
    colors = {term: TERM_COLORS[i % len(TERM_COLORS)] for i, term in enumerate(view.terms)}
    legend = " &nbsp; ".join(
        f'<span style="color:#999">{escape(term)} (in no record: adds nothing)</span>'
        if df == 0 else
        f"{swatch(colors[term])}<b>{escape(term)}</b> idf {idf:.2f} (in {df} of {view.records})"
        for term, idf, df in zip(view.terms, view.idf, view.df, strict=True))
    bm25_rank = {hit.record_id: rank for rank, hit in enumerate(view.bm25, 1)}
    scale = max((hit.score for hit in view.bm25), default=0.0) or 1.0
    left = [f"<b>BM25</b> (k1 = {view.k1:.2f}, b = {view.b:.2f}): score split by term, "
            "the numbers per term beneath"
            + _recall_note(view, [hit.record_id for hit in view.bm25])]
    for rank, hit in enumerate(view.bm25, 1):
        segments = [(term, share, colors[term]) for term, share in hit.parts]
        left.append(
            f'<div style="margin-top:6px">{rank}. [record {hit.record_id}]'
            f"{_mark(view, hit.record_id)} score "
            f"<b>{hit.score:.2f}</b>{bar(segments, scale, 14)}"
            f'<div style="color:#555">{escape(one_line(hit.text, 90))}</div>'
            f"{_term_table(view, hit, colors)}</div>")
    right = ["<b>Token overlap</b> (baseline): distinct query terms shared"
             + _recall_note(view, [hit.record_id for hit in view.overlap])]
    for rank, hit in enumerate(view.overlap, 1):
        where = f"BM25 rank {bm25_rank[hit.record_id]}" if hit.record_id in bm25_rank \
            else f"not in BM25's top {view.top_k}"
        right.append(
            f'<div style="margin-top:6px">{rank}. [record {hit.record_id}]'
            f"{_mark(view, hit.record_id)} <b>{len(hit.matched)}</b> of {len(view.terms)}: "
            f"{escape(', '.join(hit.matched))}"
            f' <span style="color:#888">({where})</span>'
            f'<div style="color:#555">{escape(one_line(hit.text, 70))}</div></div>')
    if not view.bm25:
        left.append("<div><i>no record contains any query term</i></div>")
    column = "flex:1; min-width:0; padding-right:12px"
    body = (f"<div>Query terms: {legend}</div>"
            f'<div style="display:flex; margin-top:8px"><div style="{column}">{"".join(left)}'
            f'</div><div style="{column}; border-left:1px solid #ddd; padding-left:12px">'
            f'{"".join(right)}</div></div>')
    return root("retrieval", view.facts(), body)


def _term_table(view: RetrievalView, hit: RankedHit, colors: dict[str, str]) -> str:
    """The numbers behind one hit's bar, per term: tf, idf, the length normalisation
    (1 - b + b * length / average length) and the share of the score they give."""
    cell = "padding:0 6px; text-align:right"
    head = "".join(f'<th style="{cell}; font-weight:normal; color:#777">{name}</th>'
                   for name in ("term", "tf", "idf", "norm", "share"))
    rows = "".join(
        f'<tr data-term="{escape(t.term)}"><td style="{cell}; text-align:left">'
        f'{swatch(colors[t.term])}{escape(t.term)}</td><td style="{cell}">{t.tf}</td>'
        f'<td style="{cell}">{t.idf:.2f}</td><td style="{cell}">{t.norm:.2f}</td>'
        f'<td style="{cell}">{t.contribution:.2f}</td></tr>' for t in hit.terms)
    return (f'<table data-record="{hit.record_id}" style="border-collapse:collapse; '
            f'font-size:12px; margin:2px 0 0 8px"><tr>{head}</tr>{rows}</table>'
            f'<div style="color:#777; font-size:12px; margin-left:8px">norm = 1 - b + b &times; '
            f"length {hit.length} / average {view.avgdl:.2f}; share = idf &times; tf &times; "
            "(k1 + 1) / (tf + k1 &times; norm), once per time the word is in the query</div>")


def _recall_note(view: RetrievalView, ids: Sequence[int]) -> str:
    """ "; recall@k = ..." beside a ranking's heading, when relevant ids were given."""
    if view.unlabelled:
        return "; no recall@k: this query has no relevance labels (only the lesson's has)"
    found = view.recall(ids)
    return "" if found is None else (
        f"; <b>recall@{view.top_k} = {found:.2f}</b> "
        f"({len(view.relevant & set(ids))} of {len(view.relevant)} relevant)")


def _same_query(typed: str, labelled: str) -> bool:
    """Whether `typed` is the labelled query, up to case and spacing."""
    return " ".join(typed.lower().split()) == " ".join(labelled.lower().split())


def _mark(view: RetrievalView, record_id: int) -> str:
    """A visible mark on a record the lesson says is relevant."""
    return ' <b style="color:#009E73">&#10003; relevant</b>' \
        if record_id in view.relevant else ""


class RetrievalExplorer(Box):
    """Rank an `ArchivalStore`'s records with BM25, live, beside token overlap.

    Example::

        from vmem import ArchivalStore
        from vmem.viz import RetrievalExplorer

        store = ArchivalStore()
        for fact in ["My sister Ana lives in Porto.", "I moved to Lisbon in 2021.",
                     "Ana is a pilot and flies to Porto every week.", "I like green tea."]:
            store.insert(fact)
        RetrievalExplorer(store, query="where does my sister live")

    Controls: `.query` (a text box), `.top_k`, `.k1` and `.b` (sliders) and `.reset` (a
    button back to k1 = 1.2, b = 0.75). The records are read once, when the explorer is
    built, and indexed with the pure-Python textbook `BM25Index` (`.index`, over
    `.records`; every word `tokenize` finds counts, see `build_index`).
    `relevant=` labels the ids that answer `query`: recall@k is shown for that query only
    (any other query says it has no labels).
    `scorer=` ranks the BM25 column with another BM25, such as the one notebook 03's
    learner writes: `scorer(query, texts, k1=..., b=...)` returns one score per text.
    `.view()` is the `RetrievalView` on screen.
    """

    def __init__(self, store: Any, *, query: str = "", top_k: int = 5, k1: float = 1.2,
                 b: float = 0.75, relevant: frozenset[int] | set[int] = frozenset(),
                 scorer: Scorer | None = None) -> None:
        require_widgets("RetrievalExplorer")
        self.relevant, self.scorer = frozenset(relevant), scorer
        self.labelled_query = query  # the query `relevant` labels
        self.records = tuple(store.records())
        self.index = build_index(self.records)
        most = max(1, min(20, len(self.records)))
        self.query = widgets.Text(value=query, description="query",
                                  placeholder="type a question", continuous_update=True,
                                  layout=widgets.Layout(width="420px"))
        self.top_k = widgets.IntSlider(value=min(max(top_k, 1), most), min=1, max=most,
                                       description="top_k")
        self.k1 = widgets.FloatSlider(value=k1, min=0.0, max=3.0, step=0.1, description="k1",
                                      readout_format=".1f")
        self.b = widgets.FloatSlider(value=b, min=0.0, max=1.0, step=0.05, description="b",
                                     readout_format=".2f")
        self.reset = widgets.Button(description="reset k1 and b",
                                    layout=widgets.Layout(width="auto"))
        self.output = widgets.HTML()
        super().__init__(children=[widgets.HBox([self.query, self.top_k]),
                                   widgets.HBox([self.k1, self.b, self.reset]), self.output])
        for control in (self.query, self.top_k, self.k1, self.b):
            control.observe(self._draw, names="value")
        self.reset.on_click(self._reset)
        self._draw()

    def view(self) -> RetrievalView:
        """The rankings for the controls' current values; `relevant` labels the query the
        explorer was built with, so recall is shown for that query only."""
        labelled = _same_query(self.query.value, self.labelled_query)
        return retrieval_view(self.index, self.records, self.query.value, k1=self.k1.value,
                              b=self.b.value, top_k=self.top_k.value,
                              relevant=self.relevant if labelled else frozenset(),
                              scorer=self.scorer,
                              unlabelled=bool(self.relevant) and not labelled)

    def _draw(self, change: Any = None) -> None:
        self.output.value = retrieval_html(self.view())

    def _reset(self, button: Any = None) -> None:
        self.k1.value, self.b.value = 1.2, 0.75

    def __repr__(self) -> str:
        return f"RetrievalExplorer({plural(len(self.records), 'record')}, " \
               f"query {self.query.value!r})"
