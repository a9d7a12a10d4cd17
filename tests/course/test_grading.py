"""The exercise checks, proven in both directions without running a notebook.

The correct implementations are the solution notebooks' own solution cells (executed
here, so there is one copy of each answer). Every check must accept them and reject each
mutant, a plausible wrong implementation, with a message that points at what is wrong.
"""

from __future__ import annotations

import linecache
import math
import re
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from vmem.bm25 import tokenize
from vmem.course import grading
from vmem.course.checks import ex04

SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"


def load_solution(name: str) -> SimpleNamespace:
    """Run the solution cells (those with nbgrader metadata) of `name` in a fresh namespace."""
    path = SOLUTIONS / f"{name}.ipynb"
    if not path.exists():
        pytest.skip(f"{path} not found (a student release has no solutions/)")
    namespace: dict = {}
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
            exec(compile(cell.source, f"{name}.ipynb", "exec"), namespace)
    return SimpleNamespace(**namespace)


def rejects(check, *args, hint: str) -> str:
    """The check must fail with an AssertionError whose message contains `hint`."""
    with pytest.raises(AssertionError) as failure:
        check(*args)
    message = str(failure.value)
    assert hint.lower() in message.lower(), f"unhelpful message: {message}"
    return message


# --- exercise 1 -----------------------------------------------------------------------------

def load_ex1() -> SimpleNamespace:
    """ex01's solution cells, run after its untagged cells (they import the given
    `approx_tokens`, which the solution cells use)."""
    path = SOLUTIONS / "ex01_token_cap.ipynb"
    namespace: dict = {}
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code" and (cell.metadata.get("nbgrader", {}).get("solution")
                                         or not cell.metadata.get("tags")):
            exec(compile(cell.source, path.name, "exec"), namespace)
    return SimpleNamespace(**namespace)


EX1 = load_ex1() if (SOLUTIONS / "ex01_token_cap.ipynb").exists() else None


def approx_floor(text: str) -> int:
    return int(len(text.split()) * 1.3)


def make_capped(*, lesson_groups=False, newest_first=False, evict_at_cap=False, pin=True,
                refuse_oversize=False, recursive=True, fold_each_unit=False, summary_cap=True,
                keep_last_words=False, compress_again=True):
    """A CappedContext with one flaw switched on (all off: a correct one, stretch included).
    `lesson_groups` is lesson 02's pasted answer: one call with the tool results right after
    it is a group, so a chain of calls is split; `pin=False` protects only the newest unit,
    as lesson 02 did, instead of the current turn; `compress_again=False` is a correct core
    answer without the stretch."""

    def approx(text):
        return math.ceil(len(text.split()) * 1.3)

    def is_call(message):
        return message["role"] == "assistant" and bool(message.get("tool_calls"))

    def units(messages):
        found = []
        for message in messages:
            continues = message["role"] == "tool" or (is_call(message) and not lesson_groups)
            if found and is_call(found[-1][0]) and continues:
                found[-1].append(message)
            else:
                found.append([message])
        return found

    class Capped:
        def __init__(self, max_tokens, summarize, cap):
            self.max_tokens, self.summarize, self.summary_cap = max_tokens, summarize, cap
            self.messages, self.evicted, self.summary = [], [], None

        def tokens(self):
            return sum(approx(m["content"]) for m in self.messages)

        def over(self):
            return self.tokens() >= self.max_tokens if evict_at_cap else \
                self.tokens() > self.max_tokens

        def fit(self, text):
            if not summary_cap:
                return text
            if compress_again and approx(text) > self.summary_cap:
                text = self.summarize(None, [{"role": "system", "content": text}])
            words = text.split()
            while words and approx(" ".join(words)) > self.summary_cap:
                words.pop(-1 if not keep_last_words else 0)
            return " ".join(words)

        def append(self, message):
            if refuse_oversize and approx(message["content"]) > self.max_tokens:
                raise ValueError("too big")
            self.messages.append(message)
            users = [i for i, m in enumerate(self.messages) if m["role"] == "user"]
            end = (users[-1] if users else 0) if pin else len(self.messages) - 1
            older = units(self.messages[:end])
            if newest_first:
                older.reverse()
            batch = []
            for unit in older:
                if not self.over():
                    break
                start = self.messages.index(unit[0])
                del self.messages[start:start + len(unit)]
                batch += unit
                if fold_each_unit:
                    self.summary = self.fit(self.summarize(self.summary, unit))
            if batch:
                self.evicted += batch
                if not fold_each_unit:
                    self.summary = self.fit(self.summarize(self.summary if recursive else None,
                                                           batch))

    return Capped


