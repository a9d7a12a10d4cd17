"""`python -m vmem chat`: talk to an agent with memory, in a terminal or through a pipe.

Without `--model` the `RulePolicy` answers offline (statements are saved to archival
memory, questions are searched and answered with a citation); with `--model` a real chat
model decides through `OpenAIPolicy`. Each turn prints its tool calls, one line per step,
then the reply. Slash commands look inside the memory without going through the agent.
Input may be piped (`printf 'hi\\n/context\\n' | python -m vmem chat`): each line is echoed
so that the transcript reads as a conversation.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

from ..agent import Agent, AnyPolicy, RulePolicy
from ..memory import Memory
from .demo import step_lines

HELP = """commands:
  /context        where the token budget goes, section by section
  /core           the core memory blocks pinned in the prompt
  /search QUERY   search archival memory and recall memory (past messages)
  /help           this list
  /quit           end the session (so does end of input)
anything else is a message to the agent"""


def build_policy(args: argparse.Namespace) -> AnyPolicy:
    """The rule policy, or `OpenAIPolicy` when a model is named (key from --api-key-env)."""
    if not args.model:
        return RulePolicy()
    from ..llm import OpenAIPolicy

    return OpenAIPolicy(args.model, base_url=args.base_url,
                        api_key=os.environ.get(args.api_key_env) or None)


def run_chat(args: argparse.Namespace, stdin: TextIO, out: TextIO) -> int:
    """Run the session until /quit or end of input; 0, or 2 if the model cannot be used."""
    try:
        policy = build_policy(args)
    except ImportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    interactive = stdin.isatty()
    with Memory.open(args.db, max_tokens=args.budget) as memory:
        agent = Agent(memory, policy)
        who = f"model {args.model}" if args.model else "the rule policy (offline, no LLM)"
        where = "memory only" if args.db in ("", ":memory:") else args.db
        print(f"vmem chat with {who}; session {memory.session_id}, {where}. "
              "/help lists commands.", file=out)
        while True:
            line = _read(stdin, out, interactive)
            if line is None:
                break
            text = line.strip()
            if not text:
                continue
            if not interactive:
                print(f"you> {text}", file=out)
            if text.startswith("/"):
                if not _command(text, memory, out):
                    break
                continue
            turn = agent.step(text)
            for step in step_lines(turn, answer=False):
                print(f"  {step}", file=out)
            if turn.error:
                print(f"  ({turn.stop_reason}: {turn.error})", file=out)
            print(f"agent> {turn.reply or '(no reply)'}", file=out)
        print("bye", file=out)
    return 0


def _read(stdin: TextIO, out: TextIO, interactive: bool) -> str | None:
    """The next input line, or None at end of input (Ctrl-D) or on Ctrl-C."""
    if interactive and stdin is sys.stdin:
        try:
            return input("you> ")
        except (EOFError, KeyboardInterrupt):
            print(file=out)
            return None
    line = stdin.readline()
    return line if line else None


def _command(text: str, memory: Memory, out: TextIO) -> bool:
    """Run one slash command; False when the session should end."""
    name, _, rest = text.partition(" ")
    if name in ("/quit", "/exit"):
        return False
    if name == "/help":
        print(HELP, file=out)
    elif name == "/context":
        print(context_table(memory.context.overview()), file=out)
    elif name == "/core":
        for block in memory.core:
            flags = ", read only" if block.read_only else ""
            print(f"[{block.label}] {block.chars}/{block.limit} chars, version "
                  f"{block.version}{flags}\n  {block.value or '(empty)'}", file=out)
    elif name == "/search":
        query = rest.strip()
        if not query:
            print("usage: /search QUERY, e.g. /search sister birthday", file=out)
        else:
            archival = memory.archival.search(query)  # both stores act within memory.scope
            recall = memory.recall.search(query)
            print(f"archival memory: {archival.render()}\nrecall memory: {recall.render()}",
                  file=out)
    else:
        print(f"unknown command {name}; /help lists the commands", file=out)
    return True


def context_table(parts: dict[str, Any]) -> str:
    """`MainContext.overview()` as a small table: tokens per section against the budget."""
    rows = [(section, parts[section]) for section in
            ("system", "core", "summary", "messages", "status", "tools")]
    lines = [f"{section:<10}{tokens:>7}" for section, tokens in rows]
    share = round(100 * parts["total"] / parts["max_tokens"])
    lines.append(f"{'total':<10}{parts['total']:>7} of {parts['max_tokens']} ({share}%)")
    lines.append(f"{parts['in_context']} messages in context, {parts['evicted']} evicted to "
                 "recall memory")
    return "\n".join(lines)
