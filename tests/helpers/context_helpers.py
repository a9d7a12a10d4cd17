"""Shared by the main-context tests: failing summarizers and an independent token count."""

from __future__ import annotations

import json
import math


class Boom:
    """A summarizer that raises, like an LLM summarizer whose model is offline."""

    def summarize(self, previous, evicted):
        raise RuntimeError("model offline")


class Silent:
    """A summarizer that returns only whitespace, which counts as a failure."""

    def summarize(self, previous, evicted):
        return "   "


def approx(text: str) -> int:
    """The lesson's rule, written out independently of vmem: ceil(words x 1.3)."""
    return math.ceil(len(text.split()) * 1.3)


def prompt_tokens(rendered: list[dict], tools: list[dict] | None = None) -> int:
    """Tokens of a rendered prompt (and tool schemas) counted the way the design says:
    each message's role, name, content, tool calls and tool_call_id together."""
    total = approx(json.dumps(tools)) if tools else 0
    for chat in rendered:
        parts = [chat["role"], chat.get("name"), chat["content"], chat.get("tool_call_id")]
        for call in chat.get("tool_calls") or ():
            parts += [call["function"]["name"], call["function"]["arguments"]]
        total += approx(" ".join(part for part in parts if part))
    return total
