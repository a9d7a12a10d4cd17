"""The wrong answers of issue 28, each rejected with a hint that fits its mistake.

They were found by a learner trying the course cold and by wrong solutions written blind
(without the checks); before this issue every one of them passed. Each test feeds one
wrong answer to its check and asserts the one line it gets back; the solutions still pass
(test_grading, test_lesson_checks) and the unsolved exercises still score 0 (the invert
check in test_exercises).
"""

from __future__ import annotations

import inspect

import pytest
from test_grading import EX2, EX3, EX5, EX6, load_cells, rejects
from verdicts import told_not_right

from vmem.course import grading
from vmem.course.lesson_checks import l02, l03

# --- notebook 02 and 03: the cold learner's finds -------------------------------------


def append_below_not_at_or_below(queue, message, max_tokens, warn_at=0.7):
    """Warns only when the queue was strictly below the line (the docstring says "at or
    below")."""
    before = l02._tokens(queue)
    queue.append(message)
    if before < warn_at * max_tokens < l02._tokens(queue):
        queue.append({"role": "system", "content": "Memory pressure: save what matters."})
        return True
    return False


def test_an_append_that_misses_a_queue_right_on_the_line_is_rejected(capsys):
    assert l02.check_append(append_below_not_at_or_below) is l02.append
    told_not_right(capsys, "from at or below 0.7 x max_tokens")


def cite_zero_as_unknown(record):
    """Treats session 0 and turn 0 as missing (`x or '?'`)."""
    where = f"session {record.session_id or '?'}, turn {record.turn_id or '?'}"
    line = record.cite()
    return line.replace(f"session {record.session_id}, turn {record.turn_id}", where)


def test_a_cite_that_writes_session_or_turn_0_as_unknown_is_rejected(capsys):
    assert l03.check_cite(cite_zero_as_unknown) is l03.cite
    told_not_right(capsys, "0 is a session and a turn like any other")


# --- exercise 3: citations grouped at the end ------------------------------------------


def grouped_at_the_end(store, question):
    hits = list(store.search(question, top_k=3))
    if not hits:
        return "I found nothing in memory about that."
    used = [hit for hit in hits if hit.score >= hits[0].score / 2]
    return " ".join(hit.record.text for hit in used) + " " + \
        " ".join(f"[{hit.record.id}]" for hit in used)


def test_ex3_rejects_citations_grouped_at_the_end_and_accepts_them_inline():
    rejects(grading.check_ex3, EX3.insert_fact, grouped_at_the_end,
            hint="right after it, not grouped at the end")

    def inline_with_record_word(store, question):
        hits = list(store.search(question, top_k=2))
        return " ".join(f"{h.record.text[:-1]} [record {h.record.id}]." for h in hits) or "No."

    assert grading.check_ex3(EX3.insert_fact, inline_with_record_word).startswith("passed: ex03:")


# --- exercise 5: a replacement that occurs twice ---------------------------------------


def typed_core_measuring_one_replacement():
    """Checks the limit as if `old` occurred once, then replaces every occurrence."""
    class Measured(EX5.TypedCore):
        def replace(self, label, old, new):
            block = self._writable(label)
            if not old or old not in block["value"]:
                raise ValueError(f"{old!r} does not occur in block {label!r}")
            if len(block["value"]) - len(old) + len(new) > block["limit"]:
                raise ValueError(f"block {label!r} would go over its limit {block['limit']}")
            block["value"] = block["value"].replace(old, new)
    return Measured


def test_ex5_rejects_a_replace_that_stores_a_block_over_its_limit():
    rejects(grading.check_ex5, EX5.to_memgpt, typed_core_measuring_one_replacement(),
            hint="with every occurrence replaced, against the limit")


# --- exercise 6: descriptions, None, floats, and hints that fit -----------------------


def schema_without_continuation_lines(fn):
    schema = EX6.tool_schema(fn)
    doc = inspect.getdoc(fn) or ""
    for name, spec in schema["function"]["parameters"]["properties"].items():
        line = next((line for line in doc.splitlines() if line.strip().startswith(f"{name}:")),
                    None)
        spec["description"] = line.split(":", 1)[1].strip() if line else ""
    return schema


