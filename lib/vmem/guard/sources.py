"""Provenance: where a text's words came from, and what is hostile whoever wrote it.

Instruction hierarchies, spotlighting and CaMeL all trust the user's own turns and distrust
tool output and documents; every public injection benchmark puts its attack in the latter.
So a source is part of a verdict (shared/DESIGN.md, section 7):

- `source_of(text, messages)` is the library's decision, never the model's say-so: text the
  agent stores that a user message of the prompt holds is the user's ("user"); text a tool
  result holds is "tool", with the call it came from; anything else is the agent's own
  ("agent"), judged as strictly as tool output.
- What a user says about their own assistant (its name, tone, length, language, format, a
  reminder) is not an injection. Some orders no user gives their own assistant: send data
  to an address or through a link, call a tool, forge a system or role marker, override
  the assistant's instructions, speak to "the AI reading this" in the third person, tell
  the user (as a third person) what to do, hide something from the user, wait for anyone
  else's words as a trigger. `hostile(views)` finds those marks; a text from the user is
  flagged only with one of them, whatever else the guard found in it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Protocol

__all__ = ["HOSTILE_KINDS", "Quoted", "hostile", "source_of"]

HOSTILE_KINDS = frozenset({"asks to send data", "calls a tool", "fake chat-template marker",
                           "plants harmful code", "exfiltrates through a link",
                           "overrides instructions"})
"""Pattern kinds (`vmem.guard.patterns`) that no user's own request has: a preference
about the reply never needs to set the assistant's instructions aside."""

_AI = (r"(?:ai|a\.i\.|assistant|language model|model|bot|chatbot|llm|agent|gpt|ia|ki|"
       r"intelligence artificielle|inteligencia artificial|intelligenza artificiale)s?")
