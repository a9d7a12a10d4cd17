"""Dependencies in lib/vmem point one way: no import runs back up.

Every vmem module (found by globbing, so new ones must be placed here) has a place
(layer, rank) and may import only modules placed strictly before it (a lower layer, or
the same layer at a lower rank), at module level or inside a function, relatively
(`from .store import ...`) or absolutely (`import vmem.store`). Six layers, each with
one audience or job (docs/ARCHITECTURE.md draws them):

    0  values       errors, clock, text, tokens, the guard's pattern data, languages and
                    decoders; then messages and the guard's learned model
                    (and the evaluation's own error)
    1  parts        core, bm25, summarize, guard, eviction, prompt, signatures, supersede:
                    one idea
                    each, on the values; then outcomes (a tool call's result as data)
    2  storage      the storage protocol (storage.base) and everything that speaks SQL:
                    store < search < storage.topk < storage.sqlite < storage.backends,
                    with the file lock (storage.filelock) and the PostgreSQL backend
                    (storage.postgres_search < postgres_schema, topk < postgres_cache
                    < postgres < postgres_pool) before
                    the backends that use them, then tier (what recall and archival
                    share above the backend)
    3  tiers        recall, archival < context < protocols (the seams tools and agent
                    are typed against)
    4  agent        memory, tools, transfer (an agent's contents, copying agents)
                    < agentfile (them as JSON), turn < agent < llm
    5  around it    the widgets (vmem.viz), the course machinery (vmem.course: the
                    learner's kept parts before the checks that keep them and the
                    assembly that loads them), the evaluation (vmem.eval) and the
                    command line, ordered among themselves: a package's shared helpers
                    before its users, __main__ last

`__init__.py` files are the packages' facades (re-exports only) and are not checked; a
package that other modules import through its facade (`from .guard import Guard`) has a
place of its own, after the modules it re-exports.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lib" / "vmem"

LAYERS: dict[str, tuple[int, int]] = {
    # 0 values
    "errors": (0, 0), "clock": (0, 0), "text": (0, 0), "tokens": (0, 0),
    "guard.patterns": (0, 0), "guard.signals": (0, 0), "guard.languages": (0, 0),
    "guard.decode": (0, 0), "guard.views": (0, 0), "guard.sources": (0, 0),
    "guard.literals": (0, 0),
    "guard.model": (0, 1), "guard.verdict": (0, 1), "guard.wrap": (0, 2),
    "messages": (0, 1), "eval.errors": (0, 1), "events": (0, 0),
    # 1 parts
    "core": (1, 0), "bm25": (1, 0), "summarize": (1, 0), "guard.scanner": (1, 0), "guard": (1, 1),
    "eviction": (1, 0), "prompt": (1, 0), "signatures": (1, 0), "supersede": (1, 0),
    "outcomes": (1, 2), "ranking": (1, 1), "clipping": (1, 1),
    # 2 storage
    "store": (2, 0), "storage.base": (2, 0), "search": (2, 1), "storage.topk": (2, 2),
    "storage.sqlite": (2, 3), "storage.backends": (2, 5), "tier": (2, 6),
    "storage.filelock": (2, 0), "storage.postgres_search": (2, 1),
    "storage.postgres_schema": (2, 2), "storage.postgres_cache": (2, 3),
    "storage.postgres": (2, 4), "storage.postgres_pool": (2, 5),
    # 3 tiers
    "recall": (3, 0), "archival": (3, 0), "context": (3, 1), "protocols": (3, 2),
    # 4 agent
    "memory": (4, 0), "tools": (4, 0), "transfer": (4, 0), "agentfile": (4, 1),
    "turn": (4, 1), "agent": (4, 2), "llm": (4, 3),
    # 5 around the library
    "viz.markup": (5, 0), "viz.box": (5, 0), "course.quiz": (5, 0), "course.browser": (5, 0),
    "course.checks.common": (5, 0), "course.classroom": (5, 0),
    "eval.locomo": (5, 0), "eval.metrics": (5, 0), "eval.analysis": (5, 0),
    "eval.beam": (5, 1),  # BEAM's conversations as LoCoMo's (eval.locomo)
    "viz.eviction": (5, 1), "viz.retrieval": (5, 1), "viz.trace": (5, 1), "viz.quiz": (5, 1),
    "course.checks.ex01": (5, 1), "course.checks.ex02": (5, 1), "course.checks.ex03": (5, 1),
    "course.checks.ex04": (5, 1), "course.checks.ex05": (5, 1), "course.demo": (5, 1),
    "course.parts": (5, 1),
    # the learner's parts: kept (parts) by the checks, loaded by later notebooks
    "course.checks.ex06": (5, 2), "course.lesson_checks.common": (5, 2),
    "course.lesson_checks.l02": (5, 3), "course.lesson_checks.l03": (5, 3),
    "course.lesson_checks.l04": (5, 3), "course.lesson_checks.l05": (5, 3),
    "course.lesson_checks.l06": (5, 3), "course.lesson_checks.l07": (5, 3),
    "course.checks.ex07": (5, 4), "course.assembly": (5, 4),
    "course.checks.ex08": (5, 5),  # says whose dispatcher (ex06) and loop (ex07) ran
    "eval.synthetic": (5, 1), "eval.runner": (5, 1), "eval.guard_sets": (5, 0),
    "eval.guard": (5, 1), "eval.guard_train": (5, 1), "eval.paraphrase": (5, 2),
    "eval.public_sets": (5, 1),  # public injection sets, read as guard_sets reads its own
    "course.grading": (5, 6), "course.chat": (5, 2), "eval.budget": (5, 2),
    "grading": (5, 7), "eval.cli": (5, 3), "eval.dense": (5, 0),
    "__main__": (5, 9),
}
MAX_LAYERS = 6  # the first plan had 11; keep it small


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


def test_there_are_few_layers():
    assert len({layer for layer, _rank in LAYERS.values()}) <= MAX_LAYERS


def test_every_module_has_a_layer():
    missing = sorted(set(_modules()) - set(LAYERS))
    assert not missing, f"place these modules in LAYERS (and the docstring): {missing}"
    packages = {".".join(path.parent.relative_to(PACKAGE).parts)
                for path in PACKAGE.rglob("__init__.py")}
    stale = sorted(set(LAYERS) - set(_modules()) - packages)
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
