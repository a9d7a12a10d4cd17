"""A per-process search cache for PostgreSQL, kept true across connections and machines.

Optional extra: postgres (psycopg 3; imported only when a PostgreSQL URL is used).

Why: `PgIndex.search` scores, in SQL, every document that holds a query word, and a
question's common words are in most of them (about 80 ms at 100,000 records). The exact
pruned top-k of `vmem.storage.topk` scores only the documents that could be on the page,
from postings held in memory: `PgSearchCache` is its PostgreSQL half.

What it holds: the postings of each query term it has met (read whole, once), every
indexed document's length, scope and whether it is hidden by default (an invalidated
record), and the PostgreSQL snapshot they match (`pg_current_snapshot()`, the set of
transactions whose writes they include). The database stays the only truth.

Why the scopes: one database holds many agents, and nearly every search is one agent's
(`Filter.scope`). Asking the database which rows a scope holds costs a scan of all of
them at every search (about 1 ms for 1,000 rows), and asking which are invalidated
scanned the table until it was analysed. The cache answers both from memory: a search
whose only conditions are its scope, the invalidated rows and excluded ids sends no SQL
but the refresh and the loading of its page; other filters (tags, dates, ids, roles) are
still asked in SQL. A search of one scope, in a database of several, ranks from that
scope's own postings (a view per scope, cut from the whole term's postings when first
needed and kept true with them), so its work does not grow with the other agents'
documents. The statistics (N, avgdl, each term's document count) still count every
scope's documents, as `PgIndex` and SQLite do.

How it stays true (every search, in its own REPEATABLE READ snapshot S2, in one
statement): a trigger on each postings table logs, in `vmem_fts_changes`, every
document whose postings a statement inserted or deleted, with the writing transaction's
id, and one on each docs table every row whose scope or `invalid_at` an update changed.
The rows visible in S2 whose transaction was not visible in S1, the snapshot the cache
matches, are exactly the committed changes it has not seen (any writer, any process, any
machine; those rows all have an xid of at least S1's xmin, so an index range finds
them). Those documents are dropped from the cache and read again as S2 sees them
(postings, length, scope, hidden), and the cache then matches S2. N and the total
length are those of the cached lengths (every indexed row's `length`, written with its
statistics row, so the same sums as `vmem_fts_stats`), kept with them: that table is not
read here, since every write appends to it and every fold deletes from it, and until it
is vacuumed a sum scans every row it ever held (about 0.4 ms per search after 8,000
writes). When the log has been pruned past S1
(`vmem_fts_horizon` above S1's xmin), or a postings table was truncated, or S2 is older
than S1, the cache is emptied and refilled in S2. Uncommitted rows are never visible to
another transaction, so a rolled-back write never reaches a cache.

When it is not used: inside a caller's transaction (its own uncommitted writes would be
visible there, and it may not be one snapshot) and for queries of more than
`MAX_PRUNED_TERMS` distinct terms; `PgIndex.search` ranks those, identically.

One cache may serve many connections to the same database (a pool, many threads): a
lock lets one search use it at a time. A search's snapshot is taken by its first
statement, the refresh, inside the lock, so the snapshots a shared cache moves through
only grow.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import psycopg

from .base import Scope, in_scope
from .postgres_search import PgIndex, Scored
from .topk import MAX_PRUNED_TERMS, PostingsCache


class PgSearchCache(PostingsCache):
    """Exact pruned top-k for one `PgIndex`, from postings cached in this process."""

    def __init__(self, index: PgIndex, max_postings: int = 20_000_000, *,
                 hidden: str | None = None) -> None:
        """`hidden`: the SQL condition (on the docs table aliased `d`) of the rows a
        search hides unless asked to include them (None: no such rows)."""
        self.index = index
        self.hidden = hidden
        self.lock = threading.Lock()
        self._snapshot: str | None = None  # the pg_snapshot the content matches
        super().__init__(max_postings)

    def _reset(self) -> None:
        super()._reset()
        self._scope_of: dict[int, str | None] = {}  # doc -> its scope (jsonb text)
        self._members: dict[str | None, set[int]] = {}  # scope (jsonb text) -> its docs
        self._scopes: dict[str, Scope] = {}  # scope (jsonb text) -> that scope
        self._hidden: set[int] = set()  # indexed docs that `hidden` hides
        self._views: dict[str, PostingsCache] = {}  # scope -> its docs' cached postings

    def search(self, conn: psycopg.Connection, terms: Sequence[str], scope: Scope | None,
               where: str | None, params: Sequence[Any], include_hidden: bool,
               exclude: Collection[int], limit: int, offset: int
               ) -> tuple[int, list[Scored]] | None:
        """What `PgIndex.search` returns for the rows in `scope` that `where` keeps (with
        `params`; None: no other condition), less the hidden rows (unless
        `include_hidden`) and `exclude`; or None when this query is left to it. Call in a
        REPEATABLE READ snapshot of its own."""
        distinct = list(dict.fromkeys(terms))
        if len(distinct) > MAX_PRUNED_TERMS:
            return None
        with self.lock:
            self._refresh(conn, distinct)
            postings = {term: self._postings[term] for term in distinct}
            if not self._docs:
                return 0, []
            hidden = set(exclude) if include_hidden else \
                self._hidden.union(exclude) if exclude else self._hidden  # read only
            if where is not None:  # `where` holds the scope too
                kept = self._rows(conn, where, params) - hidden
                total, best, idf = self._rank(terms, postings, True, hidden,
                                              kept.intersection, limit, offset)
            elif scope and self._leaves_out(keys := self._keys(scope)):
                if len(keys) == 1:  # one agent's scope, as nearly always: its own postings
                    view = self._view(keys[0], distinct)
                    total, best, idf = view._rank(
                        terms, {term: view._postings[term] for term in distinct}, False,
                        hidden, lambda rowids: rowids - hidden, limit, offset,
                        df={term: len(rows) for term, rows in postings.items()})
                else:
                    members = set().union(*(self._members[key] for key in keys))
                    total, best, idf = self._rank(
                        terms, postings, True, hidden,
                        lambda rowids: members.intersection(rowids) - hidden, limit, offset)
            else:
                total, best, idf = self._rank(terms, postings, False, hidden,
                                              lambda rowids: rowids - hidden, limit, offset)
            avgdl = self._tokens / self._docs
            return total, [PgIndex._score(doc, self._lengths[doc], {
                term: postings[term][doc] for term in distinct if doc in postings[term]},
                terms, idf, avgdl) for doc, _ in best]

    def _keys(self, scope: Scope) -> list[str]:
        """The stored scopes (jsonb text) that have every key and value of `scope`."""
        return [key for key, stored in self._scopes.items() if in_scope(stored, scope)]

    def _leaves_out(self, keys: Sequence[str]) -> bool:
        """Whether the stored scopes `keys` leave out any indexed doc (else a filter on
        them keeps every doc: a database of one agent)."""
        return sum(len(self._members[key]) for key in keys) < len(self._lengths)

    def _view(self, key: str, terms: Sequence[str]) -> PostingsCache:
        """The cached postings of the docs of the stored scope `key`, for `terms` (whose
        whole postings are cached) among others; its statistics are the whole index's."""
        view = self._views.get(key)
        if view is None:
            view = self._views[key] = PostingsCache(self.max_postings)
            view._lengths = self._lengths  # shared, read only there
        view._docs, view._tokens = self._docs, self._tokens
        members = self._members[key]
        for term in terms:
            if term not in view._postings:
                view._keep(term, {doc: tf for doc, tf in self._postings[term].items()
                                  if doc in members})
        return view

    def _add_doc(self, rowid: int, counts: Mapping[str, int], length: int) -> None:
        super()._add_doc(rowid, counts, length)
        view = self._views.get(self._scope_of.get(rowid))
        if view is not None:
            view._add_doc(rowid, counts, length)

    def _remove_doc(self, rowid: int, terms: Iterable[str] | None = None) -> None:
        view = self._views.get(self._scope_of.get(rowid))
        if view is not None:
            view._remove_doc(rowid, terms)
        super()._remove_doc(rowid, terms)

    def _rows(self, conn: psycopg.Connection, where: str, params: Sequence[Any]) -> set[int]:
        """The ids of the rows `where` keeps, as one array (one row to read, not many)."""
        ids = conn.execute(f"SELECT array_agg(d.id) FROM {self.index.docs} AS d WHERE {where}",
                           params).fetchone()[0]
        return set(ids or ())

    def _refresh(self, conn: psycopg.Connection, terms: Sequence[str]) -> None:
        """Make the cache match this transaction's snapshot (see the module docstring),
        with the postings of `terms` in it. The postings of the terms it lacks are asked
        for right after the refresh, before its answer is read: in a pipeline (as
        `PostgresBackend.snapshot` opens) both reach the server together."""
        tier, postings = self.index.docs, self.index.postings
        hidden = f"coalesce({self.hidden}, false)" if self.hidden else "false"
        refreshed = conn.execute(
            f"""SELECT pg_current_snapshot()::text,
                coalesce((SELECT xid FROM vmem_fts_horizon WHERE tier = %(tier)s), '0'::xid8)
                    <= pg_snapshot_xmin(%(since)s::pg_snapshot)
                AND pg_snapshot_xmax(%(since)s::pg_snapshot)
                    <= pg_snapshot_xmax(pg_current_snapshot()),
                (SELECT json_agg(json_build_array(c.doc, d.length, p.terms, p.tfs,
                                                  d.scope::text, {hidden}))
                 FROM (SELECT DISTINCT doc FROM vmem_fts_changes WHERE tier = %(tier)s
                       AND xid >= pg_snapshot_xmin(%(since)s::pg_snapshot)
                       AND NOT pg_visible_in_snapshot(xid, %(since)s::pg_snapshot)) AS c
                 LEFT JOIN {tier} AS d ON d.id = c.doc
                 CROSS JOIN LATERAL (SELECT array_agg(term) AS terms, array_agg(tf) AS tfs
                                     FROM {postings} WHERE doc = c.doc) AS p)""",
            {"tier": tier, "since": self._snapshot})
        missing = [term for term in terms if term not in self._postings]
        loading = self._ask_postings(conn, missing) if missing else None
        snapshot, current, changed = refreshed.fetchone()
        if not current or self._size + sum(
                view._size for view in self._views.values()) > self.max_postings:
            self._snapshot = None  # matches nothing until refilled: a failure here reloads
            self._reset()
            ids, lengths, scopes, hides = conn.execute(
                f"SELECT array_agg(id), array_agg(length), array_agg(scope::text), "
                f"array_agg({hidden}) FROM {tier} AS d WHERE length IS NOT NULL").fetchone()
            self._lengths = dict(zip(ids or (), lengths or (), strict=True))
            self._tokens = sum(self._lengths.values())
            for doc, scope, hide in zip(ids or (), scopes or (), hides or (), strict=True):
                self._place(doc, scope, hide)
        else:
            for doc, length, names, tfs, scope, hide in changed or ():
                self._displace(doc)
                if length is not None:
                    self._place(doc, scope, hide)  # first: its scope's view is updated too
                    self._add_doc(doc, dict(zip(names or (), tfs or (), strict=True)), length)
                    self._tokens += length
        self._docs, self._snapshot = len(self._lengths), snapshot
        if loading is not None:
            self._keep_all(loading, missing)
        dropped = [term for term in terms if term not in self._postings]  # by a reload
        if dropped:
            self._keep_all(self._ask_postings(conn, dropped), dropped)

    def _place(self, doc: int, scope: str | None, hide: bool) -> None:
        """Note an indexed doc's scope (jsonb text) and whether it is hidden."""
        self._scope_of[doc] = scope
        members = self._members.get(scope)
        if members is None:
            members = self._members[scope] = set()
            if scope is not None:
                self._scopes[scope] = json.loads(scope)
        members.add(doc)
        if hide:
            self._hidden.add(doc)

    def _displace(self, doc: int) -> None:
        """Forget a doc (its postings, length, scope, hidden mark) if it is cached."""
        if doc in self._lengths:  # else new here: in no cached postings yet
            self._tokens -= self._lengths[doc]
            self._remove_doc(doc)
        if doc in self._scope_of:
            self._members[self._scope_of.pop(doc)].discard(doc)
        self._hidden.discard(doc)

    def _ask_postings(self, conn: psycopg.Connection, terms: Sequence[str]) -> psycopg.Cursor:
        """Send the query of the whole postings of `terms` (one row per term found)."""
        return conn.execute(f"SELECT term, array_agg(doc), array_agg(tf) FROM "
                            f"{self.index.postings} WHERE term = ANY(%s) GROUP BY term",
                            (list(terms),))

    def _keep_all(self, cursor: psycopg.Cursor, terms: Sequence[str]) -> None:
        """Cache the postings `_ask_postings(terms)` read (in the snapshot the cache
        matches now), an empty one for each term no document holds."""
        found = {term: dict(zip(docs, tfs, strict=True)) for term, docs, tfs in cursor}
        for term in terms:
            self._keep(term, found.get(term, {}))
