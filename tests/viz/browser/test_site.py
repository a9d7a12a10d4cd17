"""The browser course (`make site`) in headless Chromium: notebook 02 in the Pyodide kernel.

build/site is served on 127.0.0.1 as a static site, as GitHub Pages serves it. The test opens
notebook 02, waits for the Pyodide kernel, runs the notebook down to its first check and reads
the check's line (the stub is untouched: vmem's part runs, and the line says so) within 30 s of
opening the page, and the page requests nothing from any other host. Then it writes the stub's
function as a learner would, runs the stub and the check again, and reads the check's pass
line; the part is kept in `my_parts/`, which must still be there after the page is loaded again
(a new visit: the browser's storage, not the kernel's memory). A second test steps through the
notebook down to the eviction viewer and drags its step slider: the widget answers from the
Pyodide kernel. Screenshots go to build/screenshots/ beside the JupyterLab test's (this module
replaces only its own, `site_*`) and the time to the first check line to
build/screenshots/site_timing.json.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from built_site import require_site, serve

from .conftest import SCREENSHOTS
from .test_jupyterlab import PROMPT, Widget, kernel_idle, wait_until

pytestmark = pytest.mark.site

NOTEBOOK = "notebooks/02_main_context.ipynb"
FIRST_CHECK_WITHIN_S = 30
SOLUTION = ("import math\n\n\ndef approx_tokens(text):\n"
            "    return math.ceil(len(text.split()) * 1.3)\n")


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    with serve(require_site()) as url:
        yield url


@pytest.fixture(scope="module")
def screenshots() -> Path:
    """build/screenshots, keeping the JupyterLab test's pictures: only ours are replaced."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob("site_*"):
        old.unlink()
    return SCREENSHOTS


@pytest.fixture
def page(browser: Any, site_url: str) -> Iterator[Any]:
    """A fresh browser context (its own storage); fails the test if the page asked any host
    but the local server for anything (the site must name no CDN and use none)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    elsewhere: list[str] = []
    page.on("request", lambda request: elsewhere.append(request.url)
            if request.url.split(":", 1)[0] in ("http", "https", "ws", "wss")
            and not request.url.startswith(site_url) else None)
    yield page
    context.close()
    assert not elsewhere, f"the site fetched from other hosts: {elsewhere[:5]}"


def code_cells(page: Any) -> Any:
    return page.locator(".jp-Notebook .jp-CodeCell")


def output_of(cell: Any) -> str:
    return "\n".join(cell.locator(".jp-OutputArea-output").all_inner_texts())


def run_menu(page: Any, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()


def open_notebook(page: Any, url: str) -> None:
    page.goto(f"{url}/lab/index.html?path={NOTEBOOK}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    wait_until(lambda: kernel_idle(page), "the Pyodide kernel to be Idle", timeout=60)


def test_first_check_of_notebook_02_in_the_pyodide_kernel(page: Any, site_url: str,
                                                          screenshots: Path) -> None:
    opened = time.monotonic()
    open_notebook(page, site_url)
    check = page.locator(".jp-Notebook .jp-Cell").filter(
        has=page.locator(".jp-InputArea-editor", has_text="l02.check_tokens(")).first
    stub = code_cells(page).filter(has=page.locator(".jp-InputArea-editor",
                                                    has_text="def approx_tokens")).first
    check.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")
    run_menu(page, "Run All Above Selected Cell")
    page.keyboard.press("Control+Enter")  # the check itself
    line = wait_until(lambda: "using vmem" in output_of(check) and output_of(check),
                      "the first check's line", timeout=FIRST_CHECK_WITHIN_S + 30)
    seconds = time.monotonic() - opened
    page.screenshot(path=str(screenshots / "site_02_first_check.png"))
    (screenshots / "site_timing.json").write_text(
        json.dumps({"first_check_line_s": round(seconds, 1)}), encoding="utf-8")
    assert "not written yet - using vmem's count_tokens" in line
    assert seconds <= FIRST_CHECK_WITHIN_S, f"the first check's line took {seconds:.1f} s"

    stub.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(SOLUTION)
    page.keyboard.press("Shift+Enter")  # the stub, then the check
    page.keyboard.press("Shift+Enter")
    passed = wait_until(lambda: "passed:" in output_of(check) and output_of(check),
                        "the check's pass line", timeout=60)
    check.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "site_02_check_passed.png"))
    assert "your approx_tokens agrees with vmem.count_tokens" in passed
    assert "kept" in passed and "not kept" not in passed, passed

    page.reload()  # a new visit: my_parts/ must come back from the browser's storage
    page.wait_for_selector(".jp-DirListing-content", timeout=60_000)
    page.goto(f"{site_url}/lab/index.html?path=notebooks/my_parts/approx_tokens.py")
    editor = page.locator(".jp-FileEditor .cm-content").first
    wait_until(lambda: editor.count() and "def approx_tokens" in editor.inner_text(),
               "my_parts/approx_tokens.py to open after a reload", timeout=60)
    page.screenshot(path=str(screenshots / "site_02_my_parts_after_reload.png"))


def run_down_to(page: Any, text: str, cells: int = 100) -> None:
    """Shift+Enter from the first cell down to the code cell holding `text`, each after the
    one before has finished, as a learner steps through. (Not Run All: in JupyterLite's
    kernel, Run All stops at a cell whose error is expected, tagged raises-exception.)"""
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.keyboard.press("Escape")
    for _ in range(cells):
        active = page.locator(".jp-Notebook .jp-Cell.jp-mod-active").first.element_handle()
        code = "jp-CodeCell" in (active.get_attribute("class") or "")
        source = active.query_selector(".jp-InputArea-editor").inner_text() if code else ""
        page.keyboard.press("Shift+Enter")
        if code:
            wait_until(lambda cell=active: kernel_idle(page) and PROMPT.match(
                cell.query_selector(".jp-InputPrompt").inner_text().strip()),
                f"the cell {source[:40]!r} to run", timeout=60)
        if text in source:
            return
    pytest.fail(f"no code cell holds {text!r}")


def test_the_eviction_viewer_answers_from_the_pyodide_kernel(page: Any, site_url: str,
                                                            screenshots: Path) -> None:
    open_notebook(page, site_url)
    run_down_to(page, "EvictionViewer(")
    viewer = Widget(page, "eviction")
    before = viewer.facts()
    viewer.drag("step", to_end=True)
    after = viewer.changed_from(before)
    assert after["step"] > before["step"] and str(after["step"]) == viewer.readout("step")
    assert after["recall"] > before["recall"]  # more messages stored as steps go by
    viewer.shoot(screenshots / "site_02_eviction_viewer_last_step.png")
