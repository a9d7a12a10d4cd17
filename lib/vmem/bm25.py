"""BM25 from scratch, explainable term by term, and the one analyzer every ranker uses.

`tokenize` splits text into words; `analyze`, the one analyzer, turns those words into
index terms (common English words dropped, the rest lightly stemmed), and every ranker
in vmem (`BM25Index` by default, both stores, both backends) indexes and queries with it.
`BM25Index` ranks documents for a query with

    score(D, Q) = sum over query terms t of  idf(t) * tf * (k1 + 1) / (tf + k1 * norm(D))
    norm(D)     = 1 - b + b * |D| / avgdl

where tf is how often t occurs in D, |D| is D's length in terms and avgdl the mean length.
A word repeated in the query counts each time (as in rank-bm25 and SQLite FTS5). Only
documents that contain at least one query term are ranked, like an FTS5 `OR` query.

The three IDF variants (N documents, n of them contain the term):

- ``"lucene"``: ln(1 + (N - n + 0.5) / (n + 0.5)); never negative. The default.
- ``"okapi"``: ln((N - n + 0.5) / (n + 0.5)), negative for terms in more than half the
  documents; every negative value is replaced by epsilon x the mean IDF over the whole
  vocabulary, exactly as rank-bm25's `BM25Okapi`. Pathologies worth showing in class: a
  term in exactly half the documents gets idf 0 and adds nothing, and when the mean IDF is
  itself negative the "floor" is negative too, so a match can lower a score.
- ``"fts5"``: the same ratio as okapi, but values at or below zero become 1e-6, as SQLite
  FTS5's `bm25()` computes it (see `vmem.search` for the rest of FTS5's formula).

The arithmetic lives here once: `lucene_idf`, `okapi_idf`, `fts5_idf`, `length_norm` and
`term_score` are used by `BM25Index`, by the stores' pruned search and by the per-term
explanation of their hits. FTS5's fixed parameters are `FTS5_K1` and `FTS5_B`.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

from .errors import StoreError

IDF_VARIANTS = ("lucene", "okapi", "fts5")
FTS5_IDF_FLOOR = 1e-6
FTS5_K1, FTS5_B = 1.2, 0.75  # what SQLite FTS5's bm25() uses: it cannot be configured

# Scripts written without spaces between words: each character is its own term (as
# Lucene's standard analyzer does), so a Chinese or Japanese sentence is searchable.
_CJK = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK extensions B to G
)


@cache
def _token_pattern() -> re.Pattern[str]:
    """Built on first use: scanning Unicode for combining marks takes a few milliseconds."""
    marks = "".join(
        re.escape(chr(code))
        for code in [*range(0x300, 0x20000), *range(0xE0100, 0xE01F0)]
        if unicodedata.category(chr(code)).startswith("M")
    )
    word_char = rf"[^\W_{_CJK}]"  # a letter or digit that is not CJK
    return re.compile(rf"[{_CJK}]|{word_char}(?:{word_char}|[{marks}])*")


def tokenize(text: str) -> list[str]:
    """The word splitter under `analyze`: lowercase `text` and split it into runs of
    letters and digits (textbook BM25 indexes these words as they are).

    Details that matter for search:

    - Case: Python's `str.casefold`, the lowercase meant for caseless matching ("Straße" ->
      "strasse", final sigma -> sigma).
    - Diacritics are kept, not stripped: "café" and "cafe" are different terms. Text is
      NFC-normalised first, so a combining accent typed after its letter gives the same term
      as the precomposed letter. Combining marks stay attached to the letter they follow
      (so Hindi or Thai words are not cut at every vowel sign); a mark with no letter
      before it is dropped. Casefolding the dotted capital "İ" gives "i" plus a combining
      dot, which stays in the term.
    - Han, Hiragana and Katakana characters are one term each (those scripts put no spaces
      between words); Hangul, Cyrillic, Greek, Arabic, ... are split like Latin.
    - Everything else (punctuation, underscores, emoji, symbols) separates terms.

    >>> tokenize("Hello, WORLD: it's 2024!")
    ['hello', 'world', 'it', 's', '2024']
    """
    folded = text.casefold()
    if folded.isascii():  # the same words, without the large Unicode pattern's cost
        return _ASCII_WORD.findall(folded)
    return _token_pattern().findall(unicodedata.normalize("NFC", folded))


_ASCII_WORD = re.compile(r"[a-z0-9]+")
"""What `_token_pattern` matches in casefolded ASCII text (no marks, no CJK there)."""


# Words too common to say what a text is about (docs/RETRIEVAL.md measures what dropping
# them buys on LoCoMo). "now" is one of them: `vmem.ranking` reads the words of a question
# about the present ("now", "still", "latest") from the query itself, before analysis.
_STOPWORD_TEXT = """
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its
itself just let me more most my myself no nor not now of off on once only or other ought our
ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself yourselves
s t d ll m re ve also get got really yeah oh wow hey hi like lot thanks
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_SUFFIXES = (("ies", 4), ("sses", 4), ("ing", 4), ("ed", 4), ("ly", 5), ("s", 4))
_VOWELS = frozenset("aeiouy")