def test_ex6_rejects_args_descriptions_that_drop_continuation_lines():
    rejects(grading.check_ex6, schema_without_continuation_lines, EX6.dispatch,
            hint="property 'potted' has description")


def dispatch_with(flaw):
    def dispatch(tools, name, arguments):
        if flaw == "none_is_not_an_object" and arguments is None:
            return {"ok": False, "error": "invalid_json", "message": "arguments: not a JSON object"}
        if flaw == "float_fits_int" and isinstance(arguments, dict) and name in tools:
            arguments = {key: round(value) if isinstance(value, float) else value
                         for key, value in arguments.items()}
        if flaw == "int_is_not_a_float" and isinstance(arguments, dict) and any(
                isinstance(value, int) for value in arguments.values()) and name == "water":
            return {"ok": False, "error": "bad_arguments", "message": "litres must be a float"}
        result = EX6.dispatch(tools, name, arguments)
        if flaw == "json_message_without_json" and result.get("error") == "invalid_json":
            result["message"] = "the arguments could not be parsed"
        return result
    return dispatch


@pytest.mark.parametrize(("flaw", "hint", "not_said"), [
    ("none_is_not_an_object", "None means no arguments at all", None),
    ("float_fits_int", "a float where an int is expected", None),
    ("int_is_not_a_float", "an int is a fine value for a float parameter", "json.loads"),
    ("json_message_without_json", "says the arguments are not valid JSON", "catch it"),
])
def test_ex6_rejects_each_dispatcher_with_a_hint_about_its_own_mistake(flaw, hint, not_said):
    message = rejects(grading.check_ex6, EX6.tool_schema, dispatch_with(flaw), hint=hint)
    assert not_said is None or not_said not in message


# --- exercise 8: the capstone needs memory ---------------------------------------------

EX8_CELLS = ("ex08-01", "ex08-parts", "ex08-03", "ex08-05")


def capstone(flaw):
    """The solution's chat_session with one flaw, in a namespace of its own."""
    ns = load_cells("ex08_capstone", EX8_CELLS)
    source = inspect.getsource(ns.chat_session)

    class FromThePrompt(ns.NotesPolicy):
        """Never searches: answers a question from the prompt, citing the save it saw."""

        def respond(self, messages, tools):
            newest = next(m for m in reversed(messages) if m["role"] in ("user", "tool"))
            if newest["role"] != "user" or not newest["content"].endswith("?"):
                return super().respond(messages, tools)
            asked = set(newest["content"].lower().strip("?").split())
            for at, message in enumerate(messages[:-1]):
                said = str(message.get("content") or "")
                if message["role"] == "user" and len(asked & set(said.lower().split())) >= 3:
                    saved = next((m["content"] for m in messages[at:] if m["role"] == "tool"
                                  and "Cite it as" in str(m["content"])), "")
                    cite = saved.split("Cite it as ")[-1].rstrip(".") if saved else ""
                    return ns.AssistantTurn(tool_calls=[ns.ToolCall(
                        "send_message", {"message": f"{said} {cite}"})])
            return ns.AssistantTurn(tool_calls=[ns.ToolCall(
                "send_message", {"message": "I do not know."})])

    if flaw == "answers_from_the_prompt":
        ns.chat_session.__globals__["NotesPolicy"] = FromThePrompt
        return ns.chat_session
    assert flaw == "never_stamps"
    unstamped = source.replace("real.session_id, real.turn = memory.session_id, number", "pass")
    assert unstamped != source
    exec(compile(unstamped, "<chat_session never stamps>", "exec"), ns.chat_session.__globals__)
    return ns.chat_session.__globals__["chat_session"]


def test_ex8_rejects_an_agent_that_answers_from_the_prompt_without_searching():
    rejects(grading.check_ex8, capstone("answers_from_the_prompt"),
            hint="which is no longer in the prompt")


