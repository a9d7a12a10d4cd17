"""Run notebooks top to bottom inside Pyodide, each cell in one IPython shell, as the
browser kernel does (see run_in_pyodide.mjs).

    run_notebooks.py FOLDER NOTEBOOK...

The notebooks run in order in one working folder, FOLDER (in memory), so `my_parts/` kept by
one is there for the next, as beside the notebooks in the browser. A cell that raises fails
the run unless it is tagged `raises-exception`. Each cell's output is printed after a line
`### <notebook> [<cell number>]`, so the test can read what each cell said.
"""

import json
import os
import sys
from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell


def run(notebook: Path, shell: InteractiveShell) -> list[str]:
    """Run every code cell of `notebook` in `shell`; return what went wrong, one line each."""
    problems = []
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    shell.reset(new_session=True)
    for number, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        print(f"### {notebook.name} [{number}]", flush=True)
        result = shell.run_cell("".join(cell["source"]), store_history=True)
        expected = "raises-exception" in cell["metadata"].get("tags", ())
        error = result.error_before_exec or result.error_in_exec
        if error is not None and not expected:
            problems.append(f"{notebook.name} cell {number}: {type(error).__name__}: {error}")
    return problems


def main(folder: str, notebooks: list[str]) -> int:
    os.makedirs(folder, exist_ok=True)
    os.chdir(folder)
    shell = InteractiveShell.instance()
    problems = [line for name in notebooks for line in run(Path(name), shell)]
    print("### done", flush=True)
    for line in problems:
        print("PROBLEM", line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
