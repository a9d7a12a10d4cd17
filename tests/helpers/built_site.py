"""The browser course built by `make site` (build/site), for the tests that run it.

Those tests need the site, which `make test` builds before running them. Run alone without
it, they skip and say how to build it, except under CI (`CI` set), where they fail: CI
never skips them.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from build_site import OUTPUT  # scripts/, on sys.path through tests/conftest.py

SITE = OUTPUT  # where scripts/build_site.py writes it
PYODIDE = SITE / "static" / "pyodide"


def require_site() -> Path:
    """build/site, or a skip (a failure under CI) that says to run `make site`."""
    if not (SITE / "jupyter-lite.json").exists():
        message = f"the browser course is not built at {SITE}: run `make site` first"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return SITE


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Static files with the types a browser insists on for WebAssembly and ES modules."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".wasm": "application/wasm", ".mjs": "text/javascript",
                      ".js": "text/javascript", ".json": "application/json"}

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reports what matters."""


@contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve `folder` on 127.0.0.1 (a free port) from a thread; yield its base URL."""
    handler = functools.partial(_Handler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
