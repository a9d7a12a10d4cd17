"""Dependencies in lib/vmem point one way (DESIGN.md section 4): no import runs back up.

Every vmem module (found by globbing, so new ones must be placed here) has a layer, and
may import only modules of strictly lower layers, at module level or inside a function,
relatively (`from .store import ...`) or absolutely (`import vmem.store`). The layers are
DESIGN's, with the helper modules placed where their imports put them:

    0  errors, clock            the error family and the injectable clock: import nothing
    1  tokens, messages,        DESIGN's first layer, plus signatures (tool schemas and
       signatures               argument checks from Python signatures: it needs only text)
    2  core, bm25, summarize,   DESIGN's second layer, plus quiz (the lessons' self-check
       guard, quiz, outcomes    questions: it needs only errors, and viz shows it), then
                                outcomes (a tool call's result as data: guard verdicts)
    3  store, search, storage,  the storage layer: the backend protocol (storage.base), the
       tier                     SQLite files, schema, transactions and limits (store), its
                                full-text index (search) and pruned top-k (storage.topk),
                                the SQLite backend (storage.sqlite), the choice of backend
                                (storage.backends), and what recall and archival share
                                above it (tier: bound scope, one page of hits); the
                                PostgreSQL backend (storage.postgres_search < _schema <
                                storage.postgres) and the file lock (storage.filelock)
    4  recall, archival
    5  context, then protocols  the seams the tools and the agent are typed against
    6  memory, tools, transfer  (transfer: copying agents between backends)
    7  turn, then agent         a turn as data and its one timeline, then the loop
    8  llm, viz, grading, demo, bench, classroom, and the eval package, whose modules
       are ordered among themselves: locomo, metrics, analysis < synthetic, runner <
       budget < cli; viz's shared HTML helpers come before its four widget modules
    9  chat                     the interactive front end: uses demo's printing and llm
    10 __main__                 the command line: dispatches to every front end

`__init__.py` files are the package's facade (re-exports only) and are not checked.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lib" / "vmem"

LAYERS: dict[str, tuple[int, int]] = {
    "errors": (0, 0), "clock": (0, 0), "text": (0, 0),
    "tokens": (1, 0), "messages": (1, 0), "signatures": (1, 0),
    "core": (2, 0), "bm25": (2, 0), "summarize": (2, 0), "guard": (2, 0), "course.quiz": (2, 0),
    "guard_patterns": (1, 0), "guard_signals": (1, 0), "outcomes": (2, 1),
    "store": (3, 0), "storage.base": (3, 0), "search": (3, 1), "storage.topk": (3, 2),
    "storage.sqlite": (3, 3), "storage.backends": (3, 4), "tier": (3, 5),
    "storage.filelock": (3, 0), "storage.postgres_search": (3, 1),
    "storage.postgres_schema": (3, 2), "storage.postgres": (3, 3),
    "recall": (4, 0), "archival": (4, 0),
    "context": (5, 0), "protocols": (5, 1),
    "memory": (6, 0), "tools": (6, 0), "transfer": (6, 0),
    "turn": (7, 0), "agent": (7, 1),
    "llm": (8, 0), "viz.markup": (8, 0), "viz.box": (8, 0), "viz.eviction": (8, 1),
    "viz.retrieval": (8, 1), "viz.trace": (8, 1), "viz.quiz": (8, 1),
    "course.grading": (8, 0), "grading": (8, 1),
    "course.demo": (8, 0), "course.classroom": (8, 0), "eval.errors": (1, 0),
    "eval.locomo": (8, 0), "eval.metrics": (8, 0), "eval.analysis": (8, 0),
    "eval.synthetic": (8, 1), "eval.runner": (8, 1),
    "eval.budget": (8, 2),
    "eval.cli": (8, 3),
    "course.chat": (9, 0),
    "__main__": (10, 0),
}


def _modules() -> dict[str, Path]:
    """Every module under lib/vmem as a dotted name relative to the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        found[".".join(path.relative_to(PACKAGE).with_suffix("").parts)] = path
    return found


def _imported(name: str, path: Path) -> list[tuple[int, str]]:
    """(line, vmem module) for every import of a vmem module in `path`, wherever it is."""
    package = name.split(".")[:-1]  # the module's package, relative to vmem
    targets = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                module = [*base, *(node.module.split(".") if node.module else [])]
            elif node.module and node.module.split(".")[0] == "vmem":
                module = node.module.split(".")[1:]
            else:
                continue
            # `from . import x` and `from .eval import cli` name modules in the names
            for alias in node.names:
                candidate = ".".join([*module, alias.name])
                targets.append((node.lineno, candidate if candidate in LAYERS
                                else ".".join(module)))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "vmem":
                    targets.append((node.lineno, ".".join(parts[1:])))
    return [(line, target) for line, target in targets if target]


def test_every_module_has_a_layer():
    missing = sorted(set(_modules()) - set(LAYERS))
    assert not missing, f"place these modules in LAYERS (and the docstring): {missing}"
    stale = sorted(set(LAYERS) - set(_modules()))
    assert not stale, f"LAYERS names modules that no longer exist: {stale}"


@pytest.mark.parametrize("name", sorted(_modules()))
def test_imports_only_run_down(name):
    path = _modules()[name]
    upward = []
    for line, target in _imported(name, path):
        if target not in LAYERS:
            upward.append(f"line {line}: imports unknown vmem module {target!r}")
        elif LAYERS[target] >= LAYERS[name]:
            upward.append(f"line {line}: {name} {LAYERS[name]} imports {target} "
                          f"{LAYERS[target]}, which is not below it")
    assert not upward, "\n".join(upward)


def test_the_checker_sees_relative_absolute_and_function_level_imports(tmp_path):
    source = tmp_path / "probe.py"
    source.write_text("from .agent import Agent\n"
                      "import vmem.memory\n"
                      "def late():\n"
                      "    from ..bm25 import tokenize\n"
                      "    from . import runner\n", encoding="utf-8")
    assert _imported("eval.probe", source) == [
        (1, "eval.agent"), (2, "memory"), (4, "bm25"), (5, "eval.runner")]
