"""Every lesson check passes vmem's own part, says "not written yet" for a stub, and
rejects wrong answers written before the check, each in one line, falling back to vmem's
part so the notebook goes on."""

from __future__ import annotations

import math

import pytest

from vmem import count_tokens
from vmem.course.lesson_checks import l02
from vmem.course.lesson_checks.common import verdict


def stub(*args, **kwargs):
    raise NotImplementedError("write it")


# --- notebook 02 wrong answers ------------------------------------------------------

def _words(text):
    return len(text.split())


TOKENS = {
    "chars / 4": lambda text: len(text) // 4,
    "round, not ceil": lambda text: round(_words(text) * 1.3),
    "floor": lambda text: int(_words(text) * 1.3),
    "split on spaces only": lambda text: math.ceil(len(text.split(" ")) * 1.3) if text else 0,
    "one per word": _words,
    "at least one": lambda text: max(1, math.ceil(_words(text) * 1.3)),
    "a float": lambda text: _words(text) * 1.3,
}


def _head(system, summary):
    return l02.system_message(system, summary)


def render_oldest_first(system, summary, messages, max_tokens):
    room, kept = max_tokens - count_tokens(_head(system, summary)["content"]), []
    for message in messages:
        room -= count_tokens(message["content"])
        if room < 0:
            break
        kept.append(message)
    return [_head(system, summary), *kept]


def render_skips_big_ones(system, summary, messages, max_tokens):
    room, kept = max_tokens - count_tokens(_head(system, summary)["content"]), []
    for message in reversed(messages):
        if count_tokens(message["content"]) <= room:
            room -= count_tokens(message["content"])
            kept.insert(0, message)
    return [_head(system, summary), *kept]


RENDER = {
    "oldest first": render_oldest_first,
    "skips a big message and goes on": render_skips_big_ones,
    "system message not counted": lambda s, m, msgs, n:
        l02.render(s, m, msgs, n + count_tokens(_head(s, m)["content"])),
    "newest first": lambda s, m, msgs, n: [l02.render(s, m, msgs, n)[0],
                                           *reversed(l02.render(s, m, msgs, n)[1:])],
    "summary dropped": lambda s, m, msgs, n: [_head(s, None), *l02.render(s, m, msgs, n)[1:]],
    "no system message": lambda s, m, msgs, n: l02.render(s, m, msgs, n)[1:],
    "everything": lambda s, m, msgs, n: [_head(s, m), *msgs],
}


def append_warns_when_above(queue, message, max_tokens, warn_at=0.7):
    queue.append(message)
    if l02._tokens(queue) > warn_at * max_tokens:
        queue.append({"role": "system", "content": "Memory pressure!"})
        return True
    return False


def append_at_or_above(queue, message, max_tokens, warn_at=0.7):
    before = l02._tokens(queue)
    queue.append(message)
    if before < warn_at * max_tokens <= l02._tokens(queue):
        queue.append({"role": "system", "content": "Memory pressure!"})
        return True
    return False


def append_no_notice(queue, message, max_tokens, warn_at=0.7):
    return l02.append(queue, message, max_tokens, warn_at) and bool(queue.pop())


def append_notice_first(queue, message, max_tokens, warn_at=0.7):
    warned = l02.append(queue, message, max_tokens, warn_at)
    if warned:
        queue[-2:] = queue[-2:][::-1]
    return warned


def append_full_budget(queue, message, max_tokens, warn_at=0.7):
    return l02.append(queue, message, max_tokens, 1.0)


APPEND = {
    "warns on every append above": append_warns_when_above,
    "at or above, not above": append_at_or_above,
    "no notice in the queue": append_no_notice,
    "notice before the message": append_notice_first,
    "warns at the budget, not 70%": append_full_budget,
    "never appends": lambda queue, message, max_tokens, warn_at=0.7: False,
}


