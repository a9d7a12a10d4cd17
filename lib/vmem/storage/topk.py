"""Exact top-k search over one FTS5 index from cached postings, pruned by score bounds.

`FtsIndex.search` (in `vmem.search`) is the reference ranking: FTS5 scores every row that
contains a query word. `SearchCache` returns the same page (same scores, ties by rowid)
while scoring only rows that could be on it; `vmem.storage.sqlite` keeps one per tier.
The scores use `vmem.bm25`'s formulas with FTS5's parameters.
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
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..bm25 import FTS5_B, FTS5_K1, fts5_idf, length_norm, term_score
from ..search import FtsIndex, Where
from ..store import transaction

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


class PostingsCache:
    """The in-memory half of an exact pruned top-k: cached postings, their score bounds,
    and the walk that ranks from them (see `SearchCache` for the method). A backend
    subclasses it with the half that reads its database and keeps the cache true."""

    def __init__(self, max_postings: int = 20_000_000) -> None:
        self.max_postings = max_postings  # beyond this many cached postings, start over
        self._reset()

    def _reset(self) -> None:
        self._postings: dict[str, dict[int, int]] = {}
        self._masks: dict[str, int] = {}  # common term -> its rowids as the bits of an int
        self._bounds: dict[str, tuple[int, int]] = {}  # term -> (max tf, min length)
        self._lengths: dict[int, int] = {}  # rowid -> length, every indexed row once loaded
        self._size = 0
        self._docs: int | None = None  # None: nothing loaded yet
        self._tokens = 0

    # --- keeping it true ---------------------------------------------------------
    def _remove_doc(self, rowid: int, terms: Iterable[str] | None = None) -> None:
        """Forget a document from the cached postings (`terms`: its terms; None: look in
        every cached term). Bounds stay valid: they only become looser."""
        self._lengths.pop(rowid, None)
        for term in self._postings if terms is None else dict.fromkeys(terms):
            postings = self._postings.get(term)
            if postings is not None:
                postings.pop(rowid, None)
                if term in self._masks:
                    self._masks[term] &= ~(1 << rowid)

    def _add_doc(self, rowid: int, counts: Mapping[str, int], length: int) -> None:
        """Add a document (its term frequencies and length) to the cached postings."""
        self._lengths[rowid] = length
        for term, tf in counts.items():
            postings = self._postings.get(term)
            if postings is None:
                continue  # not cached: read whole when a query first needs it
            postings[rowid] = tf
            if term in self._masks:
                if _mask_fits(rowid, len(postings)):
                    self._masks[term] |= 1 << rowid
                else:
                    del self._masks[term]  # counted from its set instead
            top, short = self._bounds[term]
            self._bounds[term] = (max(top, tf), min(short, length))

    def _keep(self, term: str, postings: dict[int, int]) -> dict[int, int]:
        """Cache a term's postings (rowid -> tf, read in the state the cache matches),
        with its bounds and, for a common term, its bitmask."""
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

    # --- ranking -------------------------------------------------------------------
    def _rank(self, terms: Sequence[str], postings: dict[str, dict[int, int]], filtered: bool,
              hidden: set[int], keep: Callable[[set[int]], set[int]], limit: int, offset: int,
              df: Mapping[str, int] | None = None
              ) -> tuple[int, list[tuple[int, float]], dict[str, float]]:
        """(matching kept rows, one page of (rowid, score) best first, idf per term) for
        `terms`, whose `postings` are cached; `keep` filters rowids (`filtered`: it does
        more than drop the `hidden` rows). `df`: each term's document count when the
        postings are only part of the index (default: their sizes)."""
        docs = self._docs or 0
        idf = {term: fts5_idf(docs, len(rows) if df is None else df[term])
               for term, rows in postings.items()}
        total = self._count(postings, filtered, hidden, keep)
        if not total:
            return 0, [], idf
        best = self._top(terms, postings, idf, offset + limit, keep)
        return total, best[offset:offset + limit], idf

    def parts(self, terms: Sequence[str], rowids: Sequence[int], idf: Mapping[str, float]
              ) -> list[dict[str, float]] | None:
        """Per-term parts of each row's score, from the cached postings and lengths with the
        arithmetic of `vmem.bm25.contributions` (so they equal what the index's own
        `contributions` gives); None when a term's postings or a row's length is not
        cached (the cache was emptied since the search)."""
        distinct = list(dict.fromkeys(terms))
        postings = [self._postings.get(term) for term in distinct]
        if any(rows is None for rows in postings) or any(r not in self._lengths
                                                         for r in rowids):
            return None
        avgdl = self._tokens / self._docs if self._docs else 0.0
        result = []
        for rowid in rowids:
            norm = length_norm(self._lengths[rowid], avgdl, FTS5_B)
            found: dict[str, float] = {}
            for term in terms:
                tf = self._postings[term].get(rowid)
                if tf:
                    found[term] = found.get(term, 0.0) + term_score(idf[term], tf, norm,
                                                                    FTS5_K1)
            result.append(found)
        return result

    def _count(self, postings: dict[str, dict[int, int]], filtered: bool, hidden: set[int],
               keep: Callable[[set[int]], set[int]]) -> int:
        """How many kept rows hold at least one term: the size of the union of the
        postings. Common terms are OR-ed and counted as bitmasks, in C; only the other
        terms' rows are gathered in a set, less those a common term already holds."""
        if filtered:
            return len(keep(set().union(*postings.values())))
        common = [term for term in postings if term in self._masks]
        rest = set().union(*(rows for term, rows in postings.items() if term not in common))
        for term in common:
            rest = rest.difference(postings[term])  # walks `rest`, looks up in the dict
        union = functools.reduce(operator.or_, (self._masks[term] for term in common), 0)
        hidden_matched = sum(1 for rowid in hidden if rowid in rest or any(
            rowid in postings[term] for term in common))
        return union.bit_count() + len(rest) - hidden_matched

    def _top(self, terms: Sequence[str], postings: dict[str, dict[int, int]],
             idf: dict[str, float], want: int, keep: Callable[[set[int]], set[int]]
             ) -> list[tuple[int, float]]:
        """The `want` best (rowid, score) among kept rows, best first, ties by rowid."""
        avgdl = self._tokens / self._docs
        lengths = self._lengths
        query = [(idf[term], postings[term]) for term in terms]  # query order, repeats kept
        repeats = Counter(terms)

        def bound(term: str, length: int | None = None) -> float:
            """The most `term` adds to a row (of `length`, or of any length)."""
            top, short = self._bounds[term]
            norm = length_norm(short if length is None else length, avgdl, FTS5_B)
            return repeats[term] * term_score(idf[term], top, norm, FTS5_K1) * (1 + 1e-9)

        order = sorted((term for term in repeats if postings[term]), key=bound, reverse=True)
        bounds = [bound(term) for term in order]
        rest = list(itertools.accumulate(reversed(bounds)))[::-1] + [0.0]
        heap: list[tuple[float, int]] = []  # the best so far as (score, -rowid), worst first
        seen: set[int] = set()

        def score(rowids: set[int], chosen: tuple[str, ...]) -> None:
            fresh = keep(rowids - seen)
            seen.update(rowids)
            length_now, most = -1, math.inf
            norm_length, norm = -1, 0.0
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
                if length != norm_length:  # rows come shortest first: few distinct lengths
                    norm_length, norm = length, length_norm(length, avgdl, FTS5_B)
                total = 0.0
                for term_idf, term_postings in query:  # query order, as BM25Index and FTS5
                    tf = term_postings.get(rowid)
                    if tf:
                        total += term_score(term_idf, tf, norm, FTS5_K1)
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


class SearchCache(PostingsCache):
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
        super().__init__(max_postings)
        self.index = index
        self._version: tuple[int | None, int | None] = (None, None)

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
        if sign < 0:
            self._remove_doc(rowid, terms)
        else:
            self._add_doc(rowid, Counter(terms), len(terms))

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
            self._reset()
            self._version = version
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
        return self._keep(term, dict(Counter(json.loads(found))) if found else {})

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
        hidden = self._hidden(conn, where)
        return self._rank(terms, postings, bool(where.clauses), hidden,
                          self._filter(conn, where, hidden), limit, offset)

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
