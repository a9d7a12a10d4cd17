"""The learner's parts, carried from the notebook that checked them to the notebooks that
use them.

A lesson check that passes keeps the learner's part as a small Python module in
`my_parts/` beside the notebook (the kernel's working folder): `my_parts/dispatch.py`
holds the learner's `dispatch` and everything of theirs it needs, read from the cells that
defined them. A later notebook asks for it with `load`, which checks it again and prints
one line saying whose part it goes on with: the learner's, or `vmem`'s where the part is
not written (or no longer passes). So notebook 05 can run the dispatcher written in
notebook 04, and the end of 06 an agent made of parts from 02 to 05, while every notebook
still runs top to bottom on its own.

How a part becomes a module: a function's source is read from the cell that defined it
(IPython keeps every cell's source); the globals its code reads are followed, one by one:
a module becomes an `import`, anything defined in a library an `from ... import`, a
function or class the learner defined is copied in (and followed in turn), a constant
is copied from the assignment that defined it. The module is written only if it imports
cleanly and its part passes the same check again, so a file in `my_parts/` always works.
"""

from __future__ import annotations

import ast
import builtins
import dis
import importlib.util
import inspect
import linecache
import re
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .lesson_checks.common import verdict

FOLDER = "my_parts"
PLAIN_VALUES = (str, bytes, int, float, bool, type(None), tuple, list, dict, set, frozenset,
                re.Pattern)
"""Values a copied assignment may rebuild with calls (`re.compile(...)`, `set(...)`): made
again, they are the same; anything else (a store, a file) is refused."""
_Part = TypeVar("_Part")


class CannotKeep(Exception):
    """The part uses something that cannot be written into a module (an open file, a
    store, a value built by a call): the message names it."""


# --- from objects to source ----------------------------------------------------------


def _read_globals(code: types.CodeType) -> list[str]:
    """The global names `code` (and the functions nested in it) reads, in order."""
    names: list[str] = []
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME") and \
                instruction.argval not in names:
            names.append(instruction.argval)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names += [name for name in _read_globals(constant) if name not in names]
    return names


def _node_source(lines: list[str], node: ast.stmt) -> str:
    """The source of one top-level statement, decorators included."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return textwrap.dedent("".join(lines[first - 1:node.end_lineno]))


def _cell_lines(obj: Any) -> list[str]:
    """The lines of the cell (or file) that defined a function, or a class's methods."""
    functions = [obj] if inspect.isfunction(obj) else [
        member for member in vars(obj).values() if inspect.isfunction(member)]
    for function in functions:
        lines = linecache.getlines(function.__code__.co_filename)
        if lines:
            return lines
    raise CannotKeep(f"the source of {obj.__name__} is not available")


def _definition(obj: Any) -> str:
    """The `def` or `class` statement that defined `obj`, read from its cell."""
    if inspect.isfunction(obj):
        return textwrap.dedent(inspect.getsource(obj))
    lines = _cell_lines(obj)
    methods = {member.__code__.co_firstlineno for member in vars(obj).values()
               if inspect.isfunction(member)}
    for node in ast.parse("".join(lines)).body:
        if isinstance(node, ast.ClassDef) and node.name == obj.__name__ and \
                any(node.lineno <= line <= node.end_lineno for line in methods):
            return _node_source(lines, node)
    raise CannotKeep(f"the class statement of {obj.__name__} was not found")


