"""The command line: `python -m vmem demo | chat | eval | grade` (also installed as `vmem`).

    demo   the lesson's scripted agent, one line per step (--budget N, --db PATH)
    chat   talk to an agent: rule policy offline, or a real model with --model
    eval   evidence recall and evidence in budget (vmem.eval.cli)
    copy   copy the agents of one store into another: SQLite file <-> PostgreSQL URL
    grade  execute and score exercise notebooks (vmem.course.classroom)
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from .errors import VMemError


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run one subcommand; its exit status (0 success, 1 failure, 2 misuse)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "eval":
        from .eval.cli import main as eval_main

        return eval_main(argv[1:], out=out)
    if argv and argv[0] == "grade":
        from .course.classroom import main as grade_main

        return grade_main(argv[1:])
    args = _parser().parse_args(argv)
    out = out or sys.stdout
    try:
        if args.command == "copy":
            return _copy(args.source, args.destination, out)
        if args.command == "demo":
            from .course.demo import run_demo

            return run_demo(args.db, args.budget, out)
        from .course.chat import run_chat

        return run_chat(args, sys.stdin, out)
    except VMemError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `python -m vmem demo | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _parser() -> argparse.ArgumentParser:
    from .course.demo import DEMO_BUDGET
    from .memory import DEFAULT_MAX_TOKENS

    parser = argparse.ArgumentParser(
        prog="python -m vmem", description="vmem: virtual context for LLM agents, the "
        "MemGPT way (the prompt is RAM, SQLite is disk, memory tools page between them).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = sub.add_parser(
        "demo", help="the lesson's scripted agent, one line per step",
        description="Play the lesson's scripted agent (no LLM): it saves three facts to "
        "archival memory, small talk fills the main context until a flush evicts the "
        "oldest turns into recall with a summary, then a follow-up question is answered "
        "from archival memory with a citation. Run twice with the same --db to see the "
        "second session recall the first. The output is deterministic.")
    demo.add_argument("--budget", type=_positive, default=DEMO_BUDGET, metavar="N",
                      help=f"the main context's max_tokens (default {DEMO_BUDGET}); smaller "
                           "flushes sooner")
    demo.add_argument("--db", default=":memory:", metavar="PATH",
                      help="keep the agent in this SQLite file (default: in memory only)")
    chat = sub.add_parser(
        "chat", help="talk to an agent with memory",
        description="An interactive session. Without --model a rule policy answers "
        "offline (statements are saved, questions are searched and cited); with --model "
        "any OpenAI-compatible endpoint decides (needs `pip install openai`). Commands: "
        "/context, /core, /search QUERY, /help, /quit.")
    chat.add_argument("--db", default=":memory:", metavar="PATH",
                      help="keep the agent in this SQLite file (default: in memory only)")
    chat.add_argument("--budget", type=_positive, default=DEFAULT_MAX_TOKENS, metavar="N",
                      help=f"the main context's max_tokens (default {DEFAULT_MAX_TOKENS})")
    chat.add_argument("--model", metavar="NAME", help="a chat model, e.g. gpt-4o-mini or "
                      "llama3.1 (default: the offline rule policy)")
    chat.add_argument("--base-url", metavar="URL", help="an OpenAI-compatible endpoint, e.g. "
                      "http://localhost:11434/v1 for Ollama (default: OpenAI)")
    chat.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                      help="the environment variable holding the API key (default "
                           "OPENAI_API_KEY; local servers need none)")
    copy = sub.add_parser(
        "copy", help="copy agents between stores (an SQLite file, a PostgreSQL URL)",
        description="Copy every agent of SOURCE into DESTINATION: sessions, messages, "
        "archival records, core memory with its history, and the saved context; ids are "
        "kept where free. The copy renders the same prompt and answers searches the "
        "same way. Example: python -m vmem copy agent.db postgresql://me@db.example/agents")
    copy.add_argument("source", help="an SQLite file or a postgresql:// URL")
    copy.add_argument("destination", help="an SQLite file or a postgresql:// URL (created "
                      "if missing; must not hold the same agents)")
    for name, text in (("eval", "evidence recall@k and evidence in budget (see `eval --help`)"),
                       ("grade", "execute and score exercise notebooks (see `grade --help`)")):
        sub.add_parser(name, help=text, add_help=False)
    return parser


def _copy(source: str, destination: str, out: TextIO) -> int:
    from .storage.backends import is_server_url, open_backend
    from .transfer import copy_agents

    if not is_server_url(source) and not os.path.exists(source):
        print(f"error: {source} does not exist", file=sys.stderr)
        return 2
    reader = open_backend(source)
    try:
        writer = open_backend(destination)
        try:
            print(copy_agents(reader, writer), file=out)
        finally:
            writer.close()
    finally:
        reader.close()
    return 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"wants a positive number of tokens, got {text!r}")
    return value


if __name__ == "__main__":
    sys.exit(main())
