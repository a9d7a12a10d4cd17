"""Checks that a store's full-text index agrees with its tables, on either backend.

`check_index(backend)` asserts that the database is sound (SQLite: `PRAGMA
integrity_check` and FTS5's `integrity-check`), that exactly the searchable rows are
indexed (every archival record; user and assistant messages), each with the analysed
terms of its text (a message: of its `vmem.ranking.recall_document`), and that the
statistics (documents, total terms) are those of the indexed rows.
"""

from __future__ import annotations

from collections import Counter

from vmem.bm25 import analyze
from vmem.ranking import recall_documents
from vmem.storage.base import Filter
from vmem.store import to_json

TIERS = (("archival", "text", "true"),
         ("messages", "content", "role IN ('user', 'assistant')"))


def check_index(backend) -> None:
    scopes = dict(backend.conn.execute("SELECT id, scope FROM messages").fetchall())
    stored = [(message, to_json(scopes[message.id]) if isinstance(scopes[message.id], dict)
               else scopes[message.id]) for message in backend.messages(Filter())]
    documents = {"messages": dict(recall_documents(stored))}
    if type(backend).__name__ == "PostgresBackend":
        _check_postgres(backend.conn, documents)
    else:
        _check_sqlite(backend.conn, documents)


def _text(docs: str, row_id: int, text: str, documents: dict[str, dict[int, str]]) -> str:
    """What the index holds for a row: a message's document, a record's text."""
    return documents.get(docs, {}).get(row_id, text)


def _check_sqlite(conn, documents: dict[str, dict[int, str]]) -> None:
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    for docs, column, where in TIERS:
        table = f"{docs}_fts"
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
        indexed = [row[0] for row in conn.execute(f"SELECT rowid FROM {table} ORDER BY rowid")]
        stored = [row[0] for row in conn.execute(
            f"SELECT id FROM {docs} WHERE {where.replace('true', '1')} ORDER BY id")]
        assert indexed == stored, f"{table} has orphan or missing rows"
        texts = [_text(docs, row_id, text, documents) for row_id, text in conn.execute(
            f"SELECT id, {column} FROM {docs} WHERE {where.replace('true', '1')}")]
        stats = conn.execute("SELECT docs, tokens FROM fts_stats WHERE name = ?",
                             (table,)).fetchone()
        assert stats == (len(texts), sum(len(analyze(text)) for text in texts))


def _check_postgres(conn, documents: dict[str, dict[int, str]]) -> None:
    for docs, column, where in TIERS:
        rows = conn.execute(f"SELECT id, {column}, length FROM {docs} WHERE {where} "
                            "ORDER BY id").fetchall()
        unindexed = conn.execute(f"SELECT count(*) FROM {docs} WHERE NOT ({where}) "
                                 "AND length IS NOT NULL").fetchone()[0]
        assert unindexed == 0, f"{docs}: rows indexed that should not be"
        lengths = {doc: length for doc, _, length in rows}
        postings: dict[int, Counter] = {}
        for doc, term, tf, length in conn.execute(
                f"SELECT doc, term, tf, length FROM {docs}_postings"):
            postings.setdefault(doc, Counter())[term] = tf
            assert length == lengths.get(doc), f"{docs} {doc}: posting with another length"
        for doc, text, length in rows:
            terms = analyze(_text(docs, doc, text, documents))
            assert length == len(terms), f"{docs} {doc}: length {length}, not indexed right"
            assert postings.pop(doc, Counter()) == Counter(terms), f"{docs} {doc}: postings"
        assert not postings, f"{docs}: postings of rows that are gone: {sorted(postings)}"
        stats = conn.execute("SELECT coalesce(sum(docs), 0), coalesce(sum(tokens), 0) "
                             "FROM vmem_fts_stats WHERE tier = %s", (docs,)).fetchone()
        assert stats == (len(rows), sum(length for _, _, length in rows))