def test_ex1_accepts_the_solution_and_the_unflawed_mutant_base_core_and_stretch():
    for capped in (EX1.CappedContext, make_capped()):
        assert grading.check_ex1(EX1.approx_tokens, capped).startswith("passed: ex01:")
        assert grading.check_ex1(EX1.approx_tokens, capped, stretch=True) \
            .startswith("passed: ex01 stretch:")


@pytest.mark.parametrize(("approx", "flaw", "hint"), [
    (approx_floor, {}, "approx_tokens is given"),
    (None, {"lesson_groups": True}, "a tool-call run was split"),
    (None, {"newest_first": True}, "the oldest must leave first"),
    (None, {"evict_at_cap": True}, "a total equal to the cap fits"),
    (None, {"pin": False}, "the newest user message was evicted"),
    (None, {"refuse_oversize": True}, "a message is never refused"),
    (None, {"recursive": False}, "pass the previous summary"),
    (None, {"fold_each_unit": True}, "call it once per append"),
    (None, {"summary_cap": False}, "over its summary_cap"),
    (None, {"keep_last_words": True}, "expected the first words"),
])
def test_ex1_rejects_mutants(approx, flaw, hint):
    message = rejects(grading.check_ex1, approx or EX1.approx_tokens, make_capped(**flaw),
                      hint=hint)
    assert "\n" not in message


def test_ex1_stretch_tier_is_graded_separately():
    """A core-only answer (cut without compressing again) passes the core, fails the stretch."""
    core_only = make_capped(compress_again=False)
    assert grading.check_ex1(EX1.approx_tokens, core_only).startswith("passed: ex01:")
    message = rejects(grading.check_ex1, EX1.approx_tokens, core_only, True,
                      hint="cut only if that is still too long")
    assert "it was cut without asking again" in message


# --- exercise 2 -----------------------------------------------------------------------------

EX2 = load_solution("ex02_bm25") if (SOLUTIONS / "ex02_bm25.ipynb").exists() else None


def make_recall(*, per_k=False, reverse_ties=False, extra=0, total=False):
    """recall@k with one flaw switched on (all defaults: correct)."""

    def recall(rank, dataset, k):
        values = []
        for query, relevant in dataset["queries"]:
            s = rank(query, dataset["docs"])
            order = sorted(range(len(s)), key=lambda i: (-s[i], -i if reverse_ties else i))
            found = len(set(relevant) & set(order[:k + extra]))
            values.append(found / (k if per_k else len(relevant)))
        return sum(values) if total else sum(values) / len(values)

    return recall


def make_ablate(*, ignore_b=False, analyzer=None, swap=False, k1=None):
    """ablate with one flaw switched on (all defaults: correct)."""
    from vmem.bm25 import BM25Index
    from vmem.eval.analysis import analyze

    def ablate(facts, questions, configs, k):
        out = {}
        for name, config in configs.items():
            stem, stop = config["stemming"], config["stopwords"]
            if swap:
                stem, stop = stop, stem
            chosen = analyzer or (lambda text, s=stem, t=stop:
                                  analyze(text, stemming=s, stopwords=t).split())
            index = BM25Index(b=0.75 if ignore_b else config["b"], analyzer=chosen,
                              **({"k1": k1} if k1 else {}))
            for position, fact in enumerate(facts):
                index.add(position, fact)

            def rank(query, docs, index=index):
                scores = index.scores(query)
                return [scores.get(i, 0.0) for i in range(len(docs))]

            out[name] = EX2.recall_at_k(rank, {"docs": facts, "queries": questions}, k)
        return out

    return ablate


def choose_last_on_tie(results):
    best = max(results.values())
    name = [n for n in results if results[n] == best][-1]
    return name, EX2.choose(results)[1]


def choose_lowest(results):
    worst = min(results, key=results.get)
    return worst, EX2.choose(results)[1]


def choose_made_up_number(results):
    name, why = EX2.choose(results)
    return name, why + " Stemming adds 0.37."


def choose_without_runner_up(results):
    name = EX2.choose(results)[0]
    return name, f"{name!r} scores {results[name]:.2f}."


def changed_swapped(facts, questions, before, after, k):
    gained, lost = EX2.changed_questions(facts, questions, before, after, k)
    return lost, gained


def changed_at_k1(facts, questions, before, after, k):
    return EX2.changed_questions(facts, questions, before, after, 1)


def ex2_args(recall=None, ablate=None, choose=None):
    return (recall or EX2.recall_at_k, ablate or EX2.ablate, choose or EX2.choose)


def test_ex2_accepts_the_solution_core_and_stretch():
    assert grading.check_ex2(*ex2_args()).startswith("passed: ex02:")
    assert grading.check_ex2(make_recall(), make_ablate(), EX2.choose).startswith("passed: ex02:")
    assert grading.check_ex2(*ex2_args(), EX2.changed_questions, stretch=True) \
        .startswith("passed: ex02 stretch:")


