"""The learner's parts, carried from the notebook that checked them to the notebooks that
use them.

A check that passes keeps the learner's part as a small Python module in `my_parts/`
beside the notebook (the kernel's working folder): `my_parts/dispatch.py` holds the
learner's `dispatch` and everything of theirs it needs, read from the cells that defined
them. A later notebook asks for it with `load`, which checks it again and prints one line
saying whose part it goes on with: the learner's, or `vmem`'s where the part is not
written, was not kept (the line says why) or no longer passes. So notebook 05 can run the
dispatcher written in notebook 04, and the end of 06 an agent made of parts from 02 to
05, while every notebook still runs top to bottom on its own.

How a part becomes a module: a function's or class's source is read from the cell that
defined it (IPython keeps every cell's source), and the globals its code reads are
followed one by one. Anything a module exports by that name (a module, `math.ceil`,
`typing.Optional`, a library's class) becomes an import; a function or class the learner
defined is copied in and followed in turn; a value is copied from the assignment that
made it. The module is written only if it runs, every value it rebuilt equals the one in
the notebook, and its part passes the same check again, so a file in `my_parts/` always
works; when that fails, `my_parts/<name>.why` says why, and `load` repeats it.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import dis
import inspect
import linecache
import re
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from .checks.common import is_vmems, judged

FOLDER = "my_parts"
PLAIN_VALUES = (str, bytes, int, float, complex, bool, type(None), tuple, list, dict, set,
                frozenset, re.Pattern)
"""Values a copied assignment may rebuild with calls (`re.compile(...)`, `set(...)`): made
again, they are equal, which the copy checks; anything else (a store, a file) is refused."""
_Part = TypeVar("_Part")


class CannotKeep(Exception):
    """The part uses something that cannot be written into a module (an open store, a
    value built by a call, a value changed after it was assigned): the message says what."""


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


def _free_names(tree: ast.AST) -> list[str]:
    """The names an expression or statement reads that it does not bind itself (a
    comprehension's or a lambda's own variables are left out)."""
    bound = {n.id for node in ast.walk(tree) if isinstance(node, ast.comprehension)
             for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    bound |= {a.arg for node in ast.walk(tree) if isinstance(node, ast.Lambda)
              for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                        node.args.vararg, node.args.kwarg] if a is not None}
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and \
                node.id not in bound and node.id not in found:
            found.append(node.id)
    return found


def _definition_time_names(node: ast.stmt) -> list[str]:
    """The names a `def` or `class` statement reads when it runs (decorators, bases,
    defaults, annotations, a class body's own statements), not those its functions read
    when called: `_read_globals` finds those in their code."""
    found: list[str] = []

    def add(tree: ast.AST, local: set[str]) -> None:
        found.extend(name for name in _free_names(tree)
                     if name not in local and name not in found)

    def statement(stmt: ast.stmt, local: set[str]) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            for tree in [*stmt.decorator_list, stmt.args, stmt.returns]:
                if tree is not None:
                    add(tree, local)
        elif isinstance(stmt, ast.ClassDef):
            for tree in [*stmt.decorator_list, *stmt.bases, *stmt.keywords]:
                add(tree, local)
            inside = {n.id for s in stmt.body for n in ast.walk(s)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            for inner in stmt.body:
                statement(inner, local | inside)
        else:
            add(stmt, local)

    statement(node, set())
    return found


def _functions(obj: Any) -> list[types.FunctionType]:
    """The functions whose code a part runs: a function (and what it wraps), or a
    class's methods, static and class methods and properties, written in a cell (not
    the ones `dataclass` generates)."""
    if inspect.isfunction(obj):
        found = [obj]
        while inspect.isfunction(getattr(found[-1], "__wrapped__", None)):
            found.append(found[-1].__wrapped__)
        return found
    members = []
    for member in vars(obj).values():
        if isinstance(member, staticmethod | classmethod):
            member = member.__func__
        if isinstance(member, property):
            members += [f for f in (member.fget, member.fset, member.fdel) if f is not None]
        elif inspect.isfunction(member):
            members.append(member)
    return [f for f in members if _in_a_cell(f)]


def _in_a_cell(function: types.FunctionType) -> bool:
    """Whether `function` was written in a cell (IPython keeps a cell's source in
    linecache with no file behind it), not made by a library (`dataclass`, `enum`)."""
    entry = linecache.cache.get(function.__code__.co_filename)
    return entry is not None and len(entry) == 4 and entry[1] is None


def _parsed(sources: list[str]) -> list[tuple[str, ast.Module]]:
    """(source, tree) of each source that parses (a cell with IPython magics does not)."""
    found = []
    for source in sources:
        try:
            found.append((source, ast.parse(source)))
        except SyntaxError:
            continue
    return found


def _statement(obj: Any, cells: list[tuple[str, ast.Module]]) -> str:
    """The `def` or `class` statement that defined `obj`, from its cell (or, for a class
    without methods, the newest cell that defines a class of that name)."""
    if inspect.isfunction(obj):
        return textwrap.dedent(inspect.getsource(obj))
    own = [("".join(linecache.getlines(f.__code__.co_filename)), {f.__code__.co_firstlineno})
           for f in _functions(obj)[:1]]
    sources = [(source, tree, lines) for (source, lines) in own
               for _, tree in _parsed([source])]
    sources += [(source, tree, set()) for source, tree in reversed(cells)]
    for source, tree, lines in sources:
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == obj.__name__ and \
                    (not lines or any(node.lineno <= n <= node.end_lineno for n in lines)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                return textwrap.dedent("".join(source.splitlines(True)[first - 1:
                                                                     node.end_lineno]))
    raise CannotKeep(f"the class statement of {obj.__name__} was not found")


def _assignment(name: str, cells: list[tuple[str, ast.Module]],
                calls: bool) -> ast.stmt | None:
    """The newest assignment of `name` in `cells`; with `calls` False only one whose value
    runs no call (so copying it cannot open a file or build a store twice)."""
    for _, tree in reversed(cells):
        for node in reversed(tree.body):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) and node.value else []
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and \
                    (calls or not _calls(node.value)):
                return node
    return None


def _calls(tree: ast.AST) -> bool:
    """Whether evaluating `tree` runs a call (a lambda's body does not run)."""
    if isinstance(tree, ast.Lambda):
        return False
    return isinstance(tree, ast.Call) or any(_calls(child) for child in ast.iter_child_nodes(tree))


def _import_line(name: str, obj: Any) -> str | None:
    """`from module import attribute as name` for an object a module exports (a builtin
    function, a typing form, a library's class), or None."""
    if isinstance(obj, types.ModuleType):
        return f"import {obj.__name__}" + ("" if name == obj.__name__ else f" as {name}")
    if isinstance(obj, PLAIN_VALUES):
        return None  # a value is copied: another module's equal constant is not the same
    attributes = [a for a in dict.fromkeys([getattr(obj, "__qualname__", None),
                                            getattr(obj, "__name__", None), name])
                  if isinstance(a, str) and a.isidentifier()]
    home = getattr(obj, "__module__", None)
    if home == "__main__" and (inspect.isfunction(obj) or inspect.isclass(obj)):
        return None  # the learner's own: copied, never looked for in other modules
    modules = [home] if isinstance(home, str) else []
    modules += sorted((m for m in list(sys.modules) if not any(
        part.startswith("_") for part in m.split("."))), key=lambda m: (m.count("."), m))
    for module_name in modules:
        module = sys.modules.get(module_name)
        if module is None or module_name in ("__main__", "builtins") or \
                module_name.startswith("my_parts_"):
            continue
        for attribute in attributes:
            if getattr(module, attribute, None) is obj:
                alias = "" if name == attribute else f" as {name}"
                return f"from {module_name} import {attribute}{alias}"
    return None


def _comparable(value: Any) -> bool:
    """Whether a rebuilt copy of `value` can be compared with it by `==` (plain values all
    the way down: a lambda inside a table is equal only to itself)."""
    if isinstance(value, dict):
        return all(_comparable(k) and _comparable(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return all(_comparable(item) for item in value)
    return isinstance(value, (*PLAIN_VALUES, type))


class _Module:
    """Collects the statements of one part's module: imports first, then definitions in
    the order they depend on each other, and the values it rebuilds (to compare)."""

    def __init__(self, namespace: dict[str, Any], cells: list[str]) -> None:
        self.namespace, self.cells = namespace, _parsed(cells)
        self.imports: list[str] = []
        self.body: list[str] = []
        self.values: dict[str, Any] = {}
        self.done: set[str] = set()

    def add(self, name: str, obj: Any) -> None:
        if name in self.done:
            return
        self.done.add(name)
        line = _import_line(name, obj)
        if line is not None:
            if line not in self.imports:
                self.imports.append(line)
        elif (inspect.isfunction(obj) and obj.__name__ != "<lambda>") or inspect.isclass(obj):
            self._definition(name, obj)
        else:
            self._value(name, obj)

    def _definition(self, name: str, obj: Any) -> None:
        self.done.add(obj.__name__)
        try:
            source = _statement(obj, self.cells)
        except (OSError, TypeError) as error:  # no source: a part built elsewhere
            raise CannotKeep(f"the source of {name} was not found "
                             f"({type(error).__name__})") from None
        needed = _definition_time_names(ast.parse(source).body[0])
        needed += [n for f in _functions(obj) for n in _read_globals(f.__code__)]
        if inspect.isclass(obj):
            needed += [base.__name__ for base in obj.__bases__ if base is not object]
        self._follow(needed, obj.__name__)
        self.body.append(source)
        if name != obj.__name__:
            self.body.append(f"{name} = {obj.__name__}\n")

    def _value(self, name: str, value: Any) -> None:
        node = _assignment(name, self.cells, calls=isinstance(value, PLAIN_VALUES))
        if node is None:
            raise CannotKeep(f"{name} ({type(value).__name__}) was not made by an "
                             "assignment this can copy (a plain value, a pattern, a lambda)")
        self._follow(_free_names(node.value), name)
        self.body.append(ast.unparse(node) + "\n")
        if _comparable(value):
            self.values[name] = value

    def _follow(self, names: list[str], owner: str) -> None:
        for needed in names:
            if needed == owner or needed in self.done:
                continue
            value = self.namespace.get(needed)
            if hasattr(builtins, needed) and getattr(value, "__module__", "__main__") not in (
                    "__main__", None):
                continue  # a builtin, or IPython's wrapper of `open`: the copy has its own
            if needed in self.namespace:
                self.add(needed, value)
            elif not hasattr(builtins, needed):
                raise CannotKeep(f"{owner} uses {needed}, which is not defined")

    def source(self, header: str) -> str:
        return "\n".join([header, *self.imports, "", *(f"\n{block}" for block in self.body)])


def _cached_cells() -> list[str]:
    """The sources IPython compiled, oldest first, for a kernel that keeps no input
    history (one driven by nbval or nbclient): each cell's source sits in linecache under
    a name with no file behind it (its entry has no modification time)."""
    return ["".join(entry[2]) for entry in list(linecache.cache.values())
            if len(entry) == 4 and entry[1] is None]


def _parts_of(name: str, part: Any, namespace: dict[str, Any] | None,
              cells: list[str] | None) -> _Module:
    if namespace is None:
        function = next(iter(_functions(part)), None) if inspect.isclass(part) or \
            inspect.isfunction(part) else None
        home = sys.modules.get(getattr(part, "__module__", None) or "__main__")
        namespace = function.__globals__ if function is not None else \
            vars(home) if home is not None else {}  # a kernel's namespace is __main__'s
    if cells is None:
        cells = [cell for cell in namespace.get("In", []) if cell] or _cached_cells()
    module = _Module(namespace, cells)
    module.add(name, part)
    return module


def module_source(name: str, part: Any, namespace: dict[str, Any] | None = None,
                  cells: list[str] | None = None, header: str = "") -> str:
    """The source of a module that defines `name` as `part`: the part's own definition
    and every global it reads, followed. `namespace` is where its globals live (the
    function's own globals by default), `cells` the sources a value is looked up in (the
    kernel's input history by default)."""
    return _parts_of(name, part, namespace, cells).source(header)


# --- keeping and loading -------------------------------------------------------------


def working_folder() -> Path:
    """Where `my_parts/` goes when no folder is given: the kernel's working folder, which
    is the notebook's own."""
    return Path.cwd()


def _paths(stem: str, folder: Path | None) -> tuple[Path, Path]:
    """The part's module and the note that says why there is none."""
    base = (folder or working_folder()) / FOLDER / stem
    return base.with_suffix(".py"), base.with_suffix(".why")


def _run(source: str, name: str, filename: str) -> types.ModuleType:
    """Run a part's module source in a fresh module named after `name`; return it."""
    module = types.ModuleType(f"my_parts_{name}")
    module.__file__ = filename
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    sys.modules[module.__name__] = module  # dataclasses and inspect look a class's module up
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def failure(check: Callable[[Any], str], part: Any) -> str | None:
    """Why `part` does not pass `check` (None when it passes), in a few words."""
    passed, said = judged(check, part)
    return None if passed else said


def _note(stem: str, folder: Path | None, why: str) -> None:
    """Leave `why` where the part's module would be, and remove any older module."""
    module, note = _paths(stem, folder)
    try:
        module.unlink(missing_ok=True)
        note.parent.mkdir(exist_ok=True)
        note.write_text(why + "\n", encoding="utf-8")
    except OSError:
        pass  # a folder that cannot be written keeps nothing, and loading says "not written"


def keep(name: str, part: Any, origin: str, check: Callable[[Any], str],
         folder: Path | None = None, stem: str | None = None) -> str:
    """Write `part` to `my_parts/<stem>.py` (stem defaults to `name`) so later notebooks
    can use it; return a short note for the check's line. Nothing is written (and
    `<stem>.why` says why) unless the module runs, rebuilds every value as it is in the
    notebook, and its part passes `check` again."""
    stem = stem or name
    path, _ = _paths(stem, folder)
    header = (f"# Your {name} from {origin}, kept when its check passed "
              "(vmem.course.parts).\n# Edit the notebook and run its check again, "
              "not this file.")
    try:
        if is_vmems(part):
            raise CannotKeep(f"it is vmem's own {name}, not yours")
        module = _parts_of(name, part, None, None)
        source = module.source(header)
        copy = _run(source, f"{stem}_{id(module)}", f"{path} (checking)")
        changed = [key for key, value in module.values.items()
                   if getattr(copy, key, None) != value]
        if changed:
            raise CannotKeep(f"{changed[0]} was changed after its assignment (build it in "
                             "one statement)")
        why = failure(check, getattr(copy, name))
    except CannotKeep as reason:
        why = str(reason)
    except (OSError, TypeError, SyntaxError) as error:  # no source: a part built elsewhere
        why = f"its source was not found ({type(error).__name__})"
    except Exception as error:  # the copy itself failed to run
        why = f"its copy raised {type(error).__name__}: {error}"
    if why is not None:
        _note(stem, folder, f"passed in {origin} but was not kept: {why}")
        return f"not kept for later notebooks: {why}"
    try:
        path.parent.mkdir(exist_ok=True)
        path.write_text(source, encoding="utf-8")
        path.with_suffix(".why").unlink(missing_ok=True)
    except OSError as error:
        return f"not kept for later notebooks: {FOLDER}/ cannot be written here " \
               f"({type(error).__name__})"
    return f"kept as {FOLDER}/{stem}.py"


def drop(name: str, origin: str, why: str, folder: Path | None = None,
         stem: str | None = None) -> None:
    """A part that no longer passes in `origin`: later notebooks must not go on with an
    older copy of it."""
    _note(stem or name, folder, f"did not pass its check in {origin}: {why}")


@contextlib.contextmanager
def dropped_on_failure(name: str, origin: str, stem: str | None = None) -> Iterator[None]:
    """Around an exercise check: a part that fails it (a stub aside) is dropped."""
    try:
        yield
    except NotImplementedError:
        raise
    except Exception as failed:
        drop(name, origin, str(failed) or type(failed).__name__, stem=stem)
        raise


def load(name: str, origin: str, fallback: _Part, check: Callable[[Any], str],
         folder: Path | None = None, stem: str | None = None) -> _Part:
    """The learner's `name` from `my_parts/` when it is there and still passes `check`,
    else `fallback`; prints one line saying which, and why when it is not the learner's."""
    path, note = _paths(stem or name, folder)
    if not path.exists():
        why = note.read_text(encoding="utf-8").strip() if note.exists() else ""
        print(f"your {name} ({origin}) {why or 'is not written yet'} - using vmem's")
        return fallback
    try:
        part = getattr(_run(path.read_text(encoding="utf-8"), f"{path.stem}_{id(path)}",
                            str(path)), name)
        why = f"it is vmem's own {name}, not yours" if is_vmems(part) else failure(check, part)
    except Exception as error:  # a file edited by hand must not stop the notebook
        part, why = None, f"{type(error).__name__}: {error}"
    if why is None:
        print(f"using your {name} from {origin} ({FOLDER}/{path.name})")
        return part
    print(f"your {name} from {origin} does not pass now ({why}) - using vmem's")
    return fallback
