"""A real JupyterLab on 127.0.0.1 and a headless Chromium driven by Playwright.

JupyterLab serves a temporary folder holding copies of the notebooks under test (it
autosaves, which would rewrite the committed outputs), with its config, settings,
workspaces and runtime files in temporary folders too, so a learner's own setup is never
read or changed. Each copy gets one extra cell at the end, the probe, which prints what
the pure functions of `vmem.viz` predict for every widget's current control values.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = ROOT / "notebooks"
SCREENSHOTS = ROOT / "build" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"]
UNDER_TEST = ("02_main_context.ipynb", "03_archival_store.ipynb", "05_agent_loop.ipynb")

PROBE_MARK = "VMEM_PROBE "
PROBE = f'''\
# the browser test's probe: what the pure functions predict for each widget's controls
import json as _json
from vmem import viz as _viz

def _predicted(widget):
    if isinstance(widget, _viz.EvictionViewer):
        frames = _viz.replay(widget.context, widget.budget.value).frames
        return frames[widget.step.value - 1].facts()
    if isinstance(widget, _viz.RetrievalExplorer):  # recall only for the labelled query
        labelled = widget.query.value.lower().split() == widget.labelled_query.lower().split()
        return _viz.retrieval_view(widget.index, widget.records, widget.query.value,
                                   k1=widget.k1.value, b=widget.b.value,
                                   top_k=widget.top_k.value,
                                   relevant=widget.relevant if labelled else frozenset(),
                                   scorer=widget.scorer,
                                   unlabelled=bool(widget.relevant) and not labelled).facts()
    return _viz.trace_facts(_viz.trace_rows(widget.turn), widget.step.value)

_kinds = (_viz.EvictionViewer, _viz.RetrievalExplorer, _viz.TraceViewer)
print({PROBE_MARK!r} + _json.dumps([_predicted(w) for w in list(globals().values())
                                    if isinstance(w, _kinds)]))
'''

# Settings that keep the lab quiet and every cell in the page (no virtual scrolling).
SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


@dataclass
class Lab:
    """A running JupyterLab: where it listens, its token and the folder it serves."""

    url: str
    token: str
    root: Path

    def notebook_url(self, name: str) -> str:
        """The notebook alone in a workspace of its own (a shared one would reopen the
        notebooks of earlier tests beside it)."""
        workspace = name.removesuffix(".ipynb")
        return f"{self.url}/lab/workspaces/{workspace}/tree/{name}?token={self.token}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _with_probe(source: Path, target: Path) -> None:
    notebook = json.loads(source.read_text(encoding="utf-8"))
    notebook["cells"].append({"cell_type": "code", "id": "vmem-browser-probe",
                              "metadata": {}, "execution_count": None, "outputs": [],
                              "source": PROBE.splitlines(keepends=True)})
    target.write_text(json.dumps(notebook, indent=1), encoding="utf-8")


@pytest.fixture(scope="session")
def chromium() -> Path:
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}: install Debian's chromium package "
                    "(apt-get install chromium; .ci/run does) to run the browser test")
    return CHROMIUM


@pytest.fixture(scope="session")
def lab(chromium: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("jupyterlab")
    root = base / "notebooks"
    root.mkdir()
    for name in UNDER_TEST:
        _with_probe(NOTEBOOKS / name, root / name)
    settings = base / "settings"
    for path, values in SETTINGS.items():
        (settings / path).parent.mkdir(parents=True, exist_ok=True)
        (settings / path).write_text(json.dumps(values), encoding="utf-8")
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(base / "config"),
           "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(settings),
           "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces")}
    port, token = _free_port(), secrets.token_hex(16)
    # `make lab`'s own command (scripts/lab.py), on a machine without a desktop browser
    # (it adds --no-browser, and --allow-root when CI runs as root), serving the copies
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        env.pop(name, None)
    command = [sys.executable, str(ROOT / "scripts" / "lab.py"), UNDER_TEST[0],
               "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={root}",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    log = (base / "jupyterlab.log").open("w")
    server = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None:
                pytest.fail("JupyterLab exited at start:\n" +
                            (base / "jupyterlab.log").read_text()[-3000:])
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not answer within 60 s:\n" +
                                (base / "jupyterlab.log").read_text()[-3000:])
                time.sleep(0.3)
        yield Lab(url, token, root)
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.fixture(scope="session")
def browser(chromium: Path) -> Iterator[object]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium),
                                             args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """build/screenshots, emptied of earlier runs' pictures except the browser course's
    (`site_*`, test_site.py's, which `make test` takes in a later pytest run)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.iterdir():
        if old.is_dir():
            shutil.rmtree(old)
        elif not old.name.startswith("site_"):
            old.unlink()
    return SCREENSHOTS
