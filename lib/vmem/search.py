"""Full-text search over the stores' FTS5 tables: the index, the filters, the exact
pruned top-k, and one page of cited hits.

How FTS5 is used, and what its `bm25()` computes
------------------------------------------------
SQLite's own tokenizers do not split text exactly like `vmem.bm25.tokenize` (final sigma,
dotted capital I, combining accents differ), so FTS5 never tokenizes on its own: each
document is stored as the *space-joined output of `tokenize`* in an FTS5 table that uses
the `ascii` tokenizer. That tokenizer splits on ASCII non-alphanumerics and treats every
non-ASCII character as part of a word; our terms contain only letters, digits and marks,
so it splits exactly on the spaces we put there and sees the same terms, and each
document's length in FTS5 tokens is `len(tokenize(text))`. A query becomes each of its
terms in double quotes joined by `OR` (`"cat" OR "sat" OR "cat"`), so nothing in it is
ever read as FTS5 syntax, and a repeated word is a repeated phrase that counts each time.

For every row matching the query, FTS5's built-in `bm25()` (fts5_aux.c) returns minus

    sum over query phrases i of  idf_i * (f_i * (k1 + 1)) / (f_i + k1 * (1 - b + b * D / avgdl))

with k1 = 1.2 and b = 0.75 fixed, f_i the number of times phrase i occurs in the row, D
the row's length in tokens (all columns; we have one), avgdl = total tokens in the table
/ number of rows in the table (both kept by FTS5 itself and updated on every insert and
delete), and idf_i = ln((N - n_i + 0.5) / (n_i + 0.5)) with N the number of rows and n_i
the number of rows containing phrase i, replaced by 1e-6 when it is zero or negative.
Statistics cover the whole table, whatever other filters the query has. The result is
negative (more negative = better), so we negate it: higher score = better. Ties are
broken by rowid, i.e. insertion order. `BM25Index(idf="fts5", k1=1.2, b=0.75)` computes
the same numbers in the same order of floating-point operations.

FTS5 does not expose per-term contributions to Python, so `FtsIndex.contributions`
recomputes them for the hits on a page from `fts_stats` (N and total tokens, kept in the
same transaction as the index) and per-term document counts; they sum to the score.

`FtsIndex.search` is the reference ranking: FTS5 scores every matching row. With many
records that is slow, because common words match most rows. `SearchCache` (one per store)
gives the same ranking faster; see its docstring.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import json
import math
import operator
import sqlite3
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .bm25 import FTS5_IDF_FLOOR, term_score, tokenize
from .errors import StoreError
from .messages import Hit, Page
from .store import (
    MAX_QUERY_CHARS,
    check_scope,
    check_size,
    time_to_db,
    transaction,
)


@dataclass
class Where:
    """A conjunction of SQL conditions on the document table (alias `d`) and its params."""

    clauses: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)
    hidden: str | None = None  # rows hidden by default, e.g. "d.invalid_at IS NOT NULL"

    def add(self, clause: str, *params: Any) -> Where:
        self.clauses.append(clause)
        self.params.extend(params)
        return self

    def hide(self, condition: str) -> Where:
        """Drop the (few, indexed) rows matching `condition`: `SearchCache` subtracts them
        as a set instead of testing every matching row."""
        self.hidden = condition
        return self

    def scope(self, scope: dict[str, str] | None) -> Where:
        """Keep rows whose scope has every key and value of `scope` (None: no filter)."""
        for key, value in check_scope(scope).items():
            self.add("json_extract(d.scope, ?) = ?", f"$.{key}", value)
        return self

    def period(self, start: datetime | None, end: datetime | None) -> Where:
        """Keep rows created between `start` and `end`, both inclusive, either optional."""
        for bound, op in ((start, ">="), (end, "<=")):
            if bound is None:
                continue
            try:
                self.add(f"d.created_at {op} ?", time_to_db(bound))
            except (ValueError, AttributeError) as exc:
                raise StoreError(f"start/end must be timezone-aware datetimes: {exc}") \
                    from exc
        return self

    @property
    def sql(self) -> str:
        hidden = [f"NOT ({self.hidden})"] if self.hidden else []
        return " AND ".join(self.clauses + hidden) or "1"


# --- Full-text index ---------------------------------------------------------------
@dataclass(frozen=True)
class FtsIndex:
    """An FTS5 table (`table`) indexing the text of `docs` rows, rowid = `docs.id`.

    Beside it, for `SearchCache`: `<docs>_vocab` (fts5vocab, one row per occurrence of a
    term) and `<docs>_lengths` (each indexed document's number of terms).
    """

    table: str
    docs: str

    @property
    def vocab(self) -> str:
        return f"{self.docs}_vocab"

    @property
    def lengths(self) -> str:
        return f"{self.docs}_lengths"

    def add(self, conn: sqlite3.Connection, rowid: int, text: str) -> list[str]:
        """Index a document's text (call inside the transaction that stores it); return
        its terms."""
        terms = tokenize(text)
        conn.execute(f"INSERT INTO {self.table}(rowid, terms) VALUES (?, ?)",
                     (rowid, " ".join(terms)))
        conn.execute(f"INSERT INTO {self.lengths} VALUES (?, ?)", (rowid, len(terms)))
        conn.execute("UPDATE fts_stats SET docs = docs + 1, tokens = tokens + ? "
                     "WHERE name = ?", (len(terms), self.table))
        return terms

    def remove(self, conn: sqlite3.Connection, rowid: int) -> list[str] | None:
        """Drop a document from the index and return its terms (None when it was never
        indexed)."""
        row = conn.execute(f"SELECT terms FROM {self.table} WHERE rowid = ?",
                           (rowid,)).fetchone()
        if row is None:
            return None
        terms = row[0].split()
        conn.execute(f"DELETE FROM {self.table} WHERE rowid = ?", (rowid,))
        conn.execute(f"DELETE FROM {self.lengths} WHERE id = ?", (rowid,))
        conn.execute("UPDATE fts_stats SET docs = docs - 1, tokens = tokens - ? "
                     "WHERE name = ?", (len(terms), self.table))
        return terms

    def stats(self, conn: sqlite3.Connection) -> tuple[int, int]:
        """(number of indexed documents, total number of terms in them)."""
        docs, tokens = conn.execute("SELECT docs, tokens FROM fts_stats WHERE name = ?",
                                    (self.table,)).fetchone()
        return docs, tokens

    @staticmethod
    def match_expression(terms: Sequence[str]) -> str:
        """`"a" OR "b"`: every term quoted, so no query text is FTS5 syntax."""
        return " OR ".join(f'"{term}"' for term in terms)

    def search(self, conn: sqlite3.Connection, terms: Sequence[str], where: Where,
               limit: int, offset: int) -> tuple[int, list[tuple[int, float]]]:
        """(number of matching rows, one page of (rowid, score) best first).

        Exact BM25 over every matching row, ties by rowid. Filters in `where` choose
        rows but never change the statistics.
        """
        match = self.match_expression(terms)
        base = (f"FROM {self.table} JOIN {self.docs} AS d ON d.id = {self.table}.rowid "
                f"WHERE {self.table} MATCH ? AND ({where.sql})")
        total = conn.execute(f"SELECT count(*) {base}", [match, *where.params]).fetchone()[0]
        rows = conn.execute(
            f"SELECT {self.table}.rowid, -bm25({self.table}) {base} "
            f"ORDER BY bm25({self.table}), {self.table}.rowid LIMIT ? OFFSET ?",
            [match, *where.params, limit, offset]).fetchall()
        return total, rows

    def df(self, conn: sqlite3.Connection, term: str) -> int:
        """How many indexed documents contain `term` (FTS5 counts its doclist)."""
        return conn.execute(f"SELECT count(*) FROM {self.table} WHERE {self.table} MATCH ?",
                            (self.match_expression([term]),)).fetchone()[0]

    def contributions(self, conn: sqlite3.Connection, terms: Sequence[str],
                      texts: Sequence[str], idf: dict[str, float] | None = None
                      ) -> list[dict[str, float]]:
        """Per-term parts of each text's score, with FTS5's formula and statistics.

        One entry per distinct query term the text contains (a repeated query word adds
        up); the parts sum to the score `bm25()` gives. `idf` (term -> idf) saves the
        document counts when the caller already has them.
        """
        docs, tokens = self.stats(conn)
        avgdl = tokens / docs
        if idf is None:
            idf = {term: fts5_idf(docs, self.df(conn, term)) for term in dict.fromkeys(terms)}
        out = []
        for text in texts:
            doc_terms = tokenize(text)
            counts: dict[str, int] = {}
            for term in doc_terms:
                counts[term] = counts.get(term, 0) + 1
            norm = 1 - 0.75 + 0.75 * len(doc_terms) / avgdl
            parts: dict[str, float] = {}
            for term in terms:
                if term in counts:
                    part = term_score(idf[term], counts[term], norm, 1.2)
                    parts[term] = parts.get(term, 0.0) + part
            out.append(parts)
        return out


def fts5_idf(docs: int, df: int) -> float:
    """FTS5's idf: ln((N - n + 0.5) / (n + 0.5)), at or below zero replaced by 1e-6."""
    value = math.log((docs - df + 0.5) / (df + 0.5))
    return value if value > 0 else FTS5_IDF_FLOOR


# FTS5's fixed parameters (see the module docstring)
K1, B = 1.2, 0.75
MAX_PRUNED_TERMS = 12  # longer queries are ranked by FTS5 (the pruning is exponential in them)
COMMON_SHARE = 64  # a term in at least 1/64 of the rows also keeps its rows as a bitmask
MASK_SPREAD = 64  # at most 8 bytes of mask per row in it
_BITS = bytes.maketrans(b"\x00\x01", b"01")


def _mask_fits(rowid: int, rows: int) -> bool:
    return 0 <= rowid <= MASK_SPREAD * rows + 1024


def _bitmask(rowids: Collection[int]) -> int | None:
    """The int whose bit r is set for each r in `rowids` (one C pass after the loop); None
    when it would be large for so few rows (ids beyond `MASK_SPREAD` x their number)."""
    top = max(rowids)
    if min(rowids) < 0 or not _mask_fits(top, len(rowids)):
        return None
    flags = bytearray(top + 1)
    for rowid in rowids:
        flags[rowid] = 1
    return int(flags.translate(_BITS)[::-1], 2)


class SearchCache:
    """Exact top-k search for one `FtsIndex`, from cached postings, pruned by score bounds.

    Why: FTS5's `bm25()` scores every row that contains any query word, and a question's
    common words ("what", "the") are in most rows. This returns the same top-k (same
    scores, ties by rowid) while scoring only rows that could be in it.

    What it keeps: every indexed document's length (read once, from `<docs>_lengths`), and
    per query term it has seen, the term's postings (rowid -> term frequency, from the
    fts5vocab table: one row per occurrence, so no document text is read or split), the
    largest frequency and the shortest length among them, and for a common term (in at
    least 1/`COMMON_SHARE` of the rows) the same rowids as the bits of an int. All come
    from the file, which stays the only truth: the cache is a read cache, like a page
    cache. Each is read with one SQL statement that returns a single JSON array, parsed
    by `json.loads` in C: at 100,000 records a word in a third of them loads in about
    20 ms (reading and splitting its rows' texts took about 140 ms).

    When it is trusted: only while nothing but this store's own committed writes changed
    the index, and it is filled only outside transactions or in a read snapshot that
    began with it up to date (`refresh`). `PRAGMA data_version` changes when
    another connection commits; `total_changes` changes with any write on this
    connection, including one later rolled back. The store's writes go through
    `writing`, which applies them to the cache only once they are committed outside any
    caller's transaction; anything else empties the cache.

    How it prunes (exact): a term can add at most its bound, m * idf * g(max tf, min
    length) with m its count in the query and g the BM25 term-frequency part, which grows
    with tf and shrinks with length. A row that contains exactly the term set S scores at
    most bound(S). A depth-first walk over term sets (rarest bounds first, each set's
    rows found by intersecting postings) scores the rows of a set only when bound(S) can
    still reach the k-th best score found so far, and drops a branch as soon as it
    cannot. Within a set, rows are taken shortest first, and scoring stops at the first
    length whose bound (S's terms at their largest frequency, at that length) falls
    short. Rows are scored in full, with the same arithmetic as `BM25Index(idf="fts5")`.
    The match count is the size of the union of the postings: the common terms' bitmasks
    OR-ed and counted in C, plus the other terms' rows that no common term holds.
    """

    def __init__(self, index: FtsIndex, max_postings: int = 20_000_000) -> None:
        self.index = index
        self.max_postings = max_postings  # beyond this many cached postings, start over
        self._reset((None, None))

    def _reset(self, version: tuple[int | None, int | None]) -> None:
        self._version = version  # (data_version, total_changes) the content matches
        self._postings: dict[str, dict[int, int]] = {}
        self._masks: dict[str, int] = {}  # common term -> its rowids as the bits of an int
        self._bounds: dict[str, tuple[int, int]] = {}  # term -> (max tf, min length)
        self._lengths: dict[int, int] = {}  # rowid -> length, every indexed row once loaded
        self._size = 0
        self._docs: int | None = None  # None: nothing loaded yet
        self._tokens = 0

    @staticmethod
    def _version_of(conn: sqlite3.Connection) -> tuple[int, int]:
        return conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes

    # --- keeping it true ---------------------------------------------------------
    @contextmanager
    def writing(self, conn: sqlite3.Connection) -> Iterator[list[tuple[int, list[str], int]]]:
        """A write transaction for the store: append (rowid, terms, +1 or -1) for each
        document added to or removed from the index; applied here once committed."""
        trusted = not conn.in_transaction and self._version_of(conn) == self._version
        changes: list[tuple[int, list[str], int]] = []
        with transaction(conn):
            yield changes
        if trusted and not conn.in_transaction:
            for rowid, terms, sign in changes:
                self._apply(rowid, terms, sign)
            self._version = (self._version[0], conn.total_changes)

    def _apply(self, rowid: int, terms: list[str], sign: int) -> None:
        if self._docs is None:
            return
        self._docs += sign
        self._tokens += sign * len(terms)
        cached = [term for term in dict.fromkeys(terms) if term in self._postings]
        if sign < 0:
            self._lengths.pop(rowid, None)
            for term in cached:
                self._postings[term].pop(rowid, None)  # bounds stay valid: only looser
                if term in self._masks:
                    self._masks[term] &= ~(1 << rowid)
            return
        counts = Counter(terms)
        self._lengths[rowid] = len(terms)
        for term in cached:
            self._postings[term][rowid] = counts[term]
            if term in self._masks:
                if _mask_fits(rowid, len(self._postings[term])):
                    self._masks[term] |= 1 << rowid
                else:
                    del self._masks[term]  # counted from its set instead
            top, short = self._bounds[term]
            self._bounds[term] = (max(top, counts[term]), min(short, len(terms)))

    def refresh(self, conn: sqlite3.Connection) -> bool:
        """Make the cache match the file; False when it cannot be trusted now.

        Outside a transaction a stale cache is emptied. Inside one (a read snapshot, or a
        caller's transaction) the cache is used only if nothing changed since it was last
        checked, so uncommitted writes never get into it: call this once before opening a
        read snapshot.
        """
        version = self._version_of(conn)
        if version != self._version or self._size > self.max_postings:
            if conn.in_transaction:
                return False
            self._reset(version)
        if self._docs is None:
            self._docs, self._tokens = self.index.stats(conn)
            ids, lengths = conn.execute(
                f"SELECT '[' || group_concat(id) || ']', '[' || group_concat(length) || ']' "
                f"FROM {self.index.lengths}").fetchone()  # one scan: the same row order
            self._lengths = (dict(zip(json.loads(ids), json.loads(lengths), strict=True))
                             if ids else {})
        return True

    def _load(self, conn: sqlite3.Connection, term: str) -> dict[int, int]:
        postings = self._postings.get(term)
        if postings is not None:
            return postings
        found = conn.execute(f"SELECT '[' || group_concat(doc) || ']' FROM {self.index.vocab} "
                             "WHERE term = ?", (term,)).fetchone()[0]
        # an exact dict (not a Counter): set operations take their fast path for it
        postings = dict(Counter(json.loads(found))) if found else {}
        self._postings[term] = postings
        self._bounds[term] = ((max(postings.values()), min(map(self._lengths.__getitem__,
                                                               postings)))
                              if postings else (0, 0))
        if postings and len(postings) * COMMON_SHARE >= (self._docs or 0):
            mask = _bitmask(postings)
            if mask is not None:
                self._masks[term] = mask
        self._size += len(postings)
        return postings

    # --- searching -----------------------------------------------------------------
    def search(self, conn: sqlite3.Connection, terms: Sequence[str], where: Where,
               limit: int, offset: int
               ) -> tuple[int, list[tuple[int, float]], dict[str, float]] | None:
        """(matching rows, one page of (rowid, score) best first, idf per term), exactly
        as `FtsIndex.search` ranks; None when this query is left to FTS5."""
        distinct = list(dict.fromkeys(terms))
        if len(distinct) > MAX_PRUNED_TERMS or not self.refresh(conn):
            return None
        postings = {term: self._load(conn, term) for term in distinct}
        docs = self._docs or 0
        idf = {term: fts5_idf(docs, len(postings[term])) for term in distinct}
        hidden = self._hidden(conn, where)
        keep = self._filter(conn, where, hidden)
        total = self._count(postings, where, hidden, keep)
        if not total:
            return 0, [], idf
        best = self._top(terms, postings, idf, offset + limit, keep)
        return total, best[offset:offset + limit], idf

    def _count(self, postings: dict[str, dict[int, int]], where: Where, hidden: set[int],
               keep: Callable[[set[int]], set[int]]) -> int:
        """How many kept rows hold at least one term: the size of the union of the
        postings. Common terms are OR-ed and counted as bitmasks, in C; only the other
        terms' rows are gathered in a set, less those a common term already holds."""
        if where.clauses:
            return len(keep(set().union(*postings.values())))
        common = [term for term in postings if term in self._masks]
        rest = set().union(*(rows for term, rows in postings.items() if term not in common))
        for term in common:
            rest = rest.difference(postings[term])  # walks `rest`, looks up in the dict
        union = functools.reduce(operator.or_, (self._masks[term] for term in common), 0)
        hidden_matched = sum(1 for rowid in hidden if rowid in rest or any(
            rowid in postings[term] for term in common))
        return union.bit_count() + len(rest) - hidden_matched

    def _hidden(self, conn: sqlite3.Connection, where: Where) -> set[int]:
        if not where.hidden:
            return set()
        return {row[0] for row in conn.execute(
            f"SELECT d.id FROM {self.index.docs} AS d WHERE {where.hidden}")}

    def _filter(self, conn: sqlite3.Connection, where: Where, hidden: set[int]
                ) -> Callable[[set[int]], set[int]]:
        """rowids -> those of them that `where` keeps (`hidden`: its hidden rows)."""
        if not where.clauses:
            return lambda rowids: rowids - hidden if hidden else rowids
        sql = (f"SELECT d.id FROM {self.index.docs} AS d WHERE d.id IN (SELECT value FROM "
               f"json_each(?)) AND ({where.sql})")
        return lambda rowids: {row[0] for row in conn.execute(
            sql, [json.dumps(sorted(rowids)), *where.params])} if rowids else set()

    def _top(self, terms: Sequence[str], postings: dict[str, dict[int, int]],
             idf: dict[str, float], want: int, keep: Callable[[set[int]], set[int]]
             ) -> list[tuple[int, float]]:
        """The `want` best (rowid, score) among kept rows, best first, ties by rowid."""
        avgdl = self._tokens / self._docs
        lengths = self._lengths
        query = [(idf[term], postings[term]) for term in terms]  # query order, repeats kept
        repeats = Counter(terms)
        k1_plus_1 = K1 + 1

        def bound(term: str, length: int | None = None) -> float:
            """The most `term` adds to a row (of `length`, or of any length)."""
            top, short = self._bounds[term]
            norm = 1 - B + B * (short if length is None else length) / avgdl
            return repeats[term] * idf[term] * (top * (K1 + 1)) / (top + K1 * norm) * (1 + 1e-9)

        order = sorted((term for term in repeats if postings[term]), key=bound, reverse=True)
        bounds = [bound(term) for term in order]
        rest = list(itertools.accumulate(reversed(bounds)))[::-1] + [0.0]
        heap: list[tuple[float, int]] = []  # the best so far as (score, -rowid), worst first
        seen: set[int] = set()

        def score(rowids: set[int], chosen: tuple[str, ...]) -> None:
            fresh = keep(rowids - seen)
            seen.update(rowids)
            length_now, most = -1, math.inf
            for rowid in sorted(fresh, key=lengths.__getitem__):  # shortest first
                length = lengths[rowid]
                if len(heap) == want:
                    # A row here that holds a term outside `chosen` was met in that term's
                    # branch (walked first); the others score at most the bound of `chosen`
                    # at their length, which only falls as rows get longer.
                    if length != length_now:
                        length_now, most = length, sum(bound(term, length) for term in chosen)
                    if most < heap[0][0]:
                        return
                k1_norm = K1 * (1 - B + B * length / avgdl)
                total = 0.0
                for term_idf, term_postings in query:
                    tf = term_postings.get(rowid)
                    if tf:  # as vmem.bm25.term_score computes it
                        total += term_idf * (tf * k1_plus_1) / (tf + k1_norm)
                item = (total, -rowid)
                if len(heap) < want:
                    heapq.heappush(heap, item)
                elif item > heap[0]:
                    heapq.heapreplace(heap, item)

        def walk(depth: int, rowids: Any, reach: float, chosen: tuple[str, ...]) -> None:
            if len(heap) == want and reach + rest[depth] < heap[0][0]:
                return  # no row below here can beat the k-th best
            if depth == len(order):
                if rowids is not None:
                    score(set(rowids), chosen)
                return
            term = order[depth]
            keys = postings[term].keys()
            both = keys if rowids is None else rowids & keys
            if both:
                walk(depth + 1, both, reach + bounds[depth], (*chosen, term))
            walk(depth + 1, rowids, reach, chosen)

        walk(0, None, 0.0, ())
        return [(-neg_rowid, value) for value, neg_rowid in sorted(heap, reverse=True)]


def search_page(conn: sqlite3.Connection, index: FtsIndex, query: str, where: Where, *,
                page: int, page_size: int, load: Callable[[list[int]], list[Any]],
                text_of: Callable[[Any], str], cache: SearchCache | None = None) -> Page:
    """The shared search path: analyse, rank, load one page, explain its hits.

    `load` turns row ids into stored values (in the given order); `text_of` gives a
    value's indexed text. With a `cache` (for `index`), ranking is pruned; the result is
    the same.
    """
    if not isinstance(query, str):
        raise StoreError(f"query must be a string, got {type(query).__name__}")
    check_size("the query", query, MAX_QUERY_CHARS)
    terms = tokenize(query)
    if not terms:
        return Page([], 0, page, page_size, query=query, note=(
            f"no searchable words in {json.dumps(query, ensure_ascii=False)}: search "
            "matches words made of letters or digits; try other words"))
    ranked = cache.search(conn, terms, where, page_size, page * page_size) if cache else None
    total, rows, idf = ranked or (*index.search(conn, terms, where, page_size,
                                                page * page_size), None)
    if not rows:
        note = None
        if total:
            last = (total - 1) // page_size
            note = (f"page {page} is past the end: the {total} results fill pages 0 to "
                    f"{last} ({page_size} per page)")
        return Page([], total, page, page_size, query=query, note=note)
    values = load([rowid for rowid, _ in rows])
    parts = index.contributions(conn, terms, [text_of(value) for value in values], idf)
    hits = [Hit(value, score, terms_of)
            for value, (_, score), terms_of in zip(values, rows, parts, strict=True)]
    return Page(hits, total, page, page_size, query=query)
