"""A per-process search cache for PostgreSQL, kept true across connections and machines.

Optional extra: postgres (psycopg 3; imported only when a PostgreSQL URL is used).

Why: `PgIndex.search` scores, in SQL, every document that holds a query word, and a
question's common words are in most of them (about 80 ms at 100,000 records). The exact
pruned top-k of `vmem.storage.topk` scores only the documents that could be on the page,
from postings held in memory: `PgSearchCache` is its PostgreSQL half.

What it holds: the postings of each query term it has met (read whole, once), every
indexed document's length, and the PostgreSQL snapshot they match (`pg_current_snapshot()`,
the set of transactions whose writes they include). The database stays the only truth.

How it stays true (every search, in its own REPEATABLE READ snapshot S2, in one
statement): a trigger on each postings table logs, in `vmem_fts_changes`, every
document whose postings a statement inserted or deleted, with the writing transaction's
id. The rows visible in S2 whose transaction was not visible in S1, the snapshot the
cache matches, are exactly the committed changes it has not seen (any writer, any
process, any machine; those rows all have an xid of at least S1's xmin, so an index
range finds them). Those documents are dropped from the cache and read again as S2 sees
them, and the cache then matches S2. Document and token counts are read afresh each
time. When the log has been pruned past S1 (`vmem_fts_horizon` above S1's xmin), or a
postings table was truncated, or S2 is older than S1, the cache is emptied and refilled
in S2. Uncommitted rows
are never visible to another transaction, so a rolled-back write never reaches a cache.

When it is not used: inside a caller's transaction (its own uncommitted writes would be
visible there, and it may not be one snapshot) and for queries of more than
`MAX_PRUNED_TERMS` distinct terms; `PgIndex.search` ranks those, identically.

One cache may serve many connections to the same database (a pool, many threads): a
lock lets one search use it at a time. A search's snapshot is taken by its first
statement, the refresh, inside the lock, so the snapshots a shared cache moves through
only grow.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import psycopg

from .postgres_search import PgIndex, Scored
from .topk import MAX_PRUNED_TERMS, PostingsCache


class PgSearchCache(PostingsCache):
    """Exact pruned top-k for one `PgIndex`, from postings cached in this process."""

    def __init__(self, index: PgIndex, max_postings: int = 20_000_000) -> None:
        super().__init__(max_postings)
        self.index = index
        self.lock = threading.Lock()
        self._snapshot: str | None = None  # the pg_snapshot the content matches

    def search(self, conn: psycopg.Connection, terms: Sequence[str], where: str,
               params: Sequence[Any], hidden: str | None, limit: int, offset: int
               ) -> tuple[int, list[Scored]] | None:
        """What `PgIndex.search(conn, terms, where + NOT hidden, ...)` returns, or None
        when this query is left to it. Call in a REPEATABLE READ snapshot of its own.
        `hidden` is the condition of the (few) rows hidden by default."""
        distinct = list(dict.fromkeys(terms))
        if len(distinct) > MAX_PRUNED_TERMS:
            return None
        with self.lock:
            self._refresh(conn)
            postings = {term: self._load(conn, term) for term in distinct}
            if not self._docs:
                return 0, []
            hidden_rows = self._rows(conn, hidden, ()) if hidden else set()
            kept = self._rows(conn, where, params) - hidden_rows if where != "true" else None
            total, best, idf = self._rank(
                terms, postings, kept is not None, hidden_rows,
                (lambda rowids: rowids - hidden_rows) if kept is None else kept.intersection,
                limit, offset)
            avgdl = self._tokens / self._docs
            return total, [PgIndex._score(doc, self._lengths[doc], {
                term: postings[term][doc] for term in distinct if doc in postings[term]},
                terms, idf, avgdl) for doc, _ in best]

    def _rows(self, conn: psycopg.Connection, where: str, params: Sequence[Any]) -> set[int]:
        """The ids of the rows `where` keeps, as one array (one row to read, not many)."""
        ids = conn.execute(f"SELECT array_agg(d.id) FROM {self.index.docs} AS d WHERE {where}",
                           params).fetchone()[0]
        return set(ids or ())

    def _refresh(self, conn: psycopg.Connection) -> None:
        """Make the cache match this transaction's snapshot (see the module docstring)."""
        tier, postings = self.index.docs, self.index.postings
        snapshot, docs, tokens, current, changed = conn.execute(
            f"""SELECT pg_current_snapshot()::text,
                coalesce((SELECT sum(docs) FROM vmem_fts_stats WHERE tier = %(tier)s), 0),
                coalesce((SELECT sum(tokens) FROM vmem_fts_stats WHERE tier = %(tier)s), 0),
                coalesce((SELECT xid FROM vmem_fts_horizon WHERE tier = %(tier)s), '0'::xid8)
                    <= pg_snapshot_xmin(%(since)s::pg_snapshot)
                AND pg_snapshot_xmax(%(since)s::pg_snapshot)
                    <= pg_snapshot_xmax(pg_current_snapshot()),
                (SELECT json_agg(json_build_array(c.doc, p.length, p.terms, p.tfs))
                 FROM (SELECT DISTINCT doc FROM vmem_fts_changes WHERE tier = %(tier)s
                       AND xid >= pg_snapshot_xmin(%(since)s::pg_snapshot)
                       AND NOT pg_visible_in_snapshot(xid, %(since)s::pg_snapshot)) AS c
                 CROSS JOIN LATERAL (SELECT min(length) AS length, array_agg(term) AS terms,
                                            array_agg(tf) AS tfs
                                     FROM {postings} WHERE doc = c.doc) AS p)""",
            {"tier": tier, "since": self._snapshot}).fetchone()
        if not current or self._size > self.max_postings:
            self._snapshot = None  # matches nothing until refilled: a failure here reloads
            self._reset()
            ids, lengths = conn.execute(f"SELECT array_agg(id), array_agg(length) FROM {tier} "
                                        "WHERE length IS NOT NULL").fetchone()
            self._lengths = dict(zip(ids or (), lengths or (), strict=True))
        else:
            for doc, length, names, tfs in changed or ():
                if doc in self._lengths:  # else new here: in no cached postings yet
                    self._remove_doc(doc)
                if length is not None:
                    self._add_doc(doc, dict(zip(names, tfs, strict=True)), length)
        self._docs, self._tokens, self._snapshot = int(docs), int(tokens), snapshot

    def _load(self, conn: psycopg.Connection, term: str) -> dict[int, int]:
        postings = self._postings.get(term)
        if postings is not None:
            return postings
        docs, tfs = conn.execute(f"SELECT array_agg(doc), array_agg(tf) FROM "
                                 f"{self.index.postings} WHERE term = %s", (term,)).fetchone()
        return self._keep(term, dict(zip(docs or (), tfs or (), strict=True)))