# Marks read on the normalised text (lower case, look-alikes folded, punctuation kept).
_MARKS: tuple[tuple[str, str], ...] = (
    ("speaks to the AI reading it",
     rf"\b{_AI} (?:that |which |who )?(?:is |are )?(?:reads|reading|retrieves?|retrieving|"
     r"process(?:es|ing)?|sees?|seeing|summari[sz](?:es|ing)|pars(?:es|ing)|scrap(?:es|ing)|"
     r"index(?:es|ing)|crawl(?:s|ing)|got this far|gets this far|made it this far|"
     r"comes? across)\b|"
     r"\b(?:whoever|anyone|anybody) (?:reads|is reading|reading|processes|processing)\b|"
     rf"\bif you(?:'re| are) (?:an? )?(?:\w{{1,15}} )?{_AI}\b|"
     rf"\b(?:note|message|instructions?|attention|reminder|memo|hint|p\.?s\.?) (?:to|for) "
     rf"(?:the |any |all |every |an? )?(?:\w{{1,15}} )?{_AI}\b|"
     rf"\b(?:si eres|si tu es|se sei|se você é|se voce e|wenn du) (?:una?|ein[e]?|un) "
     rf"(?:\w{{1,15}} )?{_AI}\b|"
     rf"\b(?:la|le|l'|die|a) ?{_AI},? (?:que|qui|che|die) (?:lea|lee|lit|legge|lê|liest)\b|"
     rf"\b(?:nota|hinweis|remarque) (?:para|pour|per|für|fur) (?:la |l'|die |a )?{_AI}\b"),
    ("tells the user what to do",
     r"\b(?:tell|ask|urge|direct|redirect|send|convince|instruct|persuade|invite|encourage|"
     r"point|refer) (?:the |all |any |your )?(?:users?|readers?|visitors?|customers?|"
     r"people|everyone|humans?)\b(?! (?:guide|manual|interface|experience|group|forum))"),
    ("hides it from the user",
     r"\b(?:without (?:telling|informing|alerting|notifying|letting|showing) (?:the |your )?"
     r"(?:users?|them|him|her|anyone|readers?)|(?:do not|don'?t|never) (?:tell|inform|show|"
     r"mention (?:this|it|that) to|let) (?:the )?users?|(?:keep|hide) (?:this|it|that) "
     r"(?:secret |hidden )?from (?:the )?users?|(?:the )?users? (?:must|should|need|needs|"
     r"does|do|will)(?: not|n'?t) (?:know|see|notice|find out|be told)|secretly|covertly)\b"),
    ("sets a trigger for anyone else",
     r"\b(?:the )?next time (?:anyone|someone|somebody|anybody|a user|any user|another user)\b|"
     r"\b(?:whenever|when|if|once) (?:anyone|someone|somebody|anybody|any user|another user|"
     r"other users) (?:says|asks|mentions|types|writes|sends)\b"),
    ("sends data to an address",
     r"\b(?:send|forward|email|e-mail|mail|post|upload|submit|transmit|exfiltrate|leak|"
     r"copy|report|bcc|cc)\b[^.!?\n]{0,80}(?:https?://|www\.|\b[\w.+-]{1,64}@[\w-]{1,63}\."
     r"[a-z]{2,})"),
    ("forges a role marker",
     r"(?:^|\n)\s{0,4}(?:#{1,4}\s{0,2}|\[|<)?(?:system|developer|operator|admin|root)"
     r"(?: (?:note|message|notice|prompt|override|update|instruction|command))?\s{0,3}"
     r"(?:\]|>)?\s{0,3}:"),
)
@cache
def _compiled() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The marks, compiled on first use (a scan of the user's words that found something)."""
    return tuple((name, re.compile(rx)) for name, rx in _MARKS)


def hostile(plain: str) -> tuple[str, str] | None:
    """(name, evidence) of the first mark in `plain` (the normalised text) that no user's
    own request has, or None."""
    for name, regex in _compiled():
        match = regex.search(plain)
        if match:
            return name, match.group().strip()
    return None


class _Message(Protocol):
    role: str
    content: str
    name: str | None
    tool_call_id: str | None


@dataclass(frozen=True)
class Quoted:
    """Where stored words came from: `source` ("user", "tool" or "agent") and, for a tool,
    `origin`, the call that returned them ("tool result of fetch_page, call_1_2_1")."""

    source: str
    origin: str | None = None


COPIED = 0.5
"""The share of a text's word triples a message must hold for the text to count as copied
from it."""
_TOKEN = re.compile(r"\w+")


def _triples(text: str) -> set[tuple[str, ...]]:
    """The text's runs of three words (a shorter text is one run), case folded."""
    words = _TOKEN.findall(text.casefold())
    return {tuple(words[i:i + 3]) for i in range(max(1, len(words) - 2))} if words else set()


def _covered(triples: set[tuple[str, ...]], message: str) -> float:
    """The share of `triples` that `message` holds."""
    held = _triples(message)
    if len(next(iter(triples))) < 3:  # one or two words: runs of that length
        words = _TOKEN.findall(message.casefold())
        size = len(next(iter(triples)))
        held = {tuple(words[i:i + size]) for i in range(len(words) - size + 1)}
    return len(triples & held) / len(triples)


def source_of(text: str, messages: Iterable[_Message]) -> Quoted:
    """Where the words of `text`, which the agent is storing, came from: "user" when a user
    message of the prompt holds them (at least `COPIED` of their word triples), else "tool"
    when a tool result does (with the call), else "agent". The user's own message wins:
    text a user typed or pasted is theirs, and what no user would ask is flagged anyway."""
    triples = _triples(text)
    if not triples:
        return Quoted("agent")
    tool: _Message | None = None
    for message in reversed(list(messages)):
        if message.role not in ("user", "tool") or _covered(triples, message.content) < COPIED:
            continue
        if message.role == "user":
            return Quoted("user")
        tool = tool or message
    if tool is None:
        return Quoted("agent")
    return Quoted("tool", f"tool result of {tool.name or 'a tool'}, {tool.tool_call_id or '?'}")
