"""The library and the course in the browser kernel's runtime: the site's Pyodide under node.

`make site` puts Pyodide and the wheels the kernel loads (vmem's among them) in
build/site/static/pyodide; these tests load that runtime in node (run_in_pyodide.mjs), as
the Pyodide kernel does in a browser, and run inside it:

- the library's core tests (context, BM25 through FTS5, archival, recall, tools, agent,
  memory, clipping), with pytest and hypothesis from build/site-cache/test-wheels.
  Deselected: the PostgreSQL backend's tests (no server in a browser), the tests that start
  other processes (Pyodide has none; the in-process half of the writer lock's test still
  runs in test_filelock.py) and the one with tiktoken's counter (compiled, not in the site);
- every learner notebook and every exercise solution, top to bottom, each cell in one IPython
  shell (in_pyodide/run_notebooks.py): no cell may raise, and a cell that needs what the
  browser lacks says so in one line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from built_site import PYODIDE, require_site

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
RUNNER = HERE / "run_in_pyodide.mjs"
TEST_WHEELS = ROOT / "build" / "site-cache" / "test-wheels"
CORE_TESTS = ("test_context.py", "test_fts_equivalence.py", "test_archival.py",
              "test_recall.py", "test_tools.py", "test_agent.py", "test_memory.py",
              "test_core.py", "test_clipping.py")
# PostgreSQL needs a server; Pyodide starts no processes (second_open_is_refused also asks
# another one); tiktoken is compiled and not among the site's wheels (the course's counter is
# ApproxCounter, which every other test uses)
NOT_IN_A_BROWSER = ("not postgres and not process and not second_open_is_refused"
                    " and not tiktoken")


def in_pyodide(script: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `script` (a path under the repository) in the site's Pyodide under node."""
    require_site()
    node = shutil.which("node")
    if node is None:
        message = "node is not installed: the Pyodide tests need Node.js 18+"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    guest = f"/repo/{Path(script).relative_to(ROOT).as_posix()}"
    return subprocess.run([node, str(RUNNER), str(PYODIDE), str(ROOT), str(TEST_WHEELS),
                           guest, *args], capture_output=True, text=True, timeout=timeout)


def test_the_library_core_tests_pass_in_pyodide() -> None:
    run = in_pyodide(str(HERE / "in_pyodide" / "run_pytest.py"), "-q", "-rs", "-k",
                     NOT_IN_A_BROWSER, *(f"/repo/tests/lib/{name}" for name in CORE_TESTS))
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) >= 200, summary  # 210 on 2026-12-04
    assert "skipped" not in summary and "failed" not in summary, summary


LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SOLUTIONS = sorted((ROOT / "solutions").glob("ex[0-9][0-9]_*.ipynb"))
NOTICE = "Skipped in the browser: this cell needs "


def needs_cells(notebooks: list[Path]) -> int:
    """How many code cells of `notebooks` start with `%%needs`."""
    return sum(1 for notebook in notebooks
               for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
               if cell["cell_type"] == "code" and "".join(cell["source"]).startswith("%%needs"))


@pytest.mark.parametrize("notebooks", [LESSONS, SOLUTIONS], ids=["lessons", "exercise-solutions"])
def test_every_notebook_runs_top_to_bottom_in_pyodide(notebooks: list[Path]) -> None:
    folder = f"/work/{notebooks[0].parent.name}"
    run = in_pyodide(str(HERE / "in_pyodide" / "run_notebooks.py"), folder,
                     *(f"/repo/{path.relative_to(ROOT).as_posix()}" for path in notebooks))
    problems = [line for line in run.stdout.splitlines() if line.startswith("PROBLEM")]
    assert run.returncode == 0 and "### done" in run.stdout, \
        "\n".join(problems) or run.stdout[-3000:] + run.stderr[-3000:]
    # every cell the browser cannot run said why in one line (matplotlib and rank-bm25's
    # numpy are absent there), and no other cell was skipped
    assert sum(line.startswith(NOTICE) for line in run.stdout.splitlines()) == \
        needs_cells(notebooks)