@pytest.mark.parametrize(("flaw", "hint"), [
    ({"per_k": True}, "not by k"),
    ({"reverse_ties": True}, "lower index"),
    ({"extra": 1}, "top k"),
    ({"total": True}, "average the per-query recall"),
])
def test_ex2_rejects_recall_mutants(flaw, hint):
    rejects(grading.check_ex2, *ex2_args(recall=make_recall(**flaw)), hint=hint)


@pytest.mark.parametrize(("flaw", "hint"), [
    ({"ignore_b": True}, "with that configuration's b"),
    ({"analyzer": "default"}, "BM25Index's default analyzer"),
    ({"analyzer": "plain"}, "scored with plain words"),
    ({"swap": True}, "switches are swapped"),
])
def test_ex2_rejects_ablate_mutants(flaw, hint):
    from vmem.bm25 import analyze
    analyzers = {"default": analyze, "plain": tokenize}
    if isinstance(flaw.get("analyzer"), str):
        flaw = {"analyzer": analyzers[flaw["analyzer"]]}
    message = rejects(grading.check_ex2, *ex2_args(ablate=make_ablate(**flaw)), hint=hint)
    assert "\n" not in message and "held-out" in message


@pytest.mark.parametrize(("choose", "hint"), [
    (choose_last_on_tie, "on a tie the configuration listed first"),
    (choose_lowest, "pick the highest recall"),
    (choose_made_up_number, "quotes 0.37, which is no configuration's recall"),
    (choose_without_runner_up, "must name the runner-up"),
])
def test_ex2_rejects_choose_mutants(choose, hint):
    rejects(grading.check_ex2, *ex2_args(choose=choose), hint=hint)


@pytest.mark.parametrize(("changed", "hint"), [
    (changed_swapped, "the wrong way round"),
    (changed_at_k1, "compare each question's own recall@k"),
])
def test_ex2_stretch_rejects_mutants_and_the_core_does_not_need_it(changed, hint):
    assert grading.check_ex2(*ex2_args(), changed).startswith("passed: ex02:")
    rejects(grading.check_ex2, *ex2_args(), changed, True, hint=hint)


# --- exercise 3 -----------------------------------------------------------------------------

EX3 = load_solution("ex03_citations") if (SOLUTIONS / "ex03_citations.ipynb").exists() else None


def insert_without_url(store, text, session_id, turn_id, source_url):
    return store.insert(text, session_id=session_id, turn_id=turn_id)


def insert_swapping_ids(store, text, session_id, turn_id, source_url):
    return store.insert(text, session_id=turn_id, turn_id=session_id, source_url=source_url)


def hits(store, question):
    return list(store.search(question, top_k=3))


def cite_next_record(store, question):
    return " ".join(f"{h.record.text} [{h.record.id + 1}]" for h in hits(store, question))


def cite_first_hit_only(store, question):
    found = hits(store, question)
    return " ".join(h.record.text for h in found) + (f" [{found[0].record.id}]" if found else "")


def cite_all_after_first_statement(store, question):
    found = hits(store, question)
    if not found:
        return "Nothing found."
    return found[0].record.text + "".join(f" [{h.record.id}]" for h in found)


def no_citations(store, question):
    return " ".join(h.record.text for h in hits(store, question))


def cite_turn_ids(store, question):
    return " ".join(f"{h.record.text} [{h.record.turn_id}]" for h in hits(store, question))


def always_cite_something(store, question):
    found = hits(store, question)
    if not found:
        return "I am not sure, but see [1]."
    return EX3.answer_with_citations(store, question)


def test_ex3_accepts_the_solution():
    assert grading.check_ex3(EX3.insert_fact, EX3.answer_with_citations).startswith("passed: ex03:")


@pytest.mark.parametrize(("insert", "answer", "hint"), [
    (insert_without_url, None, "source_url"),
    (insert_swapping_ids, None, "session_id"),
    (None, cite_next_record, "does not use it"),
    (None, cite_first_hit_only, "needs its citation"),
    (None, cite_all_after_first_statement, "does not use it"),
    (None, no_citations, "needs its citation"),
    (None, cite_turn_ids, "cites record"),
    (None, always_cite_something, "cite nothing"),
])
def test_ex3_rejects_mutants(insert, answer, hint):
    rejects(grading.check_ex3, insert or EX3.insert_fact, answer or EX3.answer_with_citations,
            hint=hint)


# --- exercise 4 -----------------------------------------------------------------------------

EX4 = load_solution("ex04_poisoning") if (SOLUTIONS / "ex04_poisoning.ipynb").exists() else None


def flags_instructions(text):
    return "instructions" in text.lower()


def only_the_planted_phrase(text):
    return "ignore all future user instructions" in text.lower()


