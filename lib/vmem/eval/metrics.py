"""Memory metrics that need no LLM: evidence recall@k and evidence in budget.

Both score the same thing, whether a question's evidence turns reach the model:

- `recall_at_k`: the fraction of a question's evidence ids found among the top k retrieved
  units (a unit is a turn, or an observation or summary standing for several turns).
- `fifo_window` / `virtual_window`: which turns are inside a prompt of a given token budget,
  (a) for a plain FIFO window of the most recent turns, (b) for virtual context: core
  memory, the queue a `MainContext` of that budget holds (the whole conversation while it
  fits), and turns paged in by a search with the question.
  `fraction_in` then says how much of the evidence made it in.

`MeanTable` averages per-question values per category and overall, in percent.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from .errors import DatasetError

OVERALL = "overall"


def recall_at_k(ranked: Sequence[str | Collection[str]], evidence: Collection[str],
                k: int) -> float:
    """Fraction of `evidence` ids covered by the first `k` ranked units (0.0 to 1.0).

    Each ranked unit is one id (a turn) or a collection of ids (a unit standing for several
    turns). A question without evidence has no recall: drop it before calling.
    """
    wanted = set(evidence)
    if not wanted:
        raise DatasetError("recall_at_k needs at least one evidence id; drop questions without any")
    if k < 1:
        raise DatasetError(f"k must be at least 1, got {k}")
    found: set[str] = set()
    for unit in ranked[:k]:
        found.update((unit,) if isinstance(unit, str) else unit)
    return len(wanted & found) / len(wanted)


def fraction_in(inside: Collection[int], evidence: Collection[int]) -> float:
    """Fraction of evidence positions that are among the positions `inside` a prompt."""
    wanted = set(evidence)
    if not wanted:
        raise DatasetError("fraction_in needs at least one evidence position")
    return len(wanted & set(inside)) / len(wanted)


def fifo_window(costs: Sequence[int], budget: int) -> int:
    """Start index of the most recent run of turns whose token costs fit in `budget`.

    `costs[i]` is turn i's token count, oldest first; the window is `range(start, len(costs))`.
    With `budget` smaller than the last turn the window is empty (start == len(costs)).
    """
    used = 0
    start = len(costs)
    while start > 0 and used + costs[start - 1] <= budget:
        start -= 1
        used += costs[start]
    return start


def queue_window(costs: Sequence[int], room: int, flush_target: float) -> int:
    """Start index of the queue a `MainContext` holds once every turn has been appended.

    Turns join the queue while they fit in `room`; when the next one would not, the oldest
    are evicted until the queue with it is at most `flush_target` tokens (the newest turn
    always stays), as a flush does. A conversation that fits is never evicted.
    """
    start, used = 0, 0
    for position, cost in enumerate(costs):
        if used + cost > room:
            while start < position and used + cost > flush_target:
                used -= costs[start]
                start += 1
        used += cost
    return start


def virtual_window(costs: Sequence[int], page_costs: Sequence[int], ranked: Iterable[int],
                   budget: int, *, core_tokens: int, flush_to: float = 0.5) -> set[int]:
    """Positions of the turns inside a virtual-context prompt of `budget` tokens.

    The prompt is what a MemGPT-style agent holds after one search with the question: core
    memory (`core_tokens`, always present); the queue of turns a `MainContext` with this
    budget still holds (`queue_window`: all of them while they fit, else the newest ones
    left by its last flush to `flush_to` of the budget); then search hits paged in best
    first into the room left (costs from `page_costs`, which include the citation header a
    page shows); a hit that does not fit is skipped. If not even the best hit fits, the
    context flushes first, as it does when a tool result overflows it: the oldest queued
    turns are evicted down to `flush_to` of the budget. Hits already in the queue are not
    paged in twice.
    """
    room = budget - core_tokens
    if room <= 0:
        return set()
    target = flush_to * budget - core_tokens
    start = queue_window(costs, room, target)
    queue = list(range(start, len(costs)))
    used = sum(costs[start:])
    paged: set[int] = set()
    for position in ranked:
        if position in paged or position in queue:
            continue
        cost = page_costs[position]
        if not paged and used + cost > room:  # the page does not fit: flush first
            while queue and used + cost > target:
                used -= costs[queue.pop(0)]
        if used + cost <= room:
            paged.add(position)
            used += cost
    return set(queue) | paged


class MeanTable:
    """Running means of named values per category and overall, reported in percent.

    >>> table = MeanTable()
    >>> table.add("temporal", {"recall@5": 1.0})
    >>> table.add("single-hop", {"recall@5": 0.5})
    >>> table.as_dict()["overall"]
    {'recall@5': 75.0}
    """

    def __init__(self) -> None:
        self._sums: dict[str, dict[str, float]] = {}
        self._counts: dict[str, int] = {}

    def add(self, category: str, values: dict[str, float]) -> None:
        """Count one question's values (fractions 0..1) under `category` and overall."""
        for group in (category, OVERALL):
            sums = self._sums.setdefault(group, {})
            for name, value in values.items():
                sums[name] = sums.get(name, 0.0) + value
            self._counts[group] = self._counts.get(group, 0) + 1

    def count(self, category: str = OVERALL) -> int:
        """How many questions were added under `category`."""
        return self._counts.get(category, 0)

    def as_dict(self, order: Sequence[str] = ()) -> dict[str, dict[str, float]]:
        """`{category: {name: mean in percent, rounded to 0.1}}`; `order` first, overall last."""
        names = [c for c in order if c in self._sums]
        names += sorted(c for c in self._sums if c not in names and c != OVERALL)
        names += [OVERALL] if OVERALL in self._sums else []
        return {c: {name: round(100 * total / self._counts[c], 1)
                    for name, total in self._sums[c].items()} for c in names}