def _strip_suffix(term: str) -> str:
    if len(term) <= 3 or not term.isalpha():
        return term
    for suffix, keep in _SUFFIXES:
        if term.endswith(suffix) and len(term) >= keep + len(suffix) - 1:
            base = term[: -len(suffix)]
            if not _VOWELS & set(base):
                return term  # "string" is no "str" + "ing"
            if suffix == "ies":
                return base + "y"
            if suffix == "sses":
                return base + "ss"
            if suffix == "s":
                return term if term.endswith(("ss", "us", "is")) else base
            if len(base) >= 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                return base[:-1]  # running -> runn -> run
            return base
    if term.endswith("e"):
        return term[:-1]  # move, moves, moved -> mov; agree, agreed -> agr
    if term.endswith("y") and _VOWELS & set(term[:-1]):
        return term[:-1] + "i"  # study, studies, studied -> studi (as Porter's step 1c)
    return term


@lru_cache(maxsize=65536)
def stem(term: str) -> str:
    """A light English stemmer: folds plurals, -ing, -ed, -ly, -ies, a final -e and a final
    -y to a shared stem.

    Deliberately small (no Porter rules): it only has to map a word and its common
    inflections to the same term, on documents and queries alike. It strips suffixes
    until none is left to strip, so a stem is its own stem and analysed text can be
    analysed again unchanged.

    >>> [stem(w) for w in ("painting", "painted", "paints", "hobbies", "classes", "running")]
    ['paint', 'paint', 'paint', 'hobbi', 'class', 'run']
    """
    while (shorter := _strip_suffix(term)) != term:
        term = shorter
    return term


def analyze(text: str, *, stopwords: bool = True, stemming: bool = True) -> list[str]:
    """The one analyzer: `tokenize`, drop `STOPWORDS`, `stem` the rest.

    Stop words are dropped before stemming and again after it ("wills" stems to "will"),
    so analysing the space-joined result again gives the same terms. The stores always
    use both steps; the switches turn one off, for ablations (`vmem.eval.analysis`).

    >>> analyze("Where does Maya live now? She moved to Lisbon.")
    ['maya', 'liv', 'mov', 'lisbon']
    """
    terms = tokenize(text)
    if stopwords:
        terms = [term for term in terms if term not in STOPWORDS]
    if stemming:
        terms = [stem(term) for term in terms]
        if stopwords:
            terms = [term for term in terms if term not in STOPWORDS]
    return terms


def lucene_idf(docs: int, df: int) -> float:
    """ln(1 + (N - n + 0.5) / (n + 0.5)): never negative."""
    return math.log(1 + (docs - df + 0.5) / (df + 0.5))


def okapi_idf(docs: int, df: int) -> float:
    """ln((N - n + 0.5) / (n + 0.5)) as rank-bm25 computes it, before its floor: negative
    for a term in more than half the documents."""
    return math.log(docs - df + 0.5) - math.log(df + 0.5)