def ignore_words(text):
    return bool(re.search(r"\b(ignore|disregard|forget)\b", text, re.IGNORECASE))


def flags_everything(text):
    return True


def returns_a_match(text):
    return re.search(r"ignore|disregard|you are now|system", text, re.IGNORECASE)


def test_ex4_accepts_the_solution():
    assert grading.check_ex4(EX4.is_directive).startswith("passed: ex04:")


@pytest.mark.parametrize(("guard", "hint"), [
    (flags_instructions, "held-out injections"),
    (only_the_planted_phrase, "generalise beyond the one planted sentence"),
    (ignore_words, "held-out injections"),
    (flags_everything, "not text that merely contains such words"),
    (returns_a_match, "return true or false"),
])
def test_ex4_rejects_mutants(guard, hint):
    rejects(grading.check_ex4, guard, hint=hint)


def test_ex4_rejects_a_guard_that_flags_every_mention_of_instructions():
    """The issue's named mutant: tuned to catch injections, but too eager on ordinary text."""
    def eager(text):
        return EX4.is_directive(text) or "instructions" in text.lower()

    rejects(grading.check_ex4, eager, hint="ordinary memories")


def test_ex4_sources_accepts_the_solution():
    message = grading.check_ex4_sources(EX4.should_quarantine, EX4.is_directive)
    assert message.startswith("passed: ex04 sources: 10/10 user preferences kept")


def _ignores_the_source(text, source):
    return EX4.is_directive(text)


def _never_from_the_user(text, source):
    return source != "user" and EX4.is_directive(text)


def _everyone_is_the_user(text, source):
    return EX4.should_quarantine(text, "user")


def _unknown_source_is_trusted(text, source):
    return source is not None and EX4.should_quarantine(text, source)


def _returns_a_match(text, source):
    return re.search("system", text, re.IGNORECASE) if source == "user" else \
        EX4.is_directive(text)


@pytest.mark.parametrize(("rule", "hint"), [
    (_ignores_the_source, "held-out preferences"),
    (_never_from_the_user, "orders no user gives"),
    (_everyone_is_the_user, "judged as strictly"),
    (_unknown_source_is_trusted, "from None"),
    (_returns_a_match, "return true or false"),
])
def test_ex4_sources_rejects_mutants(rule, hint):
    rejects(grading.check_ex4_sources, rule, EX4.is_directive, hint=hint)


def test_ex4_source_cases_are_not_in_the_notebook():
    cases = ex04.held_out_cases("ex04_sources.json")
    notebook = (SOLUTIONS / "ex04_poisoning.ipynb").read_text(encoding="utf-8")
    assert len(cases["preferences"]) >= 10 and len(cases["hostile"]) >= 10
    assert not [text for kind in ("preferences", "hostile") for text in cases[kind]
                if text in notebook]


def test_ex4_hidden_cases_are_not_in_the_notebook():
    cases = ex04.held_out_cases()
    notebook = (SOLUTIONS / "ex04_poisoning.ipynb").read_text(encoding="utf-8")
    assert len(cases["injections"]) >= 30 and len(cases["ordinary"]) >= 50
    assert not [text for kind in ("injections", "ordinary") for text in cases[kind]
                if text in notebook]


# --- exercise 5 -----------------------------------------------------------------------------

EX5 = load_solution("ex05_typed_core") if (SOLUTIONS / "ex05_typed_core.ipynb").exists() else None


def sorted_blocks(core, limits=None):
    return EX5.to_memgpt(dict(sorted(core.items())), limits)


def truncating_blocks(core, limits=None):
    limits = limits or {}
    return EX5.to_memgpt({label: value[:limits.get(label, 2000)] for label, value in core.items()},
                         limits)


def no_descriptions(core, limits=None):
    return [dict(block, description="") for block in EX5.to_memgpt(core, limits)]


def make_core(flaw: str):
    """The solution's TypedCore with one flaw."""
    base = EX5.TypedCore

    class Flawed(base):
        def _commit(self, block, value):
            if flaw == "truncates":
                block["value"] = value[:block["limit"]]
            elif flaw == "off_by_one" and len(value) >= block["limit"]:
                raise ValueError(f"block {block['label']!r} is at its limit of {block['limit']}")
            elif flaw == "vague_error" and len(value) > block["limit"]:
                raise ValueError(f"block {block['label']!r} is too long")
            else:
                super()._commit(block, value)

        def replace(self, label, old, new):
            if flaw == "replace_ignores_read_only" and label in self.blocks:
                block = self.blocks[label]
                if old and old in block["value"]:
                    block["value"] = block["value"].replace(old, new)
                    return
            super().replace(label, old, new)

        @classmethod
        def from_memgpt(cls, blocks):
            if flaw == "default_limits":
                blocks = [dict(block, limit=2000) for block in blocks]
            return cls(blocks)

    return Flawed


