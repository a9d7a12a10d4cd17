"""What a tool call did, as data; and the one place that data becomes the model's text.

A tool call ends in one `Outcome`: `Edited` (a core block changed), `Saved` (an archival
record was created, with the guard's verdict and the older records it may replace),
`Updated` (a correction superseded a record), `Found` (a page of search hits, each a
`ShownHit` carrying its `Hit` and the guard's verdict), `Sent` (the reply to the user) or
`Failed` (an error kind and what to do instead). `ToolResult` adds the tool's name, the
time and whether the call asked for a heartbeat.

Parts of the program read these fields: the agent loop, the rule policy, the demo, the
widgets. Only the model reads text, and `ToolResult.render()` is where it is written, so
the wording can change without anything downstream breaking.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from .clock import format_time
from .guard import Guard, Verdict, wrap_untrusted
from .messages import Hit, Message, Page, Record

TRUSTED = Verdict(flagged=False)
"""The verdict on text the guard did not flag."""


@dataclass(frozen=True)
class ShownHit:
    """One search hit as the model was shown it: the store's `Hit` and the guard's verdict.

    A flagged verdict means the hit was quarantined: shown as untrusted data, with the
    reasons, never as something to use or follow.
    """

    hit: Hit
    verdict: Verdict = TRUSTED

    @property
    def kind(self) -> Literal["record", "message"]:
        """"message" for a recall hit (a past `Message`), "record" for an archival one."""
        return "message" if isinstance(self.hit.record, Message) else "record"

    @property
    def id(self) -> int:
        """The record or message id, as cited: `[record N]` or `[message N]`."""
        return self.hit.record.id

    @property
    def session_id(self) -> int | None:
        """The session the hit was said or saved in."""
        return self.hit.record.session_id

    @property
    def turn(self) -> int | None:
        """The turn the hit was said or saved in."""
        value = self.hit.record
        return value.turn if isinstance(value, Message) else value.turn_id

    @property
    def text(self) -> str:
        """The message's content or the record's text, unquoted."""
        value = self.hit.record
        return value.content if isinstance(value, Message) else value.text

    @property
    def speaker(self) -> str | None:
        """Who said a message (its name, else its role); None for a record."""
        value = self.hit.record
        return (value.name or value.role) if isinstance(value, Message) else None

    @property
    def quarantined(self) -> bool:
        """True when the guard flagged the hit: it is data to report, never to use."""
        return self.verdict.flagged

    def cite(self) -> str:
        """The hit's cited line, quarantined when the verdict is flagged."""
        value, note = self.hit.record, self.hit.note
        if isinstance(value, Message):
            return value.cite(quarantine=self.verdict.reasons if self.quarantined else (),
                              note=note)
        if self.quarantined and not value.flagged:  # a record stored without a scan
            value = replace(value, flagged=True, flag_reasons=self.verdict.reasons)
        return value.cite(note=note)


def judged(hit: Hit, guard: Guard) -> ShownHit:
    """`hit` with the verdict it is shown under: a record flagged when it was saved keeps
    its own reasons; anything else is scanned now (a record imported without a scan, a
    message a user planted in recall just by saying it)."""
    value = hit.record
    if isinstance(value, Record) and value.flagged:
        return ShownHit(hit, Verdict(True, value.flag_reasons))
    return ShownHit(hit, guard.scan(value.content if isinstance(value, Message) else value.text))


@dataclass(frozen=True)
class Edited:
    """A core memory block was changed: which one, how, and its size afterwards."""

    label: str
    action: Literal["append", "replace", "insert", "rethink"]
    chars: int
    limit: int

    def render(self) -> str:
        verb = {"append": "Appended to", "replace": "Replaced text in",
                "insert": "Inserted a line into", "rethink": "Rewrote"}[self.action]
        return (f"{verb} core block {self.label!r}; it now holds {self.chars} of "
                f"{self.limit} characters.")


@dataclass(frozen=True)
class Saved:
    """An archival record was created: its id, where it came from, the guard's verdict
    (a flagged record is stored quarantined)."""

    record_id: int
    session_id: int | None
    turn: int | None
    verdict: Verdict = TRUSTED
    conflicts: tuple[Record, ...] = ()
    """Older records it may replace (the supersession detector's candidates), still valid."""
    retired: tuple[int, ...] = ()
    """Older records it replaced entirely, invalidated by the offline policy."""

    def render(self) -> str:
        text = (f"Saved as archival record {self.record_id} (session {_known(self.session_id)}"
                f", turn {_known(self.turn)}). Cite it as [record {self.record_id}].")
        if self.verdict.flagged:
            text += (" The guard flagged it as directive-shaped ("
                     + "; ".join(self.verdict.reasons)
                     + "): it is stored quarantined and will be shown as untrusted data.")
        if self.retired:
            ids = ", ".join(f"[record {n}]" for n in self.retired)
            text += f" It replaces {ids}, now invalidated (superseded by this record)."
        if self.conflicts:
            lines = "\n".join(record.cite() for record in self.conflicts)
            text += ("\nIt may change what these older records say:\n"
                     + wrap_untrusted(lines, source="archival memory")
                     + "\nIf it replaces one, call archival_memory_update with that record_id "
                     "and this content (this record is linked, not stored twice).")
        return text


