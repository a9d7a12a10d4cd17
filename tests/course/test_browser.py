"""`%%needs` (vmem.course.browser): a cell runs unchanged where its packages import, and
prints one line instead where they do not (the browser course lacks matplotlib and numpy)."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

from vmem.course import browser


@pytest.fixture
def shell() -> InteractiveShell:
    shell = InteractiveShell.instance()
    shell.reset(new_session=True)
    browser.load_ipython_extension(shell)  # what `%load_ext vmem.course.browser` calls
    return shell


def test_a_cell_whose_packages_import_runs_unchanged(shell, capsys):
    result = shell.run_cell("%%needs json math\nimport math\nvalue = math.isqrt(49)\nprint(value)")
    assert result.success and shell.user_ns["value"] == 7
    assert capsys.readouterr().out == "7\n"


def test_a_cell_that_needs_a_missing_package_says_why_in_one_line_and_runs_nothing(
        shell, capsys, monkeypatch):
    monkeypatch.setitem(browser.WHY, "absent_a", "Pyodide serves it only from its CDN")
    result = shell.run_cell("%%needs json absent_a absent_b\nvalue = 1")
    assert result.success and "value" not in shell.user_ns
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert "needs absent_a, absent_b (absent_a: Pyodide serves it only from its CDN; " \
           "absent_b: not installed)" in out
    assert "make lab" in out


def test_an_error_in_a_cell_that_runs_is_still_an_error(shell):
    result = shell.run_cell("%%needs json\nraise ValueError('broken')")
    assert not result.success and isinstance(result.error_in_exec, ValueError)

