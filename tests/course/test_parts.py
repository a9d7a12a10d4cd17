"""The learner's parts, kept by one notebook and loaded by the next (`vmem.course.parts`),
and the agent made of them (`vmem.course.assembly`).

Cells are simulated as a kernel runs them: each cell's source is registered in linecache
under its own file name (as IPython does) and executed in one shared namespace whose `In`
lists the sources so far.
"""

from __future__ import annotations

import linecache
import sys
import types
from datetime import timedelta
from pathlib import Path

import nbformat
import pytest

from vmem import StepClock
from vmem.course import parts
from vmem.course.assembly import DispatchedTools, PartsAgent, ReadingPolicy, learner_parts
from vmem.course.lesson_checks import l04

ROOT = Path(__file__).resolve().parents[2]


class Kernel:
    """A namespace that runs sources the way a notebook kernel runs cells."""

    def __init__(self, history: bool = True) -> None:
        self.ns: dict = {"__name__": "__main__", "In": [""]}
        self.history, self.count = history, 0

    def run(self, source: str) -> None:
        self.count += 1
        filename = f"<cell {self.count} {id(self)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        if self.history:  # a kernel driven by nbval keeps none: `In` stays [""]
            self.ns["In"].append(source)
        exec(compile(source, filename, "exec"), self.ns)


def _ok(part) -> str:
    return "fine"


@pytest.fixture
def kernel() -> Kernel:
    kernel = Kernel()
    kernel.run("import json as j\nfrom vmem import Record\n"
               "TYPES = {str: 'string', int: 'integer'}\n"
               "def kind(value):\n    return TYPES[type(value)]\n")
    kernel.run("def show(value):\n    return j.dumps({kind(value): value})\n"
               "class Box:\n    LIMIT = 2\n"
               "    def __init__(self):\n        self.items = []\n"
               "    def put(self, text):\n"
               "        self.items.append(Record(text, id=len(self.items) + 1))\n"
               "        return show(self.items[-1].id)\n"
               "mine = show\n")
    return kernel


def _module(source: str, name: str):
    namespace: dict = {}
    exec(compile(source, "<kept>", "exec"), namespace)
    return namespace[name]


def test_a_kept_function_brings_what_it_reads_and_nothing_else(kernel):
    source = parts.module_source("show", kernel.ns["show"])
    assert "import json as j" in source and "TYPES = {" in source and "def kind" in source
    assert "class Box" not in source  # defined beside it, never read by it
    assert _module(source, "show")(3) == '{"integer": 3}'


def test_constants_are_found_without_an_input_history():
    kernel = Kernel(history=False)
    kernel.run("LIMITS = {str: 3}\ndef cut(text):\n    return text[:LIMITS[str]]\n")
    assert _module(parts.module_source("cut", kernel.ns["cut"]), "cut")("abcdef") == "abc"


def test_a_kept_class_brings_the_functions_its_methods_read(kernel):
    source = parts.module_source("Box", kernel.ns["Box"])
    assert "from vmem.messages import Record" in source and "def show" in source
    box = _module(source, "Box")()
    assert box.put("a") == '{"integer": 1}' and box.items[0].text == "a"


def test_a_part_kept_under_another_name_keeps_its_name(kernel):
    assert _module(parts.module_source("mine", kernel.ns["mine"]), "mine")("x") == \
        '{"string": "x"}'


def test_a_part_that_reads_a_value_built_by_a_call_is_not_kept(kernel, tmp_path):
    kernel.run("from vmem import Memory\nstore = Memory.open(':memory:')\n"
               "def reader(text):\n    return store.recall.search(text)\n")
    note = parts.keep("reader", kernel.ns["reader"], "notebook 99", _ok, folder=tmp_path)
    assert note.startswith("not kept") and "store (Memory)" in note
    assert not (tmp_path / parts.FOLDER / "reader.py").exists()