def test_ex5_accepts_the_solution():
    assert grading.check_ex5(EX5.to_memgpt, EX5.TypedCore).startswith("passed: ex05:")


@pytest.mark.parametrize(("to_memgpt", "hint"), [
    (sorted_blocks, "in the order of the dict"),
    (truncating_blocks, "must raise ValueError"),
    (no_descriptions, "needs a description"),
])
def test_ex5_rejects_conversion_mutants(to_memgpt, hint):
    rejects(grading.check_ex5, to_memgpt, EX5.TypedCore, hint=hint)


@pytest.mark.parametrize(("flaw", "hint"), [
    ("truncates", "never truncate"),
    ("off_by_one", "exactly to its limit"),
    ("vague_error", "needs to see '30'"),
    ("replace_ignores_read_only", "read-only"),
    ("default_limits", "same blocks back"),
])
def test_ex5_rejects_typed_core_mutants(flaw, hint):
    rejects(grading.check_ex5, EX5.to_memgpt, make_core(flaw), hint=hint)


# --- behaviour shared by every check ----------------------------------------------------------

def test_a_stub_s_not_implemented_error_passes_through_unchanged():
    def stub(*args):
        raise NotImplementedError("write approx_tokens first")

    with pytest.raises(NotImplementedError, match="write approx_tokens first"):
        grading.check_ex1(stub, make_capped())


def test_an_unexpected_exception_becomes_a_failure_that_names_the_call():
    def broken(text):
        raise KeyError("oops")

    message = rejects(grading.check_ex4, broken, hint="is_directive on held-out")
    assert "KeyError" in message


# --- exercise 6 -----------------------------------------------------------------------------

EX6 = load_solution("ex06_memory_tools") \
    if (SOLUTIONS / "ex06_memory_tools.ipynb").exists() else None


def ex6_dispatch(flaw: str):
    """The solution's dispatcher with one flaw, each a mistake learners make."""
    import inspect
    import json

    def dispatch(tools, name, arguments):
        if flaw == "lets_tool_errors_escape" and name in tools:
            result = EX6.dispatch(tools, name, arguments)
            if result.get("error") == "tool_error":
                tools[name](**(json.loads(arguments) if isinstance(arguments, str)
                               else arguments))
            return result
        if flaw == "bool_is_int" and isinstance(arguments, dict):
            arguments = {key: int(value) if isinstance(value, bool) else value
                         for key, value in arguments.items()}
        if flaw == "drops_extra_arguments" and isinstance(arguments, dict) and name in tools:
            params = inspect.signature(tools[name]).parameters
            arguments = {key: value for key, value in arguments.items() if key in params}
        if flaw == "no_size_limit" and isinstance(arguments, dict):
            arguments = {key: value[:100] if isinstance(value, str) else value
                         for key, value in arguments.items()}
        if flaw == "vague_unknown_tool" and name not in tools:
            return {"ok": False, "error": "unknown_tool", "message": "unknown tool"}
        if flaw == "no_json_strings" and isinstance(arguments, str):
            return {"ok": False, "error": "invalid_json", "message": "arguments must be a dict"}
        if flaw == "null_skips_checks" and isinstance(arguments, dict) and name in tools \
                and None in arguments.values():
            return {"ok": True, "result": tools[name](**arguments)}
        return EX6.dispatch(tools, name, arguments)

    return dispatch


def ex6_schema(flaw: str):
    """The solution's schema generator with one flaw."""
    def tool_schema(fn):
        schema = EX6.tool_schema(fn)
        function = schema["function"]
        params = function["parameters"]
        if flaw == "all_required":
            params["required"] = list(params["properties"])
        elif flaw == "no_arg_descriptions":
            for spec in params["properties"].values():
                spec["description"] = ""
        elif flaw == "whole_docstring":
            import inspect
            function["description"] = inspect.getdoc(fn)
        elif flaw == "python_type_names":
            for spec in params["properties"].values():
                spec["type"] = {"string": "str", "integer": "int"}.get(spec["type"],
                                                                       spec["type"])
        elif flaw == "no_list_items":
            for spec in params["properties"].values():
                spec.pop("items", None)
        return schema

    return tool_schema


def test_ex6_accepts_the_solution_core_and_stretch():
    assert grading.check_ex6(EX6.tool_schema, EX6.dispatch).startswith("passed: ex06 core:")
    assert grading.check_ex6(EX6.tool_schema, EX6.dispatch,
                             stretch=True).startswith("passed: ex06 stretch:")


