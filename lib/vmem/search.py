"""Full-text search over the SQLite backend's FTS5 tables: the index and the filters.

How FTS5 is used, and what its `bm25()` computes
------------------------------------------------
SQLite's own tokenizers do not split text exactly like `vmem.bm25.tokenize` (final sigma,
dotted capital I, combining accents differ) and know nothing of its stop words and stems,
so FTS5 never tokenizes on its own: each document is stored as the *space-joined output
of `vmem.bm25.analyze`* (the one analyzer) in an FTS5 table that uses
the `ascii` tokenizer. That tokenizer splits on ASCII non-alphanumerics and treats every
non-ASCII character as part of a word; our terms contain only letters, digits and marks,
so it splits exactly on the spaces we put there and sees the same terms, and each
document's length in FTS5 tokens is `len(analyze(text))`. A query becomes each of its
terms in double quotes joined by `OR` (`"cat" OR "sat" OR "cat"`), so nothing in it is
ever read as FTS5 syntax, and a repeated word is a repeated phrase that counts each time.

For every row matching the query, FTS5's built-in `bm25()` (fts5_aux.c) returns minus

    sum over query phrases i of  idf_i * (f_i * (k1 + 1)) / (f_i + k1 * (1 - b + b * D / avgdl))

with k1 = 1.2 and b = 0.75 fixed (`vmem.bm25.FTS5_K1`, `FTS5_B`), f_i the number of
times phrase i occurs in the row, D the row's length in tokens (all columns; we have
one), avgdl = total tokens in the table / number of rows in the table (both kept by FTS5
itself and updated on every insert and delete), and idf_i = ln((N - n_i + 0.5) /
(n_i + 0.5)) with N the number of rows and n_i the number of rows containing phrase i,
replaced by 1e-6 when it is zero or negative.
Statistics cover the whole table, whatever other filters the query has. The result is
negative (more negative = better), so we negate it: higher score = better. Ties are
broken by rowid, i.e. insertion order. `BM25Index(idf="fts5", k1=1.2, b=0.75)` computes
the same numbers in the same order of floating-point operations.

FTS5 does not expose per-term contributions to Python, so `FtsIndex.contributions`
recomputes them for the hits on a page (`vmem.bm25.contributions`) from their indexed
terms, `fts_stats` (N and total tokens, kept in the same transaction as the index) and
per-term document counts; they sum to the score.

`FtsIndex.search` is the reference ranking: FTS5 scores every matching row. With many
records that is slow, because common words match most rows. `vmem.storage.topk.SearchCache`
(one per tier) gives the same ranking faster; see its docstring.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .bm25 import FTS5_B, FTS5_K1, analyze, contributions, fts5_idf
from .errors import StoreError
from .store import check_scope, time_to_db


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
        """Drop the (few, indexed) rows matching `condition` (and those hidden before):
        `SearchCache` subtracts them as a set instead of testing every matching row."""
        self.hidden = condition if self.hidden is None else f"({self.hidden}) OR ({condition})"
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
        terms = analyze(text)
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
                      rowids: Sequence[int], idf: dict[str, float] | None = None
                      ) -> list[dict[str, float]]:
        """Per-term parts of each row's score (`vmem.bm25.contributions` over its indexed
        terms, with FTS5's parameters and statistics); they sum to the score `bm25()`
        gives. `idf` (term -> idf) saves the document counts when the caller has them."""
        docs, tokens = self.stats(conn)
        if idf is None:
            idf = {term: fts5_idf(docs, self.df(conn, term)) for term in dict.fromkeys(terms)}
        indexed = dict(conn.execute(
            f"SELECT rowid, terms FROM {self.table} WHERE rowid IN (SELECT value FROM "
            "json_each(?))", (json.dumps(list(rowids)),)))
        return [contributions(terms, indexed[rowid].split(), idf, tokens / docs, FTS5_K1,
                              FTS5_B) for rowid in rowids]