def test_a_pattern_or_a_set_built_by_a_call_is_copied(kernel):
    kernel.run("import re\nWORD = re.compile(r'\\w+')\nSTOP = set(['a', 'the'])\n"
               "def words(text):\n    return [w for w in WORD.findall(text) if w not in STOP]\n")
    source = parts.module_source("words", kernel.ns["words"])
    assert "WORD = re.compile(" in source and "import re" in source
    assert _module(source, "words")("the cat, a hat") == ["cat", "hat"]


def test_a_value_changed_after_its_assignment_is_not_kept(kernel, tmp_path):
    kernel.run("SIZE = 3\ndef cut(text):\n    return text[:SIZE]\n")
    kernel.ns["SIZE"] = 5  # changed at run time (a loop, +=): the copy would read 3
    note = parts.keep("cut", kernel.ns["cut"], "notebook 99", _ok, folder=tmp_path)
    assert note == "not kept for later notebooks: SIZE was changed after its assignment " \
        "(build it in one statement)"
    assert not (tmp_path / parts.FOLDER / "cut.py").exists()


def test_a_copy_that_does_not_pass_is_not_kept(kernel, tmp_path, capsys):
    kernel.run("def cut(text):\n    return text[:3]\n")

    def check(cut) -> str:
        assert cut.__module__ == "__main__", "the copy is not the notebook's function"
        return "fine"

    note = parts.keep("cut", kernel.ns["cut"], "notebook 99", check, folder=tmp_path)
    assert note.startswith("not kept for later notebooks: ") and "not the notebook's" in note
    assert parts.load("cut", "notebook 99", None, _ok, folder=tmp_path) is None
    assert capsys.readouterr().out.startswith(
        "your cut (notebook 99) passed in notebook 99 but was not kept: ")


def test_keep_then_load_gives_the_learners_part(kernel, tmp_path, capsys):
    assert parts.keep("show", kernel.ns["show"], "notebook 99", _ok, folder=tmp_path) == \
        "kept as my_parts/show.py"
    loaded = parts.load("show", "notebook 99", None, _ok, folder=tmp_path)
    assert loaded is not None and loaded(2) == '{"integer": 2}'
    assert capsys.readouterr().out == \
        "using your show from notebook 99 (my_parts/show.py)\n"


def test_load_falls_back_with_one_line_when_missing_broken_or_wrong(tmp_path, capsys):
    fallback = object()

    def check(part) -> str:
        assert part(1) == 2, "part(1) must be 2"
        return "adds one"

    assert parts.load("inc", "notebook 99", fallback, check, folder=tmp_path) is fallback
    folder = tmp_path / parts.FOLDER
    folder.mkdir()
    (folder / "inc.py").write_text("def inc(x:\n")  # a file edited by hand, broken
    assert parts.load("inc", "notebook 99", fallback, check, folder=tmp_path) is fallback
    (folder / "inc.py").write_text("def inc(x):\n    return x\n")  # wrong
    assert parts.load("inc", "notebook 99", fallback, check, folder=tmp_path) is fallback
    (folder / "inc.py").write_text("def inc(x):\n    return x + 1\n")
    assert parts.load("inc", "notebook 99", fallback, check, folder=tmp_path)(5) == 6
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "your inc (notebook 99) is not written yet - using vmem's"
    assert lines[1].startswith("your inc from notebook 99 does not pass now (")
    assert "part(1) must be 2" in lines[2] and lines[2].endswith("- using vmem's")
    assert lines[3] == "using your inc from notebook 99 (my_parts/inc.py)"


def test_a_lesson_check_keeps_a_dispatcher_that_passed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    kernel = Kernel()
    kernel.run("from vmem.course.lesson_checks.l04 import dispatch as reference\n"
               "def dispatch(tools, name, arguments):\n"
               "    return reference(tools, name, arguments)\n")
    l04.check_dispatcher(kernel.ns["dispatch"])
    assert capsys.readouterr().out.endswith("(kept as my_parts/dispatch.py)\n")
    assert "return reference(" in (tmp_path / "my_parts" / "dispatch.py").read_text()
    kernel.run("def dispatch(tools, name, arguments):\n    return tools[name]()\n")
    l04.check_dispatcher(kernel.ns["dispatch"])  # raises on an unknown tool: dropped
    assert "kept" not in capsys.readouterr().out
    assert not (tmp_path / "my_parts" / "dispatch.py").exists()  # no older copy goes on
    why = (tmp_path / "my_parts" / "dispatch.why").read_text()
    assert why.startswith("did not pass its check in notebook 04: ")