def fts5_idf(docs: int, df: int) -> float:
    """FTS5's idf: ln((N - n + 0.5) / (n + 0.5)), at or below zero replaced by 1e-6."""
    value = math.log((docs - df + 0.5) / (df + 0.5))
    return value if value > 0 else FTS5_IDF_FLOOR


def length_norm(length: int, avgdl: float, b: float) -> float:
    """1 - b + b * |D| / avgdl: above 1 for a longer document than average, below for a
    shorter one (b = 0: length is ignored)."""
    return 1 - b + b * length / avgdl


def term_score(idf: float, tf: float, norm: float, k1: float) -> float:
    """One term's contribution, with FTS5's order of floating-point operations.

    A term the document lacks contributes 0 (also for k1 = 0, where the formula is 0/0).
    """
    if tf == 0:
        return 0.0
    return idf * (tf * (k1 + 1)) / (tf + k1 * norm)


def contributions(query: Sequence[str], doc_terms: Sequence[str], idf: Mapping[str, float],
                  avgdl: float, k1: float, b: float) -> dict[str, float]:
    """Each query term's part of one document's score, for the terms it contains.

    `query` and `doc_terms` are analysed terms; `idf` maps each query term to its idf. A
    word repeated in the query adds up; the parts sum to the document's score (terms
    added in query order, as `BM25Index.scores` and FTS5 do).
    """
    counts = Counter(doc_terms)
    norm = length_norm(len(doc_terms), avgdl, b)
    parts: dict[str, float] = {}
    for term in query:
        if term in counts:
            parts[term] = parts.get(term, 0.0) + term_score(idf[term], counts[term], norm, k1)
    return parts


@dataclass(frozen=True)
class TermExplanation:
    """How one query term contributes to one document's score."""

    term: str
    tf: int
    df: int
    idf: float
    norm: float  # 1 - b + b * doc_len / avgdl: above 1 for long documents, below for short
    contribution: float


@dataclass(frozen=True)
class Explanation:
    """A document's score for a query, term by term (terms in query order)."""

    doc_id: Hashable
    score: float
    doc_len: int
    avgdl: float
    terms: tuple[TermExplanation, ...]

    def __str__(self) -> str:
        lines = [f"doc {self.doc_id!r}: score {self.score:.4f} "
                 f"(length {self.doc_len}, average length {self.avgdl:.2f})",
                 f"  {'term':<16}{'tf':>4}{'df':>6}{'idf':>9}{'norm':>8}{'contrib':>10}"]
        lines += [f"  {t.term:<16}{t.tf:>4}{t.df:>6}{t.idf:>9.4f}{t.norm:>8.4f}"
                  f"{t.contribution:>10.4f}" for t in self.terms]
        return "\n".join(lines)


