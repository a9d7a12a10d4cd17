"""Clocks: zero-argument callables returning timezone-aware UTC datetimes.

Every component that stamps time takes a clock, so tests and notebooks can use
`StepClock` and produce byte-identical output on every run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The real clock: the current time in UTC."""
    return datetime.now(timezone.utc)


class StepClock:
    """A deterministic clock that advances by `step` on every call.

    >>> clock = StepClock(datetime(2024, 1, 1, tzinfo=timezone.utc))
    >>> clock().isoformat(), clock().isoformat()
    ('2024-01-01T00:00:00+00:00', '2024-01-01T00:00:01+00:00')
    """

    def __init__(
        self,
        start: datetime | None = None,
        step: timedelta = timedelta(seconds=1),
    ) -> None:
        start = start or datetime(2024, 1, 1, 9, 0, tzinfo=timezone.utc)
        if start.tzinfo is None:
            raise ValueError("StepClock needs a timezone-aware start time "
                             "(use tzinfo=timezone.utc)")
        self.now = start.astimezone(timezone.utc)
        self.step = step

    def __call__(self) -> datetime:
        current = self.now
        self.now = current + self.step
        return current

    def advance(self, delta: timedelta) -> None:
        """Jump forward, e.g. a week between two sessions."""
        self.now += delta


def ensure_utc(value: datetime) -> datetime:
    """Return `value` in UTC; naive datetimes are refused rather than guessed."""
    if value.tzinfo is None:
        raise ValueError(f"naive datetime {value.isoformat()}: pass a timezone-aware datetime")
    return value.astimezone(timezone.utc)


def format_time(value: datetime | None) -> str:
    """The one textual form of a time shown to a model: `2024-01-01 09:00 UTC`."""
    if value is None:
        return "unknown time"
    return ensure_utc(value).strftime("%Y-%m-%d %H:%M UTC")