@dataclass(frozen=True)
class Updated:
    """A correction: record `old_id` is invalidated, superseded by `record_id` (a new
    record, or an identical one already stored when `linked`)."""

    old_id: int
    record_id: int
    session_id: int | None
    turn: int | None
    linked: bool = False

    def render(self) -> str:
        where = (f"the identical record {self.record_id} already stored" if self.linked else
                 f"new record {self.record_id} (session {_known(self.session_id)}, turn "
                 f"{_known(self.turn)})")
        return (f"Record {self.old_id} is invalidated (kept for history, hidden from search) "
                f"and superseded by {where}. Cite the fact as [record {self.record_id}].")


@dataclass(frozen=True)
class Found:
    """A page of search hits from `source` ("archival memory", "recall memory ..."),
    each with the verdict it is shown under."""

    page: Page
    source: str
    hits: tuple[ShownHit, ...]

    def render(self) -> str:
        lines = [self.page.summary_line(), *(hit.cite() for hit in self.hits)]
        return wrap_untrusted("\n".join(lines), source=self.source)


@dataclass(frozen=True)
class Sent:
    """`send_message` delivered `message` to the user."""

    message: str

    def render(self) -> str:
        return "Message sent to the user."


@dataclass(frozen=True)
class Failed:
    """The call did nothing. `kind` is machine-readable (`unknown_tool`, `invalid_json`,
    `bad_arguments`, `refused`, `guard`, `internal`); `reason` says what was
    wrong and what to do instead, for the model."""

    kind: str
    reason: str

    def render(self) -> str:
        return self.reason


Outcome = Edited | Saved | Updated | Found | Sent | Failed


@dataclass(frozen=True)
class ToolResult:
    """One tool call's result: the tool's name, its `Outcome`, the time, and whether the
    call asked to hand control back to the model (`heartbeat`).

    The properties read the outcome (`ok`, `error`, `record_id`, `page`, `hits`,
    `message`); `content` is the text of the tool message the model reads: status and time,
    then the result, or the failure and what to do instead.
    """

    name: str
    outcome: Outcome
    time: datetime | None = None
    heartbeat: bool = False

    @property
    def ok(self) -> bool:
        """False when the call failed and changed nothing."""
        return not isinstance(self.outcome, Failed)

    @property
    def error(self) -> str | None:
        """The failure's kind, None on success."""
        return self.outcome.kind if isinstance(self.outcome, Failed) else None

    @property
    def reason(self) -> str | None:
        """A failure's explanation (what was wrong, what to do instead); None on success."""
        return self.outcome.reason if isinstance(self.outcome, Failed) else None

    @property
    def record_id(self) -> int | None:
        """The id a successful insert or update stored (or linked)."""
        return self.outcome.record_id if isinstance(self.outcome, (Saved, Updated)) else None

    @property
    def page(self) -> Page | None:
        """The `Page` a search returned."""
        return self.outcome.page if isinstance(self.outcome, Found) else None

    @property
    def hits(self) -> tuple[ShownHit, ...]:
        """A search's hits with their verdicts, best first; () for other tools."""
        return self.outcome.hits if isinstance(self.outcome, Found) else ()

    @property
    def message(self) -> str | None:
        """The text `send_message` delivered to the user."""
        return self.outcome.message if isinstance(self.outcome, Sent) else None

    def render(self) -> str:
        """The tool message for the model, e.g. `[ok | 2024-03-04 09:00 UTC] Saved as ...`."""
        if isinstance(self.outcome, Failed):
            return f"[failed | {format_time(self.time)}] {self.name}: {self.outcome.render()}"
        return f"[ok | {format_time(self.time)}] {self.outcome.render()}"

    @property
    def content(self) -> str:
        """The rendered text (see `render`)."""
        return self.render()

    def __str__(self) -> str:
        return self.render()


def _known(value: int | None) -> str:
    return "?" if value is None else str(value)
