"""The widgets in a real JupyterLab: open a notebook, Run All, move a control, check the view.

For each of notebooks 02, 03 and 05 (temporary copies, see conftest.py) the test waits for
the kernel to be idle, runs all cells from the Run menu, reads what the widget draws (its
`data-facts`), drags a slider or types a query like a learner would, and checks that the
view changed and now shows exactly what the pure functions of `vmem.viz` predict for the
controls' new values, as printed by the probe cell the copy ends with. Screenshots of
each widget before and after go to build/screenshots/.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import PROBE_MARK, SCREENSHOTS, Lab

pytestmark = pytest.mark.browser

TIMEOUT_MS = 90_000
PROMPT = re.compile(r"^\[(\d+)\]:$")


def wait_until(check: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    """Poll `check` until it returns something truthy; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def kernel_idle(page: Any) -> bool:
    return "| Idle" in page.locator(".jp-StatusBar-Widget").first.inner_text()


def prompts(page: Any) -> list[str]:
    return [text.strip() for text in
            page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()]


def open_and_run_all(page: Any, lab: Lab, name: str) -> None:
    """Open the notebook, wait for an idle kernel, Run All, wait for every cell to run."""
    page.goto(lab.notebook_url(name))
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=TIMEOUT_MS)
    wait_until(lambda: kernel_idle(page), f"the kernel of {name} to be Idle")
    open_panel = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
    if open_panel.count():
        open_panel.click()  # hide the file browser: more room for the notebook
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    try:
        wait_until(lambda: kernel_idle(page) and all(PROMPT.match(p) for p in prompts(page)),
                   f"every cell of {name} to run", timeout=120)
    except pytest.fail.Exception:
        page.screenshot(path=str(SCREENSHOTS / f"{Path(name).stem}_failed_run.png"))
        raise AssertionError(f"not every cell of {name} ran; prompts: {prompts(page)}") from None
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter"
                          ".stderr']").all_inner_texts()
    tracebacks = [text for text in errors if "Traceback" in text or "Error" in text]
    cells = json.loads((lab.root / name).read_text(encoding="utf-8"))["cells"]
    expected = sum("raises-exception" in cell["metadata"].get("tags", ()) for cell in cells)
    assert len(tracebacks) <= expected, f"{name} raised while running:\n{tracebacks[0][:2000]}"


def probe(page: Any) -> list[dict]:
    """Run the last cell (the probe) again and return what it printed."""
    cell = page.locator(".jp-CodeCell").last
    before = cell.locator(".jp-InputPrompt").inner_text().strip()
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    wait_until(lambda: kernel_idle(page)
               and cell.locator(".jp-InputPrompt").inner_text().strip() not in (before, "[*]:"),
               "the probe cell to run again")
    text = cell.locator(".jp-OutputArea-output").last.inner_text()
    line = next(line for line in text.splitlines() if line.startswith(PROBE_MARK))
    return json.loads(line[len(PROBE_MARK):])


class Widget:
    """The first widget of one kind on the page: its view's facts and its controls."""

    def __init__(self, page: Any, kind: str) -> None:
        self.page = page
        self.view = page.locator(f'[data-vmem="{kind}"]').first
        self.box = page.locator(".jp-OutputArea-output").filter(has=self.view).first
        self.view.wait_for(timeout=TIMEOUT_MS)
        self.box.scroll_into_view_if_needed()

    def facts(self) -> dict:
        return json.loads(self.view.get_attribute("data-facts"))

    def slider(self, label: str) -> Any:
        return self.box.locator(".widget-slider").filter(
            has=self.page.locator("label", has_text=re.compile(f"^{re.escape(label)}$"))).first

    def drag(self, label: str, to_end: bool) -> None:
        """Drag a slider's handle past one end of its track, as a learner would."""
        slider = self.slider(label)
        handle = slider.locator(".noUi-handle").first.bounding_box()
        track = slider.locator(".noUi-base").first.bounding_box()
        y = handle["y"] + handle["height"] / 2
        self.page.mouse.move(handle["x"] + handle["width"] / 2, y)
        self.page.mouse.down()
        target = track["x"] + track["width"] + 20 if to_end else track["x"] - 20
        self.page.mouse.move(target, y, steps=12)
        self.page.mouse.up()

    def readout(self, label: str) -> str:
        return self.slider(label).locator(".widget-readout").first.inner_text().strip()

    def changed_from(self, before: dict) -> dict:
        """The view's facts once they differ from `before` and have stopped changing (a
        drag sends several values; the kernel answers each)."""
        wait_until(lambda: self.facts() != before, "the view to change")
        last: list[dict] = [self.facts()]

        def steady() -> dict | None:
            time.sleep(0.5)
            now = self.facts()
            if now == last[0] and kernel_idle(self.page):
                return now
            last[0] = now
            return None

        return wait_until(steady, "the view to settle")

    def shoot(self, path: Path) -> None:
        self.box.scroll_into_view_if_needed()
        self.box.screenshot(path=str(path))