class BM25Index:
    """An incremental, pure-Python BM25 index: `add` and `remove` never rebuild.

    It keeps, per document, its term counts and length, and per term a postings dict
    (document -> tf), so scoring a query touches only documents that contain its terms.
    `analyzer` turns documents and queries into terms: `analyze` (the stores' analyzer)
    by default, `tokenize` for the textbook BM25 that counts every word.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75, idf: str = "lucene",
                 epsilon: float = 0.25, *,
                 analyzer: Callable[[str], list[str]] = analyze) -> None:
        if idf not in IDF_VARIANTS:
            raise ValueError(f"idf must be one of {', '.join(IDF_VARIANTS)}; got {idf!r}")
        self.k1, self.b, self.idf_variant, self.epsilon = k1, b, idf, epsilon
        self.analyzer = analyzer
        self._docs: dict[Hashable, Counter[str]] = {}  # insertion order = tie-break order
        self._lengths: dict[Hashable, int] = {}
        self._postings: dict[str, dict[Hashable, int]] = {}
        self._total_len = 0
        self._seq: dict[Hashable, int] = {}
        self._next_seq = 0
        self._okapi_floor: float | None = None  # cached epsilon x mean idf, reset on change

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs

    def add(self, doc_id: Hashable, text: str) -> None:
        """Index `text` under `doc_id` (an id already present is refused)."""
        if doc_id in self._docs:
            raise StoreError(f"document {doc_id!r} is already indexed; remove it first")
        counts = Counter(self.analyzer(text))
        self._docs[doc_id] = counts
        self._lengths[doc_id] = sum(counts.values())
        self._total_len += self._lengths[doc_id]
        for term, tf in counts.items():
            self._postings.setdefault(term, {})[doc_id] = tf
        self._seq[doc_id] = self._next_seq
        self._next_seq += 1
        self._okapi_floor = None

    def remove(self, doc_id: Hashable) -> None:
        """Forget a document; statistics update as if it had never been added."""
        if doc_id not in self._docs:
            raise StoreError(f"no document {doc_id!r} in the index")
        for term in self._docs.pop(doc_id):
            postings = self._postings[term]
            del postings[doc_id]
            if not postings:
                del self._postings[term]
        self._total_len -= self._lengths.pop(doc_id)
        del self._seq[doc_id]
        self._okapi_floor = None

    @property
    def avgdl(self) -> float:
        """Mean document length in terms (0 for an empty index)."""
        return self._total_len / len(self._docs) if self._docs else 0.0

    def df(self, term: str) -> int:
        """How many documents contain `term`."""
        return len(self._postings.get(term, ()))

    def idf(self, term: str) -> float:
        """The inverse document frequency of `term` under this index's variant."""
        n, df = len(self._docs), self.df(term)
        if self.idf_variant == "lucene":
            return lucene_idf(n, df)
        if self.idf_variant == "fts5":
            return fts5_idf(n, df)
        if df == 0:
            return 0.0  # rank-bm25 gives unknown words no weight
        value = okapi_idf(n, df)
        return value if value >= 0 else self._okapi_negative_floor()

    def _okapi_negative_floor(self) -> float:
        if self._okapi_floor is None:
            n = len(self._docs)
            raw = [okapi_idf(n, len(postings)) for postings in self._postings.values()]
            self._okapi_floor = self.epsilon * (sum(raw) / len(raw))
        return self._okapi_floor

    def _norm(self, doc_id: Hashable) -> float:
        return length_norm(self._lengths[doc_id], self.avgdl, self.b)

    def scores(self, query: str) -> dict[Hashable, float]:
        """Score of every document containing at least one query term (insertion order).

        Terms are added in query order, as FTS5 does, so both give the same floating-point
        sums; a term a document lacks adds exactly zero and is skipped.
        """
        terms = self.analyzer(query)
        matched = {doc_id for term in terms for doc_id in self._postings.get(term, ())}
        result = dict.fromkeys(sorted(matched, key=self._seq.__getitem__), 0.0)
        norms = {doc_id: self._norm(doc_id) for doc_id in result}
        for term in terms:
            postings = self._postings.get(term, {})
            idf = self.idf(term) if postings else 0.0
            for doc_id, tf in postings.items():
                result[doc_id] += term_score(idf, tf, norms[doc_id], self.k1)
        return result

    def search(self, query: str, k: int = 10) -> list[tuple[Hashable, float]]:
        """The `k` best (doc_id, score) pairs, best first, ties by insertion order."""
        ranked = sorted(self.scores(query).items(),
                        key=lambda item: (-item[1], self._seq[item[0]]))
        return ranked[:k]

    def explain(self, query: str, doc_id: Hashable) -> Explanation:
        """Each query term's tf, df, idf, length normalisation and contribution to `doc_id`."""
        if doc_id not in self._docs:
            raise StoreError(f"no document {doc_id!r} in the index")
        counts, norm = self._docs[doc_id], self._norm(doc_id)
        parts = []
        for term in self.analyzer(query):
            tf, idf = counts.get(term, 0), self.idf(term)
            parts.append(TermExplanation(term, tf, self.df(term), idf, norm,
                                         term_score(idf, tf, norm, self.k1)))
        return Explanation(doc_id, sum(part.contribution for part in parts),
                           self._lengths[doc_id], self.avgdl, tuple(parts))