def _definition_time_names(node: ast.stmt) -> list[str]:
    """The names a `def` or `class` statement reads when it runs (decorators, bases,
    defaults, annotations, a class body's own statements), not those its functions read
    when called: `_read_globals` finds those in their code."""
    found: list[str] = []

    def names_in(tree: ast.AST, local: set[str]) -> None:
        for child in ast.walk(tree):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load) and \
                    child.id not in local and child.id not in found:
                found.append(child.id)

    def statement(stmt: ast.stmt, local: set[str]) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            for tree in [*stmt.decorator_list, stmt.args, stmt.returns]:
                if tree is not None:
                    names_in(tree, local)
        elif isinstance(stmt, ast.ClassDef):
            for tree in [*stmt.decorator_list, *stmt.bases, *stmt.keywords]:
                names_in(tree, local)
            inside = {n.id for s in stmt.body for n in ast.walk(s)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            for inner in stmt.body:
                statement(inner, local | inside)
        else:
            names_in(stmt, local)

    statement(node, set())
    return found


def _cached_cells() -> list[str]:
    """The sources IPython compiled, oldest first, for a kernel that keeps no input
    history (one driven by nbval or nbclient): each cell's source sits in linecache under
    a name with no file behind it (its entry has no modification time)."""
    return ["".join(entry[2]) for entry in list(linecache.cache.values())
            if len(entry) == 4 and entry[1] is None]


def _assignment(name: str, cells: list[str], calls: bool) -> ast.stmt | None:
    """The newest assignment of `name` in `cells`; with `calls` False only one whose value
    calls nothing (so copying it cannot open a file or build a store twice)."""
    for cell in reversed(cells):
        try:
            tree = ast.parse(cell)
        except SyntaxError:
            continue
        for node in reversed(tree.body):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) and node.value else []
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and \
                    (calls or not any(isinstance(n, ast.Call) for n in ast.walk(node.value))):
                return node
    return None


