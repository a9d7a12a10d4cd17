"""The command line: `python -m vmem demo | chat | eval | grade` (also installed as `vmem`).

    demo   the lesson's scripted agent, one line per step (--budget N, --db PATH)
    chat   talk to an agent: rule policy offline, or a real model with --model
    eval   evidence recall and evidence in budget (vmem.eval.cli)
    copy   copy the agents of one store into another: SQLite file <-> PostgreSQL URL
    forget delete an agent (a scope) in every tier, leaving none of its text readable
    export write agents as an agent file (JSON, docs/AGENT_FILE.md) to stdout
    import store the agents of an agent file
    grade  execute and score exercise notebooks (vmem.course.classroom)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from .errors import StoreError, VMemError

if TYPE_CHECKING:
    from .storage.base import Backend


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
        if args.command in _LIFECYCLE:
            return _LIFECYCLE[args.command](args, out)
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
    _lifecycle_commands(sub)
    for name, text in (("eval", "evidence recall@k and evidence in budget (see `eval --help`)"),
                       ("grade", "execute and score exercise notebooks (see `grade --help`)")):
        sub.add_parser(name, help=text, add_help=False)
    return parser


def _lifecycle_commands(sub: argparse._SubParsersAction) -> None:
    """`forget`, `export` and `import` (run by `vmem.course.lifecycle`)."""
    scope_help = "KEY=VALUE, repeatable: the agents whose scope has each key and value"
    forget = sub.add_parser(
        "forget", help="delete an agent (a scope) in every tier, leaving no text readable",
        description="Delete every agent whose scope has each KEY=VALUE given: its "
        "sessions, messages, archival records, core memory with its history and saved "
        "context; the search statistics follow. On SQLite the file and its WAL are "
        "rewritten so no byte of the forgotten text remains in them; on PostgreSQL the "
        "rows are deleted and the tables vacuumed (docs/RELIABILITY.md says what each "
        "guarantees). A scope is required: nothing forgets every agent. Refused while "
        "another process has the agent (on SQLite: the file) open for writing.")
    forget.add_argument("--db", required=True, metavar="PATH",
                        help="an SQLite file or a postgresql:// URL")
    forget.add_argument("--scope", required=True, action="append", type=_pair,
                        metavar="KEY=VALUE", help=scope_help + " (required)")
    export = sub.add_parser(
        "export", help="write agents as an agent file (JSON) to stdout",
        description="Write the agents of PATH (every one, or those --scope selects) as "
        "one versioned JSON document, the agent file described in docs/AGENT_FILE.md: "
        "core blocks with their history, sessions, messages, archival records (as "
        "passages, with provenance and invalidation) and the saved context. Example: "
        "python -m vmem export --db agent.db --scope user_id=u1 > agent.json")
    export.add_argument("--db", required=True, metavar="PATH",
                        help="an SQLite file or a postgresql:// URL")
    export.add_argument("--scope", action="append", type=_pair, default=[],
                        metavar="KEY=VALUE", help=scope_help + " (default: every agent)")
    load = sub.add_parser(
        "import", help="store the agents of an agent file",
        description="Check every field of FILE, then store its agents in --db in one "
        "transaction, keeping their ids where free. A file from a newer vmem, or a "
        "malformed one, is refused with the reason and nothing is written.")
    load.add_argument("file", help="an agent file written by `python -m vmem export`")
    load.add_argument("--db", required=True, metavar="PATH",
                      help="an SQLite file or a postgresql:// URL (created if missing; must "
                           "not hold the same agents)")
    load.add_argument("--scope", action="append", type=_pair, default=[],
                      metavar="KEY=VALUE", help="store the file's one agent under this "
                      "scope instead of its own")


def _pair(text: str) -> tuple[str, str]:
    key, sign, value = text.partition("=")
    if not sign or not key or not value:
        raise argparse.ArgumentTypeError(f"wants KEY=VALUE such as user_id=u1, got {text!r}")
    return key, value


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


def _opened(target: str, *, new: bool = False) -> Backend:
    """The backend of `target`; an SQLite path that does not exist is refused unless
    `new` (a command that reads or deletes must not create an empty file)."""
    from .storage.backends import is_server_url, open_backend

    if not new and not is_server_url(target) and not os.path.exists(target):
        raise StoreError(f"{target} does not exist")
    return open_backend(target)


def _scope_of(pairs: list[tuple[str, str]]) -> dict[str, str]:
    from .store import check_scope

    scope = dict(pairs)
    if len(scope) != len(pairs):
        raise StoreError(f"--scope names a key twice: {pairs}")
    return check_scope(scope)


def _forget(args: argparse.Namespace, out: TextIO) -> int:
    scope = _scope_of(args.scope)
    backend = _opened(args.db)
    try:
        deleted = backend.forget(scope)
    finally:
        backend.close()
    counts = ", ".join(f"{count} {table}" for table, count in deleted.items())
    print(f"forgot {scope}: deleted {counts}", file=out)
    return 0


def _export(args: argparse.Namespace, out: TextIO) -> int:
    from .agentfile import export_document

    backend = _opened(args.db)
    try:
        document = export_document(backend, _scope_of(args.scope) or None)
    finally:
        backend.close()
    json.dump(document, out, ensure_ascii=False, indent=1)
    out.write("\n")
    return 0


def _import(args: argparse.Namespace, out: TextIO) -> int:
    from .agentfile import from_document, import_agents, parse

    try:
        with open(args.file, "rb") as handle:
            document = parse(handle.read(), args.file)
    except OSError as exc:
        raise StoreError(f"cannot read {args.file}: {exc.strerror}") from exc
    scope = _scope_of(args.scope)
    agents = from_document(document)  # all of it checked before the store is opened
    backend = _opened(args.db, new=True)
    try:
        print(import_agents(backend, agents, scope or None), file=out)
    finally:
        backend.close()
    return 0


_LIFECYCLE = {"forget": _forget, "export": _export, "import": _import}


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