def test_dispatched_tools_take_the_heartbeat_out_and_read_errors():
    seen = []

    def dispatch(tools, name, arguments):
        seen.append(arguments)
        return "Error: no such tool" if name == "nope" else tools[name]()

    tools = DispatchedTools({"send_message": lambda: "sent"}, dispatch, list)
    sent = tools.call("send_message", {"message": "hi", "request_heartbeat": True})
    assert (sent.ok, sent.heartbeat, sent.message) == (True, True, "hi")
    failed = tools.call("nope", {"request_heartbeat": True})
    assert (failed.ok, failed.heartbeat, failed.message) == (False, False, None)
    raw = tools.call("nope", '{"broken": ')
    assert not raw.ok and seen == ['{"message": "hi"}', "{}", '{"broken": ']


def test_an_agent_of_parts_answers_from_an_earlier_session_with_a_citation(tmp_path,
                                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)  # no my_parts/ here: every part is vmem's stand-in
    found = learner_parts()
    clock, path = StepClock(), tmp_path / "agent.json"
    first = PartsAgent(found, path, clock, max_tokens=150)
    save = ReadingPolicy("archival_memory_insert", "content", "Noted:")
    assert first.step(save, "Lena turns 30 on 3 May.") == "Noted: saved as record 1"
    first.step(save, "Bo is allergic to peanuts.")
    for _ in range(8):
        first.step(ReadingPolicy("archival_memory_insert", "content", "Noted:"),
                   "The weather was grey and wet all week long here.")
    assert not any("Lena" in m["content"] for m in first.context.queue)  # evicted
    first.close()
    clock.advance(timedelta(days=7))
    second = PartsAgent(found, path, clock, max_tokens=150)
    answer = second.step(ReadingPolicy("archival_memory_search", "query", "Notes:"),
                         "When does Lena turn 30?")
    assert second.session == 2
    assert answer.startswith("Notes: [record 1 | session 1, turn 1 | 2024-01-01 09:0")
    assert answer.endswith("Lena turns 30 on 3 May.")


def _printed(path: Path, cell_id: str) -> str:
    cell = next(c for c in nbformat.read(path, 4).cells if c.get("id") == cell_id)
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


@pytest.mark.skipif(not (ROOT / "solutions" / "lessons").is_dir(),
                    reason="a student release has no complete lessons")
@pytest.mark.parametrize(("stem", "cell_id", "count"), [
    ("05_agent_loop", "your-kernel-load", 1), ("06_persistence", "own-parts-load", 9)])
def test_later_notebooks_use_the_kept_parts_in_the_complete_run_only(stem, cell_id, count):
    learner = _printed(ROOT / "notebooks" / f"{stem}.ipynb", cell_id).splitlines()
    complete = _printed(ROOT / "solutions" / "lessons" / f"{stem}.ipynb", cell_id).splitlines()
    assert len(learner) == len(complete) == count
    assert all(line.endswith("is not written yet - using vmem's") for line in learner)
    assert all(line.startswith("using your ") for line in complete)


