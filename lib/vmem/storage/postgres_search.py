"""BM25 search in PostgreSQL that ranks exactly as SQLite FTS5 and `BM25Index(idf="fts5")`.

Optional extra: postgres (psycopg 3; imported only when a PostgreSQL URL is used).

PostgreSQL's own full-text search (`tsvector`, `ts_rank`) analyses and scores text its
own way, so it is not used. Instead each tier keeps an inverted index in plain tables,
written in the same transaction as the row it indexes:

- `<docs>_postings (term, doc, tf, length)`: one row per distinct term of a document
  (`length`, the document's number of terms, is repeated there so ranking reads no other
  table); primary key (term, doc), so a term's postings are one index range;
- `<docs>.length`: the same length on the document row (NULL: not indexed), so removing
  a document knows what to subtract from the statistics;
- `vmem_fts_stats (id, tier, docs, tokens)`: the number of indexed documents and of
  their terms, as rows of changes (+1 document and its terms, or -1) summed when read.
  Writers only append, so they never wait for each other nor deadlock on it (one row
  per tier, updated by every write of every agent in the database, would serialise
  them all). Every `COMPACT_EVERY` rows a writer folds a tier's rows into one (the sum
  stays exact) and prunes the change log, if no other transaction is compacting that
  tier (a transaction-scoped advisory lock, tried, never waited for): two writers
  folding at once, each in a long transaction, would wait for each other's deleted
  rows, and could deadlock.

The terms are `vmem.bm25.analyze`'s, as for FTS5, and the statistics cover every row
of the tier (every scope, as in an SQLite file), so N, avgdl and each term's document
count n are FTS5's. Ranking is two statements: the statistics with each distinct query
term's n (its postings counted), then, in SQL, every matching document's score summed in
floating point with the query's idf weights, which picks the candidates: the first
`offset + limit` and every other document within a relative 1e-9 of the last of them.
Python then rescores the candidates with `vmem.bm25.term_score`, adding the terms in
query order as FTS5 does, and sorts them by score then id, so the page has FTS5's ids,
order and scores to the last bit, whatever order PostgreSQL summed in.

This is the reference ranking, and the one used inside a caller's transaction; a search
in a snapshot of its own is served by `vmem.storage.postgres_cache` (same page, far
fewer rows scored), which reads the change log that `tracking_ddl`'s triggers write
(postings inserted or deleted) and, from schema version 4, `row_tracking_ddl`'s (a
row's scope or `invalid_at` changed: which searches keep it).

A new row is stored and indexed by one statement (`insert_indexed`): the row, its
postings and its statistics row, so outside a transaction it needs no BEGIN and COMMIT
(a single statement is atomic) and costs one round trip to the server.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from ..bm25 import FTS5_B, FTS5_K1, analyze, fts5_idf, length_norm, term_score

COMPACT_EVERY = 256
CANDIDATE_MARGIN = 1e-9  # far above the rounding differences of two summation orders
KEEP_CHANGES = 50_000  # rows of `vmem_fts_changes` kept per tier when it is pruned

STATS_DDL = ("""CREATE TABLE vmem_fts_stats (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tier text NOT NULL,
    docs bigint NOT NULL,
    tokens bigint NOT NULL
)""",)

# Schema version 2: what changed in each index, for the caches of `postgres_cache`.
CHANGES_DDL = ("""CREATE TABLE vmem_fts_changes (
    tier text NOT NULL,
    doc bigint NOT NULL,
    xid xid8 NOT NULL DEFAULT pg_current_xact_id()
)""", "CREATE INDEX vmem_fts_changes_xid ON vmem_fts_changes (tier, xid)",
    "CREATE TABLE vmem_fts_horizon (tier text PRIMARY KEY, xid xid8 NOT NULL)",
    """CREATE FUNCTION vmem_fts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO vmem_fts_changes (tier, doc) SELECT DISTINCT TG_ARGV[0], doc FROM changed;
        RETURN NULL;
    END $$""", """CREATE FUNCTION vmem_fts_emptied() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN  -- a cache must reload unless this transaction is below its snapshot's xmin
        INSERT INTO vmem_fts_horizon
        VALUES (TG_ARGV[0], (pg_current_xact_id()::text::bigint + 1)::text::xid8)
        ON CONFLICT (tier) DO UPDATE SET xid = greatest(vmem_fts_horizon.xid, excluded.xid);
        RETURN NULL;
    END $$""")

# Schema version 4: updates that change which searches keep a row, or its length (a
# document with no terms has no postings to log), are logged too.
ROWS_DDL = ("""CREATE FUNCTION vmem_rows_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN  -- only a changed scope, length or invalid_at (archival's; NULL elsewhere)
        INSERT INTO vmem_fts_changes (tier, doc)
        SELECT DISTINCT TG_ARGV[0], n.id FROM new_rows AS n JOIN old_rows AS o USING (id)
        WHERE n.scope IS DISTINCT FROM o.scope OR n.length IS DISTINCT FROM o.length
           OR to_jsonb(n) -> 'invalid_at' IS DISTINCT FROM to_jsonb(o) -> 'invalid_at';
        RETURN NULL;
    END $$""",)


@dataclass(frozen=True)
class Scored:
    """One ranked document: its id, its score and each query term's part of it."""

    doc: int
    score: float
    parts: dict[str, float]


@dataclass(frozen=True)
class PgIndex:
    """The inverted index of the `docs` table (whose `id` and `length` columns it uses)."""

    docs: str

    @property
    def postings(self) -> str:
        return f"{self.docs}_postings"

    def ddl(self) -> tuple[str, ...]:
        """The statements that create this index's table (the docs table holds `length`)."""
        return (f"""CREATE TABLE {self.postings} (
            term text NOT NULL,
            doc bigint NOT NULL,
            tf integer NOT NULL,
            length integer NOT NULL,
            PRIMARY KEY (term, doc) INCLUDE (tf, length)
        )""", f"CREATE INDEX {self.postings}_doc ON {self.postings} (doc)")

    def tracking_ddl(self) -> tuple[str, ...]:
        """The triggers (schema version 2) that log, in `vmem_fts_changes`, each document
        whose postings a statement inserts or deletes, however it was written; emptying
        the table moves `vmem_fts_horizon` instead, so every cache reloads."""
        return tuple(
            f"CREATE TRIGGER {self.postings}_{event.lower()} AFTER {event} ON {self.postings} "
            f"REFERENCING {rows} TABLE AS changed FOR EACH STATEMENT "
            f"EXECUTE FUNCTION vmem_fts_changed('{self.docs}')"
            for event, rows in (("INSERT", "NEW"), ("DELETE", "OLD"))) + (
            f"CREATE TRIGGER {self.postings}_truncate AFTER TRUNCATE ON {self.postings} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION vmem_fts_emptied('{self.docs}')",)

    def row_tracking_ddl(self) -> tuple[str, ...]:
        """The trigger (schema version 4) that logs, in `vmem_fts_changes`, each row of the
        docs table whose scope, length or `invalid_at` an update changed."""
        return (f"CREATE TRIGGER {self.docs}_update AFTER UPDATE ON {self.docs} "
                "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
                f"EXECUTE FUNCTION vmem_rows_changed('{self.docs}')",)

    # --- writing (inside the caller's transaction) ---------------------------------
    def insert_indexed(self, conn: psycopg.Connection, columns: Sequence[str],
                       values: Sequence[Any], text: str) -> int:
        """Insert a row (`columns` = `values`) into the docs table and index `text` as its
        document, in one statement; return the row's id. A document without terms writes
        no postings, so the statement logs it in `vmem_fts_changes` itself."""
        terms = analyze(text)
        counts = Counter(terms)
        row = conn.execute(
            f"""WITH doc AS (
                INSERT INTO {self.docs} ({', '.join(columns)}, length)
                VALUES ({', '.join(['%s'] * len(values))}, %s) RETURNING id),
            postings AS (
                INSERT INTO {self.postings} (term, doc, tf, length)
                SELECT term, doc.id, tf, %s
                FROM doc, unnest(%s::text[], %s::int[]) AS u(term, tf)),
            logged AS (INSERT INTO vmem_fts_changes (tier, doc)
                       SELECT %s, doc.id FROM doc WHERE %s),
            stats AS (INSERT INTO vmem_fts_stats (tier, docs, tokens) VALUES (%s, 1, %s)
                      RETURNING id)
            SELECT doc.id, stats.id FROM doc, stats""",
            (*values, len(terms), len(terms), list(counts), list(counts.values()), self.docs,
             not terms, self.docs, len(terms))).fetchone()
        self._compact_now_and_then(conn, row[1])
        return row[0]

    def add(self, conn: psycopg.Connection, doc: int, text: str) -> None:
        """Index a stored document's text: its postings, its length, the statistics."""
        terms = analyze(text)
        counts = Counter(terms)
        self._counted(conn, f"""WITH postings AS (
                INSERT INTO {self.postings} (term, doc, tf, length)
                SELECT term, %s, tf, %s FROM unnest(%s::text[], %s::int[]) AS u(term, tf)),
            indexed AS (UPDATE {self.docs} SET length = %s WHERE id = %s)
            INSERT INTO vmem_fts_stats (tier, docs, tokens) VALUES (%s, 1, %s) RETURNING id""",
                      (doc, len(terms), list(counts), list(counts.values()), len(terms), doc,
                       self.docs, len(terms)))

    def remove(self, conn: psycopg.Connection, doc: int) -> None:
        """Forget a document from the index (nothing happens if it was never indexed)."""
        self._counted(conn, f"""WITH old AS (
                UPDATE {self.docs} AS d SET length = NULL FROM {self.docs} AS o
                WHERE d.id = %s AND o.id = d.id AND o.length IS NOT NULL RETURNING o.length),
            postings AS (DELETE FROM {self.postings} WHERE doc = %s)
            INSERT INTO vmem_fts_stats (tier, docs, tokens)
            SELECT %s, -1, -length FROM old RETURNING id""", (doc, doc, self.docs))

    def _counted(self, conn: psycopg.Connection, statement: str, params: tuple) -> None:
        """Run a write that appends one row of changes to the statistics; every
        `COMPACT_EVERY` rows, fold the tier's rows into one."""
        row = conn.execute(statement, params).fetchone()
        if row is not None:
            self._compact_now_and_then(conn, row[0])

    def _compact_now_and_then(self, conn: psycopg.Connection, stats_id: int) -> None:
        """When the statistics row just appended is the `COMPACT_EVERY`th, fold the tier's
        rows into one and prune the change log, unless another transaction is doing so
        (then a later write will). In a transaction of its own when the write had none:
        a fold is exact whenever it runs."""
        if stats_id % COMPACT_EVERY:
            return
        with conn.transaction():
            if not conn.execute(
                    "SELECT pg_try_advisory_xact_lock(hashtext('vmem fts compact'), "
                    "hashtext(current_schema() || '.' || %s))", (self.docs,)).fetchone()[0]:
                return
            conn.execute("""WITH gone AS (DELETE FROM vmem_fts_stats WHERE tier = %s
                                          RETURNING docs, tokens)
                INSERT INTO vmem_fts_stats (tier, docs, tokens)
                SELECT %s, sum(docs), sum(tokens) FROM gone HAVING count(*) > 0""",
                         (self.docs, self.docs))
            self._prune(conn)

    def _prune(self, conn: psycopg.Connection) -> None:
        """Keep the newest `KEEP_CHANGES` rows of this tier's change log: delete those
        below the xid of the oldest kept, and raise the horizon to it. A cache whose
        snapshot's xmin is at least the horizon saw every deleted row's transaction; any
        other reloads (`postgres_cache`)."""
        conn.execute("""WITH cut AS (SELECT xid FROM vmem_fts_changes WHERE tier = %(tier)s
                                     ORDER BY xid DESC OFFSET %(keep)s LIMIT 1),
            gone AS (DELETE FROM vmem_fts_changes WHERE tier = %(tier)s
                     AND xid < (SELECT xid FROM cut))
            INSERT INTO vmem_fts_horizon SELECT %(tier)s, xid FROM cut
            ON CONFLICT (tier) DO UPDATE SET xid = greatest(vmem_fts_horizon.xid, excluded.xid)""",
                     {"tier": self.docs, "keep": KEEP_CHANGES - 1})

    # --- reading -------------------------------------------------------------------
    def stats(self, conn: psycopg.Connection, terms: Sequence[str] = ()
              ) -> tuple[int, int, dict[str, int]]:
        """(indexed documents, their total terms, each of `terms`'s document count)."""
        distinct = list(dict.fromkeys(terms))
        docs, tokens, counts = conn.execute(
            "SELECT coalesce(sum(docs), 0)::bigint, coalesce(sum(tokens), 0)::bigint, "
            f"(SELECT array_agg((SELECT count(*) FROM {self.postings} AS p WHERE p.term = q.term)"
            " ORDER BY q.n) FROM unnest(%s::text[]) WITH ORDINALITY AS q(term, n)) "
            "FROM vmem_fts_stats WHERE tier = %s", (distinct, self.docs)).fetchone()
        return docs, tokens, dict(zip(distinct, counts or (), strict=True))

    def search(self, conn: psycopg.Connection, terms: Sequence[str], where: str,
               params: Sequence[Any], limit: int, offset: int) -> tuple[int, list[Scored]]:
        """(how many documents `where` keeps hold a query term, one page of them best
        first, ties by id). `where` is an SQL condition on the docs table aliased `d`
        (with `params`); it chooses rows, never the statistics. Run it in one snapshot."""
        docs, tokens, df = self.stats(conn, terms)
        if not docs:
            return 0, []
        avgdl = tokens / docs
        idf = {term: fts5_idf(docs, count) for term, count in df.items()}
        weights = Counter(terms)
        found = [term for term in idf if df[term]]
        if not found:
            return 0, []
        join = f"JOIN {self.docs} AS d ON d.id = p.doc WHERE {where}" if where else ""
        rows = conn.execute(
            f"""WITH q (term, weight) AS (SELECT * FROM unnest(%s::text[], %s::float8[])),
            scored AS (
                SELECT p.doc, sum(q.weight * (p.tf * {FTS5_K1 + 1}::float8) /
                    (p.tf + {FTS5_K1}::float8 * ({1 - FTS5_B}::float8 + {FTS5_B}::float8 *
                                                 p.length / %s::float8))) AS score
                FROM {self.postings} AS p JOIN q USING (term) {join}
                GROUP BY p.doc),
            cut AS (SELECT score FROM scored ORDER BY score DESC OFFSET %s LIMIT 1),
            chosen AS (SELECT doc FROM scored WHERE score >= coalesce(
                (SELECT score FROM cut) * (1 - {CANDIDATE_MARGIN}), 0))
            SELECT (SELECT count(*) FROM scored), c.doc, min(p.length), array_agg(p.term),
                   array_agg(p.tf)
            FROM chosen AS c JOIN {self.postings} AS p
                ON p.doc = c.doc AND p.term = ANY(%s::text[])
            GROUP BY c.doc""",
            (found, [weights[term] * idf[term] for term in found], avgdl, *params,
             offset + limit - 1, found)).fetchall()
        if not rows:
            return 0, []
        ranked = sorted((self._score(doc, length, dict(zip(names, tfs, strict=True)), terms,
                                     idf, avgdl)
                         for _, doc, length, names, tfs in rows),
                        key=lambda hit: (-hit.score, hit.doc))
        return rows[0][0], ranked[offset:offset + limit]

    @staticmethod
    def _score(doc: int, length: int, tfs: dict[str, int], terms: Sequence[str],
               idf: dict[str, float], avgdl: float) -> Scored:
        """The exact score, with FTS5's arithmetic: terms added in query order."""
        norm = length_norm(length, avgdl, FTS5_B)
        parts: dict[str, float] = {}
        score = 0.0
        for term in terms:
            tf = tfs.get(term)
            if tf:
                part = term_score(idf[term], tf, norm, FTS5_K1)
                score += part
                parts[term] = parts.get(term, 0.0) + part
        return Scored(doc, score, parts)
