"""The rules that keep the library readable in a sitting, checked so later work keeps them.

- No module of the library over 500 lines: each file is one idea.
- `vmem.__all__` stays small: what an engineer using the library needs, at most 25 names.
- SQL lives only in the storage layer, in modules whose names say so, so a second backend
  plugs in behind the storage protocol without touching context, tools, agent or memory.
- Parts exchange data, not text: nothing outside the tests finds record ids, failures or
  quarantine marks by reading the text a tool result renders for the model.

Each check reads the source, so it also covers modules added later. The layering of
imports is checked in test_layers.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import vmem

PACKAGE = Path(__file__).resolve().parents[2] / "lib" / "vmem"
MAX_LINES = 500
MAX_PUBLIC_NAMES = 25

# A module may hold SQL only if its own name, or a package it sits in, says it is storage.
STORAGE_NAMES = {"store", "search", "storage", "backend", "backends", "sql", "schema",
                 "migrations"}
SQL = re.compile(r"\b(SELECT\s.+\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|"
                 r"DELETE\s+FROM|CREATE\s+(TABLE|INDEX|VIRTUAL\s+TABLE)|DROP\s+TABLE|"
                 r"PRAGMA\s|BEGIN(\s+IMMEDIATE)?$|SAVEPOINT\s)", re.S)

# What only a parser of rendered tool results looks for: the status heads, the citation
# heads, the quarantine mark, the untrusted-data gutter and tag, the "] " split.
RENDERED_MARKS = ("[failed", "[ok", "[record", "[message", r"\[record", r"\[message",
                  r"\[failed", "QUARANTINED", "untrusted_data", "] ")
TEXT_TESTS = {"startswith", "endswith", "split", "rsplit", "partition", "rpartition", "find",
              "index", "count", "search", "match", "fullmatch", "findall", "finditer",
              "compile", "sub"}


def _modules() -> dict[str, Path]:
    return {".".join(path.relative_to(PACKAGE).with_suffix("").parts): path
            for path in sorted(PACKAGE.rglob("*.py"))}


def _is_storage(name: str) -> bool:
    return any(part in STORAGE_NAMES for part in name.split("."))


@pytest.mark.parametrize("name", sorted(_modules()))
def test_no_module_is_over_500_lines(name):
    lines = len(_modules()[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"vmem.{name} has {lines} lines; split it by job"


def test_the_public_surface_is_small():
    assert len(vmem.__all__) <= MAX_PUBLIC_NAMES, vmem.__all__
    assert len(set(vmem.__all__)) == len(vmem.__all__)
    missing = [name for name in vmem.__all__ if not hasattr(vmem, name)]
    assert not missing, f"__all__ names what vmem does not define: {missing}"
    errors = [name for name in vmem.__all__ if name.endswith("Error") and name != "VMemError"]
    assert not errors, f"errors live in vmem.errors (or their package), not __all__: {errors}"


def sql_in(path: Path) -> list[str]:
    """The string constants of a module that read as SQL, and every `.execute*(statement)`
    call (a notebook client's argument-less `.execute()` is not SQL)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and SQL.search(node.value.strip()):
            found.append(f"line {node.lineno}: {node.value.strip()[:60]!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("execute", "executemany", "executescript") and node.args:
            found.append(f"line {node.lineno}: .{node.func.attr}(...)")
    return found


@pytest.mark.parametrize("name", sorted(n for n in _modules() if not _is_storage(n)))
def test_sql_lives_only_in_the_storage_layer(name):
    found = sql_in(_modules()[name])
    assert not found, (f"vmem.{name} runs SQL; move it behind the storage protocol:\n"
                       + "\n".join(found))


def text_parsing_in(path: Path) -> list[str]:
    """Places that test or take apart text for a rendered mark: `in`/`not in` with a mark,
    string methods and `re` calls given a constant holding one."""
    found = []

    def marked(node: ast.AST) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and any(
            mark in node.value for mark in RENDERED_MARKS)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn))
                                                 for op in node.ops) and marked(node.left):
            found.append(f"line {node.lineno}: `in` test for {node.left.value!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in TEXT_TESTS and any(marked(arg) for arg in node.args):
            mark = next(arg.value for arg in node.args if marked(arg))
            found.append(f"line {node.lineno}: .{node.func.attr}({mark!r})")
    return found


@pytest.mark.parametrize("name", sorted(_modules()))
def test_no_part_reads_the_text_rendered_for_the_model(name):
    found = text_parsing_in(_modules()[name])
    assert not found, (f"vmem.{name} parses rendered tool-result text; use the structured "
                       "outcome instead:\n" + "\n".join(found))


def test_the_checks_catch_what_they_forbid(tmp_path):
    """Each check above fails on a small module that breaks its rule."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import re\n"
        "_SAVED = re.compile(r'archival record (\\d+)')\n"
        "_RECORD = re.compile(r'\\[record (\\d+) \\|([^\\]]*)\\] (.*)')\n"
        "def parse(content, head):\n"
        "    if content.startswith('[failed'):\n"
        "        return content.split('] ', 1)[-1]\n"
        "    return 'QUARANTINED' not in head\n"
        "def count(conn):\n"
        "    return conn.execute('SELECT count(*) FROM archival').fetchone()[0]\n",
        encoding="utf-8")
    assert len(text_parsing_in(probe)) == 4  # the regex, startswith, split, `not in`
    assert len(sql_in(probe)) == 2  # the SQL string and the execute call
