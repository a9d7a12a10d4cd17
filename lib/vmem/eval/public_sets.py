"""Public prompt-injection sets the guard's learned layer may train on, read from a fetched copy.

Nothing here is in the repository: each loader takes the path of a copy its user fetched
and returns None when it is absent, like the loaders of `vmem.eval.guard_sets`.

- **AgentDojo** (ETH Zurich SPY Lab, `pip download agentdojo==0.1.35 --no-deps`, MIT
  licence): the wheel itself, or the folder it was unpacked into. Its injection tasks'
  goals (`GOAL` of every class in `default_suites/*/*/injection_tasks.py`, read with
  `ast`, never imported) are set into its attack templates (every string of
  `attacks/*.py` with a `{goal}` field and no field but `{goal}`, `{user}` and
  `{model}`): the injections. The ordinary texts are what its tools return where no attack
  was put (the defaults of `data/suites/*/injection_vectors.yaml` of five words or more:
  an e-mail's body, a review, a calendar entry).

A set's lines are split by index as the project's training-only sets are: with `dev`
(`vmem.eval.guard_sets.DEV` or one of `FOLDS`), goals and ordinary texts whose index % 10
is in it are held out of training and measured instead; the same goal is held out in
every template. Nothing of these sets is held out for the final figures: they are
training and dev data only.
"""

from __future__ import annotations

import ast
import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

from .guard_sets import DEV, LabelledSet

__all__ = ["AGENTDOJO_VERSION", "agentdojo"]

AGENTDOJO_VERSION = "0.1.35"  # the version the shipped weights were trained with
_USERS = ("Emma Johnson", "the user")  # the names AgentDojo's templates are filled with
_MODELS = ("the AI language model",)
_FIELD = re.compile(r"\{(\w+)\}")
_DEFAULT = re.compile(r'^\s+default:\s*("(?:[^"\\]|\\.)*")\s*$', re.MULTILINE)


def agentdojo(path: Path, *, dev: bool | frozenset[int] = False) -> LabelledSet | None:
    """AgentDojo's injections (goals set in its attack templates) and ordinary tool texts,
    or None when `path` holds no copy of the package."""
    files = _package_files(path)
    if files is None:
        return None
    goals = sorted({goal for name, source in files.items()
                    if re.fullmatch(r"agentdojo/default_suites/[^/]+/[^/]+/injection_tasks\.py",
                                    name)
                    for goal in _goals(source)})
    templates = sorted({text for name, source in files.items()
                        if re.fullmatch(r"agentdojo/attacks/[^/]+\.py", name)
                        for text in _templates(source)})
    ordinary = sorted(set(_ordinary(files)))
    held = DEV if dev is True else (dev or frozenset())
    out = LabelledSet()
    for index, goal in enumerate(goals):
        texts = sorted({template.format(goal=goal, user=user, model=model).strip()
                        for template in templates for user in _USERS for model in _MODELS})
        (out.held_injections if index % 10 in held else out.train_injections).extend(texts)
    for index, text in enumerate(ordinary):
        (out.held_ordinary if index % 10 in held else out.train_ordinary).append(text)
    return out


def _package_files(path: Path) -> dict[str, str] | None:
    """{path inside the package: text} of the .py and .yaml files of an AgentDojo wheel
    (`path` is the wheel, or a folder holding one) or of an unpacked copy."""
    wheels = ([path] if path.is_file() else
              sorted(path.glob("agentdojo-*.whl")) if path.is_dir() else [])
    if wheels:
        with zipfile.ZipFile(wheels[-1]) as wheel:
            return {name: wheel.read(name).decode("utf-8") for name in wheel.namelist()
                    if name.startswith("agentdojo/") and name.endswith((".py", ".yaml"))}
    root = path / "agentdojo"
    if not root.is_dir():
        return None
    return {file.relative_to(path).as_posix(): file.read_text(encoding="utf-8")
            for file in sorted(root.rglob("*")) if file.suffix in (".py", ".yaml")}


def _value(node: ast.expr, names: dict[str, str]) -> str | None:
    """The string an expression of constants and f-strings over `names` stands for."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _value(node.left, names), _value(node.right, names)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                if part.conversion != -1 or part.format_spec is not None:
                    return None
                part = part.value
            value = _value(part, names)
            if value is None:
                return None
            parts.append(value)
        return "".join(parts)
    return None


def _assignments(body: list[ast.stmt], names: dict[str, str]) -> dict[str, str]:
    """`names` with the string constants that `body` assigns (in order) added."""
    names = dict(names)
    for statement in body:
        target = value = None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        if isinstance(target, ast.Name) and value is not None:
            if isinstance(value, ast.Constant) and type(value.value) in (int, float):
                text: str | None = str(value.value)  # a number an f-string may show
            else:
                text = _value(value, names)
            if text is not None:
                names[target.id] = text
    return names


def _goals(source: str) -> Iterator[str]:
    """The `GOAL` of every class of an injection-task module."""
    tree = ast.parse(source)
    module = _assignments(tree.body, {})
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            goal = _assignments(node.body, module).get("GOAL")
            if goal and goal.strip():
                yield " ".join(goal.split())


def _templates(source: str) -> Iterator[str]:
    """The strings of an attack module with a `{goal}` field and no unknown field (its
    docstrings, which quote one, left out)."""
    tree = ast.parse(source)
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                id(node) not in docstrings:
            fields = set(_FIELD.findall(node.value))
            if "goal" in fields and fields <= {"goal", "user", "model"}:
                yield node.value


def _ordinary(files: dict[str, str]) -> Iterator[str]:
    """The injection vectors' defaults of five words or more: what a tool returns where
    no attack was put (read line by line; every default is one double-quoted string)."""
    for name, text in sorted(files.items()):
        if name.endswith("/injection_vectors.yaml"):
            for match in _DEFAULT.finditer(text):
                default = json.loads(match.group(1))
                if len(default.split()) >= 5:
                    yield " ".join(default.split())