def test_ex8_rejects_a_chat_session_that_never_stamps_session_and_turn():
    rejects(grading.check_ex8, capstone("never_stamps"),
            hint="stamp the tools with the session and the turn")


def test_ex8_says_whose_dispatcher_and_loop_ran():
    ns = load_cells("ex08_capstone", EX8_CELLS)
    from vmem.course.checks.ex08 import whose_parts

    assert whose_parts(ns.chat_session) == ("ran on vmem's stand-in dispatcher (exercise 6 "
                                            "not kept) and vmem's stand-in loop (exercise 7 "
                                            "not kept)")
    ns.chat_session.__globals__["run_turn"] = load_cells(
        "ex07_agent_loop", ("ex07-01", "ex07-03", "ex07-05")).run_turn
    assert whose_parts(ns.chat_session).endswith("and your loop")


# --- the re-run hole: nothing of vmem is ever kept as the learner's ---------------------


def test_vmems_own_part_is_never_kept_nor_loaded_as_the_learners(tmp_path, capsys):
    from vmem.course import parts
    from vmem.tokens import count_tokens

    said = parts.keep("approx_tokens", count_tokens, "notebook 02", l02._check_tokens)
    assert said == "not kept for later notebooks: it is vmem's own approx_tokens, not yours"
    assert not (tmp_path / "my_parts" / "approx_tokens.py").exists()
    (tmp_path / "my_parts" / "approx_tokens.py").write_text(
        "from vmem.tokens import count_tokens as approx_tokens\n", encoding="utf-8")
    fallback = object()
    assert parts.load("approx_tokens", "notebook 02", fallback, l02._check_tokens) is fallback
    assert capsys.readouterr().out == ("your approx_tokens from notebook 02 does not pass now "
                                       "(it is vmem's own approx_tokens, not yours) - using "
                                       "vmem's\n")


def test_a_dispatcher_that_calls_open_is_kept_and_a_part_without_source_is_named(capsys):
    """IPython puts its own `open` in a kernel's namespace; the copy uses the builtin."""
    from IPython.core.interactiveshell import InteractiveShell

    from vmem.course import parts

    shell = InteractiveShell.instance()
    shell.run_cell("def dispatch(tools, name, arguments):\n"
                   "    with open(__file__ if False else '/dev/null'):\n"
                   "        return {'ok': True, 'result': len(tools)}\n")
    assert parts.keep("dispatch", shell.user_ns["dispatch"], "exercise 6",
                      lambda part: "passes") == "kept as my_parts/dispatch.py"
    shell.user_ns["helper"] = print  # a builtin under a learner's name: no source to copy
    shell.run_cell("def uses_helper(x):\n    return helper(x)\n")
    said = parts.keep("uses_helper", shell.user_ns["uses_helper"], "notebook 04",
                      lambda part: "passes")
    assert said.startswith("not kept for later notebooks:") and "helper" in said, said


# --- survivors of `make mutants`, each now a check case ---------------------------------


def test_ex5_rejects_a_section_refused_at_its_limit_and_a_message_without_the_size():
    def refuses_at_the_limit(core, limits=None):
        limits = limits or {}
        if any(len(value) >= limits.get(label, 2000) for label, value in core.items()):
            raise ValueError("a section is over its limit")
        return EX5.to_memgpt(core, limits)

    rejects(grading.check_ex5, refuses_at_the_limit, EX5.TypedCore,
            hint="a section exactly at its limit")

    class NoSize(EX5.TypedCore):
        def _commit(self, block, value):
            if len(value) > block["limit"]:
                raise ValueError(f"block {block['label']!r} is over its limit of "
                                 f"{block['limit']}")
            block["value"] = value

    rejects(grading.check_ex5, EX5.to_memgpt, NoSize, hint="needs to see '32'")


