"""The core of vmem needs nothing but the standard library.

Every module under lib/vmem (found by globbing, so modules added later are covered) may
import at module level only the standard library and vmem itself. Optional-extra modules
are exempt: `llm.py`, and any module whose docstring has a line starting with "Optional
extra:" (the `vmem.viz` widget modules). Imports inside functions and `if TYPE_CHECKING:`
blocks do not run at import time and are not checked.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lib" / "vmem"
EXTRA_MODULES = {"llm.py"}
STDLIB = set(sys.stdlib_module_names)


def _is_extra(path: Path, tree: ast.Module) -> bool:
    docstring = ast.get_docstring(tree) or ""
    return path.name in EXTRA_MODULES or any(
        line.strip().startswith("Optional extra:") for line in docstring.splitlines())


def _core_modules() -> list[Path]:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if not _is_extra(path, ast.parse(path.read_text(encoding="utf-8"))):
            modules.append(path)
    return modules


def _module_level_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, top-level module name) of every absolute import that runs on import."""
    found: list[tuple[int, str]] = []

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                found.extend((node.lineno, alias.name.split(".")[0]) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.append((node.lineno, node.module.split(".")[0]))
            elif isinstance(node, ast.If):
                if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                for block in (node.body, node.orelse, node.finalbody,
                              *(handler.body for handler in node.handlers)):
                    visit(block)
            elif isinstance(node, ast.With):
                visit(node.body)

    visit(tree.body)
    return found


def test_the_scan_sees_the_package() -> None:
    names = {path.name for path in _core_modules()}
    assert {"__init__.py", "tokens.py", "core.py", "context.py", "summarize.py"} <= names
    assert not names & EXTRA_MODULES


def test_the_scanner_catches_a_third_party_import() -> None:
    tree = ast.parse("import os\ntry:\n    import numpy as np\nexcept ImportError:\n    pass\n"
                     "def f():\n    import pandas\n")
    assert _module_level_imports(tree) == [(1, "os"), (3, "numpy")]


@pytest.mark.parametrize("path", _core_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_the_standard_library(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [f"line {line}: {name}" for line, name in _module_level_imports(tree)
           if name not in STDLIB and name != "vmem"]
    assert not bad, f"{path.name} imports non-stdlib modules at module level: {bad}; " \
                    "import optional extras inside the function that needs them"


def test_importing_every_core_module_loads_no_third_party_package() -> None:
    modules = [".".join(("vmem", *path.relative_to(PACKAGE).with_suffix("").parts))
               .removesuffix(".__init__") for path in _core_modules()]
    script = ("import importlib, sys\n"
              f"for name in {modules!r}:\n    importlib.import_module(name)\n"
              "print('\\n'.join(sorted({m.split('.')[0] for m in sys.modules})))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, f"a vmem module failed to import:\n{result.stderr[-2000:]}"
    loaded = set(result.stdout.split())
    foreign = sorted(name for name in loaded - STDLIB - {"vmem", "__main__"}
                     if not name.startswith("_"))
    assert not foreign, f"importing the vmem core loaded {foreign}"