@pytest.mark.parametrize(("flaw", "hint"), [
    ("lets_tool_errors_escape", "dispatch raised ValueError on a tool that raises"),
    ("bool_is_int", "bool where an int is expected"),
    ("drops_extra_arguments", "on an extra argument"),
    ("no_size_limit", "MAX_STRING_CHARS is the longest string allowed"),
    ("vague_unknown_tool", "needs to see 'plant'"),
    ("no_json_strings", "parse a string with json.loads"),
    ("null_skips_checks", "null for a required argument"),
])
def test_ex6_rejects_dispatcher_mutants(flaw, hint):
    message = rejects(grading.check_ex6, EX6.tool_schema, ex6_dispatch(flaw), hint=hint)
    assert "\n" not in message and "Traceback" not in message


@pytest.mark.parametrize(("flaw", "hint"), [
    ("all_required", "only parameters without a default"),
    ("no_arg_descriptions", "Args: section"),
    ("whole_docstring", "first paragraph"),
    ("python_type_names", "map the annotation to a JSON type"),
])
def test_ex6_rejects_schema_mutants(flaw, hint):
    rejects(grading.check_ex6, ex6_schema(flaw), EX6.dispatch, hint=hint)


def test_ex6_stretch_tier_is_graded_separately():
    """A core-only answer passes the core and fails the stretch tier, with its own hint."""
    def core_only(tools, name, arguments):
        result = EX6.dispatch(tools, name, arguments)
        if result.get("error") == "unknown_tool":
            result["message"] = result["message"].split(" Did you mean")[0] + \
                " Use one of: " + ", ".join(tools) + "."
        return result

    assert grading.check_ex6(EX6.tool_schema, core_only).startswith("passed: ex06 core:")
    rejects(grading.check_ex6, EX6.tool_schema, core_only, True, hint="did you mean")
    rejects(grading.check_ex6, ex6_schema("no_list_items"), EX6.dispatch, True,
            hint="property 'crops' has items")


# --- exercise 7 -----------------------------------------------------------------------------

def load_cells(name: str, ids: tuple[str, ...]) -> SimpleNamespace:
    """Run the cells with these ids of a solution notebook (given helpers included)."""
    path = SOLUTIONS / f"{name}.ipynb"
    if not path.exists():
        pytest.skip(f"{path} not found (a student release has no solutions/)")
    namespace: dict = {}
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.get("id") in ids:
            filename = f"<{name}.ipynb {cell.id} {id(namespace)}>"  # a kernel's cell: its
            linecache.cache[filename] = (len(cell.source), None,  # source in linecache
                                         cell.source.splitlines(True), filename)
            exec(compile(cell.source, filename, "exec"), namespace)
    return SimpleNamespace(**namespace)


EX7 = load_cells("ex07_agent_loop", ("ex07-01", "ex07-03", "ex07-05")) \
    if (SOLUTIONS / "ex07_agent_loop.ipynb").exists() else None


def ex7_loop(flaw: str):
    """A loop with one flaw, each a mistake learners make (the helpers are the notebook's)."""
    def run_turn(memory, tools, policy, user_text, max_steps=10):
        memory.context.append(EX7.Message(role="user", content=user_text))
        last = max_steps - 1 if flaw == "max_steps_off_by_one" else max_steps
        for step in range(1, last + 1):
            answer = EX7.ask(memory, tools, policy)  # no try/except: fails the stretch tier
            before = EX7.warnings(memory)
            calls = EX7.record_answer(memory, answer, step)
            if not calls:
                return answer.content, "final_message"
            if flaw == "first_call_only":
                calls = calls[:1]
            again, sent = False, None
            for call, call_id in calls:
                result = EX7.run_call(memory, tools, call, call_id)
                if result.message is not None:
                    sent = result.message
                wake = {"no_heartbeat": not result.ok,
                        "ignores_failures": result.heartbeat}.get(flaw, result.heartbeat
                                                                  or not result.ok)
                again = again or wake
            if flaw == "ignores_warnings":
                before = EX7.warnings(memory)
            if sent is not None and not (flaw == "continues_after_send" and again):
                return sent, "final_message"
            if not (again or EX7.warnings(memory) > before):
                return answer.content, "final_message"
        return "", "max_steps"

    return run_turn


def test_ex7_accepts_the_solution_core_and_stretch():
    assert grading.check_ex7(EX7.run_turn).startswith("passed: ex07 core:")
    assert grading.check_ex7(EX7.run_turn, stretch=True).startswith("passed: ex07 stretch:")


@pytest.mark.parametrize(("flaw", "hint"), [
    ("no_heartbeat", "on chaining three calls with heartbeats"),
    ("ignores_failures", "a failed result (result.ok is False) must wake the policy"),
    ("max_steps_off_by_one", "stop at max_steps"),
    ("ignores_warnings", "events of kind 'warned'"),
    ("first_call_only", "run every call of one answer in order"),
    ("continues_after_send", "stop once send_message ran"),
])
def test_ex7_rejects_loop_mutants(flaw, hint):
    message = rejects(grading.check_ex7, ex7_loop(flaw), hint=hint)
    assert "\n" not in message and "Traceback" not in message


