"""Start JupyterLab on the course: what `make lab` runs, and what the browser test starts.

    python scripts/lab.py [NOTEBOOK] [JUPYTER OPTIONS ...]

It works wherever a learner starts. As root (a container, a cloud VM) JupyterLab refuses
to run without `--allow-root`, so that is added for root only. On a machine without a
desktop browser (no display, no `$BROWSER`) it does not try to open one: JupyterLab prints
the URL to open from another machine's browser (forward the port, e.g. `ssh -L
8888:localhost:8888 HOST`). Everything else is passed to JupyterLab unchanged.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

DEFAULT_NOTEBOOK = "notebooks/00_start_here.ipynb"


def is_root() -> bool:
    """True when running as the superuser (never on Windows, which has no euid)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def has_desktop_browser(env: Mapping[str, str], platform: str = sys.platform) -> bool:
    """Whether a browser can be opened here: macOS and Windows have one, Linux and the
    BSDs only with a display (X11 or Wayland), anywhere when `$BROWSER` names one."""
    if env.get("BROWSER"):
        return True
    if platform in ("darwin", "win32"):
        return True
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def lab_command(arguments: Sequence[str], *, root: bool, browser: bool,
                python: str = sys.executable) -> list[str]:
    """The JupyterLab command line for `arguments` (a notebook and/or options)."""
    command = [python, "-m", "jupyterlab"]
    if root:
        command.append("--allow-root")
    if not browser:
        command.append("--no-browser")
    return command + list(arguments)


def main(argv: Sequence[str] | None = None) -> None:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not any(not arg.startswith("-") for arg in arguments):
        arguments.insert(0, DEFAULT_NOTEBOOK)
    browser = has_desktop_browser(os.environ)
    if not browser:
        print("No desktop browser here: open the URL that JupyterLab prints below "
              "(http://127.0.0.1:PORT/lab?token=...) in a browser on this machine, or "
              "forward the port from yours.", flush=True)
    command = lab_command(arguments, root=is_root(), browser=browser)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
