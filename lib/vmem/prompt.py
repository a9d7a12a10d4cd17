"""The words the main context writes into the prompt itself: the summary block of the
system message, the memory status line, the memory-pressure notice, and the note that
heads a message shown clipped.

Pure functions of counts and texts, kept apart from the token accounting in
`vmem.context` so that what the model reads about its own memory is in one place.
"""

from __future__ import annotations

from datetime import datetime

from .clock import format_time
from .text import plural

SEARCH_TOOL = "conversation_search"  # the tool named in the prompt for finding evicted messages


def system_text(system: str, core: str, summary: str) -> str:
    """The system message: system text, rendered core memory, summary block (if any)."""
    return "\n\n".join(part for part in (system, core, summary) if part)


def summary_text(summary: str | None, evicted: int, unsummarized: int) -> str:
    """The summary block: how many messages were evicted to recall (and how to find them),
    the running summary, and a note when summarizing failed for the last `unsummarized`
    of them. Empty before the first eviction."""
    if not evicted and not summary:
        return ""
    lines = ["<summary>"]
    if evicted:
        lines.append(f"{plural(evicted, 'earlier message')} no longer in this context "
                     f"{'is' if evicted == 1 else 'are'} stored in recall memory (find "
                     f"them with {SEARCH_TOOL}).")
    lines.append(summary or "No summary of them is available.")
    if unsummarized:
        lines.append(f"Note: summarizing failed, so this summary leaves out the last "
                     f"{plural(unsummarized, 'evicted message')}; search recall memory "
                     "for them.")
    lines.append("</summary>")
    return "\n".join(lines)


def status_text(recall_count: int, archival_count: int | None,
                last_change: datetime | None) -> str:
    """The memory status line; `archival_count` None leaves archival memory out."""
    archival = f", {plural(archival_count, 'record')} in archival memory" \
        if archival_count is not None else ""
    last = format_time(last_change) if last_change else "none yet"
    return f"Memory status: {plural(recall_count, 'message')} in recall memory{archival}; " \
           f"last change {last}."


def pressure_text(total: int, max_tokens: int) -> str:
    """The memory-pressure notice queued once the context reaches its warning level."""
    percent = round(100 * total / max_tokens)
    return (f"Memory pressure: the context is at {percent}% of its {max_tokens} "
            "tokens. The oldest messages will soon be evicted to recall memory and "
            "summarized; save important facts to core or archival memory now.")


def clip_note(message_id: int | None, role: str, tokens: int) -> str:
    """The note that heads a message shown clipped: its id, its whole size and where the
    whole message is. A user or assistant message can be searched for; a tool result or
    a notice is never searched, so its note says how to see more instead."""
    head = f"[message {message_id}, {tokens:,} tokens, clipped:"
    if role in ("user", "assistant"):
        return f"{head} the whole message is in recall memory; {SEARCH_TOOL} or " \
               f"recall.get({message_id}) reads it]"
    what = "tool result" if role == "tool" else "notice"
    return f"{head} the whole {what} is kept in recall storage (recall.get({message_id})); " \
           "ask for less to see the rest, e.g. a narrower query]"