def test_ex2_rejects_an_ablation_that_scores_unmatched_facts_above_weak_matches():
    def ablate_unmatched_one(facts, questions, configs, k):
        from vmem.course.checks.ex02 import _recall
        # a fact without a query word ranked as if it scored 1.0
        weak = "Ana" in facts[0] and len(facts) == 5
        return {name: 0.0 if weak else _recall(facts, questions, config, k)
                for name, config in configs.items()}

    rejects(grading.check_ex2, EX2.recall_at_k, ablate_unmatched_one, EX2.choose,
            hint="a fact that matches no query word scores 0")


@pytest.mark.parametrize(("arguments", "hint"), [
    ({"litres": True}, "a bool where a number is expected"),
    ({"litres": "lots"}, "a string where a number is expected"),
])
def test_ex6_rejects_a_float_parameter_that_takes_any_value(arguments, hint):
    def dispatch(tools, name, given):
        if name == "water" and given == arguments:
            return {"ok": True, "result": "watered"}
        return EX6.dispatch(tools, name, given)

    rejects(grading.check_ex6, EX6.tool_schema, dispatch, hint=hint)


def test_ex6_stretch_rejects_a_string_for_a_list_and_a_number_for_an_optional_string():
    def iterates_a_string(tools, name, arguments):
        if name == "harvest" and isinstance(arguments, dict) and \
                isinstance(arguments.get("crops"), str):
            return {"ok": True, "result": tools[name](list(arguments["crops"]))}
        return EX6.dispatch(tools, name, arguments)

    rejects(grading.check_ex6, EX6.tool_schema, iterates_a_string, True,
            hint="a string where a list is expected")


def test_a_detector_that_crashes_on_a_note_naming_no_one_is_rejected(capsys):
    from vmem.course.lesson_checks import l07

    def needs_a_person(new, old):
        if not new[0].isalpha():
            raise AttributeError("'NoneType' object has no attribute 'group'")
        return next(expected for n, o, expected, _ in l07.CASES if (n, o) == (new, old))

    assert l07.check_detector(needs_a_person) is None
    told_not_right(capsys, "AttributeError")


def test_ex8_rejects_an_agent_that_cannot_say_a_save_failed():
    ns = load_cells("ex08_capstone", EX8_CELLS)

    class Silent(ns.NotesPolicy):
        def respond(self, messages, tools):
            answer = super().respond(messages, tools)
            call = answer.tool_calls[0]
            if call.name == "send_message" and call.arguments["message"].startswith("Sorry"):
                return ns.AssistantTurn(content="")
            return answer

    ns.chat_session.__globals__["NotesPolicy"] = Silent
    rejects(grading.check_ex8, ns.chat_session, hint="to an empty message, whose save fails")


def test_an_exercise_check_reads_in_a_notebook_as_a_lesson_check_does():
    """One style: "passed: ..." unquoted, or "not right yet: ..." alone."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.user_ns.update(grading=grading, insert=EX3.insert_fact, right=EX3.answer_with_citations,
                         grouped=grouped_at_the_end)
    shown = []
    original = shell._showtraceback
    shell._showtraceback = lambda etype, value, stb: shown.append(stb)
    try:
        result = shell.run_cell("grading.check_ex3(insert, right)").result
        shell.run_cell("grading.check_ex3(insert, grouped)")
    finally:
        shell._showtraceback = original
    text = shell.display_formatter.format(result)[0]["text/plain"]
    assert text.startswith("passed: ex03: ") and not text.startswith("'")
    assert len(shown) == 1 and shown[0][0].startswith("not right yet: in the answer to")


def test_a_render_that_drops_a_message_which_fits_exactly_is_rejected(capsys):
    def render_strictly_under(system, summary, messages, max_tokens):
        return l02.render(system, summary, messages, max_tokens - 1)

    assert l02.check_render(render_strictly_under) is l02.render
    told_not_right(capsys, "kept 1 messages; expected the newest 2")


def test_an_append_that_returns_none_for_no_warning_is_rejected(capsys):
    def append_or_none(queue, message, max_tokens, warn_at=0.7):
        return l02.append(queue, message, max_tokens, warn_at) or None

    assert l02.check_append(append_or_none) is l02.append
    told_not_right(capsys, "returned None; expected False")
