"""Load the LoCoMo benchmark (Maharana et al., ACL 2024) as vmem messages and questions.

LoCoMo is a set of very long two-person conversations (about 19 to 32 sessions each, days
or weeks apart) with questions whose evidence is a list of turn ids ("D<session>:<turn>").
This module turns one file of it into plain values the rest of `vmem.eval` works on:

- A `Conversation` is a list of `Session`s of `vmem.Message`s, in order.
  Two people talk and neither is "the assistant", so **both speakers are mapped to role
  "user" with `name` set to the speaker** (the Chat Completions way of telling two users
  apart). `session_id` is the session number, `turn` is the turn's 1-based position in
  its session, `meta["dia_id"]` is the dataset's turn id.
- Only sessions carry a time, as free text ("1:56 pm on 8 May, 2023"). A turn's
  `created_at` is that time (UTC) plus its 0-based index in seconds, so turns keep their
  order and date filters still work. A session whose date is missing or unreadable gets
  `created_at=None`; dropping it silently would be worse.
- A turn that shared a photo has `meta["blip_caption"]`, a machine caption of the image.
  It is **not** part of `content`: `content` is what the speaker typed. A ranker may index
  the caption as extra text; `vmem.eval.runner` reports that as a separate option
  (`+caption`) so the table shows what it buys. The image search `query` and URLs are
  authoring metadata of the dataset and are not kept.
- A `Question` keeps the answer as given (an `int` stays an `int`; category-5 items
  usually have only `adversarial_answer`, so `answer` may be None), the category code and
  its name, and evidence ids normalised: every `D<n>:<m>` in each evidence string is
  extracted (also the malformed "D:11:26"), leading zeros are dropped ("D30:05" is
  "D30:5"), and ids that name no turn of the conversation are dropped and kept in
  `dropped_evidence` so they can be counted.
- Observations (one fact about a speaker with its source turn or turns) and session
  summaries (one paragraph per session) are `Unit`s: a text plus the dia_ids it stands
  for. A summary stands for every turn of its session. That lets the same evidence-recall
  metric score any retrieval unit.

The data is CC BY-NC 4.0 and is never copied into this repository; pass its path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..messages import Message
from .errors import DatasetError

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_ID = re.compile(r"D:?0*(\d+):0*(\d+)")
_DATE_TEXT = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*", re.I)
_MONTHS = {name: number for number, name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august",
     "september", "october", "november", "december"), start=1)}


@dataclass
class Question:
    """One benchmark question with its resolvable evidence turn ids."""

    question: str
    category: int
    evidence: tuple[str, ...]
    answer: str | int | None = None
    adversarial_answer: str | None = None
    dropped_evidence: tuple[str, ...] = ()
    conversation_id: str = ""
    category_label: str | None = None

    @property
    def category_name(self) -> str:
        """The category as a word: `category_label` if set, else the LoCoMo name of the code
        ("multi-hop", "temporal", ...), else "category-N"."""
        if self.category_label:
            return self.category_label
        return CATEGORY_NAMES.get(self.category, f"category-{self.category}")


@dataclass
class Unit:
    """A retrieval unit other than a turn (an observation or a session summary).

    `dia_ids` are the turns it stands for: an observation's source turn(s), or every turn of
    a summary's session.
    """

    text: str
    dia_ids: tuple[str, ...]
    session_id: int
    speaker: str | None = None


@dataclass
class Session:
    """One session: its number, its date (text and parsed), and its turns in order."""

    session_id: int
    date_text: str | None
    date: datetime | None
    messages: list[Message] = field(default_factory=list)


@dataclass
class Conversation:
    """One conversation: sessions of messages, questions, and the other retrieval units."""

    conversation_id: str
    speakers: tuple[str, ...]
    sessions: list[Session]
    questions: list[Question] = field(default_factory=list)
    observations: list[Unit] = field(default_factory=list)
    summaries: list[Unit] = field(default_factory=list)

    def messages(self) -> list[Message]:
        """Every turn in conversation order."""
        return [message for session in self.sessions for message in session.messages]

    def dia_ids(self) -> set[str]:
        """The ids of every turn."""
        return {message.meta["dia_id"] for message in self.messages()}


def parse_session_date(text: str) -> datetime:
    """Parse LoCoMo's "1:56 pm on 8 May, 2023" into a UTC datetime.

    Raises ValueError naming the text and the expected shape when it does not parse.
    """
    match = _DATE_TEXT.fullmatch(text)
    month = _MONTHS.get(match.group(5).lower()) if match else None
    if not match or month is None:
        raise ValueError(f"unreadable session date {text!r}: "
                         "expected e.g. '1:56 pm on 8 May, 2023'")
    hour, minute, half, day, _, year = match.groups()
    hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return datetime(int(year), month, int(day), hour_24, int(minute), tzinfo=timezone.utc)


def normalize_evidence(raw: list[Any], known: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Split raw evidence strings into (resolvable ids, dropped pieces), both in order.

    Every `D<n>:<m>` inside each string counts (leading zeros dropped, duplicates once);
    a string with no id in it, or an id naming no turn in `known`, goes to dropped.
    """
    kept: list[str] = []
    dropped: list[str] = []
    for item in raw:
        found = [f"D{int(s)}:{int(t)}" for s, t in _EVIDENCE_ID.findall(str(item))]
        if not found:
            dropped.append(str(item))
        for dia_id in found:
            if dia_id not in known:
                dropped.append(dia_id)
            elif dia_id not in kept:
                kept.append(dia_id)
    return tuple(kept), tuple(dropped)


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read a LoCoMo JSON file into `Conversation`s (see the module docstring)."""
    return list(iter_locomo(path))


def iter_locomo(path: str | Path) -> Iterator[Conversation]:
    """Like `load_locomo`, one conversation at a time."""
    path = Path(path)
    if not path.exists():
        raise DatasetError(
            f"no LoCoMo file at {path}: download locomo10.json (see ../shared/data/README.md) "
            "and pass its path")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of samples, got {type(data).__name__}")
    for index, sample in enumerate(data):
        yield _conversation(sample, f"{path} sample {index}")


def _conversation(sample: dict[str, Any], where: str) -> Conversation:
    try:
        conv = sample["conversation"]
        speakers = tuple(conv[key] for key in ("speaker_a", "speaker_b") if key in conv)
    except (KeyError, TypeError) as exc:
        raise DatasetError(f"{where}: no 'conversation' object with speakers") from exc
    conversation_id = str(sample.get("sample_id", where))
    numbers = sorted(int(m.group(1)) for key in conv if (m := _SESSION_KEY.fullmatch(key)))
    sessions = [_session(number, conv, where) for number in numbers]
    result = Conversation(conversation_id, speakers, sessions)
    known = result.dia_ids()
    for item in sample.get("qa", []):
        evidence, dropped = normalize_evidence(item.get("evidence", []), known)
        result.questions.append(Question(
            question=item["question"], category=int(item["category"]), evidence=evidence,
            answer=item.get("answer"), adversarial_answer=item.get("adversarial_answer"),
            dropped_evidence=dropped, conversation_id=conversation_id))
    result.observations = _observations(sample.get("observation", {}), known)
    by_session = {s.session_id: tuple(m.meta["dia_id"] for m in s.messages) for s in sessions}
    for key, text in sorted(sample.get("session_summary", {}).items(), key=_key_number):
        number = _key_number(key)[0]
        if number in by_session:
            result.summaries.append(Unit(str(text), by_session[number], number))
    return result


def _session(number: int, conv: dict[str, Any], where: str) -> Session:
    date_text = conv.get(f"session_{number}_date_time")
    try:
        date = parse_session_date(date_text) if date_text else None
    except ValueError:
        date = None
    session = Session(number, date_text, date)
    turns = conv[f"session_{number}"]
    if not isinstance(turns, list):
        raise DatasetError(f"{where}: session_{number} is not a list of turns")
    for index, turn in enumerate(turns):
        meta: dict[str, Any] = {"dia_id": _normal_id(turn["dia_id"])}
        if turn.get("blip_caption"):
            meta["blip_caption"] = str(turn["blip_caption"])
        session.messages.append(Message(
            role="user", content=str(turn.get("text", "")), name=str(turn["speaker"]),
            session_id=number, turn=index + 1,
            created_at=None if date is None else date + timedelta(seconds=index), meta=meta))
    return session


def _observations(raw: dict[str, Any], known: set[str]) -> list[Unit]:
    units = []
    for key, by_speaker in sorted(raw.items(), key=_key_number):
        number = _key_number(key)[0]
        for speaker, items in by_speaker.items():
            for item in items:
                text, ids = item[0], item[1] if len(item) > 1 else []
                ids = ids if isinstance(ids, list) else [ids]
                dia_ids, _ = normalize_evidence(ids, known)
                units.append(Unit(str(text), dia_ids, number, speaker))
    return units


def _normal_id(dia_id: str) -> str:
    found = _EVIDENCE_ID.findall(dia_id)
    return f"D{int(found[0][0])}:{int(found[0][1])}" if found else dia_id


def _key_number(item: Any) -> tuple[int, str]:
    key = item[0] if isinstance(item, tuple) else item
    match = re.search(r"\d+", key)
    return (int(match.group()) if match else -1, key)