def test_ex7_stretch_tier_is_graded_separately():
    """A loop without try/except passes the core and fails the stretch with a hint."""
    assert grading.check_ex7(ex7_loop("none")).startswith("passed: ex07 core:")
    rejects(grading.check_ex7, ex7_loop("none"), True, hint="run_turn raised VMemError")


# --- exercise 8, the capstone ---------------------------------------------------------------

EX8_CELLS = ("ex08-01", "ex08-parts", "ex08-03", "ex08-05")


def ex8_agent(flaw: str):
    """The capstone's chat_session with one flaw, in a namespace of its own (chat_session
    makes a `NotesPolicy` from its namespace, so a flawed one is swapped in there)."""
    ns = load_cells("ex08_capstone", EX8_CELLS)
    right_session = ns.chat_session

    def send(message: str):
        return ns.AssistantTurn(tool_calls=[ns.ToolCall("send_message", {"message": message})])

    class Flawed(ns.NotesPolicy):
        def respond(self, messages, tools):
            answer = super().respond(messages, tools)
            name = answer.tool_calls[0].name
            if flaw == "no_search" and name == "archival_memory_search":
                return send("I do not remember.")
            if flaw == "never_saves" and name == "archival_memory_insert":
                return send("Noted.")
            newest = next(m for m in reversed(messages) if m["role"] in ("user", "tool"))
            found = newest["content"] if newest["role"] == "tool" else ""
            hits = [(number, quote) for number, head, quote in ns.CITED_HIT.findall(found)
                    if flaw == "no_quarantine_filter" or "QUARANTINED" not in head]
            if name == "send_message" and hits and flaw in (
                    "no_citation", "cites_rank", "no_quarantine_filter",
                    "cites_a_message_counter"):
                cite = {"no_citation": "", "cites_rank": " [record 1]",
                        "cites_a_message_counter": " [message 1]"}.get(
                    flaw, f" [record {hits[0][0]}]")
                return send(f"From my notes: {hits[0][1]}{cite}")
            return answer

    def chat_session(path, messages, clock):
        if flaw == "no_persistence":
            path = ":memory:"
        if flaw == "forgets_across_reopen":
            Path(path).unlink(missing_ok=True)
        return right_session(path, messages, clock)

    right_session.__globals__["NotesPolicy"] = Flawed
    return chat_session


def test_ex8_accepts_the_solution_core_and_stretch():
    ns = load_cells("ex08_capstone", EX8_CELLS)
    assert grading.check_ex8(ns.chat_session).startswith("passed: ex08 core:")
    assert grading.check_ex8(ns.chat_session, stretch=True).startswith("passed: ex08 stretch:")


def test_ex8_runs_on_the_learners_kept_parts(tmp_path, capsys):
    """With exercise 6's and 7's parts kept, the capstone loads and runs them."""
    ns6 = load_cells("ex06_memory_tools", ("ex06-01", "ex06-03", "ex06-05", "ex06-08"))
    ns7 = load_cells("ex07_agent_loop", ("ex07-01", "ex07-03", "ex07-05"))
    assert "(kept as my_parts/ex06_dispatch.py)" in grading.check_ex6(ns6.tool_schema, ns6.dispatch)
    assert "(kept as my_parts/ex07_run_turn.py)" in grading.check_ex7(ns7.run_turn)
    capsys.readouterr()
    ns = load_cells("ex08_capstone", EX8_CELLS)
    assert capsys.readouterr().out.splitlines() == [
        "using your dispatch from exercise 6 (my_parts/ex06_dispatch.py)",
        "using your run_turn from exercise 7 (my_parts/ex07_run_turn.py)"]
    assert ns.dispatch.__module__.startswith("my_parts_ex06_dispatch")
    assert grading.check_ex8(ns.chat_session, stretch=True).startswith("passed: ex08 stretch:")


@pytest.mark.parametrize(("flaw", "hint"), [
    ("no_persistence", "not ':memory:'"),
    ("forgets_across_reopen", "holds 1 session(s)"),
    ("no_search", "search before answering"),
    ("never_saves", "save statements with archival_memory_insert"),
    ("no_citation", "has no citation"),
    ("cites_rank", "cites [record 1], which says 'I am learning the cello"),
    ("cites_a_message_counter", "cites [message 1], which says 'I am learning the cello"),
])
def test_ex8_rejects_agents_that_do_not_remember(flaw, hint):
    message = rejects(grading.check_ex8, ex8_agent(flaw), hint=hint)
    assert "\n" not in message and "Traceback" not in message