def evict_one_by_one(queue, target):
    evicted = []
    while len(queue) > 1 and l02._tokens(queue) > target:
        evicted.append(queue.pop(0))
    return evicted


def evict_newest(queue, target):
    evicted = []
    while len(queue) > 1 and l02._tokens(queue) > target:
        evicted.insert(0, queue.pop())
    return evicted


def evict_everything(queue, target):
    evicted = list(queue) if l02._tokens(queue) > target else []
    del queue[:len(evicted)]
    return evicted


def evict_copy(queue, target):
    return l02.evict(list(queue), target)


def evict_one_group_more(queue, target):
    evicted = l02.evict(queue, target)
    if evicted and len(queue) > 1:
        evicted.append(queue.pop(0))
    return evicted


EVICT = {
    "splits a tool run": evict_one_by_one,
    "newest first": evict_newest,
    "everything, newest included": evict_everything,
    "leaves the queue as it was": evict_copy,
    "one message too many": evict_one_group_more,
    "returns nothing": lambda queue, target: [],
}


def _joined(previous, evicted):
    return " ".join([previous or "", *(m["content"] for m in evicted)]).strip()


FOLD = {
    "ignores the previous summary": lambda previous, evicted: _joined(None, evicted),
    "ignores the evicted": lambda previous, evicted: previous or "",
    "grows without bound": _joined,
    "only the newest message": lambda previous, evicted:
        (evicted[-1]["content"] if evicted else previous),
    "empty": lambda previous, evicted: "",
    "not deterministic": lambda previous, evicted, _calls=[0]:
        (_calls.append(1) or " ".join(_joined(previous, evicted).split()[:60])
         + " #" * (len(_calls) % 2)),
    "forgets previous when nothing is evicted": lambda previous, evicted:
        " ".join(_joined(None, evicted).split()[-60:]),
}

CHECKS = {
    "tokens": (l02.check_tokens, count_tokens, TOKENS),
    "render": (l02.check_render, l02.render, RENDER),
    "append": (l02.check_append, l02.append, APPEND),
    "evict": (l02.check_evict, l02.evict, EVICT),
    "fold": (l02.check_fold, l02.fold, FOLD),
}
WRONG = [(name, label, wrong) for name, (_, _, mutants) in CHECKS.items()
         for label, wrong in mutants.items()]


@pytest.mark.parametrize("name", CHECKS)
def test_vmems_own_part_passes(name, capsys):
    check, fallback, _ = CHECKS[name]
    assert check(fallback) is fallback
    line = capsys.readouterr().out
    assert line.startswith("passed: ") and line.count("\n") == 1


@pytest.mark.parametrize("name", CHECKS)
def test_a_stub_is_not_written_yet_and_vmems_part_is_used(name, capsys):
    check, fallback, _ = CHECKS[name]
    assert check(stub) is fallback
    out = capsys.readouterr().out
    assert out.startswith("not written yet - using vmem's ") and out.count("\n") == 1


@pytest.mark.parametrize("name", CHECKS)
def test_each_check_has_at_least_five_wrong_answers(name):
    assert len(CHECKS[name][2]) >= 5


@pytest.mark.parametrize(("name", "label", "wrong"), WRONG,
                         ids=[f"{name}-{label}" for name, label, _ in WRONG])
def test_a_wrong_answer_gets_one_line_and_vmems_part(name, label, wrong, capsys):
    check, fallback, _ = CHECKS[name]
    assert check(wrong) is fallback, label
    out = capsys.readouterr().out
    assert out.startswith("not right yet: ") and out.count("\n") == 1, out
    assert "Traceback" not in out and "vmem/course" not in out


def test_a_crash_in_learner_code_is_one_line_naming_it():
    def crashes(text):
        return {}[text]
    line, chosen = verdict("count_tokens", crashes, count_tokens, l02._check_tokens)
    assert chosen is count_tokens
    assert line.startswith("not right yet: ") and "KeyError" in line and "crashes" in line
    assert "\n" not in line
