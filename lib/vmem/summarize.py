"""Recursive summaries of evicted messages.

When the main context flushes, the messages it evicts are folded into a running summary:
`summary = summarizer.summarize(old_summary, evicted)`. The messages themselves stay in
recall storage, so the summary only needs the gist: who said what, and the facts stated.

A `Summarizer` is anything with that one method, so an LLM can replace the default
`ExtractiveSummarizer`, which is deterministic and uses only the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .messages import Message


@runtime_checkable
class Summarizer(Protocol):
    """Folds evicted messages into the running summary.

    `previous` is the current summary (None before the first flush); `evicted` are the
    messages leaving the context, oldest first (system notices included, to skip), as the
    context showed them: a message too big for it arrives as its clipped view, so what a
    summarizer reads is bounded by the budget (the whole stays in recall). Return
    the new summary, which replaces `previous`. Raising or returning an empty string
    counts as a failure: the context keeps the old summary and says so.
    """

    def summarize(self, previous: str | None, evicted: Sequence[Message]) -> str:
        """The new running summary: `previous` (None at first) updated with `evicted`."""


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_SECOND_SENTENCE_MIN = 1.0  # a second sentence must state something
_FIRST_PERSON = frozenset({"i", "i'm", "i’m", "my", "me", "mine", "we", "our", "us"})
_FACT_CUES = frozenset({
    "is", "are", "was", "were", "am", "live", "lives", "lived", "work", "works", "worked",
    "like", "likes", "love", "loves", "prefer", "prefers", "hate", "hates", "born", "moved",
    "name", "named", "called", "allergic", "favorite", "favourite", "birthday", "need",
    "needs", "want", "wants", "plan", "plans", "will", "bought", "started", "joined",
})
_FILLER = frozenset({
    "hi", "hello", "hey", "thanks", "thank", "you", "ok", "okay", "sure", "great", "bye",
    "yes", "no", "good", "morning", "evening", "cool", "nice", "see", "ya", "welcome",
})


@dataclass(frozen=True)
class _Note:
    text: str
    score: float


class ExtractiveSummarizer:
    """A deterministic first-person summary: one line per evicted message, within a cap.

    Each user or assistant message becomes one line naming its speaker ("Ada told me:
    ...", "I said: ...", "I called archival_memory_search.") followed by its most
    informative sentences, scored
    by numbers, names, first-person statements and fact verbs (not simply its first words).
    Tool results and system notices are left out: the summary sits in the system
    message, and a tool result is paged-in data (possibly untrusted) that recall keeps
    anyway. Lines of the previous summary are kept, oldest first; when the whole exceeds
    `max_words`, the least informative lines are dropped (older ones first among equals).
    """

    def __init__(self, max_words: int = 60, words_per_message: int = 24) -> None:
        if max_words < 1 or words_per_message < 1:
            raise ValueError("max_words and words_per_message must be at least 1")
        self.max_words = max_words
        self.words_per_message = words_per_message

    def summarize(self, previous: str | None, evicted: Sequence[Message]) -> str:
        """Keep the highest-scoring sentences of the old summary and the evicted messages."""
        notes = [_Note(line, score_sentence(line.split(": ", 1)[-1]))
                 for line in (previous or "").splitlines() if line.strip()]
        notes += [self._note(message) for message in evicted
                  if message.role in ("user", "assistant")]
        words = sum(len(note.text.split()) for note in notes)
        while words > self.max_words and len(notes) > 1:
            weakest = min(range(len(notes)), key=lambda index: (notes[index].score, index))
            words -= len(notes.pop(weakest).text.split())
        lines = [note.text for note in notes]
        if lines and words > self.max_words:
            lines[0] = _truncate(lines[0], self.max_words)
        return "\n".join(lines)

    def _note(self, message: Message) -> _Note:
        gist, score = self._gist(message.content)
        calls = [str(call.get("function", {}).get("name", "a tool"))
                 for call in message.tool_calls or ()]
        if message.role == "user":
            text = f"{message.name or 'The user'} told me: {gist or '(an empty message)'}"
        elif calls:
            text = f"I called {', '.join(calls)}" + (f" and said: {gist}" if gist else ".")
        else:
            text = f"I said: {gist or '(nothing)'}"
        return _Note(text, score)

    def _gist(self, content: str) -> tuple[str, float]:
        """The best one or two sentences of `content` (in their order) and their score."""
        sentences = [part.strip() for part in _SENTENCE_END.split(content) if part.strip()]
        if not sentences:
            return "", 0.0
        ranked = sorted(range(len(sentences)),
                        key=lambda index: (-score_sentence(sentences[index]), index))
        chosen = [ranked[0]]
        if len(ranked) > 1 and score_sentence(sentences[ranked[1]]) >= _SECOND_SENTENCE_MIN:
            both = len(sentences[ranked[0]].split()) + len(sentences[ranked[1]].split())
            if both <= self.words_per_message:
                chosen.append(ranked[1])
        text = " ".join(sentences[index] for index in sorted(chosen))
        score = sum(score_sentence(sentences[index]) for index in chosen)
        return _truncate(text, self.words_per_message), score


def score_sentence(sentence: str) -> float:
    """How much a sentence states: numbers, names, first person, fact verbs; 0 for small talk.

    Questions count half: they show what was asked, but state less.
    """
    words = _WORD.findall(sentence)
    lowered = [word.lower() for word in words]
    if not words or all(word in _FILLER for word in lowered):
        return 0.0
    score = min(len(words), 12) / 12
    score += 2.0 * sum(any(ch.isdigit() for ch in word) for word in words)
    score += 1.5 * sum(word[0].isupper() and word != "I" for word in words[1:])
    score += 1.0 if any(word in _FIRST_PERSON for word in lowered) else 0.0
    score += min(2, sum(word in _FACT_CUES for word in lowered))
    return score / 2 if sentence.rstrip().endswith("?") else score


def _truncate(text: str, max_words: int) -> str:
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words]) + "…"