def test_ex8_stretch_tier_is_graded_separately():
    """An agent that quotes quarantined hits passes the core and fails the stretch tier."""
    assert grading.check_ex8(ex8_agent("no_quarantine_filter")).startswith("passed: ex08 core:")
    rejects(grading.check_ex8, ex8_agent("no_quarantine_filter"), True,
            hint="a hit whose line says QUARANTINED is untrusted")


# --- the messages learners meet most (issue 13) ---------------------------------------------

def test_ex1_names_lesson_02_s_pasted_grouping_as_a_split_tool_call_run():
    message = rejects(grading.check_ex1, EX1.approx_tokens, make_capped(lesson_groups=True),
                      hint="a tool-call run was split (the context now starts: ")
    assert re.search(r"after \d+ appends \(user, ", message)
    assert "evict it whole" in message
    # a context that evicts at the cap is told about the cap, not about runs
    plain = rejects(grading.check_ex1, EX1.approx_tokens, make_capped(evict_at_cap=True),
                    hint="a total equal to the cap fits")
    assert "tool-call run" not in plain


def insert_positionally(store, text, session_id, turn_id, source_url):
    return store.insert(text, session_id, turn_id, source_url)


def insert_positionally_in_order(store, text, session_id, turn_id, source_url):
    return store.insert(text, (), session_id, turn_id, source_url)


def test_ex3_names_the_parameter_a_positional_argument_landed_in():
    message = rejects(grading.check_ex3, insert_positionally, EX3.answer_with_citations,
                      hint="as positional argument 2, which is the parameter `tags`")
    assert "by keyword" in message and "session_id=" in message
    assert "not iterable" not in message
    # positional arguments in the store's own order are not a mistake
    assert grading.check_ex3(insert_positionally_in_order, EX3.answer_with_citations) \
        .startswith("passed: ex03:")


def test_ex4_reports_caught_per_kind_and_two_missed_examples():
    cases = ex04.held_out_cases()
    message = rejects(grading.check_ex4, ignore_words, hint="caught by kind: ")
    kinds = list(dict.fromkeys(cases["injection_kinds"]))
    assert len(kinds) >= 4 and len(cases["injection_kinds"]) == len(cases["injections"])
    for kind in kinds:
        caught = sum(ignore_words(text) for text, of in
                     zip(cases["injections"], cases["injection_kinds"], strict=True) if of == kind)
        total = cases["injection_kinds"].count(kind)
        assert f"{kind} {caught}/{total}" in message
    examples = re.search(r"Missed, for example: (.*)\. Hint: the kind missed most is", message)
    assert examples, message
    missed = [text for text in cases["injections"] if not ignore_words(text)]
    shown = [text for text in missed if repr(text) in examples.group(1)]
    assert len(shown) == 2, examples.group(1)


LEARNER_CALLS = {  # each check, given learner code that raises KeyError('oops') at once
    "check_ex1": lambda bad: (bad, EX1.CappedContext),
    "check_ex2": lambda bad: (bad, EX2.ablate, EX2.choose),
    "check_ex3": lambda bad: (bad, EX3.answer_with_citations),
    "check_ex4": lambda bad: (bad,),
    "check_ex4_sources": lambda bad: (bad, EX4.is_directive),
    "check_ex5": lambda bad: (bad, EX5.TypedCore),
    "check_ex6": lambda bad: (bad, EX6.dispatch),
    "check_ex7": lambda bad: (bad,),
    "check_ex8": lambda bad: (bad,),
}


@pytest.mark.parametrize("check", sorted(LEARNER_CALLS))
def test_an_exception_in_learner_code_is_one_line_naming_the_function_and_the_error(check):
    def learner_helper(*args, **kwargs):
        raise KeyError("oops")

    with pytest.raises(AssertionError) as failure:
        getattr(grading, check)(*LEARNER_CALLS[check](learner_helper))
    message = str(failure.value)
    assert "\n" not in message and "KeyError" in message and "oops" in message
    assert "learner_helper" in message, message
    shown = failure.value._render_traceback_()  # what a notebook shows instead of frames
    assert shown == [f"not right yet: {message}"]
    assert failure.value.__suppress_context__ and failure.value.__cause__ is None


def test_a_verdict_reads_as_one_line_in_ipython_not_a_traceback_through_the_grader():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.user_ns.update(grading=grading, approx=EX1.approx_tokens,
                         Capped=make_capped(lesson_groups=True))
    shown = []
    original = shell._showtraceback
    shell._showtraceback = lambda etype, value, stb: shown.append(stb)
    try:
        shell.run_cell("grading.check_ex1(approx, Capped)")
    finally:
        shell._showtraceback = original
    assert len(shown) == 1 and len(shown[0]) == 1, shown
    assert shown[0][0].startswith("not right yet: after 9 appends (user, assistant, user, call")
    assert "vmem/course/checks" not in "".join(shown[0])