def _importable(obj: Any) -> bool:
    """Whether `obj` can be imported by name from a module (a library's function or
    class), rather than copied from the cell that defined it."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "__main__")
    return module is not None and module.__name__ != "__main__" and \
        "." not in obj.__qualname__ and getattr(module, obj.__qualname__, None) is obj


class _Module:
    """Collects the statements of one part's module: imports first, then definitions in
    the order they depend on each other."""

    def __init__(self, namespace: dict[str, Any], cells: list[str]) -> None:
        self.namespace, self.cells = namespace, cells
        self.imports: list[str] = []
        self.body: list[str] = []
        self.done: set[str] = set()

    def add(self, name: str, obj: Any) -> None:
        if name in self.done:
            return
        self.done.add(name)
        if isinstance(obj, types.ModuleType):
            alias = "" if name == obj.__name__ else f" as {name}"
            self._import(f"import {obj.__name__}{alias}")
        elif (inspect.isfunction(obj) or inspect.isclass(obj)) and _importable(obj):
            alias = "" if name == obj.__qualname__ else f" as {name}"
            self._import(f"from {obj.__module__} import {obj.__qualname__}{alias}")
        elif inspect.isfunction(obj) or inspect.isclass(obj):
            self._definition(name, obj)
        else:
            self._constant(name, obj)

    def _import(self, line: str) -> None:
        if line not in self.imports:
            self.imports.append(line)

    def _definition(self, name: str, obj: Any) -> None:
        self.done.add(obj.__name__)
        functions = [obj] if inspect.isfunction(obj) else [
            member for member in vars(obj).values() if inspect.isfunction(member)]
        source = _definition(obj)
        needed = _definition_time_names(ast.parse(source).body[0])
        needed += [n for f in functions for n in _read_globals(f.__code__)]
        self._follow(needed, obj.__name__)
        self.body.append(source)
        if name != obj.__name__:
            self.body.append(f"{name} = {obj.__name__}\n")

    def _constant(self, name: str, value: Any) -> None:
        node = _assignment(name, self.cells, calls=isinstance(value, PLAIN_VALUES))
        if node is None:
            raise CannotKeep(f"{name} ({type(value).__name__}) was not set by a plain "
                             "assignment in a cell")
        self._follow([n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)], name)
        self.body.append(ast.unparse(node) + "\n")

    def _follow(self, names: list[str], owner: str) -> None:
        for needed in names:
            if needed == owner or needed in self.done:
                continue
            if needed in self.namespace:
                self.add(needed, self.namespace[needed])
            elif not hasattr(builtins, needed):
                raise CannotKeep(f"{owner} uses {needed}, which is not defined")

    def source(self, header: str) -> str:
        return "\n".join([header, *self.imports, "", *(f"\n{block}" for block in self.body)])


def module_source(name: str, part: Any, namespace: dict[str, Any] | None = None,
                  cells: list[str] | None = None, header: str = "") -> str:
    """The source of a module that defines `name` as `part`: the part's own definition
    and every global it reads, followed. `namespace` is where its globals live (the
    function's own globals by default), `cells` the sources a constant is looked up in
    (the kernel's input history by default)."""
    if namespace is None:
        function = part if inspect.isfunction(part) else next(
            (m for m in vars(part).values() if inspect.isfunction(m)), None)
        namespace = function.__globals__ if function is not None else {}
    if cells is None:
        cells = [cell for cell in namespace.get("In", []) if cell] or _cached_cells()
    module = _Module(namespace, cells)
    module.add(name, part)
    return module.source(header)


# --- keeping and loading -------------------------------------------------------------


def working_folder() -> Path:
    """Where `my_parts/` goes when no folder is given: the kernel's working folder, which
    is the notebook's own."""
    return Path.cwd()


def _path(name: str, folder: Path | None) -> Path:
    return (folder or working_folder()) / FOLDER / f"{name}.py"


def _import(path: Path, name: str) -> Any:
    """Run the module at `path` in a fresh namespace and return its `name`."""
    spec = importlib.util.spec_from_file_location(f"my_parts_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and inspect look a class's module up
    spec.loader.exec_module(module)
    return getattr(module, name)


def keep(name: str, part: Any, origin: str, check: Callable[[Any], str],
         folder: Path | None = None) -> str:
    """Write `part` to `my_parts/<name>.py` so later notebooks can use it; return a short
    note for the check's line. Nothing is written (and the note says why) unless the
    module imports and its part passes `check` again."""
    path = _path(name, folder)
    header = (f"# Your {name} from {origin}, kept when its check passed "
              "(vmem.course.parts).\n# Edit the notebook and run its check again, "
              "not this file.")
    try:
        source = module_source(name, part, header=header)
    except CannotKeep as reason:
        return f"not kept for later notebooks: {reason}"
    except (OSError, TypeError, SyntaxError) as error:  # no source: a part built elsewhere
        return f"not kept for later notebooks: its source was not found ({error})"
    path.parent.mkdir(exist_ok=True)
    temporary = path.with_name(f"{name}.checking.py")  # importable, not yet the part
    temporary.write_text(source, encoding="utf-8")
    try:
        line, _ = verdict(name, _import(temporary, name), None, check)
    except Exception as error:  # whatever the copy raised, the notebook's part still counts
        line = f"{type(error).__name__}: {error}"
    if not line.startswith("passed"):
        temporary.unlink()
        return f"not kept for later notebooks: its copy did not pass ({line})"
    temporary.replace(path)
    return f"kept as {FOLDER}/{name}.py"


def load(name: str, origin: str, fallback: _Part, check: Callable[[Any], str],
         folder: Path | None = None) -> _Part:
    """The learner's `name` from `my_parts/` when it is there and still passes `check`,
    else `fallback`; prints one line saying which."""
    path = _path(name, folder)
    if not path.exists():
        print(f"your {name} ({origin}) is not written yet - using vmem's")
        return fallback
    try:
        line, chosen = verdict(name, _import(path, name), fallback, check)
    except Exception as error:  # a broken file must not stop the notebook
        line, chosen = f"{type(error).__name__}: {error}", fallback
    if line.startswith("passed"):
        print(f"using your {name} from {origin} ({FOLDER}/{name}.py)")
    else:
        print(f"your {name} from {origin} does not pass now ({line}) - using vmem's")
    return chosen
