"""`make lab` works where a learner starts: as root, and without a desktop browser.

The browser test (tests/viz/browser) starts JupyterLab through the same script, so a lab
that cannot start under `make lab` fails there too.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("lab", ROOT / "scripts" / "lab.py")
lab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lab)


def test_make_lab_runs_the_lab_script():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\nlab: setup\n", 1)[1].split("\n", 1)[0]
    assert "scripts/lab.py" in recipe


def test_root_gets_allow_root_and_others_do_not():
    as_root = lab.lab_command(["nb.ipynb"], root=True, browser=True, python="py")
    as_user = lab.lab_command(["nb.ipynb"], root=False, browser=True, python="py")
    assert as_root == ["py", "-m", "jupyterlab", "--allow-root", "nb.ipynb"]
    assert as_user == ["py", "-m", "jupyterlab", "nb.ipynb"]


def test_without_a_desktop_browser_it_opens_none():
    assert lab.lab_command([], root=False, browser=False, python="py")[-1] == "--no-browser"
    assert not lab.has_desktop_browser({}, platform="linux")
    assert lab.has_desktop_browser({"DISPLAY": ":0"}, platform="linux")
    assert lab.has_desktop_browser({"WAYLAND_DISPLAY": "wayland-0"}, platform="linux")
    assert lab.has_desktop_browser({"BROWSER": "firefox"}, platform="linux")
    assert lab.has_desktop_browser({}, platform="darwin")


def test_the_script_tells_where_to_open_the_lab_and_starts_it(monkeypatch, capsys):
    started = []
    monkeypatch.setattr(lab.os, "execv", lambda path, argv: started.append(argv))
    monkeypatch.setattr(lab.os, "environ", {})
    monkeypatch.setattr(lab, "is_root", lambda: True)
    lab.main([])
    assert "open the URL" in capsys.readouterr().out
    assert started == [[sys.executable, "-m", "jupyterlab", "--allow-root", "--no-browser",
                        lab.DEFAULT_NOTEBOOK]]
