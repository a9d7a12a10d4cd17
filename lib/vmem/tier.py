"""What the two searchable tiers (recall and archival) share above the storage backend:
the scope a store is bound to, the checks on a search's arguments, one page of hits, and
the reranking of BM25's best hits by `vmem.ranking`'s priors.

A store bound to a scope (`Memory.open(path, scope=...)` binds both of its stores) acts
within it without being asked: an explicit `scope=` narrows it further, and one that
contradicts it is refused rather than silently reaching another user's rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime

from .clock import ensure_utc
from .errors import StoreError
from .messages import Hit, Page
from .ranking import POOL, Priors, query_terms
from .storage.base import Ranked, Scope
from .store import MAX_QUERY_CHARS, check_scope, check_size

Rank = Callable[[Sequence[str], int, int], Ranked]  # (terms, limit, offset) -> one page


def within(bound: Scope | None, scope: Scope | None) -> dict[str, str]:
    """The scope an operation acts in: the store's `bound` scope, narrowed by `scope`.

    A key of `scope` with another value than `bound` gives it is refused: a store bound
    to one user never reaches another's rows.
    """
    asked = check_scope(scope)
    for key, value in asked.items():
        if bound and key in bound and bound[key] != value:
            raise StoreError(f"this store is bound to scope {dict(bound)}; scope {asked} is "
                             "outside it. Leave scope out to act within the bound scope.")
    return {**(bound or {}), **asked}


def check_period(start: datetime | None, end: datetime | None) -> None:
    """Refuse a start or end that is not a timezone-aware datetime."""
    for bound in (start, end):
        if bound is None:
            continue
        try:
            ensure_utc(bound)
        except (ValueError, AttributeError) as exc:
            raise StoreError(f"start/end must be timezone-aware datetimes: {exc}") from exc


def reranked(rank: Rank, reorder: Callable[[Sequence[Hit]], list[Hit]]) -> Rank:
    """`rank` with its best `POOL` hits put in the order `reorder` gives them; hits past
    the pool follow in `rank`'s order, so every page of one query is a slice of one list."""
    def ranked(terms: Sequence[str], limit: int, offset: int) -> Ranked:
        pool = rank(terms, POOL, 0)
        hits = reorder(pool.hits)[offset:offset + limit]
        if offset + limit > POOL and pool.total > POOL:
            start = max(offset, POOL)
            hits += rank(terms, offset + limit - start, start).hits
        return Ranked(pool.total, tuple(hits))
    return ranked


def search_page(query: str, page: int, page_size: int, rank: Rank,
                priors: Priors | None = None) -> Page:
    """Check and analyse `query`, rank one page with `rank`, and say why a page is empty.

    `page` and `page_size` are already checked (`vmem.store.check_paging`); `priors`
    decide how a question about the present is read (`vmem.ranking.query_terms`).
    """
    if not isinstance(query, str):
        raise StoreError(f"query must be a string, got {type(query).__name__}")
    check_size("the query", query, MAX_QUERY_CHARS)
    terms = query_terms(query, priors)
    if not terms:
        return Page([], 0, page, page_size, query=query, note=(
            f"no searchable words in {json.dumps(query, ensure_ascii=False)}: search "
            "matches words made of letters or digits, and skips words as common as "
            "'the', 'what' or 'you'; try the words that say what it is about"))
    ranked = rank(terms, page_size, page * page_size)
    note = None
    if not ranked.hits and ranked.total:
        last = (ranked.total - 1) // page_size
        note = (f"page {page} is past the end: the {ranked.total} results fill pages 0 to "
                f"{last} ({page_size} per page)")
    return Page(list(ranked.hits), ranked.total, page, page_size, query=query, note=note)