# Ways learners write a part (found by trying the lessons cold): each is kept, and the
# copy behaves as the notebook's part does.
STYLES = {
    "an imported function": ("from math import ceil\n"
                             "def count(text):\n    return ceil(len(text.split()) * 1.3)\n",
                             "count", lambda part: part("a b c") == 4),
    "a star import and a typing hint": (
        "from math import *\nfrom typing import Optional\n"
        "def count(text: Optional[str]) -> int:\n    return floor(len((text or '').split()))\n",
        "count", lambda part: part("a b") == 2),
    "a comprehension and lambdas in a table": (
        "RATIOS = {name: value for name, value in [('word', 1.3)]}\n"
        "CHECKS = {str: lambda v: isinstance(v, str)}\n"
        "def count(text):\n    assert CHECKS[str](text)\n"
        "    return round(len(text.split()) * RATIOS['word'])\n",
        "count", lambda part: part("a b c d") == 5),
    "a lambda as the part": ("import math\ncount = lambda text: math.ceil(len(text.split()))\n",
                             "count", lambda part: part("a b") == 2),
    "static methods and a property": (
        "import math\nRATIO = 1.3\n"
        "class Counter:\n    @staticmethod\n    def scale(n):\n"
        "        return math.ceil(n * RATIO)\n"
        "    @property\n    def unit(self):\n        return 'token'\n",
        "Counter", lambda part: part.scale(3) == 4 and part().unit == "token"),
    "a dataclass": ("from dataclasses import dataclass\nimport math\n"
                    "@dataclass\nclass Rate:\n    ratio: float = 1.3\n"
                    "    def count(self, text):\n"
                    "        return math.ceil(len(text.split()) * self.ratio)\n",
                    "Rate", lambda part: part().count("a b c") == 4),
    "a class without methods": ("from enum import Enum\nclass Mode(Enum):\n    FAST = 1\n",
                                "Mode", lambda part: part.FAST.value == 1),
    "a decorator of the learner's": (
        "import functools\nimport math\n"
        "def logged(function):\n    @functools.wraps(function)\n"
        "    def run(*args):\n        return function(*args)\n    return run\n"
        "@logged\ndef count(text):\n    return math.ceil(len(text.split()) * 1.3)\n",
        "count", lambda part: part("a b c") == 4),
}


@pytest.mark.parametrize("style", sorted(STYLES))
def test_a_learners_style_is_kept(style, tmp_path, monkeypatch):
    source, name, behaves = STYLES[style]
    kernel = Kernel(history=False)
    main = types.ModuleType("__main__")  # as in a kernel, the cells run in __main__
    main.__dict__.update(kernel.ns)
    kernel.ns = main.__dict__
    monkeypatch.setitem(sys.modules, "__main__", main)
    kernel.run(source)
    assert behaves(kernel.ns[name])

    def check(part) -> str:
        assert behaves(part), "the copy behaves differently"
        return "fine"

    assert parts.keep(name, kernel.ns[name], "notebook 99", check, folder=tmp_path) == \
        f"kept as my_parts/{name}.py"
    assert behaves(parts.load(name, "notebook 99", None, check, folder=tmp_path))


def test_a_folder_that_cannot_be_written_keeps_nothing_and_says_so(kernel, tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder would go")
    note = parts.keep("show", kernel.ns["show"], "notebook 99", _ok, folder=blocked)
    assert note.startswith("not kept for later notebooks: my_parts/ cannot be written here")


def test_an_agent_runs_on_an_archive_without_a_records_list(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = learner_parts()
    reference = found.TinyArchive

    class Renamed:  # the lesson's insert and search, its list under another name
        def __init__(self, clock=None):
            self.inner = reference(clock=clock)

        def insert(self, text, session, turn, source_url=None):
            return self.inner.insert(text, session, turn, source_url)

        def search(self, query, k=3):
            return self.inner.search(query, k)

    found.TinyArchive = Renamed
    clock, path = StepClock(), tmp_path / "agent.json"
    first = PartsAgent(found, path, clock, max_tokens=150)
    first.step(ReadingPolicy("archival_memory_insert", "content", "Noted:"),
               "Lena turns 30 on 3 May.")
    first.close()
    second = PartsAgent(found, path, clock, max_tokens=150)
    answer = second.step(ReadingPolicy("archival_memory_search", "query", "Notes:"),
                         "When does Lena turn 30?")
    assert answer.startswith("Notes: [record 1 | session 1, turn 1 | 2024-01-01 09:00")