@pytest.fixture
def page(browser: Any) -> Any:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    yield page
    page.close()


def test_eviction_viewer_in_notebook_02(page: Any, lab: Lab, screenshots: Path) -> None:
    open_and_run_all(page, lab, "02_main_context.ipynb")
    viewer = Widget(page, "eviction")
    before = viewer.facts()
    assert before in probe(page)
    viewer.shoot(screenshots / "02_eviction_viewer_start.png")

    viewer.drag("step", to_end=True)
    after = viewer.changed_from(before)
    assert after["step"] > before["step"] and str(after["step"]) == viewer.readout("step")
    assert after in probe(page), "the view differs from what vmem.viz.replay predicts"
    assert after["recall"] > before["recall"]  # more messages stored as steps go by
    viewer.shoot(screenshots / "02_eviction_viewer_last_step.png")

    viewer.drag("budget", to_end=False)  # the smallest budget that replays: a replay
    tight = viewer.changed_from(after)
    assert tight["budget"] < after["budget"] and str(tight["budget"]) == viewer.readout("budget")
    assert tight in probe(page), "the replay differs from what vmem.viz.replay predicts"
    viewer.shoot(screenshots / "02_eviction_viewer_small_budget.png")
    page.screenshot(path=str(screenshots / "02_main_context_page.png"))


def test_retrieval_explorer_in_notebook_03(page: Any, lab: Lab, screenshots: Path) -> None:
    open_and_run_all(page, lab, "03_archival_store.ipynb")
    explorer = Widget(page, "retrieval")
    before = explorer.facts()
    assert before in probe(page)
    explorer.shoot(screenshots / "03_retrieval_explorer_start.png")

    query = "when is the dog's vet appointment"
    box = explorer.box.locator(".widget-text input").first
    box.click()
    box.press("Control+a")
    box.press_sequentially(query, delay=20)
    typed = wait_until(lambda: (lambda f: f if f["query"] == query else None)(explorer.facts()),
                       "the typed query to reach the view")
    assert typed in probe(page), "the ranking differs from vmem.viz.retrieval_view's"
    explorer.shoot(screenshots / "03_retrieval_explorer_query.png")

    explorer.drag("k1", to_end=True)
    steep = explorer.changed_from(typed)
    explorer.drag("b", to_end=False)
    flat = explorer.changed_from(steep)
    explorer.shoot(screenshots / "03_retrieval_explorer_k1_b_moved.png")
    assert steep["k1"] > typed["k1"] and steep["scores"] != typed["scores"]
    assert flat["b"] < steep["b"] and f"{flat['b']:.2f}" == explorer.readout("b")
    assert f"{flat['k1']:.1f}" == explorer.readout("k1")
    assert flat in probe(page), "the re-ranking differs from vmem.viz.retrieval_view's"
    page.screenshot(path=str(screenshots / "03_archival_store_page.png"))


def test_trace_viewer_in_notebook_05(page: Any, lab: Lab, screenshots: Path) -> None:
    open_and_run_all(page, lab, "05_agent_loop.ipynb")
    viewer = Widget(page, "trace")
    before = viewer.facts()
    assert before in probe(page)
    assert before["kinds"][-1] in ("answer", "stop") and before["step"] >= 1
    viewer.shoot(screenshots / "05_trace_viewer_whole_turn.png")

    viewer.drag("up to step", to_end=False)
    start = viewer.changed_from(before)
    assert start["step"] == 0 and start["kinds"] == ["user"]
    assert start in probe(page), "the timeline differs from vmem.viz.trace_rows'"
    viewer.shoot(screenshots / "05_trace_viewer_step_0.png")
    page.screenshot(path=str(screenshots / "05_agent_loop_page.png"))
