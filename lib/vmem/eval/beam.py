"""Load BEAM's chats (Tavakoli et al., "Beyond a Million Tokens", 2025) as vmem messages.

BEAM holds long chats between a user and an assistant, exactly the MemGPT setting, with
probing questions of ten types whose evidence is a list of message ids. Its folder layout
(`chats/100K/` of the `mohammadtavakoli78/BEAM` repository) is one folder per chat:

    N/chat.json                                   batches of turns of messages
    N/probing_questions/probing_questions.json    {question type: [question, ...]}

This module turns such a folder into the `vmem.eval.locomo` values the rest of
`vmem.eval` works on, so every ranker and metric of `eval locomo` runs on it too:

- A chat is a `Conversation` whose `Session`s are BEAM's batches. Each message keeps its
  role (user or assistant; the user has no name), its content with BEAM's ` ->-> N,M`
  marker (the plan position the generator appended to user turns) removed, and its id as
  `meta["dia_id"]` (text, as LoCoMo's ids are) and `meta["turn"]` (the number).
- Only some user turns carry a time (`time_anchor`, "March-15-2024"). A message's
  `created_at` is the latest anchor seen so far plus one second per message since it, so
  messages keep their order; messages before the first anchor count from `START`.
- A question's evidence is its `source_chat_ids`: a list of ids, or for contradictions a
  mapping of lists (`first_statement`, `second_statement`), flattened. Ids naming no
  message are dropped and kept in `dropped_evidence`. Questions without any (most
  abstention and summarization ones) have no evidence and are skipped by the metrics.
  `category_label` is the question type, `category` its place in `QUESTION_TYPES`.

The data is BEAM's (CC BY-SA 4.0) and is never copied into this repository; pass its path.
Chats 1-10 of `chats/100K` were the developers' dev split; the rest is held out.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..messages import Message
from .errors import DatasetError
from .locomo import Conversation, Question, Session

QUESTION_TYPES = ("abstention", "contradiction_resolution", "event_ordering",
                  "information_extraction", "instruction_following", "knowledge_update",
                  "multi_session_reasoning", "preference_following", "summarization",
                  "temporal_reasoning")
START = datetime(2024, 1, 1, tzinfo=timezone.utc)
"""The time of messages before a chat's first time anchor."""
MAX_CONTENT_CHARS = 190_000
"""Longer messages (one BEAM paste is 348,853 characters) are cut to this, under recall's
limit per message."""

_MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")
_ANCHOR = re.compile(r"([A-Za-z]+)-(\d{1,2})-(\d{4})")


def chat_numbers(root: str | Path) -> list[int]:
    """The numbers of the chat folders under `root`, in order."""
    root = Path(root)
    if not root.is_dir():
        raise DatasetError(f"no BEAM folder at {root}: fetch the BEAM repository and pass "
                           "its chats/100K folder")
    numbers = sorted(int(path.name) for path in root.iterdir()
                     if path.name.isdigit() and (path / "chat.json").is_file())
    if not numbers:
        raise DatasetError(f"{root} holds no chat folders (N/chat.json)")
    return numbers


def load_beam(root: str | Path, chats: range | None = None) -> list[Conversation]:
    """The chats under `root` (`chats`: only those numbers, each of which must exist)."""
    known = chat_numbers(root)
    wanted = known if chats is None else list(chats)
    missing = [number for number in wanted if number not in known]
    if missing:
        raise DatasetError(f"{root} has no chat {', '.join(map(str, missing))} "
                           f"(it has {known[0]}-{known[-1]})")
    return [load_chat(Path(root) / str(number)) for number in wanted]


def load_chat(folder: str | Path) -> Conversation:
    """One chat folder (see the module docstring) as a `Conversation`."""
    folder = Path(folder)
    batches = _read_json(folder / "chat.json")
    if not isinstance(batches, list):
        raise DatasetError(f"{folder}/chat.json: expected a list of batches")
    sessions: list[Session] = []
    anchor, since = START, 0
    for position, batch in enumerate(batches):
        number = int(batch.get("batch_number", position + 1))
        session = Session(number, None, None)
        for turn in batch.get("turns", []):
            for item in turn:
                if item.get("time_anchor"):
                    anchor, since = parse_anchor(item["time_anchor"]), 0
                session.messages.append(_message(item, number, anchor + timedelta(
                    seconds=since)))
                since += 1
        session.date = session.messages[0].created_at if session.messages else None
        sessions.append(session)
    conversation = Conversation(folder.name, (), sessions)
    known = conversation.dia_ids()
    questions = folder / "probing_questions" / "probing_questions.json"
    by_type = _read_json(questions) if questions.exists() else {}
    for kind, items in by_type.items():
        for item in items:
            evidence = [str(i) for i in _flat_ids(item.get("source_chat_ids"))]
            conversation.questions.append(Question(
                question=str(item["question"]),
                category=QUESTION_TYPES.index(kind) + 1 if kind in QUESTION_TYPES else 0,
                evidence=tuple(dict.fromkeys(i for i in evidence if i in known)),
                answer=item.get("answer") or item.get("ideal_answer"),
                dropped_evidence=tuple(i for i in evidence if i not in known),
                conversation_id=folder.name, category_label=kind))
    return conversation


def parse_anchor(text: str) -> datetime:
    """BEAM's "March-15-2024" as midnight UTC of that day (ValueError when unreadable)."""
    match = _ANCHOR.fullmatch(text.strip())
    try:
        if match is None:
            raise ValueError
        return datetime.strptime(" ".join(match.groups()), "%B %d %Y").replace(
            tzinfo=timezone.utc)
    except ValueError:
        raise ValueError(f"unreadable time anchor {text!r}: expected e.g. "
                         "'March-15-2024'") from None


def _message(item: dict[str, Any], session_id: int, created_at: datetime) -> Message:
    role = item.get("role")
    if role not in ("user", "assistant"):
        raise DatasetError(f"message {item.get('id')}: role {role!r} is neither user nor "
                           "assistant")
    content = _MARKER.sub("", str(item.get("content", "")))[:MAX_CONTENT_CHARS]
    return Message(role=role, content=content, session_id=session_id,
                   turn=int(item["id"]), created_at=created_at,
                   meta={"dia_id": str(item["id"]), "turn": int(item["id"])})


def _flat_ids(raw: Any) -> list[Any]:
    """A list of ids, a mapping of lists of ids, or nothing, as one flat list."""
    if raw is None:
        return []
    if isinstance(raw, dict):
        return [i for value in raw.values() for i in _flat_ids(value)]
    if isinstance(raw, list):
        return [i for value in raw for i in _flat_ids(value)]
    return [raw]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetError(f"cannot read {path}: {exc}") from exc
